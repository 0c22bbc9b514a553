"""The one error hierarchy of pm_notebook.

Every failure the service or the user's input can cause is a :class:`PMError`;
catching ``PMError`` never hides a bug in our code or in the caller's::

    PMError                         root: what happened + what to do (``hint``)
    ├── ConfigurationError          a connection value is missing or malformed (also a ValueError)
    ├── DriverError                 no JVM / JDBC driver jar could be found or started
    ├── TransportError              the service could not be reached (DNS, refused, reset, timeout)
    │   └── RequestTimeout          no answer within the configured timeout
    ├── HTTPError                   the service answered with an unexpected status
    │   ├── AuthenticationError     the identity provider refused the credentials (401 / invalid_client)
    │   ├── TokenRejected           the API kept refusing a freshly issued token (401 after re-auth)
    │   ├── LicenceError            the workgroup has no public-API licence (403)
    │   ├── PermissionDenied        any other 403
    │   ├── NotFound                404: unknown project, or one this workgroup may not see
    │   ├── ServiceUnavailable      429 / 5xx still failing after the retries
    │   └── UploadError             a file was refused (size, type) or its ingestion FAILED (``reason``)
    ├── MappingError                an event log's columns could not be mapped (also a ValueError)
    ├── QueryError                  the SQL engine refused or failed a statement (sqlstate, error_code)
    │   ├── QueryCancelled          the statement was cancelled (KeyboardInterrupt)
    │   └── QueryTimeout            the statement ran past its time limit (``limit_ms``) and was stopped
    ├── SchemaError                 a project's tables lack a column an analysis needs (also a LookupError)
    ├── MissingDependency           an optional extra is not installed (also an ImportError)
    ├── CacheError                  a stored result (offline cache) is unreadable, corrupted or partial
    └── ReplayMiss                  replay mode, and nothing stored answers this SQL / these parameters

Misuse of the API (using a closed connection, say) raises :class:`ClosedError`, a
``RuntimeError`` and deliberately *not* a ``PMError``.

No field of any error ever holds a secret: messages are built from URLs, statuses
and server texts only, and :func:`redact` scrubs anything that looks like a bearer
token or a JWT from server-provided text before it is stored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "AuthenticationError",
    "CacheError",
    "ClosedError",
    "ConfigurationError",
    "DriverError",
    "HTTPError",
    "LicenceError",
    "MappingError",
    "MissingDependency",
    "NotFound",
    "PMError",
    "PermissionDenied",
    "QueryCancelled",
    "QueryError",
    "QueryTimeout",
    "ReplayMiss",
    "RequestTimeout",
    "SchemaError",
    "ServiceUnavailable",
    "TokenRejected",
    "TransportError",
    "UploadError",
    "redact",
]

# A JWT is three base64url segments separated by dots; the first starts with "eyJ" ('{"').
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+")
_SECRET_KV = re.compile(
    r"(?i)((?:client_secret|password|access_token|refresh_token)[\"']?\s*[=:]\s*[\"']?)[^\s&\"',}]+"
)


def redact(text: str) -> str:
    """Return *text* with JWTs, bearer values and ``secret=...`` pairs replaced by ``***``.

    >>> redact("Authorization: Bearer abc.def.ghi")
    'Authorization: Bearer ***'
    """
    text = _JWT.sub("***", text)
    text = _BEARER.sub(r"\1***", text)
    return _SECRET_KV.sub(r"\1***", text)


class PMError(Exception):
    """Root of every error pm_notebook raises for a service- or input-caused failure.

    :param message: what happened, in plain words.
    :param hint: what to do about it; appended to ``str(error)``.
    :param url: the URL that was being called, if any (never carries credentials).
    """

    def __init__(self, message: str, *, hint: str | None = None, url: str | None = None) -> None:
        self.message = redact(message)
        self.hint = hint
        self.url = url
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.message}\n  Hint: {self.hint}" if self.hint else self.message

    def __reduce__(self) -> tuple[Callable[[type[PMError], dict[str, Any]], PMError], tuple[Any, ...]]:
        # keep pickling (multiprocessing, IPython) working with keyword fields
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls: type[PMError], state: dict[str, Any]) -> PMError:
    err = cls.__new__(cls)
    Exception.__init__(err, state.get("message", ""))
    err.__dict__.update(state)
    return err


class ConfigurationError(PMError, ValueError):
    """A connection value is missing or malformed; fix the argument, env var or .env entry it names."""


class DriverError(PMError):
    """The JDBC path cannot run: no Java runtime, or no verified Avatica driver jar."""


class TransportError(PMError):
    """The service could not be reached at all (name resolution, refused or reset connection)."""


class RequestTimeout(TransportError):
    """The service did not answer within the configured timeout; safe to retry for reads."""


class HTTPError(PMError):
    """The service answered with a status we did not expect.

    :param status: the HTTP status code.
    :param body: the (redacted, truncated) response text, for diagnostics.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str | None = None,
        hint: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, url=url)
        self.status = status
        self.body = redact(body)[:2000] if body else body


class AuthenticationError(HTTPError):
    """The identity provider refused the client id / secret (or the refresh token)."""


class TokenRejected(HTTPError):
    """The public API answered 401 even to a freshly issued token."""


class LicenceError(HTTPError):
    """The workgroup has no licence for the public API (HTTP 403)."""


class PermissionDenied(HTTPError):
    """The service forbids this call for this workgroup (HTTP 403, not a licence matter)."""


class NotFound(HTTPError):
    """The resource does not exist, or this workgroup may not see it (HTTP 404)."""


class ServiceUnavailable(HTTPError):
    """The service kept answering 429/502/503/504 after every allowed retry."""


class UploadError(HTTPError):
    """A file upload was refused (over the size limit, unsupported type) or its ingestion FAILED.

    :param reason: the service's reason, as it gave it.
    :param file_id: the uploaded file's id, when the service gave one.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        file_id: str | None = None,
        status: int | None = None,
        body: str | None = None,
        hint: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message, status=status, body=body, hint=hint, url=url)
        self.reason = redact(reason) if reason else reason
        self.file_id = file_id


class MappingError(PMError, ValueError):
    """An event log's columns could not be mapped (no case id column, a column named twice, ...)."""


class QueryError(PMError):
    """The SQL engine refused or failed a statement.

    :param sql: the statement text (no parameter values: those may be sensitive).
    :param sqlstate: the five-character SQLSTATE, when the server gave one.
    :param error_code: the vendor error code (Avatica: -1 generic, 1 no connection, 2 unauthorized).
    :param position: ``(line, column)`` of the error in ``sql`` (1-based), when known.
    :param server_message: the server's own text, unwrapped from any driver or Java framing.
    """

    def __init__(
        self,
        message: str,
        *,
        sql: str | None = None,
        sqlstate: str | None = None,
        error_code: int | None = None,
        position: tuple[int, int] | None = None,
        server_message: str | None = None,
        hint: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, url=url)
        self.sql = sql
        self.sqlstate = sqlstate
        self.error_code = error_code
        self.position = position
        self.server_message = redact(server_message) if server_message else server_message


class QueryCancelled(QueryError):
    """The statement was cancelled before it finished; the connection stays usable."""


class QueryTimeout(QueryError):
    """The statement ran longer than its time limit and the server stopped it; the connection stays usable.

    Not a service outage: running it again hits the same limit. Raise the limit for this query with the query
    context (``context={"timeout": <ms>}``, up to the server's maximum) or narrow the query.

    :param limit_ms: the time limit in milliseconds, when the server or the context said it.
    """

    def __init__(self, message: str, *, limit_ms: int | None = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.limit_ms = limit_ms


class CacheError(PMError):
    """A result stored in the offline cache cannot be used: unreadable, or its content hash does not match."""


class ReplayMiss(PMError):
    """Replay mode found no stored result for this call; the message says what differs from what is stored."""


class ClosedError(RuntimeError):
    """An object was used after ``close()``; this is a programming error, not a service failure."""


class SchemaError(PMError, LookupError):
    """A project's table has no column for a role or dimension an analysis needs; the message names it."""


class MissingDependency(PMError, ImportError):
    """An optional extra is needed for this feature; the message names the ``pip install`` that adds it."""
