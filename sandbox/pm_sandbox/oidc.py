"""A Keycloak-compatible identity provider for one realm: client-credentials and refresh grants.

Behaviour follows current Keycloak (see ``shared/reference/service-model.md`` §2): the grant type is
checked before the client is authenticated, every client-authentication failure answers 401, the
refresh token is an HMAC-signed JWT with ``typ`` "Refresh" and is rotated on use (a reused one is
refused). Access tokens are RS256 JWTs signed with a key made fresh for each process and published
through the JWKS endpoint, so any standard JWT library can verify them.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from .data.store import Store, WorkgroupRecord
from .errors import ApiError, OAuthError

#: how many issued tokens (access and refresh) the identity provider remembers for the admin route
ISSUED_KEPT = 10_000

__all__ = ["API_AUDIENCE", "REALM", "IdentityProvider"]

REALM = "pm-sandbox"
API_AUDIENCE = "mining-api"
_SCOPES = ("openid", "profile", "email")
_DEFAULT_SCOPE = "profile email"
_KNOWN_GRANTS = ("client_credentials", "refresh_token", "password", "authorization_code")
_BAD_CLIENT = "Invalid client or Invalid client credentials"


class IdentityProvider:
    """Issues and verifies tokens for the workgroups of *store*.

    :param issuer: the realm URL (``{base}/realms/<realm>``), written into ``iss``.
    :param access_lifetime: seconds an access token lives (Keycloak default 300).
    :param refresh_lifetime: seconds a refresh token lives (the service shows 1800).
    :param clock: seconds since the epoch; tests may pass a fake.
    """

    def __init__(
        self,
        store: Store,
        issuer: str,
        *,
        base_url: str,
        access_lifetime: int = 300,
        refresh_lifetime: int = 1800,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.issuer = issuer.rstrip("/")
        self.base_url = base_url.rstrip("/")
        self.access_lifetime = int(access_lifetime)
        self.refresh_lifetime = int(refresh_lifetime)
        self.clock = clock
        self._private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._public_key = self._private_key.public_key()
        self.kid = secrets.token_urlsafe(24)
        self._refresh_key = secrets.token_bytes(64)
        self._refresh_kid = str(uuid.uuid4())
        self._used_refresh: set[str] = set()
        self._lock = threading.Lock()
        self.tokens_issued = 0
        # The latest tokens handed out, for the admin route that lets tests grep outputs and logs for them.
        self.issued: deque[str] = deque(maxlen=ISSUED_KEPT)

    # --- documents -------------------------------------------------------------------------------------
    def jwks(self) -> dict[str, Any]:
        """The realm's JSON Web Key Set (public signing key only)."""
        jwk = RSAAlgorithm.to_jwk(self._public_key, as_dict=True)
        jwk.update({"kid": self.kid, "use": "sig", "alg": "RS256"})
        return {"keys": [jwk]}

    def discovery(self) -> dict[str, Any]:
        """The OpenID Connect discovery document of the realm."""
        oidc = f"{self.issuer}/protocol/openid-connect"
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{oidc}/auth",
            "token_endpoint": f"{oidc}/token",
            "jwks_uri": f"{oidc}/certs",
            "grant_types_supported": ["client_credentials", "refresh_token"],
            "response_types_supported": ["code", "none", "id_token", "token"],
            "subject_types_supported": ["public", "pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "scopes_supported": list(_SCOPES),
            "claims_supported": ["aud", "sub", "iss", "azp", "exp", "iat", "jti", "scope", "clientId"],
        }

    def realm_info(self) -> dict[str, Any]:
        """``GET /realms/<realm>``: Keycloak's realm summary with its public key."""
        from cryptography.hazmat.primitives import serialization

        der = self._public_key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return {
            "realm": REALM,
            "public_key": base64.b64encode(der).decode(),
            "token-service": f"{self.issuer}/protocol/openid-connect",
            "account-service": f"{self.issuer}/account",
            "tokens-not-before": 0,
        }

    # --- the token endpoint ------------------------------------------------------------------------------
    def token(self, form: Sequence[tuple[str, str]], authorization: str | None) -> dict[str, Any]:
        """Answer one token request (form items in order, plus the ``Authorization`` header).

        :raises OAuthError: with Keycloak's status, ``error`` and ``error_description``.
        """
        keys = [k for k, _ in form]
        if len(keys) != len(set(keys)):
            raise OAuthError(400, "invalid_request", "duplicated parameter")
        params = dict(form)
        grant = params.get("grant_type")
        if not grant:
            raise OAuthError(400, "invalid_request", "Missing form parameter: grant_type")
        if grant not in _KNOWN_GRANTS:
            raise OAuthError(400, "unsupported_grant_type", "Unsupported grant_type")
        wg = self._authenticate_client(params, authorization)
        if grant == "client_credentials":
            scope = self._scope(params.get("scope"))
            return self._issue(wg, scope, str(uuid.uuid4()))
        if grant == "refresh_token":
            return self._refresh(wg, params.get("refresh_token"))
        if grant == "password":
            raise OAuthError(400, "unauthorized_client", "Client not allowed for direct access grants")
        raise OAuthError(400, "invalid_grant", "Code not valid")

    def _authenticate_client(self, params: dict[str, str], authorization: str | None) -> WorkgroupRecord:
        client_id, secret = params.get("client_id"), params.get("client_secret")
        if authorization and authorization[:6].lower() == "basic ":
            basic = _parse_basic(authorization[6:])
            if basic is not None:
                client_id, secret = basic
            elif not client_id:
                # Keycloak ignores a header it cannot parse when the form names the client, and
                # otherwise challenges: client authentication failed, 401.
                raise OAuthError(
                    401,
                    "invalid_client",
                    "Invalid Authorization header: expected Basic base64(client_id:client_secret)",
                )
        if not client_id:
            raise OAuthError(400, "invalid_client", "Missing client_id parameter")
        if self.store.workgroup(client_id) is None:
            raise OAuthError(401, "invalid_client", _BAD_CLIENT)
        wg = self.store.authenticate(client_id, secret or "")
        if wg is None:
            raise OAuthError(401, "unauthorized_client", _BAD_CLIENT)
        return wg

    @staticmethod
    def _scope(requested: str | None) -> str:
        asked = (requested or "").split()
        unknown = [s for s in asked if s not in _SCOPES]
        if unknown:
            raise OAuthError(400, "invalid_scope", f"Invalid scopes: {requested}")
        return f"openid {_DEFAULT_SCOPE}" if "openid" in asked else _DEFAULT_SCOPE

    def _refresh(self, wg: WorkgroupRecord, token: str | None) -> dict[str, Any]:
        if not token:
            raise OAuthError(400, "invalid_request", "No refresh token")
        try:
            claims = jwt.decode(
                token,
                self._refresh_key,
                algorithms=["HS512"],
                options={"verify_exp": False, "verify_aud": False, "require": ["exp", "jti", "typ"]},
            )
        except jwt.PyJWTError:
            raise OAuthError(400, "invalid_grant", "Invalid refresh token") from None
        if claims.get("typ") != "Refresh" or claims.get("iss") != self.issuer:
            raise OAuthError(400, "invalid_grant", "Invalid refresh token")
        if claims["exp"] <= self.clock():
            raise OAuthError(400, "invalid_grant", "Token is not active")
        if claims.get("azp") != wg.id:
            raise OAuthError(
                400, "invalid_grant", "Invalid refresh token. Token client and authorized client don't match"
            )
        with self._lock:
            if claims["jti"] in self._used_refresh:
                raise OAuthError(400, "invalid_grant", "Maximum allowed refresh token reuse exceeded")
            self._used_refresh.add(claims["jti"])
        return self._issue(wg, claims.get("scope", _DEFAULT_SCOPE), claims["session_state"])

    def _issue(self, wg: WorkgroupRecord, scope: str, session: str) -> dict[str, Any]:
        now = int(self.clock())
        sub = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.issuer}/service-account/{wg.id}"))
        access_claims = {
            "exp": now + self.access_lifetime,
            "iat": now,
            "jti": str(uuid.uuid4()),
            "iss": self.issuer,
            "aud": [API_AUDIENCE, "account"],
            "sub": sub,
            "typ": "Bearer",
            "azp": wg.id,
            "session_state": session,
            "acr": "1",
            "allowed-origins": [self.base_url],
            "realm_access": {"roles": [f"default-roles-{REALM}", "offline_access", "uma_authorization"]},
            "resource_access": {
                "account": {"roles": ["manage-account", "manage-account-links", "view-profile"]}
            },
            "scope": scope,
            "sid": session,
            "email_verified": False,
            "clientId": wg.id,
            "client_id": wg.id,
            "clientHost": "127.0.0.1",
            "clientAddress": "127.0.0.1",
            "preferred_username": f"service-account-{wg.id}",
        }
        refresh_claims = {
            "exp": now + self.refresh_lifetime,
            "iat": now,
            "jti": str(uuid.uuid4()),
            "iss": self.issuer,
            "aud": self.issuer,
            "sub": sub,
            "typ": "Refresh",
            "azp": wg.id,
            "session_state": session,
            "scope": scope,
            "sid": session,
        }
        access = jwt.encode(access_claims, self._private_key, algorithm="RS256", headers={"kid": self.kid})
        refresh = jwt.encode(
            refresh_claims, self._refresh_key, algorithm="HS512", headers={"kid": self._refresh_kid}
        )
        with self._lock:
            self.tokens_issued += 1
            self.issued.extend((access, refresh))
        return {
            "upgraded": False,
            "access_token": access,
            "expires_in": self.access_lifetime,
            "refresh_expires_in": self.refresh_lifetime,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "not-before-policy": 0,
            "session_state": session,
            "scope": scope,
        }

    # --- the resource server side ----------------------------------------------------------------------
    def verify_access(self, authorization: str | None) -> WorkgroupRecord:
        """The workgroup an ``Authorization: Bearer`` header belongs to.

        :raises ApiError: 401 (with ``WWW-Authenticate``) for a missing, malformed, expired or forged token.
        """
        if not authorization or not authorization[:7].lower() == "bearer " or not authorization[7:].strip():
            raise ApiError(
                401,
                "Missing bearer token: send the header 'Authorization: Bearer <access_token>' "
                "with a token from the realm's token endpoint.",
                description="Missing bearer token",
            )
        token = authorization[7:].strip()
        try:
            claims = jwt.decode(
                token,
                self._public_key,
                algorithms=["RS256"],
                audience=API_AUDIENCE,
                issuer=self.issuer,
                options={"require": ["exp", "iat", "iss", "aud", "azp"]},
                leeway=0,
            )
        except jwt.ExpiredSignatureError:
            raise ApiError(
                401,
                "The access token has expired: request a new one from the token endpoint.",
                description="Token is expired",
            ) from None
        except jwt.PyJWTError:
            raise ApiError(
                401,
                "The access token is not valid (signature, issuer or audience check failed).",
                description="Token verification failed",
            ) from None
        if claims.get("typ") != "Bearer":
            raise ApiError(401, "The token is not an access token.", description="Wrong token type")
        wg = self.store.workgroup(claims["azp"])
        if wg is None:
            raise ApiError(401, "The token names an unknown client.", description="Unknown client")
        return wg


def _parse_basic(value: str) -> tuple[str, str] | None:
    """``(client_id, secret)`` of an HTTP Basic value (RFC 6749 §2.3.1: form-encoded, then base64), or
    ``None`` when it is not base64 of UTF-8 ``id:secret`` (header text arrives as latin-1, so anything
    non-ASCII is not base64 either)."""
    try:
        decoded = base64.b64decode(value.strip().encode("ascii"), validate=True).decode("utf-8")
    except (ValueError, UnicodeError):  # binascii.Error is a ValueError
        return None
    basic_id, sep, basic_secret = decoded.partition(":")
    return (unquote(basic_id), unquote(basic_secret)) if sep else None
