"""The SQL port's one error type, rendered by each protocol in its own words.

Every refusal or failure of the SQL layer is a :class:`SqlError`. It knows how Druid's SQL HTTP API
(status, ``errorCode``, ``category``) and Avatica (``errorCode``, ``sqlState``, ``severity``) would
report it, so the protocol modules only format it. Messages never contain credentials: they are built
from the SQL text, names and the engine's own messages.
"""

from __future__ import annotations

__all__ = ["SqlError"]

# kind -> (HTTP status, Druid errorCode, Druid category, Avatica errorCode, SQLSTATE, Avatica severity)
_KINDS: dict[str, tuple[int, str, str, int, str, str]] = {
    "invalid": (400, "invalidInput", "INVALID_INPUT", -1, "00000", "UNKNOWN"),
    "refused": (400, "invalidInput", "INVALID_INPUT", -1, "00000", "UNKNOWN"),
    "unsupported": (400, "invalidInput", "UNSUPPORTED", -1, "00000", "UNKNOWN"),
    "unauthorized": (401, "unauthorized", "UNAUTHORIZED", 2, "00002", "ERROR"),
    "no_connection": (400, "notFound", "NOT_FOUND", 1, "00000", "ERROR"),
    "timeout": (504, "timeout", "TIMEOUT", -1, "00000", "UNKNOWN"),
    "capacity": (429, "capacityExceeded", "CAPACITY_EXCEEDED", -1, "00000", "UNKNOWN"),
    "cancelled": (500, "canceled", "CANCELED", -1, "57014", "UNKNOWN"),
    "internal": (500, "internal", "UNCATEGORIZED", -1, "00000", "UNKNOWN"),
}


class SqlError(Exception):
    """A statement was refused or failed; ``kind`` selects how each protocol reports it.

    :param message: what went wrong and what to do, for the SQL user.
    :param kind: one of ``invalid`` (bad SQL), ``refused`` (forbidden construct), ``unsupported``
        (valid Druid SQL the sandbox cannot serve), ``unauthorized``, ``no_connection``,
        ``timeout``, ``capacity`` (a limit was hit), ``cancelled`` (by its client), ``internal``.
    :param java_class: the exception class name shown in Avatica's ``exceptions`` list.
    """

    def __init__(self, message: str, kind: str = "invalid", *, java_class: str | None = None) -> None:
        if kind not in _KINDS:
            raise ValueError(f"unknown SqlError kind {kind!r}")
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.java_class = java_class or {
            "unauthorized": "org.apache.druid.server.security.ForbiddenException",
            "no_connection": "org.apache.calcite.avatica.NoSuchConnectionException",
            "timeout": "org.apache.druid.query.QueryTimeoutException",
            "cancelled": "org.apache.druid.query.QueryInterruptedException",
        }.get(kind, "org.apache.druid.error.DruidException")

    @property
    def http_status(self) -> int:
        """The status Druid's SQL HTTP API answers with."""
        return _KINDS[self.kind][0]

    def druid_body(self, query_id: str | None = None) -> dict:
        """The JSON error object of Druid's SQL HTTP API (new ``druidException`` shape + legacy fields)."""
        _, code, category, *_ = _KINDS[self.kind]
        return {
            "error": "druidException",
            "errorCode": code,
            "persona": "USER",
            "category": category,
            "errorMessage": self.message,
            "errorClass": self.java_class,
            "host": None,
            "context": {"sqlQueryId": query_id} if query_id else {},
        }

    def avatica_body(self) -> dict:
        """The Avatica ``ErrorResponse`` (every field the 1.26 driver knows, ``exceptions`` included)."""
        _, _, _, code, state, severity = _KINDS[self.kind]
        return {
            "response": "error",
            "exceptions": [f"{self.java_class}: {self.message}\n\tat pm_notebook.sandbox"],
            "errorMessage": self.message,
            "errorCode": code,
            "sqlState": state,
            "severity": severity,
        }
