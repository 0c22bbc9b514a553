"""Druid's query context: checked once, before any request, and rendered the way each protocol sends it.

A query context is a mapping of Druid's context keys to values (``{"sqlTimeZone": "Europe/Paris",
"timeout": 30000}``). :func:`check_context` validates one (a :class:`~pm_notebook.errors.ConfigurationError`
naming the key, what was wrong and what to do); :func:`merge_contexts` lays a per-query context over a
connection's default. Each transport sends the result as its protocol does on a real broker:

- ``druid``: the Druid SQL API's JSON ``"context"`` object (typed JSON values);
- ``avatica`` and ``jdbc``: connection properties (the ``info`` map of Avatica's ``openConnection``), as
  strings (:func:`context_properties`) — Druid's Avatica server reads the query context from the connection
  properties, so a context of its own needs a connection opened with it (the transports keep one connection
  per distinct context, see :func:`context_key`).

Known keys (:data:`KNOWN_KEYS`) are checked for their type and range; a key Druid does not know is passed
on unchanged (Druid accepts unknown keys silently), unless it looks like a misspelt known key, or it is a
credential or JDBC-driver property (``user``, ``password``, ``fetch_size``, ...), which must never travel
as context.
"""

from __future__ import annotations

import difflib
import math
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigurationError

__all__ = [
    "KNOWN_KEYS",
    "RUN_ONLY_KEYS",
    "ContextKey",
    "answer_context",
    "check_context",
    "context_key",
    "context_properties",
    "describe_context",
    "merge_contexts",
]

_HINT = "Pass a dict such as {'sqlTimeZone': 'Europe/Paris', 'timeout': 60000}; see docs/transports.md."


@dataclass(frozen=True)
class ContextKey:
    """One context key Druid knows: its value kind (``bool``, ``int``, ``str``, ``zone``, ``choice``), the
    smallest integer it takes, the values a ``choice`` takes, and what it does (for messages and docs)."""

    kind: str
    doc: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()


#: Druid's common query-context keys (druid.apache.org: querying/query-context, querying/sql-query-context).
KNOWN_KEYS: dict[str, ContextKey] = {
    "sqlQueryId": ContextKey("str", "the query's id (cancel it with DELETE /druid/v2/sql/{id})"),
    "sqlTimeZone": ContextKey("zone", "the time zone of time functions and literals (IANA name or +hh:mm)"),
    "timeout": ContextKey("int", "the query's time limit in milliseconds (0: the server's maximum)", 0),
    "priority": ContextKey("int", "the query's priority (higher runs first)"),
    "lane": ContextKey("str", "the query laning lane"),
    "enableWindowing": ContextKey("bool", "allow window functions (OVER ...)"),
    "useApproximateCountDistinct": ContextKey("bool", "COUNT(DISTINCT) by a sketch (true) or exactly"),
    "useApproximateTopN": ContextKey("bool", "GROUP BY ... ORDER BY ... LIMIT as an approximate TopN"),
    "useGroupingSetForExactDistinct": ContextKey("bool", "exact distinct counts by grouping sets"),
    "maxSubqueryRows": ContextKey("int", "most rows an inlined subquery may produce (server: 100,000)", 1),
    "maxSubqueryBytes": ContextKey("str", "most bytes of inlined subquery results ('auto', 'disabled', n)"),
    "maxScatterGatherBytes": ContextKey("int", "most bytes gathered from the data servers", 1),
    "maxQueuedBytes": ContextKey("int", "most bytes queued per query on the broker", 0),
    "useCache": ContextKey("bool", "read the segment cache"),
    "populateCache": ContextKey("bool", "fill the segment cache"),
    "useResultLevelCache": ContextKey("bool", "read the result-level cache"),
    "populateResultLevelCache": ContextKey("bool", "fill the result-level cache"),
    "sqlStringifyArrays": ContextKey("bool", "ARRAY results as JSON text (Druid SQL API)"),
    "sqlOuterLimit": ContextKey("int", "a LIMIT added around the whole query", 1),
    "finalize": ContextKey("bool", "finalize aggregator results (sketches as numbers)"),
    "vectorize": ContextKey("choice", "vectorized processing", choices=("true", "false", "force")),
    "vectorSize": ContextKey("int", "rows per vectorized batch", 1),
    "enableParallelMerge": ContextKey("bool", "merge results in parallel on the broker"),
    "enableJoinFilterPushDown": ContextKey("bool", "push filters below joins"),
    "enableJoinFilterRewrite": ContextKey("bool", "rewrite filters on joined columns"),
    "enableRewriteJoinToFilter": ContextKey("bool", "rewrite joins as filters where possible"),
    "enableTimeBoundaryPlanning": ContextKey("bool", "MIN/MAX(__time) as a time-boundary query"),
    "sqlUseBoundAndSelectors": ContextKey("bool", "plan filters with bound/selector filters"),
}

#: Keys that change how a query runs (its id, time limit, priority, caches, planning) but never its rows, nor
#: whether the SQL engine accepts it: a stored result answers the same statement whatever they say. Every
#: other key (``sqlTimeZone``, ``enableWindowing``, ``useApproximateCountDistinct``, the subquery limits,
#: and any key Druid does not document) may change the answer, a result or a refusal.
RUN_ONLY_KEYS = frozenset(
    {
        "sqlQueryId",
        "timeout",
        "priority",
        "lane",
        "useCache",
        "populateCache",
        "useResultLevelCache",
        "populateResultLevelCache",
        "vectorize",
        "vectorSize",
        "enableParallelMerge",
        "maxQueuedBytes",
        "enableJoinFilterPushDown",
        "enableJoinFilterRewrite",
        "enableRewriteJoinToFilter",
        "enableTimeBoundaryPlanning",
        "sqlUseBoundAndSelectors",
    }
)

# Properties that are not query context: the credentials (Druid reads them from the same Avatica info map)
# and the Avatica JDBC driver's own settings (the driver consumes them; they never reach the broker).
_RESERVED = {
    "user": "the login (client id) is set by the connection",
    "password": "the client secret is set by the connection",
    "url": "a JDBC driver setting",
    "serialization": "a JDBC driver setting",
    "authentication": "a JDBC driver setting",
    "avatica_user": "a JDBC driver setting",
    "avatica_password": "a JDBC driver setting",
    "fetch_size": "a JDBC driver setting",
    "transparent_reconnection": "a JDBC driver setting",
    "timeZone": "the JDBC driver's own time zone (Druid's is sqlTimeZone)",
    "truststore": "a JDBC driver setting",
    "truststore_password": "a JDBC driver setting",
    "keystore": "a JDBC driver setting",
    "keystore_password": "a JDBC driver setting",
    "key_password": "a JDBC driver setting",
    "hostname_verification": "a JDBC driver setting",
    "http_client_impl": "a JDBC driver setting",
    "http_client_factory": "a JDBC driver setting",
    "principal": "a JDBC driver setting",
    "keytab": "a JDBC driver setting",
}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
_OFFSET = re.compile(r"^[+-](?:[01]\d|2[0-3]):?[0-5]\d$")
_BOOL_TEXT = {"true": True, "false": False}
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _bad(key: str, message: str, hint: str) -> ConfigurationError:
    return ConfigurationError(f"Query context key {key!r}: {message}", hint=hint)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_value(key: str, spec: ContextKey, value: Any) -> Any:
    """The canonical JSON value of a known key (booleans and integers may come as their text)."""
    shown = _show(value)
    if spec.kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _BOOL_TEXT:
            return _BOOL_TEXT[value.strip().lower()]
        raise _bad(key, f"{shown} is not a boolean.", f"Use True or False ({spec.doc}).")
    if spec.kind == "int":
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value)
        ):
            number = int(value)
        if number is None or not _INT64[0] <= number <= _INT64[1]:
            raise _bad(key, f"{shown} is not a whole number.", f"Use an integer ({spec.doc}).")
        if spec.minimum is not None and number < spec.minimum:
            raise _bad(
                key,
                f"{number} is below its minimum {spec.minimum}.",
                f"Use at least {spec.minimum} ({spec.doc}).",
            )
        return number
    if not isinstance(value, str) and not (spec.kind == "str" and isinstance(value, int | float)):
        raise _bad(key, f"{shown} is not a string.", f"Use text ({spec.doc}).")
    text = str(value) if not isinstance(value, str) else value
    if spec.kind == "zone":
        return _check_zone(key, text)
    if spec.kind == "choice":
        lowered = text.strip().lower()
        if lowered not in spec.choices:
            raise _bad(
                key, f"{shown} is not one of {', '.join(spec.choices)}.", f"Use one of them ({spec.doc})."
            )
        return lowered
    if key == "sqlQueryId" and (not text or len(text) > 512 or not all(" " <= ch <= "~" for ch in text)):
        raise _bad(
            key,
            f"{shown} is not 1 to 512 printable ASCII characters.",
            "The id travels in an HTTP header: use letters, digits and punctuation, no control characters.",
        )
    if key == "maxSubqueryBytes" and not (
        text.strip().lower() in ("auto", "disabled") or re.fullmatch(r"\d+", text.strip())
    ):
        raise _bad(key, f"{shown} is not 'auto', 'disabled' or a number of bytes.", f"Use one ({spec.doc}).")
    return text


def _check_zone(key: str, text: str) -> str:
    zone = text.strip()
    if _OFFSET.match(zone) or zone.upper() in ("UTC", "Z", "GMT"):
        return zone
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise _bad(
            key,
            f"{text!r} is not a time zone.",
            "Use an IANA zone name such as 'Europe/Paris' or 'America/New_York', or an offset like '+02:00'.",
        ) from None
    return zone


def check_context(context: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate a query context and return it with canonical values (a new dict; ``{}`` for ``None``).

    Known keys get their JSON type (``"true"`` → ``True``, ``"30000"`` → ``30000`` for ``timeout``); unknown
    keys pass unchanged when their value is a string, number or boolean.

    :raises ConfigurationError: not a mapping; a key that is not a name, is a credential or driver property,
        or looks like a misspelt known key; a value of the wrong type or out of range.

    >>> check_context({"enableWindowing": "true", "timeout": "5000"})
    {'enableWindowing': True, 'timeout': 5000}
    """
    if context is None:
        return {}
    if not isinstance(context, Mapping):
        raise ConfigurationError(
            f"The query context must be a dict of Druid context keys, not {type(context).__name__}.",
            hint=_HINT,
        )
    checked: dict[str, Any] = {}
    for key, value in context.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise ConfigurationError(
                f"Query context key {_show(key)} is not a context key name.",
                hint="Keys are Druid's context names, such as 'sqlTimeZone' or 'enableWindowing'.",
            )
        if key in _RESERVED:
            raise ConfigurationError(
                f"{key!r} is not a query context key ({_RESERVED[key]}).",
                hint="Remove it from the context; credentials and driver settings belong to the connection.",
            )
        spec = KNOWN_KEYS.get(key)
        if spec is None:
            near = _near(key)
            if near is not None:
                raise _bad(
                    key,
                    "Druid knows no such key (Druid ignores unknown keys, so it would have no effect).",
                    f"Did you mean {near!r}?",
                )
            if value is None or not isinstance(value, str | int | float | bool):
                raise _bad(
                    key,
                    f"{_show(value)} is not a string, number or boolean.",
                    "Context values travel as JSON scalars (and as text over Avatica/JDBC).",
                )
            if isinstance(value, float) and not math.isfinite(value):
                raise _bad(key, f"{_show(value)} is not a finite number.", "Use a finite number.")
            checked[key] = value
            continue
        if value is None:
            raise _bad(
                key, "None is not a value.", f"Leave the key out to use the server's default ({spec.doc})."
            )
        checked[key] = _check_value(key, spec, value)
    return checked


def _near(key: str) -> str | None:
    """The known key *key* is probably a misspelling of (same letters in another case, or very close)."""
    lowered = {k.lower(): k for k in (*KNOWN_KEYS, *_RESERVED)}
    if key.lower() in lowered:
        return lowered[key.lower()]
    close = difflib.get_close_matches(key, list(KNOWN_KEYS), n=1, cutoff=0.85)
    return close[0] if close else None


def merge_contexts(
    default: Mapping[str, Any] | None, override: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """A connection's *default* context with a query's *override* laid over it, key by key (both checked).

    :returns: the merged context, or ``None`` when both are empty (the transports then send none).
    :raises ConfigurationError: as :func:`check_context`, for either of them.

    >>> merge_contexts({"sqlTimeZone": "Europe/Paris", "timeout": 60000}, {"timeout": 5000})
    {'sqlTimeZone': 'Europe/Paris', 'timeout': 5000}
    """
    merged = {**check_context(default), **check_context(override)}
    return merged or None


def context_properties(context: Mapping[str, Any] | None) -> dict[str, str]:
    """A checked context as Avatica connection properties: every value as text (``True`` → ``"true"``)."""
    out: dict[str, str] = {}
    for key, value in (context or {}).items():
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def context_key(context: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """A hashable key of a context's properties (one Avatica/JDBC connection is kept per distinct key)."""
    return tuple(sorted(context_properties(context).items()))


def answer_context(context: Mapping[str, Any] | None) -> dict[str, Any]:
    """The part of a checked context that may change a statement's answer (:data:`RUN_ONLY_KEYS` left out):
    what the offline cache keys a stored result by.

    >>> answer_context({"sqlTimeZone": "Europe/Paris", "timeout": 5000, "sqlQueryId": "q1"})
    {'sqlTimeZone': 'Europe/Paris'}
    """
    return {k: v for k, v in (context or {}).items() if k not in RUN_ONLY_KEYS}


# A key whose name says it holds a credential: its value is never shown.
_SECRET_NAME = re.compile(r"(?i)password|secret|token|credential|apikey|api_key")


def describe_context(context: Mapping[str, Any] | None) -> str:
    """A checked context as one line for a display: ``sqlTimeZone=Europe/Paris, timeout=5000`` (``""`` when
    empty); the value of a key named like a credential is shown as ``***``.

    >>> describe_context({"enableWindowing": True, "timeout": 5000, "myToken": "abc"})
    'enableWindowing=true, timeout=5000, myToken=***'
    """
    shown = context_properties(context)
    return ", ".join(f"{k}={'***' if _SECRET_NAME.search(k) else v}" for k, v in shown.items())
