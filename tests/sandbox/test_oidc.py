"""The sandbox's identity provider over real HTTP: token shape, JWKS, refresh, Keycloak errors."""

from __future__ import annotations

import base64
import time
import uuid

import jwt
import pytest
import requests


def token_url(sb) -> str:
    return f"{sb.auth_url}/protocol/openid-connect/token"


def creds(sb, key: str = "demo") -> dict[str, str]:
    wg = sb.workgroups[key]
    return {"grant_type": "client_credentials", "client_id": wg.client_id, "client_secret": wg.client_secret}


def get_token(sb, key: str = "demo") -> dict:
    r = requests.post(token_url(sb), data=creds(sb, key), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_token_response_has_exactly_the_seed_fields_and_types(sandbox):
    r = requests.post(token_url(sandbox), data=creds(sandbox), timeout=60)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["pragma"] == "no-cache"
    body = r.json()
    expected_types = {
        "upgraded": bool,
        "access_token": str,
        "expires_in": int,
        "refresh_expires_in": int,
        "refresh_token": str,
        "token_type": str,
        "not-before-policy": int,
        "session_state": str,
        "scope": str,
    }
    assert set(body) == set(expected_types)
    for field, typ in expected_types.items():
        assert type(body[field]) is typ, field
    assert body["upgraded"] is False
    assert body["expires_in"] == 300
    assert body["refresh_expires_in"] == 1800
    assert body["token_type"] == "Bearer"
    assert body["not-before-policy"] == 0
    assert str(uuid.UUID(body["session_state"])) == body["session_state"]
    assert body["scope"].split() == ["profile", "email"]
    for tok in (body["access_token"], body["refresh_token"]):
        assert tok.count(".") == 2


def test_access_token_verifies_through_jwks_and_has_keycloak_claims(sandbox):
    body = get_token(sandbox)
    discovery = requests.get(f"{sandbox.auth_url}/.well-known/openid-configuration", timeout=60).json()
    assert discovery["issuer"] == sandbox.auth_url
    assert discovery["token_endpoint"] == token_url(sandbox)
    assert discovery["jwks_uri"] == f"{sandbox.auth_url}/protocol/openid-connect/certs"
    assert "client_credentials" in discovery["grant_types_supported"]
    assert "RS256" in discovery["id_token_signing_alg_values_supported"]

    client = jwt.PyJWKClient(discovery["jwks_uri"])
    key = client.get_signing_key_from_jwt(body["access_token"])
    header = jwt.get_unverified_header(body["access_token"])
    assert header["alg"] == "RS256" and header["typ"] == "JWT" and header["kid"] == key.key_id
    claims = jwt.decode(
        body["access_token"], key.key, algorithms=["RS256"], audience="mining-api", issuer=sandbox.auth_url
    )
    wg = sandbox.workgroups["demo"]
    assert claims["azp"] == wg.client_id
    assert claims["clientId"] == wg.client_id
    assert claims["exp"] - claims["iat"] == 300
    assert claims["iat"] <= time.time() + 1
    assert claims["typ"] == "Bearer"
    assert claims["session_state"] == body["session_state"]
    assert claims["scope"] == body["scope"]
    assert "account" in claims["aud"]
    uuid.UUID(claims["jti"])
    uuid.UUID(claims["sub"])
    assert claims["sub"] != wg.client_id  # a service-account user id, as Keycloak does
    assert claims["preferred_username"] == f"service-account-{wg.client_id}"
    assert claims["allowed-origins"] == [sandbox.base_url]
    assert any(r.startswith("default-roles-") for r in claims["realm_access"]["roles"])


def test_refresh_token_is_a_keycloak_refresh_jwt(sandbox):
    body = get_token(sandbox)
    assert jwt.get_unverified_header(body["refresh_token"])["alg"] == "HS512"
    claims = jwt.decode(body["refresh_token"], options={"verify_signature": False})
    assert claims["typ"] == "Refresh"
    assert claims["exp"] - claims["iat"] == 1800
    assert claims["azp"] == sandbox.workgroups["demo"].client_id


def test_client_credentials_in_http_basic(sandbox):
    wg = sandbox.workgroups["second"]
    r = requests.post(
        token_url(sandbox),
        data={"grant_type": "client_credentials"},
        auth=(wg.client_id, wg.client_secret),
        timeout=60,
    )
    assert r.status_code == 200, r.text
    claims = jwt.decode(r.json()["access_token"], options={"verify_signature": False})
    assert claims["azp"] == wg.client_id


def test_openid_scope_is_granted_when_asked(sandbox):
    r = requests.post(token_url(sandbox), data={**creds(sandbox), "scope": "openid"}, timeout=60)
    assert r.status_code == 200
    assert r.json()["scope"].split() == ["openid", "profile", "email"]


def test_refresh_grant_rotates_and_refuses_reuse(sandbox):
    first = get_token(sandbox)
    wg = sandbox.workgroups["demo"]
    form = {
        "grant_type": "refresh_token",
        "refresh_token": first["refresh_token"],
        "client_id": wg.client_id,
        "client_secret": wg.client_secret,
    }
    r = requests.post(token_url(sandbox), data=form, timeout=60)
    assert r.status_code == 200, r.text
    second = r.json()
    assert set(second) == set(first)
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]
    assert second["session_state"] == first["session_state"]
    ok = requests.get(
        f"{sandbox.base_url}/pub/projects",
        headers={"Authorization": f"Bearer {second['access_token']}"},
        timeout=60,
    )
    assert ok.status_code == 200

    reused = requests.post(token_url(sandbox), data=form, timeout=60)
    assert reused.status_code == 400
    assert reused.json() == {
        "error": "invalid_grant",
        "error_description": "Maximum allowed refresh token reuse exceeded",
    }
    # The rotated token still works once.
    r = requests.post(token_url(sandbox), data={**form, "refresh_token": second["refresh_token"]}, timeout=60)
    assert r.status_code == 200


def test_refresh_token_of_another_client_is_refused(sandbox):
    demo_refresh = get_token(sandbox, "demo")["refresh_token"]
    form = {**creds(sandbox, "second"), "grant_type": "refresh_token", "refresh_token": demo_refresh}
    r = requests.post(token_url(sandbox), data=form, timeout=60)
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_grant"
    assert "don't match" in r.json()["error_description"]


def _keycloak_error(sb, data, auth=None):
    r = requests.post(token_url(sb), data=data, auth=auth, timeout=60)
    return r.status_code, r.json()


@pytest.mark.parametrize(
    ("case", "status", "error", "description"),
    [
        ("no grant_type", 400, "invalid_request", "Missing form parameter: grant_type"),
        ("unknown grant_type", 400, "unsupported_grant_type", "Unsupported grant_type"),
        ("bad grant wins over bad secret", 400, "unsupported_grant_type", "Unsupported grant_type"),
        ("duplicated parameter", 400, "invalid_request", "duplicated parameter"),
        ("no client_id", 400, "invalid_client", "Missing client_id parameter"),
        ("unknown client", 401, "invalid_client", "Invalid client or Invalid client credentials"),
        ("wrong secret", 401, "unauthorized_client", "Invalid client or Invalid client credentials"),
        ("missing secret", 401, "unauthorized_client", "Invalid client or Invalid client credentials"),
        ("wrong secret in basic", 401, "unauthorized_client", "Invalid client or Invalid client credentials"),
        ("password grant", 400, "unauthorized_client", "Client not allowed for direct access grants"),
        ("bad scope", 400, "invalid_scope", "Invalid scopes: admin"),
        ("refresh without token", 400, "invalid_request", "No refresh token"),
        ("refresh with garbage", 400, "invalid_grant", "Invalid refresh token"),
        ("refresh with an access token", 400, "invalid_grant", "Invalid refresh token"),
    ],
)
def test_keycloak_errors(sandbox, case, status, error, description):
    good = creds(sandbox)
    cid, secret = good["client_id"], good["client_secret"]
    data: object
    auth = None
    if case == "no grant_type":
        data = {"client_id": cid, "client_secret": secret}
    elif case == "unknown grant_type":
        data = {**good, "grant_type": "magic"}
    elif case == "bad grant wins over bad secret":
        data = {**good, "grant_type": "magic", "client_secret": "nope"}
    elif case == "duplicated parameter":
        data = [
            ("grant_type", "client_credentials"),
            ("client_id", cid),
            ("client_id", cid),
            ("client_secret", secret),
        ]
    elif case == "no client_id":
        data = {"grant_type": "client_credentials", "client_secret": secret}
    elif case == "unknown client":
        data = {**good, "client_id": str(uuid.uuid4())}
    elif case == "wrong secret":
        data = {**good, "client_secret": secret + "x"}
    elif case == "missing secret":
        data = {"grant_type": "client_credentials", "client_id": cid}
    elif case == "wrong secret in basic":
        data, auth = {"grant_type": "client_credentials"}, (cid, "wrong")
    elif case == "password grant":
        data = {**good, "grant_type": "password", "username": "u", "password": "p"}
    elif case == "bad scope":
        data = {**good, "scope": "admin"}
    elif case == "refresh without token":
        data = {**good, "grant_type": "refresh_token"}
    elif case == "refresh with garbage":
        data = {**good, "grant_type": "refresh_token", "refresh_token": "not.a.token"}
    else:
        data = {**good, "grant_type": "refresh_token", "refresh_token": get_token(sandbox)["access_token"]}
    got_status, body = _keycloak_error(sandbox, data, auth)
    assert (got_status, body) == (status, {"error": error, "error_description": description})
    assert secret not in str(body)


def test_unknown_realm_is_404(sandbox):
    url = token_url(sandbox).replace("/realms/pm-sandbox/", "/realms/nope/")
    r = requests.post(url, data=creds(sandbox), timeout=60)
    assert r.status_code == 404
    assert r.json()["error"] == "Realm does not exist"


def test_basic_header_that_cannot_be_parsed_is_a_keycloak_401(sandbox):
    """Like Keycloak: a garbled Basic header (not base64, no colon, non-ASCII) fails client authentication."""
    basic = base64.b64encode(b"no-colon").decode()
    for value in ("Basic %%%", f"Basic {basic}", "Basic \u00e9\u00e9\u00e9=="):
        r = requests.post(
            token_url(sandbox),
            data={"grant_type": "client_credentials"},
            headers={"Authorization": value.encode("latin-1")},
            timeout=10,
        )
        assert r.status_code == 401, value
        assert r.json()["error"] == "invalid_client"
        assert set(r.json()) == {"error", "error_description"}


def test_garbled_basic_header_is_ignored_when_the_form_names_the_client(sandbox):
    r = requests.post(
        token_url(sandbox),
        data=creds(sandbox),
        headers={"Authorization": "Basic %%%"},
        timeout=60,
    )
    assert r.status_code == 200 and r.json()["access_token"]


def test_expired_refresh_token_and_expired_access_token(sandbox_factory):
    sb = sandbox_factory(cases=20, token_lifetime=1, refresh_lifetime=2)
    body = get_token(sb)
    assert body["expires_in"] == 1 and body["refresh_expires_in"] == 2
    time.sleep(2.2)
    r = requests.get(
        f"{sb.base_url}/pub/projects", headers={"Authorization": f"Bearer {body['access_token']}"}
    )
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert "expired" in r.json()["message"]
    form = {**creds(sb), "grant_type": "refresh_token", "refresh_token": body["refresh_token"]}
    r = requests.post(token_url(sb), data=form, timeout=60)
    assert r.status_code == 400
    assert r.json() == {"error": "invalid_grant", "error_description": "Token is not active"}


def test_tokens_from_another_sandbox_are_rejected(sandbox, sandbox_factory):
    other = sandbox_factory(cases=20)
    foreign = get_token(other)["access_token"]  # same workgroup ids (same seed), different signing key
    r = requests.get(
        f"{sandbox.base_url}/pub/projects", headers={"Authorization": f"Bearer {foreign}"}, timeout=60
    )
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["www-authenticate"]


def test_tokens_issued_are_counted(sandbox):
    before = sandbox.stats()["tokens_issued"]
    get_token(sandbox)
    requests.post(token_url(sandbox), data={**creds(sandbox), "client_secret": "bad"}, timeout=60)
    assert sandbox.stats()["tokens_issued"] == before + 1
