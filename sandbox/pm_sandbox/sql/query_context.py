"""The query context as the SQL port reads it, from the Druid SQL API's ``context`` object (JSON values) or
from Avatica's ``openConnection`` properties (text values): both protocols end in one :class:`QueryContext`.

The keys the sandbox honours (:data:`HONOURED`) are read as Druid reads them (``QueryContexts``): a boolean
is ``true`` only when it is the JSON ``true`` or the text ``"true"`` (any other text is false); a number may
come as JSON or as text, and anything else is refused with Druid's ``Expected key [k] to be in long format,
but got [v]``; an unknown ``sqlTimeZone`` falls back to UTC, as Druid's ``DateTimes.inferTzFromString``
does. Every other key is accepted and ignored, as Druid accepts keys it does not know (the docs list the
Druid keys the sandbox ignores) — ``enableWindowing`` among them: Druid 32 removed it, window functions need
no flag.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import SqlError

__all__ = ["AUTO_SUBQUERY_BYTES", "DEFAULT_MAX_SUBQUERY_ROWS", "HONOURED", "QueryContext", "zone_name"]

#: Druid's ``druid.server.http.maxSubqueryRows`` default
DEFAULT_MAX_SUBQUERY_ROWS = 100_000
#: what ``maxSubqueryBytes: "auto"`` allows here. Druid derives it from the broker's heap (half of it, shared
#: by the queries the broker may run at once); the sandbox has no JVM heap and takes a broker of 512 MB
#: running 4 queries at once: 64 MiB
AUTO_SUBQUERY_BYTES = 64 << 20
#: the context keys the sandbox acts on; all others are accepted and ignored
HONOURED = (
    "sqlTimeZone",
    "timeout",
    "sqlQueryId",
    "maxSubqueryRows",
    "maxSubqueryBytes",
    "sqlStringifyArrays",
)

_OFFSET = re.compile(r"^([+-])([01]\d|2[0-3]):?([0-5]\d)$")
_UTC_NAMES = {
    "UTC",
    "Z",
    "GMT",
    "ETC/UTC",
    "ETC/GMT",
    "UCT",
    "ZULU",
    "UNIVERSAL",
    "+00:00",
    "-00:00",
    "+0000",
}


def _bad_value(key: str, kind: str, value: object) -> SqlError:
    return SqlError(f"Expected key [{key}] to be in {kind} format, but got [{value}]", "invalid")


def _as_bool(value: object, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() == "true"  # Boolean.parseBoolean
    return default


def _as_int(key: str, value: object, kind: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _bad_value(key, kind, value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    raise _bad_value(key, kind, value)


def zone_name(value: object) -> str | None:
    """The IANA zone (or ``+hh:mm`` offset) *value* names, ``None`` for UTC or a zone unknown to Druid's
    parser (it falls back to UTC)."""
    if value is None:
        return None
    text = str(value).strip()
    if not text or text.upper() in _UTC_NAMES:
        return None
    match = _OFFSET.match(text)
    if match:
        sign, hours, minutes = match.groups()
        if hours == "00" and minutes == "00":
            return None
        return f"{sign}{hours}:{minutes}"
    try:
        zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    return text


@dataclass(frozen=True)
class QueryContext:
    """What the sandbox does with one statement's context.

    :param time_zone: ``sqlTimeZone`` for the time functions (``None``: UTC).
    :param timeout: ``timeout`` in seconds (``None``: the port's limit; 0 ms means the port's limit too).
    :param max_subquery_rows: ``maxSubqueryRows``: most rows of an inlined subquery result.
    :param max_subquery_bytes: ``maxSubqueryBytes`` (``None``: ``disabled``, Druid's default): most bytes of
        the inlined subquery results. As on Druid 33 (measured), a byte limit *replaces* the row limit:
        with it set, ``maxSubqueryRows`` is not applied.
    :param stringify_arrays: ``sqlStringifyArrays`` (Druid SQL API only).
    """

    time_zone: str | None = None
    timeout: float | None = None
    max_subquery_rows: int = DEFAULT_MAX_SUBQUERY_ROWS
    max_subquery_bytes: int | None = None
    stringify_arrays: bool = True

    @classmethod
    def parse(cls, context: Mapping[str, object] | None) -> QueryContext:
        """Read *context* (JSON or property values); :class:`SqlError` in Druid's words for a bad number."""
        ctx = context or {}
        timeout = _as_int("timeout", ctx.get("timeout"), "long")
        if timeout is not None and timeout < 0:
            raise SqlError(f"Timeout [timeout] must be a non negative value, but was {timeout}", "invalid")
        rows = _as_int("maxSubqueryRows", ctx.get("maxSubqueryRows"), "integer")
        return cls(
            time_zone=zone_name(ctx.get("sqlTimeZone")),
            timeout=timeout / 1000 if timeout else None,
            # Druid: a negative limit means no limit
            max_subquery_rows=DEFAULT_MAX_SUBQUERY_ROWS if rows is None else rows if rows >= 0 else 2**62,
            max_subquery_bytes=_subquery_bytes(ctx.get("maxSubqueryBytes")),
            stringify_arrays=_as_bool(ctx.get("sqlStringifyArrays"), True),
        )


def _subquery_bytes(value: object) -> int | None:
    """``maxSubqueryBytes``: ``disabled`` (or absent) → ``None``, ``auto`` → :data:`AUTO_SUBQUERY_BYTES`, a
    byte count (a number or its text) → that count; anything else is refused as Druid refuses it."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "disabled"):
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return AUTO_SUBQUERY_BYTES
    if isinstance(value, bool) or not isinstance(value, int | str):
        value = str(value)
    try:
        count = int(value)
    except ValueError:
        count = -1
    if count <= 0:
        raise SqlError(
            f"maxSubqueryBytes must be 'disabled', 'auto' or a positive number of bytes, got [{value}]",
            "invalid",
        )
    return count
