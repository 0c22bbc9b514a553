"""Forged, stale and misused tokens never open ``/pub``: each gets a 401 with the RFC 6750 challenge.

Over HTTP: ``alg: none``, a token signed by another RSA key, HS256 signed with the realm's *public* key
(the classic algorithm confusion), a tampered payload, a refresh token used as an access token, and a
garbled header. In-process, against the sandbox's own verifier with tokens signed by the realm's *real*
key: expired, not yet issued, wrong audience, wrong issuer, wrong ``typ``, missing claims, unknown client
— so each check is proven on its own, not hidden behind a bad signature. A valid token of another
workgroup sees none of demo's projects.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .conftest import TOKEN, bearer

CLASS = "jwt forgery"


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def _refused(tally, sb, token: str) -> None:
    r = tally.send(CLASS, "GET", f"{sb.base_url}/pub/projects", headers={"Authorization": f"Bearer {token}"})
    assert r is not None and r.status_code == 401, (r.status_code, r.text) if r is not None else None
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert set(r.json()) == {"status", "error", "message"}


@pytest.fixture(scope="module")
def real(sandbox) -> str:
    return bearer(sandbox)


def test_alg_none_is_refused(sandbox, tally, real):
    claims = _claims(real)
    for alg in ("none", "None", "NONE"):
        _refused(tally, sandbox, f"{_b64({'alg': alg, 'typ': 'JWT'})}.{_b64(claims)}.")


def test_a_token_signed_by_another_key_is_refused(sandbox, tally, real):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = jwt.get_unverified_header(real)["kid"]  # even with the realm's key id
    _refused(tally, sandbox, jwt.encode(_claims(real), other, algorithm="RS256", headers={"kid": kid}))


def test_hs256_signed_with_the_public_key_is_refused(sandbox, tally, real):
    realm = requests.get(f"{sandbox.auth_url}", timeout=30).json()
    der = base64.b64decode(realm["public_key"])
    public = serialization.load_der_public_key(der)
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    jwk = requests.get(f"{sandbox.auth_url}/protocol/openid-connect/certs", timeout=30).json()["keys"][0]
    for secret in (pem, der, realm["public_key"].encode(), json.dumps(jwk).encode()):
        for alg in ("HS256", "HS512"):
            header = {"alg": alg, "typ": "JWT", "kid": jwk["kid"]}
            signing_input = f"{_b64(header)}.{_b64(_claims(real))}".encode()
            digest = {"HS256": hashlib.sha256, "HS512": hashlib.sha512}[alg]
            sig = base64.urlsafe_b64encode(hmac.new(secret, signing_input, digest).digest()).rstrip(b"=")
            _refused(tally, sandbox, signing_input.decode() + "." + sig.decode())


def test_a_tampered_payload_is_refused(sandbox, tally, real):
    head, _, sig = real.split(".")
    claims = _claims(real)
    for change in ({"exp": claims["exp"] + 10**6}, {"azp": sandbox.workgroups["second"].client_id}):
        _refused(tally, sandbox, f"{head}.{_b64({**claims, **change})}.{sig}")


def test_a_refresh_token_is_not_an_access_token(sandbox, tally):
    wg = sandbox.workgroups["demo"]
    form = {"grant_type": "client_credentials", "client_id": wg.client_id, "client_secret": wg.client_secret}
    refresh = requests.post(sandbox.base_url + TOKEN, data=form, timeout=30).json()["refresh_token"]
    _refused(tally, sandbox, refresh)


def test_garbled_bearer_headers_are_refused(sandbox, tally, real):
    for token in ("x", "a.b.c", real[:-5], real + "x", "..", real.replace(".", "", 1), "é" * 10):
        _refused(tally, sandbox, token)


def test_another_workgroups_valid_token_sees_none_of_demos_projects(sandbox, tally):
    token = bearer(sandbox, "second")
    headers = {"Authorization": f"Bearer {token}"}
    mine = tally.send(CLASS, "GET", f"{sandbox.base_url}/pub/projects", headers=headers)
    assert mine is not None and mine.status_code == 200
    for pid in sandbox.workgroups["demo"].project_ids:
        assert pid not in mine.json()
        for path in (f"/pub/projects/{pid}", f"/pub/datasources/{pid}", f"/pub/project/{pid}/name"):
            r = tally.send(CLASS, "GET", sandbox.base_url + path, headers=headers)
            assert r is not None and r.status_code in (403, 404), (path, r.status_code)


@pytest.fixture(scope="module")
def idp(sandbox_store):
    from pm_sandbox.oidc import IdentityProvider

    return IdentityProvider(
        sandbox_store, "http://127.0.0.1:1/realms/pm-sandbox", base_url="http://127.0.0.1:1"
    )


@pytest.mark.parametrize(
    "change",
    [
        {"exp": -10},
        {"iat": None, "exp": 300},
        {"aud": ["account"]},
        {"aud": "someone-else"},
        {"iss": "http://127.0.0.1:1/realms/other"},
        {"typ": "Refresh"},
        {"typ": "ID"},
        {"azp": "no-such-client"},
        {"azp": None},
        {"exp": None},
    ],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()),
)
def test_a_token_signed_by_the_realm_but_wrong_in_one_claim_is_refused(idp, sandbox_store, tally, change):
    from pm_sandbox.errors import ApiError

    wg = sandbox_store.workgroups()[0]
    good = _claims(
        idp.token(
            [("grant_type", "client_credentials"), ("client_id", wg.id), ("client_secret", wg.secret)], None
        )["access_token"]
    )
    now = int(time.time())
    claims = dict(good)
    for key, value in change.items():
        if value is None:
            claims.pop(key, None)
        elif key in ("exp", "iat") and isinstance(value, int):
            claims[key] = now + value
        else:
            claims[key] = value
    token = jwt.encode(claims, idp._private_key, algorithm="RS256", headers={"kid": idp.kid})
    assert idp.verify_access(f"Bearer {jwt.encode(good, idp._private_key, algorithm='RS256')}").id == wg.id
    with pytest.raises(ApiError) as refused:
        idp.verify_access(f"Bearer {token}")
    assert refused.value.status == 401
    tally.record(CLASS, "refused")
