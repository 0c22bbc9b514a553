"""The one seam where SQL-side failures become :mod:`pm_notebook.errors` classes.

Avatica error objects, Druid SQL error bodies, HTTP failures of the SQL endpoints and Java exceptions (from
the JDBC driver, through JPype) all end here. Users never see a Java stack trace: only the server's own
message.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import (
    AuthenticationError,
    HTTPError,
    PMError,
    QueryCancelled,
    QueryError,
    QueryTimeout,
    ServiceUnavailable,
    TransportError,
)

__all__ = ["from_avatica", "from_druid", "from_http_status", "from_java", "server_text", "timeout_limit"]

# SQLSTATE class (first two characters) -> error class. Druid sends "00000" for most failures, so the Avatica
# error code below decides first; this table covers servers that send real SQLSTATEs.
_SQLSTATE_CLASSES: dict[str, type[PMError]] = {
    "08": TransportError,  # connection exception
    "28": AuthenticationError,  # invalid authorization specification
    "57": QueryCancelled,  # operator intervention (query cancelled)
}
_UNAUTHORIZED_CODE = 2  # Avatica/Druid errorCode for bad credentials ("00002")
_NO_CONNECTION_CODE = 1

_AUTH_HINT = "Check the client id (JDBC login) and client secret (JDBC password) of the workgroup."

# Framing the Java driver puts around the server's text, outermost first.
_FRAMES = (
    re.compile(r"^[\w$]+(?:\.[\w$]+)+(?:Exception|Error):\s*", re.S),  # java.sql.SQLException: ...
    re.compile(r"^Error -?\d+ \(\w*\) : ", re.S),  # Avatica "Error -1 (00000) : "
    re.compile(r"^Error while executing SQL \".*?\": ", re.S),
    re.compile(r"^while preparing SQL: ", re.S),
    re.compile(r"^Remote driver error: ", re.S),
    # Druid's Avatica errorMessage is the exception chain "QueryInterruptedException: msg -> DruidException:
    # msg -> ...": the first link's message is the server's own text
    re.compile(r" -> [\w$.]*Exception: .*\Z", re.S),
    re.compile(r"^[A-Z][\w$]*Exception: ", re.S),  # "ResourceLimitExceededException: ..." (no package)
)
# Calcite's "line 1, column 8" and Druid's "(line [1], column [8])".
_POSITION = re.compile(r"line \[?(\d+)\]?, column \[?(\d+)\]?")


# Druid's time-limit failures: the legacy error code "Query timeout", the QueryTimeoutException class, its
# "Query [id] timed out." message; the sandbox words it "Query timeout: the statement ran longer than 60 s".
_TIMEOUT = re.compile(r"Query timeout|QueryTimeoutException|Query \[[^\]]*\] timed out", re.I)
_LIMIT = re.compile(r"longer than (\d+(?:\.\d+)?) ?s\b")
# Druid's subquery guardrail (ResourceLimitExceededException), in the wordings of Druid 0.20-27 and 28+.
_SUBQUERY_LIMIT = re.compile(r"[Ss]ubquer(?:y|ies) generated results beyond maximum\[(\d+)\]")
_TIMEOUT_HINT = (
    "Raise the limit for this query with the query context, e.g. context={{'timeout': {suggest}}} "
    "(milliseconds, up to the server's maximum), or narrow the query: a shorter time range, a filter, "
    "fewer groups."
)


def timeout_limit(text: str) -> int | None:
    """The time limit in ms a timeout message states (the sandbox's "longer than 60 s"), else ``None``."""
    match = _LIMIT.search(text)
    return round(float(match.group(1)) * 1000) if match else None


def _timeout(
    text: str,
    *,
    sql: str | None,
    url: str | None,
    limit_ms: int | None = None,
    sqlstate: str | None = None,
    code: int | None = None,
) -> QueryTimeout:
    limit = limit_ms if limit_ms is not None else timeout_limit(text)
    said = f" (limit {limit:,} ms)" if limit is not None else ""
    suggest = 2 * limit if limit else 300000
    return QueryTimeout(
        f"The query ran past its time limit{said} and the server stopped it: {text}",
        limit_ms=limit,
        sql=sql,
        sqlstate=sqlstate,
        error_code=code,
        server_message=text,
        hint=_TIMEOUT_HINT.format(suggest=suggest),
        url=url,
    )


def _subquery_hint(text: str) -> str | None:
    match = _SUBQUERY_LIMIT.search(text)
    if match is None:
        return None
    limit = int(match.group(1))
    return (
        f"An IN (subquery) or a join on a subquery produced more than {limit:,} rows, which Druid must hold "
        "in the broker's memory. Filter the subquery further, rewrite it as an aggregate over a GROUP BY, or "
        f"raise the limit for this query with context={{'maxSubqueryRows': {2 * limit}}}."
    )


def server_text(message: str) -> str:
    """Strip Java/Avatica framing and stack frames off *message*, keeping the server's own text."""
    text = message.split("\n\tat ", 1)[0].strip()
    changed = True
    while changed:
        changed = False
        for pattern in _FRAMES:
            stripped = pattern.sub("", text, count=1)
            if stripped != text:
                text, changed = stripped, True
    return text.strip()


def _position(text: str) -> tuple[int, int] | None:
    match = _POSITION.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _query_error(
    text: str, *, sql: str | None, sqlstate: str | None, code: int | None, url: str | None
) -> PMError:
    if code == _UNAUTHORIZED_CODE or sqlstate == "00002" or text.strip().lower() == "unauthorized":
        return AuthenticationError(
            f"The SQL endpoint refused the credentials: {text}", status=None, hint=_AUTH_HINT, url=url
        )
    cls = _SQLSTATE_CLASSES.get((sqlstate or "")[:2], QueryError)
    if cls is QueryCancelled or "cancel" in text.lower() and "QueryInterrupted" in text:
        return QueryCancelled(
            f"The query was cancelled: {text}",
            sql=sql,
            sqlstate=sqlstate,
            error_code=code,
            server_message=text,
            url=url,
        )
    if cls is not QueryError:
        return cls(text, url=url)
    if _TIMEOUT.search(text):
        return _timeout(text, sql=sql, url=url, sqlstate=sqlstate, code=code)
    hint = _subquery_hint(text)
    if code == _NO_CONNECTION_CODE:
        hint = "The server forgot the SQL connection (idle timeout or restart); run the query again."
    return QueryError(
        text,
        sql=sql,
        sqlstate=sqlstate,
        error_code=code,
        position=_position(text),
        server_message=text,
        hint=hint,
        url=url,
    )


def from_avatica(error: dict[str, Any], *, sql: str | None = None, url: str | None = None) -> PMError:
    """An Avatica ``{"response":"error",...}`` object → the matching error (server message, no stack
    trace)."""
    message = error.get("errorMessage")
    exceptions = error.get("exceptions") or []
    if not message:
        message = server_text(exceptions[0]) if exceptions else "unknown server error"
    if exceptions and "QueryTimeoutException" in str(exceptions[0]).split("\n", 1)[0]:
        return _timeout(
            server_text(str(message)),
            sql=sql,
            url=url,
            sqlstate=error.get("sqlState"),
            code=error.get("errorCode"),
        )
    return _query_error(
        server_text(str(message)),
        sql=sql,
        sqlstate=error.get("sqlState"),
        code=error.get("errorCode"),
        url=url,
    )


def from_druid(status: int, body: Any, *, sql: str | None = None, url: str | None = None) -> PMError:
    """A Druid SQL API error answer (JSON ``error``/``errorMessage``/``errorClass``) → the matching error."""
    druid_body = isinstance(body, dict)
    if isinstance(body, dict):
        text = str(body.get("errorMessage") or body.get("error") or body)
        code = body.get("errorCode")
        category = str(body.get("category") or body.get("error") or "")
        legacy = " ".join(str(body.get(k) or "") for k in ("error", "errorClass"))
    else:
        text, code, category, legacy = str(body or f"HTTP {status}"), None, "", ""
    if status in (401, 403):
        return AuthenticationError(
            f"The SQL endpoint refused the credentials: {text}", status=status, hint=_AUTH_HINT, url=url
        )
    if "cancel" in category.lower() or "cancel" in str(code or "").lower():
        return QueryCancelled(f"The query was cancelled: {text}", sql=sql, server_message=text, url=url)
    # Druid answers a query past its time limit with 504 and category TIMEOUT (legacy "Query timeout",
    # QueryTimeoutException): not an outage, and running it again meets the same limit.
    if druid_body and (category.upper() == "TIMEOUT" or _TIMEOUT.search(legacy) or _TIMEOUT.search(text)):
        return _timeout(text, sql=sql, url=url)
    if status in (429, 502, 503, 504):
        return from_http_status(status, text, url=url)
    return QueryError(
        text,
        sql=sql,
        error_code=None,
        position=_position(text),
        server_message=text,
        hint=_subquery_hint(text),
        url=url,
    )


def from_http_status(status: int, body: str, *, url: str | None = None) -> PMError:
    """An unexpected HTTP status from a SQL endpoint."""
    if status in (401, 403):
        return AuthenticationError(
            f"The SQL endpoint answered HTTP {status}.", status=status, body=body, hint=_AUTH_HINT, url=url
        )
    if status == 504:
        # A gateway (router, proxy, load balancer) gave up waiting for the broker: the query runs longer
        # than the gateway waits, which running it again does not change.
        return QueryTimeout(
            "A gateway in front of the SQL endpoint stopped waiting for the answer (HTTP 504): the query "
            "runs longer than the gateway waits.",
            server_message=body[:500] or None,
            hint="Narrow the query (a shorter time range, a filter, fewer groups), or ask the service's "
            "operators about the gateway's time limit.",
            url=url,
        )
    if status in (429, 502, 503):
        return ServiceUnavailable(
            f"The SQL endpoint is unavailable (HTTP {status}).",
            status=status,
            body=body,
            hint="Try again in a moment.",
            url=url,
        )
    return HTTPError(f"The SQL endpoint answered HTTP {status}.", status=status, body=body, url=url)


def from_java(exc: BaseException, *, sql: str | None = None, url: str | None = None) -> PMError:
    """A Java exception raised through JPype (or jaydebeapi's wrapper of one) → the matching error.

    Reads ``getErrorCode``/``getSQLState`` from the first ``SQLException`` of the cause chain when there is
    one.
    """
    code: int | None = None
    state: str | None = None
    texts: list[str] = []
    current: Any = exc
    seen = 0
    while current is not None and seen < 10:
        seen += 1
        get_message = getattr(current, "getMessage", None)
        texts.append(str(get_message()) if callable(get_message) else str(current))
        if code is None and hasattr(current, "getErrorCode") and hasattr(current, "getSQLState"):
            try:
                code, state = int(current.getErrorCode()), current.getSQLState()
                state = str(state) if state is not None else None
            except Exception:  # a proxy without a live JVM: keep what we have
                code, state = None, None
        get_cause = getattr(current, "getCause", None)
        current = get_cause() if callable(get_cause) else None
    text = next((server_text(t) for t in texts if "Remote driver error" in t), server_text(texts[0]))
    refused = re.search(r"HTTP/(\d+)", text) if "Failed to execute HTTP Request, got HTTP/" in text else None
    if refused is not None:
        return from_http_status(int(refused.group(1)), "", url=url)
    if any(
        marker in t
        for t in texts
        for marker in (
            "ConnectException",
            "Connection refused",
            "UnknownHostException",
            "NoHttpResponseException",
        )
    ):
        return TransportError(
            f"Cannot reach the SQL endpoint {url}.",
            url=url,
            hint="Check the host and port of the JDBC URL and the network.",
        )
    return _query_error(text, sql=sql, sqlstate=state, code=code, url=url)
