"""Token lifecycle: the typed token response, a single-flight provider, and the bearer auth hook.

- :class:`Token` is the whole token response (all nine fields) plus the clock time it was received;
  whether it must be renewed at time ``t`` is a pure function (:meth:`Token.needs_renewal`).
- :class:`TokenProvider` hands out a valid token. One lock makes renewal single-flight: when many threads
  need a token at once, exactly one token request goes out and the others wait for its answer. It renews
  shortly before expiry, uses the ``refresh_token`` grant while the refresh token is still valid, and falls
  back to a fresh ``client_credentials`` grant when there is none or the identity provider refuses it.
- :class:`BearerAuth` is a ``requests`` auth hook: it sets ``Authorization: Bearer ...`` and, when the API
  answers 401, forces a new token and re-sends the request exactly once.

Why not authlib or requests-oauthlib: both renew tokens without a lock (concurrent threads each fetch one),
treat an expired refresh token as an error instead of falling back to client credentials, and neither
re-sends a request after a 401; wrapping them to add those three rules took more code than the ~150 lines
below.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import requests

from . import _http
from ._secret import Secret
from .config import Settings
from .errors import AuthenticationError, HTTPError, NotFound

__all__ = ["BearerAuth", "Token", "TokenProvider"]

logger = logging.getLogger(__name__)

_ADMIN_HINT = (
    "Check client_id / client_secret (PM_CLIENT_ID / PM_CLIENT_SECRET) against the workgroup "
    "administration page, Open API tab; only users with the role workgroup administrator can see it."
)


def _margin(lifetime: float, renew_before: float) -> float:
    """Seconds before expiry at which to renew: *renew_before*, at most a fifth of the lifetime."""
    return max(0.0, min(renew_before, lifetime / 5))


@dataclass(frozen=True)
class Token:
    """The token response of the identity provider, typed; both tokens held as :class:`Secret`.

    :param issued_at: clock time (seconds, same clock as the provider's) at which the request was sent, so
        expiry is computed conservatively.
    """

    access_token: Secret = field(repr=False)
    expires_in: int
    refresh_expires_in: int
    refresh_token: Secret | None = field(repr=False)
    token_type: str
    not_before_policy: int
    session_state: str | None
    scope: str
    upgraded: bool | None
    issued_at: float

    @classmethod
    def from_response(cls, data: Mapping[str, Any], issued_at: float) -> Token:
        """Parse a token response; :class:`ValueError` names the first malformed field.

        >>> t = Token.from_response({"access_token": "a.b.c", "expires_in": 300, "token_type": "Bearer"}, 0.0)
        >>> t.expires_at, t.refresh_token
        (300.0, None)
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"the token response is a JSON {type(data).__name__}, not an object")
        access = data.get("access_token")
        if not isinstance(access, str) or not access:
            raise ValueError("access_token is missing or not a string")
        refresh = data.get("refresh_token")
        if refresh is not None and not isinstance(refresh, str):
            raise ValueError("refresh_token is not a string")
        token_type = data.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise ValueError(f"token_type is {token_type!r}, expected 'Bearer'")
        session_state = data.get("session_state")
        if session_state is not None and not isinstance(session_state, str):
            raise ValueError("session_state is not a string")
        scope = data.get("scope", "")
        if not isinstance(scope, str):
            raise ValueError("scope is not a space-separated string")
        upgraded = data.get("upgraded")
        if upgraded is not None and not isinstance(upgraded, bool):
            raise ValueError("upgraded is not a boolean")
        return cls(
            access_token=Secret(access),
            expires_in=_int_field(data, "expires_in", required=True),
            refresh_expires_in=_int_field(data, "refresh_expires_in"),
            refresh_token=Secret(refresh) if refresh else None,
            token_type=token_type,
            not_before_policy=_int_field(data, "not-before-policy"),
            session_state=session_state,
            scope=scope,
            upgraded=upgraded,
            issued_at=float(issued_at),
        )

    @property
    def scopes(self) -> tuple[str, ...]:
        """The granted scope names."""
        return tuple(self.scope.split())

    @property
    def expires_at(self) -> float:
        """Clock time at which the access token expires."""
        return self.issued_at + self.expires_in

    @property
    def refresh_expires_at(self) -> float | None:
        """Clock time at which the refresh token expires (``None`` without a refresh token)."""
        if self.refresh_token is None or self.refresh_expires_in <= 0:
            return None
        return self.issued_at + self.refresh_expires_in

    def needs_renewal(self, now: float, renew_before: float = 30.0) -> bool:
        """Whether the access token should be renewed at clock time *now* (pure: no I/O, no clock read)."""
        return now >= self.expires_at - _margin(self.expires_in, renew_before)

    def can_refresh(self, now: float, renew_before: float = 30.0) -> bool:
        """Whether the refresh token may still be used at *now* (with the same safety margin)."""
        end = self.refresh_expires_at
        return end is not None and now < end - _margin(self.refresh_expires_in, renew_before)

    def __repr__(self) -> str:
        return (
            f"Token(token_type={self.token_type!r}, expires_in={self.expires_in}, "
            f"refresh_expires_in={self.refresh_expires_in}, scope={self.scope!r}, "
            f"session_state={self.session_state!r}, access_token=Secret('***'), "
            f"refresh_token={'Secret(***)' if self.refresh_token else None})"
        )


def _int_field(data: Mapping[str, Any], name: str, *, required: bool = False) -> int:
    value = data.get(name)
    if value is None:
        if required:
            raise ValueError(f"{name} is missing")
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{name} is {value!r}, expected a non-negative number of seconds")
    return int(value)


class _Form(Mapping[str, str]):
    """Token-request form fields. ``requests`` reads a Mapping item by item while encoding the body, so the
    secrets are revealed only there; the repr (tracebacks with locals, debuggers) masks them."""

    def __init__(self, **fields: str | Secret) -> None:
        self._fields = fields

    def __getitem__(self, key: str) -> str:
        value = self._fields[key]
        return value.reveal() if isinstance(value, Secret) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"_Form({shown})"


class TokenProvider:
    """Hands out a valid access token for one workgroup; thread-safe, one token request at a time.

    :param settings: connection values (token URL, client id and secret, timeout, ``renew_before``).
    :param session: the HTTP session (see :func:`pm_notebook._http.build_session`).
    :param clock: seconds, wall-clock by default: tokens expire in real time, also while a laptop sleeps.

    ``grants`` counts the token requests sent, by grant type.
    """

    def __init__(
        self, settings: Settings, session: requests.Session, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._settings = settings
        self._session = session
        self._clock = clock
        self._lock = threading.Lock()
        self._token: Token | None = None
        self.grants: Counter[str] = Counter()

    def __repr__(self) -> str:
        left = self.seconds_left()
        state = "no token yet" if left is None else f"token expires in {left:.0f} s"
        return f"<TokenProvider client_id={self._settings.client_id!r} {state}>"

    @property
    def current(self) -> Token | None:
        """The token held now, possibly expired (``None`` before the first call)."""
        return self._token

    def seconds_left(self) -> float | None:
        """Seconds until the access token expires (negative once expired; ``None`` without a token)."""
        token = self._token
        return None if token is None else token.expires_at - self._clock()

    def token(self) -> Token:
        """Return a token valid for at least the renewal margin, requesting one if needed.

        :raises AuthenticationError: the identity provider refused the client id / secret.
        :raises TransportError: the identity provider could not be reached.
        """
        token = self._token
        if token is not None and not token.needs_renewal(self._clock(), self._settings.renew_before):
            return token
        with self._lock:
            # Another thread may have renewed while this one waited for the lock.
            token = self._token
            now = self._clock()
            if token is not None and not token.needs_renewal(now, self._settings.renew_before):
                return token
            self._token = self._renew(token, now)
            return self._token

    def invalidate(self, stale: Token | None = None) -> None:
        """Drop the held token so the next :meth:`token` requests a new one with client credentials.

        With *stale*, only drop it if it is still the held one: when many calls see a 401 for the same token,
        the first one renews and the others reuse its result.
        """
        with self._lock:
            if stale is None or self._token is stale:
                self._token = None

    def _renew(self, old: Token | None, now: float) -> Token:
        if old is not None and old.refresh_token and old.can_refresh(now, self._settings.renew_before):
            try:
                return self._grant(
                    "refresh_token",
                    _Form(
                        grant_type="refresh_token",
                        refresh_token=old.refresh_token,
                        client_id=self._settings.client_id,
                        client_secret=self._settings.client_secret,
                    ),
                )
            except AuthenticationError as exc:
                logger.info("refresh token refused (%s); falling back to client credentials", exc.message)
        return self._grant(
            "client_credentials",
            _Form(
                grant_type="client_credentials",
                client_id=self._settings.client_id,
                client_secret=self._settings.client_secret,
            ),
        )

    def _grant(self, grant: str, form: _Form) -> Token:
        url = self._settings.token_url
        what = f"token request ({grant})"
        issued_at = self._clock()
        self.grants[grant] += 1
        response = _http.send(
            self._session,
            "POST",
            url,
            timeout=self._settings.timeout,
            what=what,
            data=form,
            headers={"Accept": "application/json"},
        )
        if response.status_code != 200:
            raise self._token_error(response, grant)
        data = _http.json_body(response, what=what)
        try:
            token = Token.from_response(data, issued_at)
        except ValueError as exc:
            raise HTTPError(
                f"{what}: the identity provider at {url} sent an unusable token response: {exc}.",
                status=response.status_code,
                hint="Check that auth_url is the realm address (…/realms/<realm>) of the identity provider.",
                url=url,
            ) from None
        logger.debug("token obtained by %s grant; expires in %s s", grant, token.expires_in)
        return token

    def _token_error(self, response: requests.Response, grant: str) -> HTTPError:
        url = self._settings.token_url
        status = response.status_code
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("error"), str) and status in (400, 401):
            code = data["error"]
            desc = data.get("error_description") or code
            if grant == "refresh_token" and code in ("invalid_grant", "invalid_request"):
                return AuthenticationError(
                    f"The identity provider refused the refresh token: {desc} ({code}).",
                    status=status,
                    body=response.text,
                    url=url,
                    hint="A new token is requested with the client credentials.",
                )
            return AuthenticationError(
                f"The identity provider at {url} refused the credentials of workgroup "
                f"{self._settings.client_id!r}: {desc} ({code}, HTTP {status}).",
                status=status,
                body=response.text,
                url=url,
                hint=_ADMIN_HINT,
            )
        if status == 404:
            return NotFound(
                f"No token endpoint at {url} (HTTP 404).",
                status=status,
                body=response.text,
                url=url,
                hint="auth_url must be the realm address, like https://<identity host>/realms/<realm>.",
            )
        if status in (400, 401):
            return AuthenticationError(
                f"The identity provider at {url} refused the token request (HTTP {status}).",
                status=status,
                body=response.text,
                url=url,
                hint=_ADMIN_HINT,
            )
        return _http.error_for_response(response, what=f"token request ({grant})")


class BearerAuth(requests.auth.AuthBase):
    """``requests`` auth: sets the bearer header from a :class:`TokenProvider`; on a 401 it forces a new token
    and re-sends the request once (the re-sent copy carries no hook, so a second 401 is returned as is).

    A streamed body is re-sent from its start when it is a :class:`~pm_notebook._http.StreamedBody` (each
    iteration streams afresh); a body that streams once (a generator, an open file) was used up by the
    first send, so its 401 is returned as is rather than re-sent truncated.
    """

    def __init__(self, provider: TokenProvider) -> None:
        self._provider = provider

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        token = self._provider.token()
        r.headers["Authorization"] = f"Bearer {token.access_token.reveal()}"
        # types-requests leaves register_hook unannotated
        r.register_hook("response", partial(self._on_response, token))  # type: ignore[no-untyped-call]
        return r

    def _on_response(self, token: Token, response: requests.Response, **kwargs: Any) -> requests.Response:
        if response.status_code != 401 or response.connection is None or _streams_once(response.request.body):
            return response
        logger.info("%s answered 401; renewing the token and retrying once", response.url.split("?", 1)[0])
        response.content  # noqa: B018 - drain the body so the connection returns to the pool
        response.close()
        self._provider.invalidate(token)
        fresh = self._provider.token()
        retry = response.request.copy()
        retry.headers["Authorization"] = f"Bearer {fresh.access_token.reveal()}"
        retry.hooks = {"response": []}
        second = response.connection.send(retry, **kwargs)
        second.history.append(response)
        second.request = retry
        return second


def _streams_once(body: object) -> bool:
    """Whether *body* is used up by one send: an iterator is its own iterator (generators, files)."""
    if body is None or isinstance(body, (bytes, str)):
        return False
    try:
        return iter(body) is body  # type: ignore[call-overload]
    except TypeError:
        return False
