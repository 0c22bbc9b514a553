"""The SQL port's one error type, rendered by each protocol in its own words.

Every refusal or failure of the SQL layer is a :class:`SqlError`. It knows how Druid's SQL HTTP API
(status and the ``druidException`` body: ``error``, ``errorCode``, ``persona``, ``category``,
``errorMessage``, ``context``) and Avatica (``errorCode``, ``sqlState``, ``severity``) would report it, so
the protocol modules only format it. Messages never contain credentials: they are built from the SQL text,
names and the engine's own messages.

The constructors :func:`invalid_sql`, :func:`not_planned` and :func:`unexpected_token` give refusals the
wording and fields Apache Druid (29.x, see ``docs/druid-dialect.md``) gives them: Calcite's validation
messages end in `` (line [l], column [c])`` with the position repeated in ``context``; planning refusals read
``Query could not be planned. A possible reason is [...]`` (``errorCode`` ``general``, persona ``ADMIN``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SqlError",
    "invalid_sql",
    "not_planned",
    "subquery_bytes_limit",
    "subquery_limit",
    "unexpected_token",
]

# kind -> (HTTP status, Druid errorCode, Druid category, Avatica errorCode, SQLSTATE, Avatica severity)
_KINDS: dict[str, tuple[int, str, str, int, str, str]] = {
    "invalid": (400, "invalidInput", "INVALID_INPUT", -1, "00000", "UNKNOWN"),
    "refused": (400, "invalidInput", "INVALID_INPUT", -1, "00000", "UNKNOWN"),
    "unsupported": (400, "invalidInput", "UNSUPPORTED", -1, "00000", "UNKNOWN"),
    "unauthorized": (401, "unauthorized", "UNAUTHORIZED", 2, "00002", "ERROR"),
    "no_connection": (400, "notFound", "NOT_FOUND", 1, "00000", "ERROR"),
    "timeout": (504, "timeout", "TIMEOUT", -1, "00000", "UNKNOWN"),
    "capacity": (429, "capacityExceeded", "CAPACITY_EXCEEDED", -1, "00000", "UNKNOWN"),
    # ResourceLimitExceededException: a BadQueryException (400), USER_ERROR -> INVALID_INPUT through
    # QueryExceptionCompat, whose errorCode is "legacyQueryException"
    "resource_limit": (400, "legacyQueryException", "INVALID_INPUT", -1, "00000", "UNKNOWN"),
    "cancelled": (500, "canceled", "CANCELED", -1, "57014", "UNKNOWN"),
    "runtime": (500, "general", "RUNTIME_FAILURE", -1, "00000", "UNKNOWN"),
    "internal": (500, "internal", "UNCATEGORIZED", -1, "00000", "UNKNOWN"),
}
# Druid still answers these with its legacy QueryException fields next to the new ones.
_LEGACY = {"timeout", "capacity", "cancelled", "internal", "unauthorized", "no_connection", "resource_limit"}


class SqlError(Exception):
    """A statement was refused or failed; ``kind`` selects how each protocol reports it.

    :param message: what went wrong and what to do, for the SQL user.
    :param kind: one of ``invalid`` (bad SQL), ``refused`` (forbidden construct), ``unsupported``
        (valid Druid SQL the sandbox cannot serve), ``unauthorized``, ``no_connection``,
        ``timeout``, ``capacity`` (a limit was hit), ``cancelled`` (by its client), ``runtime`` (the
        query failed while running), ``internal``.
    :param java_class: the exception class name shown in Avatica's ``exceptions`` list.
    :param code: Druid ``errorCode`` when it differs from the kind's (``general`` for planning errors).
    :param persona: Druid ``persona`` (``USER`` unless given).
    :param context: Druid's ``context`` object (``sourceType``, ``line``, ``column``...).
    """

    def __init__(
        self,
        message: str,
        kind: str = "invalid",
        *,
        java_class: str | None = None,
        code: str | None = None,
        persona: str = "USER",
        context: dict[str, str] | None = None,
    ) -> None:
        if kind not in _KINDS:
            raise ValueError(f"unknown SqlError kind {kind!r}")
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.code = code or _KINDS[kind][1]
        self.persona = persona
        self.context = dict(context or {})
        self.java_class = java_class or {
            "unauthorized": "org.apache.druid.server.security.ForbiddenException",
            "no_connection": "org.apache.calcite.avatica.NoSuchConnectionException",
            "timeout": "org.apache.druid.query.QueryTimeoutException",
            "cancelled": "org.apache.druid.query.QueryInterruptedException",
            "resource_limit": "org.apache.druid.query.ResourceLimitExceededException",
        }.get(kind, "org.apache.druid.error.DruidException")

    @property
    def http_status(self) -> int:
        """The status Druid's SQL HTTP API answers with."""
        return _KINDS[self.kind][0]

    def druid_body(self, query_id: str | None = None) -> dict[str, Any]:
        """The JSON error object of Druid's SQL HTTP API (``druidException``; legacy fields where Druid keeps
        them)."""
        context = dict(self.context)
        if query_id and self.kind in _LEGACY and self.kind != "resource_limit":  # Druid 33 names none there
            context.setdefault("sqlQueryId", query_id)
        body: dict[str, Any] = {
            "error": "druidException",
            "errorCode": self.code,
            "persona": self.persona,
            "category": _KINDS[self.kind][2],
            "errorMessage": self.message,
            "context": context,
        }
        if self.kind in _LEGACY:
            body["errorClass"] = self.java_class
            body["host"] = None
        if self.kind == "resource_limit":  # Druid's ErrorResponse of a legacy QueryException
            body["error"] = "Resource limit exceeded"
            body["host"] = "localhost"  # the broker that refused it (tests/druid/test_protocols.py)
            body["context"] = {
                "host": "localhost",
                "errorClass": self.java_class,
                "legacyErrorCode": "Resource limit exceeded",
                **context,
            }
        return body

    def avatica_body(self, rpc_metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """The Avatica ``ErrorResponse`` (every field the 1.26 driver knows, ``exceptions`` included), worded
        as Druid 33's endpoint words it (``tests/druid/test_protocols.py``): a Druid query exception is shown
        as ``Class{msg=..., code=..., class=..., host=null}`` with ``errorMessage`` ``Class: msg``; a planning
        or validation error (a ``DruidException``) comes wrapped in ``QueryInterruptedException`` and its
        ``errorMessage`` is the exception chain ``QueryInterruptedException: msg -> DruidException: msg``; an
        unknown connection has no message at all (``errorMessage`` null)."""
        _, _, _, code, state, severity = _KINDS[self.kind]
        simple = self.java_class.rsplit(".", 1)[-1]
        if self.kind == "no_connection":
            first, message = self.java_class, None
        elif self.kind in ("unauthorized", "internal"):  # (our own bug: kept plain, "Internal error: ...")
            first, message = f"{self.java_class}: {self.message}", self.message
        elif self.kind in _QUERY_EXCEPTIONS and simple != "DruidException":
            legacy = _QUERY_EXCEPTIONS[self.kind]
            first = f"{simple}{{msg={self.message}, code={legacy}, class={self.java_class}, host=null}}"
            message = f"{simple}: {self.message}"
        else:
            first = (
                f"QueryInterruptedException{{msg={self.message}, code=Unknown exception, "
                f"class={self.java_class}, host=null}}"
            )
            message = f"QueryInterruptedException: {self.message} -> {simple}: {self.message}"
        body: dict[str, Any] = {
            "response": "error",
            "exceptions": [f"{first}\n\tat pm_sandbox"],
            "errorMessage": message,
            "errorCode": code,
            "sqlState": state,
            "severity": severity,
        }
        if rpc_metadata is not None:
            body["rpcMetadata"] = rpc_metadata
        return body


# kind -> the legacy error code a Druid QueryException of that kind carries (shown in its Avatica text)
_QUERY_EXCEPTIONS = {
    "timeout": "Query timeout",
    "resource_limit": "Resource limit exceeded",
    "cancelled": "Query cancelled",
    "capacity": "Query capacity exceeded",
}


Position = tuple[int, int, int, int]  # line, column, end line, end column (1-based, as Calcite counts)


def invalid_sql(message: str, pos: Position | None = None, kind: str = "invalid") -> SqlError:
    """A Calcite validation error as Druid words it: ``<message> (line [l], column [c])``."""
    context = {"sourceType": "sql"}
    if pos is None:
        return SqlError(message, kind, context=context)
    line, col, end_line, end_col = pos
    context.update(line=str(line), column=str(col), endLine=str(end_line), endColumn=str(end_col))
    return SqlError(f"{message} (line [{line}], column [{col}])", kind, context=context)


def not_planned(reason: str) -> SqlError:
    """Druid's planner refusal: ``Query could not be planned. A possible reason is [<reason>]``."""
    return SqlError(
        f"Query could not be planned. A possible reason is [{reason}]",
        "invalid",
        code="general",
        persona="ADMIN",
    )


# Calcite reserved words that Druid 33's parser names as a keyword when it meets one where it cannot stand
# (``SELECT DISTINCT ON (…)``, ``USING SAMPLE``, ``ORDER BY ALL``: tests/druid/test_corpus.py).
_PARSER_KEYWORDS = frozenset(
    {"ALL", "AND", "AS", "BY", "FROM", "GROUP", "HAVING", "IN", "JOIN", "LIMIT", "NOT", "ON", "OR", "ORDER"}
    | {"SELECT", "UNION", "USING", "WHERE", "WITH"}
)


def unexpected_token(
    token: str, line: int, col: int, expected: list[str] | None = None, *, keyword: bool = True
) -> SqlError:
    """Druid's parse error: ``Received an unexpected token [t] (line [l], column [c]), acceptable options:
    [...]``; for a reserved keyword (unless *keyword* is false: Calcite's grammar names some as tokens, e.g.
    ``GROUP BY ALL``), ``Incorrect syntax near the keyword 'K' at line l, column c.``."""
    if keyword and token.upper() in _PARSER_KEYWORDS:
        return SqlError(
            f"Incorrect syntax near the keyword '{token.upper()}' at line {line}, column {col}.",
            "invalid",
            context={"sourceType": "sql", "line": str(line), "column": str(col), "token": token},
        )
    options = ", ".join(f'"{e}"' for e in expected or ["<EOF>"])
    return SqlError(
        f"Received an unexpected token [{token}] (line [{line}], column [{col}]), "
        f"acceptable options: [{options}]",
        "invalid",
        context={"sourceType": "sql", "line": str(line), "column": str(col), "token": token},
    )


def subquery_bytes_limit(limit: int) -> SqlError:
    """Druid's refusal of inlined subquery results over ``maxSubqueryBytes`` (Druid 33's text, measured)."""
    return SqlError(
        f"Cannot issue the query, subqueries generated results beyond maximum[{limit}] bytes. Increase the "
        "JVM's memory or set the 'maxSubqueryBytes' in the query context to increase the space allocated for "
        "subqueries to materialize their results. Manually alter the value carefully as it can cause the "
        "broker to go out of memory.",
        "resource_limit",
        persona="OPERATOR",
    )


def subquery_limit(limit: int) -> SqlError:
    """Druid's refusal of an inlined subquery result over ``maxSubqueryRows`` (``ClientQuerySegmentWalker``,
    Druid 28 and later: ``ResourceLimitExceededException``, legacy code ``Resource limit exceeded``)."""
    return SqlError(
        f"Cannot issue the query, subqueries generated results beyond maximum[{limit}] rows. Try setting the "
        "'maxSubqueryBytes' in the query context to 'auto' for enabling byte based limit, which chooses an "
        "optimal limit based on memory size and result's heap usage or manually configure the values of "
        "either 'maxSubqueryBytes' or 'maxSubqueryRows' in the query context. Manually alter the value "
        "carefully as it can cause the broker to go out of memory.",
        "resource_limit",
        persona="OPERATOR",
    )
