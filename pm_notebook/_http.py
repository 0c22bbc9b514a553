"""The HTTP seam: one ``requests`` session per connection, a retry policy, and the only place where
``requests``/``urllib3`` exceptions become :class:`~pm_notebook.errors.PMError`.

Retry rules (a :class:`RetryPolicy` mounted on the session, never a hand-written loop):

- connection errors (refused, DNS, connect timeout) are retried for every method: the server never saw the
  request;
- read errors and the statuses 429, 502, 503, 504 are retried only for idempotent methods (GET, HEAD, ...):
  a POST such as a token request may already have been acted upon;
- ``Retry-After`` (seconds or HTTP date) is honoured for 429 and 503, capped at ``backoff_max``;
- when retries run out on a status, the last response is returned and mapped to
  :class:`~pm_notebook.errors.ServiceUnavailable` by :func:`raise_for_status`.

Every call has a ``(connect, read)`` timeout and is logged at DEBUG as ``METHOD url -> status (ms)``;
no header, body or query value is ever logged.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from urllib3.exceptions import ReadTimeoutError
from urllib3.util.retry import Retry

from ._secret import Masked, Secret
from .config import Settings
from .errors import (
    HTTPError,
    LicenceError,
    NotFound,
    PermissionDenied,
    PMError,
    ReplayMiss,
    RequestTimeout,
    ServiceUnavailable,
    TokenRejected,
    TransportError,
    redact,
)

__all__ = [
    "RETRY_STATUSES",
    "KeepingAdapter",
    "OfflineAdapter",
    "ReplayAdapter",
    "RetryPolicy",
    "SecretBasicAuth",
    "build_session",
    "error_for_response",
    "json_body",
    "raise_for_status",
    "retry_policy",
    "send",
    "send_read",
    "server_message",
    "sql_session",
    "StreamedBody",
    "stored_response",
    "use_answers",
]

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 502, 503, 504})
USER_AGENT = "pm_notebook"
#: the size of one read of a body streamed from the server
CHUNK_BYTES = 1 << 20


class RetryPolicy(Retry):
    """urllib3 ``Retry`` whose ``Retry-After`` wait is capped (asking for an hour gets ``cap`` seconds).

    :param retry_after_cap: longest honoured ``Retry-After``, in seconds.
    """

    def __init__(self, *args: Any, retry_after_cap: float = 30.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after_cap = retry_after_cap

    def new(self, **kw: Any) -> RetryPolicy:
        kw.setdefault("retry_after_cap", self.retry_after_cap)
        return super().new(**kw)

    def parse_retry_after(self, retry_after: str) -> float:
        return min(super().parse_retry_after(retry_after), self.retry_after_cap)


def retry_policy(retries: int = 3, backoff_factor: float = 0.5, backoff_max: float = 30.0) -> RetryPolicy:
    """The retry policy for one session (see the module docstring for the rules).

    >>> retry_policy(2).is_retry("GET", 503), retry_policy(2).is_retry("POST", 503)
    (True, False)
    """
    return RetryPolicy(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        other=0,
        redirect=3,
        allowed_methods=Retry.DEFAULT_ALLOWED_METHODS,
        status_forcelist=RETRY_STATUSES,
        backoff_factor=backoff_factor,
        backoff_max=backoff_max,
        respect_retry_after_header=True,
        raise_on_status=False,
        raise_on_redirect=False,
        retry_after_cap=backoff_max,
    )


def build_session(settings: Settings, *, retry: Retry | None = None) -> requests.Session:
    """A ``requests.Session`` with the retry policy of *settings* mounted for http and https.

    ``trust_env`` stays on so corporate proxies (``HTTPS_PROXY``) keep working, but ``.netrc`` credentials are
    never picked up: every request of ours carries its own auth.
    """
    session = requests.Session()
    policy = retry or retry_policy(settings.retries, settings.backoff_factor, settings.backoff_max)
    adapter = HTTPAdapter(max_retries=policy)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    session.headers["Accept"] = "application/json"
    session.auth = _NoNetrc()
    return session


class _SqlSession(requests.Session):
    """A session for the SQL transports, which send hundreds of requests per query (one Avatica ``fetch``
    per frame).

    requests reads the environment (proxies and ``NO_PROXY``, the CA bundle variables) on every request,
    walking all of ``os.environ`` twice, a large share of a ``fetch``'s cost on loopback (see
    ``bench/README.md``). Here that lookup is made once per scheme and host and kept for the session's life
    (a new connection reads the environment again). ``.netrc`` is never read, as in :func:`build_session`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.headers["User-Agent"] = USER_AGENT
        self.auth = _NoNetrc()
        self._environment: dict[Any, Any] = {}

    def merge_environment_settings(self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any) -> Any:
        try:
            parts = urlsplit(url)
            key = (parts.scheme, parts.netloc, tuple(sorted((proxies or {}).items())), stream, verify, cert)
            hash(key)
        except (TypeError, ValueError):  # an unhashable setting: no caching
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        settings: Any = self._environment.get(key)
        if settings is None:
            settings = super().merge_environment_settings(url, proxies, stream, verify, cert)
            self._environment[key] = settings
        return {**settings, "proxies": dict(settings["proxies"])}


def sql_session() -> requests.Session:
    """A private HTTP session for one SQL transport (see :class:`_SqlSession`)."""
    return _SqlSession()


class StoredAnswers(Protocol):
    """Where a connection keeps the REST answers it replays (:class:`pm_notebook._offline.Offline`)."""

    def wants_answers(self) -> bool:
        """Whether the answers received now are to be kept (the caching setting, on this thread)."""

    def keep_answer(self, path: str, params: Any, status: int, content_type: str, body: bytes) -> None:
        """Keep the answer of ``GET {api}{path}`` with *params*."""

    def answer(self, path: str, params: Any, what: str) -> tuple[int, str, bytes]:
        """The kept answer of ``GET {api}{path}``: status, content type, body; else raise ReplayMiss."""


# What the current send() is for ("list projects"): the replay adapter names it in its messages.
_WHAT: ContextVar[str] = ContextVar("pm_notebook_http_what", default="this call")
# Whether the current send() must reach the service: an answer that changes while one watches (an ingestion
# status) or a write is never kept for replay, nor answered from kept answers.
_LIVE: ContextVar[bool] = ContextVar("pm_notebook_http_live", default=False)


def _refused(request: requests.PreparedRequest) -> ReplayMiss:
    return ReplayMiss(
        f"Replay mode sends no request, but {request.method} {_path(request.url)} was needed "
        "and nothing stored answers it.",
        hint="Run the notebook once against the service with caching on (PM_CACHE=1), then replay it.",
    )


class OfflineAdapter(BaseAdapter):
    """Mounted on a replay connection's session: every request is refused before any socket is opened."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        raise _refused(request)

    def close(self) -> None:
        """Nothing to release: this adapter never opens a connection."""


class ReplayAdapter(OfflineAdapter):
    """Mounted on the REST API's root in replay: a GET is answered from the kept answers, with no socket
    (and, see :func:`send`, with no token either); anything else is refused."""

    def __init__(self, api_url: str, answers: StoredAnswers) -> None:
        super().__init__()
        self._api_url = api_url
        self._answers = answers

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        if request.method != "GET" or _LIVE.get():
            raise _refused(request)
        path, params = _route(self._api_url, request.url or "")
        status, content_type, body = self._answers.answer(path, params, _WHAT.get())
        response = stored_response(request.url or "", status, content_type, body)
        response.request = request
        return response


class KeepingAdapter(HTTPAdapter):
    """Mounted on the REST API's root online: sends as usual, and keeps a GET's answer for replay while the
    connection caches. A 200 or a 404 is an answer worth replaying; anything else (401, 5xx) is not kept."""

    def __init__(self, api_url: str, answers: StoredAnswers, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._api_url = api_url
        self._answers = answers

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        response = super().send(request, *args, **kwargs)
        keep = request.method == "GET" and response.status_code in (200, 404) and not _LIVE.get()
        if keep and self._answers.wants_answers():
            path, params = _route(self._api_url, request.url or "")
            content_type = response.headers.get("Content-Type", "application/json")
            self._answers.keep_answer(path, params, response.status_code, content_type, response.content)
        return response


def _route(api_url: str, url: str) -> tuple[str, list[tuple[str, str]]]:
    """A request's path under the API root and its query parameters, as the REST client gave them."""
    parts = urlsplit(url)
    root = urlsplit(api_url).path.rstrip("/")
    return unquote(parts.path)[len(root) :], parse_qsl(parts.query, keep_blank_values=True)


def use_answers(
    session: requests.Session, settings: Settings, answers: StoredAnswers, *, replay: bool
) -> None:
    """Mount the adapters of a connection with an offline cache on *session*.

    Online, every request goes out with the retry policy, and the REST API's GETs pass a
    :class:`KeepingAdapter`; in replay, the REST API's GETs are answered by a :class:`ReplayAdapter` and
    every other request is refused before any socket is opened.
    """
    root = settings.api_url.rstrip("/") + "/"
    if replay:
        outside: BaseAdapter = OfflineAdapter()
        api: BaseAdapter = ReplayAdapter(settings.api_url, answers)
    else:
        policy = retry_policy(settings.retries, settings.backoff_factor, settings.backoff_max)
        outside = HTTPAdapter(max_retries=policy)
        api = KeepingAdapter(settings.api_url, answers, max_retries=policy)
    session.mount("http://", outside)
    session.mount("https://", outside)
    session.mount(root, api)


def stored_response(url: str, status: int, content_type: str, body: bytes) -> requests.Response:
    """A ``requests.Response`` rebuilt from a stored exchange (offline replay), read like a received one."""
    response = requests.Response()
    response.status_code = status
    response._content = body  # the documented way to give a Response its body without a socket
    response.headers["Content-Type"] = content_type
    response.url = url
    response.encoding = "utf-8"
    response.reason = "replayed"
    return response


class StreamedBody:
    """A request body streamed in pieces (chunked transfer encoding) that can be sent again from its start.

    Each iteration calls *chunks* for a fresh stream, so when :class:`~pm_notebook.auth.BearerAuth` re-sends
    a request after a 401 the whole body goes again; a generator, which only streams once, cannot be re-sent.
    """

    def __init__(self, chunks: Callable[[], Iterator[bytes]]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks()

    def __repr__(self) -> str:
        return "<StreamedBody>"


def _path(url: str | None) -> str:
    """The URL without its query string (which may carry values not meant for messages)."""
    return (url or "").split("?", 1)[0]


class _NoNetrc(requests.auth.AuthBase):
    """Session-level auth that adds nothing: stops requests from reading ``~/.netrc`` for our hosts."""

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        return r


def send(
    session: requests.Session,
    method: str,
    url: str,
    *,
    timeout: tuple[float, float],
    what: str,
    live: bool = False,
    **kwargs: Any,
) -> requests.Response:
    """Send one request; translate every ``requests`` failure into a :class:`PMError` naming *url*.

    :param what: a few words for messages and logs ("list projects", "token request").
    :param live: the answer must come from the service: never kept for replay nor answered from kept answers.
    :param kwargs: passed to ``session.request`` (``auth``, ``data``, ``params``, ``headers``, ``json``).
    :raises TransportError: the host could not be reached (refused, DNS, reset).
    :raises RequestTimeout: no answer within *timeout*.
    :raises ServiceUnavailable: retries ran out.
    """
    start = time.perf_counter()
    described, lively = _WHAT.set(what), _LIVE.set(live)
    try:
        if not live and isinstance(session.get_adapter(url), ReplayAdapter):
            kwargs["auth"] = None  # answered from the kept answers: no token is asked for it
        response = session.request(method, url, timeout=timeout, **kwargs)
    except PMError:
        raise
    except requests.exceptions.RequestException as exc:
        raise _translate(exc, method, url, start, timeout, what) from None
    finally:
        _WHAT.reset(described)
        _LIVE.reset(lively)
    _log(method, url, response.status_code, start, None)
    return response


def send_read(
    session: requests.Session,
    method: str,
    url: str,
    *,
    timeout: tuple[float, float],
    what: str,
    **kwargs: Any,
) -> tuple[requests.Response, bytes]:
    """:func:`send`, then the whole body read in 1 MiB pieces: the response and its bytes.

    ``response.content`` reads 10 kB at a time, which costs more than the request itself on a large Avatica
    frame (measured in ``bench/README.md``). Failures while reading become the same errors as in :func:`send`.
    """
    start = time.perf_counter()
    try:
        response = session.request(method, url, timeout=timeout, stream=True, **kwargs)
        try:
            body = b"".join(response.iter_content(CHUNK_BYTES))
        finally:
            response.close()
    except PMError:
        raise
    except requests.exceptions.RequestException as exc:
        raise _translate(exc, method, url, start, timeout, what) from None
    _log(method, url, response.status_code, start, None)
    return response, body


def _translate(
    exc: requests.exceptions.RequestException,
    method: str,
    url: str,
    start: float,
    timeout: tuple[float, float],
    what: str,
) -> PMError:
    """The :class:`PMError` for one ``requests`` failure (requests reports a read timeout that ran out of
    retries as a ``ConnectionError``, so the cause chain decides)."""
    _log(method, url, None, start, type(exc).__name__)
    chain = _chain(exc)
    if isinstance(exc, requests.exceptions.Timeout) or any(
        isinstance(e, (ReadTimeoutError, TimeoutError)) for e in chain
    ):
        return RequestTimeout(
            f"{what}: no answer from {url} within {_fmt_timeout(timeout, exc)} s.",
            hint="The service may be overloaded; try again, or raise timeout= in connect().",
            url=url,
        )
    if isinstance(exc, requests.exceptions.RetryError):
        return ServiceUnavailable(
            f"{what}: {url} kept failing after every retry ({_reason(chain)}).",
            hint="The service is overloaded or down; wait a moment and try again.",
            url=url,
        )
    if isinstance(exc, requests.exceptions.ConnectionError):
        return TransportError(
            f"{what}: could not reach {url} ({_reason(chain)}).",
            hint="Check the URL, your network or VPN, and that the service is up.",
            url=url,
        )
    return TransportError(f"{what}: request to {url} failed ({_reason(chain)}).", url=url)


def _fmt_timeout(timeout: tuple[float, float], exc: Exception) -> str:
    return f"{timeout[0]:g}" if isinstance(exc, requests.exceptions.ConnectTimeout) else f"{timeout[1]:g}"


def _chain(exc: BaseException) -> list[BaseException]:
    """*exc* and its causes, outermost first (urllib3 keeps the cause in ``.reason``)."""
    chain = [exc]
    while len(chain) < 10:
        inner = chain[-1]
        nxt = getattr(inner, "reason", None) or inner.__cause__ or inner.__context__
        if not isinstance(nxt, BaseException) or any(nxt is e for e in chain):
            break
        chain.append(nxt)
    return chain


def _reason(chain: list[BaseException]) -> str:
    """A short, secret-free reason: the innermost exception's class and redacted text, no object addresses."""
    inner = chain[-1]
    text = inner.strerror if isinstance(inner, OSError) and inner.strerror else str(inner)
    if " object at 0x" in text:
        text = text.split(": ", 1)[-1] if ": " in text else ""
    return redact(f"{type(inner).__name__}: {text}" if text else type(inner).__name__)[:300]


def _log(method: str, url: str, status: int | None, start: float, failure: str | None) -> None:
    if logger.isEnabledFor(logging.DEBUG):
        ms = (time.perf_counter() - start) * 1000
        outcome = status if failure is None else f"failed ({failure})"
        logger.debug("%s %s -> %s (%.1f ms)", method, url.split("?", 1)[0], outcome, ms)


def json_body(response: requests.Response, *, what: str) -> Any:
    """The JSON document of a successful *response*; a clear :class:`HTTPError` when it is not JSON."""
    try:
        return response.json()
    except (ValueError, json.JSONDecodeError):
        raise HTTPError(
            f"{what}: {response.url} answered {response.status_code} with a body that is not JSON.",
            status=response.status_code,
            body=response.text[:500],
            hint="Check that base_url points to the process-mining API, not a web page or proxy.",
            url=response.url,
        ) from None


def server_message(response: requests.Response) -> str:
    """The server's error text: ``error_description``/``message``/``error`` of a JSON body, or the text."""
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:300]
    if isinstance(data, dict):
        for key in ("error_description", "message", "detail", "error", "errorMessage"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value[:300]
    return str(data)[:300]


def error_for_response(
    response: requests.Response,
    *,
    what: str,
    not_found: Callable[[], tuple[str, str]] | None = None,
) -> HTTPError:
    """Build the :class:`HTTPError` subclass matching an unsuccessful *response* of the public API.

    :param not_found: returns ``(message, hint)`` for a 404, so callers can say *what* was not found.
    """
    status = response.status_code
    url = response.url
    detail = server_message(response)
    body = response.text[:2000]
    kw: dict[str, Any] = {"status": status, "body": body, "url": url}
    if status == 401:
        return TokenRejected(
            f"{what}: the API refused the access token even after a fresh one was obtained ({detail}).",
            hint="The workgroup's credentials may have been revoked or the token lacks a role; "
            "ask a workgroup administrator to check the Open API settings.",
            **kw,
        )
    if status == 403:
        if "licen" in detail.lower() or "licen" in body.lower():
            return LicenceError(
                f"{what}: this workgroup has no licence for the public API ({detail}).",
                hint="Using the public API requires a purchased licence; ask your workgroup administrator "
                "or your account manager to enable it.",
                **kw,
            )
        return PermissionDenied(
            f"{what}: access forbidden for this workgroup ({detail}).",
            hint="Check that the workgroup may see this resource, and that the public-API licence is active.",
            **kw,
        )
    if status == 404:
        message, hint = not_found() if not_found else (f"{what}: {url} was not found ({detail}).", "")
        return NotFound(message, hint=hint or None, **kw)
    if status in RETRY_STATUSES or status >= 500:
        retry_after = response.headers.get("Retry-After")
        extra = f"; the server asks to retry after {retry_after} s" if retry_after else ""
        return ServiceUnavailable(
            f"{what}: the service answered {status} ({detail}) and kept failing after the retries{extra}.",
            hint="The service is overloaded or down; wait a moment and try again.",
            **kw,
        )
    return HTTPError(f"{what}: unexpected answer {status} from {url} ({detail}).", **kw)


def raise_for_status(
    response: requests.Response,
    *,
    what: str,
    not_found: Callable[[], tuple[str, str]] | None = None,
) -> requests.Response:
    """Return *response* when it is a 2xx, else raise the matching :class:`HTTPError` (see
    :func:`error_for_response`)."""
    if 200 <= response.status_code < 300:
        return response
    raise error_for_response(response, what=what, not_found=not_found)


class SecretBasicAuth(requests.auth.AuthBase):
    """HTTP Basic credentials whose password stays a :class:`~pm_notebook._secret.Secret` until the request
    is prepared; the header value is :class:`~pm_notebook._secret.Masked`, so no frame's locals show it."""

    def __init__(self, user: str, password: Secret) -> None:
        self._user = user
        self._password = Secret(password)

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        # latin-1 as requests' HTTPBasicAuth; no local holds the clear text
        request.headers["Authorization"] = Masked(
            "Basic " + base64.b64encode(f"{self._user}:{self._password.reveal()}".encode("latin-1")).decode()
        )
        return request

    def __repr__(self) -> str:
        return f"SecretBasicAuth(user={self._user!r}, password=Secret('***'))"
