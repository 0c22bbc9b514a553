"""Druid's time functions over DuckDB: ISO-8601 periods, Joda patterns, time zones.

``TIME_FLOOR`` buckets are counted from the epoch (weeks from a Monday, months from a month start);
``EXTRACT(DOW ...)`` is ISO (Monday = 1). Each ``time_*`` function takes the call node and its arguments and
returns the DuckDB expression (they are the handlers of the function table in :mod:`.functions`).

Time zones: the data and ``__time`` are UTC instants. A function's time-zone argument, or else the query
context's ``sqlTimeZone`` (:func:`session_zone`, set for one translation), makes it work on the zone's wall
clock, as Druid does: the instant is turned into the zone's local time, floored, shifted, extracted or
formatted there, and turned back into an instant (``FLOOR(__time TO DAY)`` in Europe/Paris is the instant of
local midnight). A zone Druid's parser does not know means UTC, as in Druid.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import zoneinfo
from collections.abc import Iterator

from sqlglot import exp

from ... import datepatterns
from ..errors import SqlError
from .templates import literal_str, tmpl

_PERIOD = re.compile(
    r"^P(?:(?P<Y>\d+)Y)?(?:(?P<M>\d+)M)?(?:(?P<W>\d+)W)?(?:(?P<D>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
_UNITS = {"SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR", "MILLISECOND", "MICROSECOND"}
EXTRACT = {
    "EPOCH": "CAST(epoch(__A__) AS BIGINT)",
    "MILLISECOND": "CAST(epoch_ms(__A__) % 1000 AS BIGINT)",
    "SECOND": "second(__A__)",
    "MINUTE": "minute(__A__)",
    "HOUR": "hour(__A__)",
    "DAY": "day(__A__)",
    "DOW": "isodow(__A__)",
    "ISODOW": "isodow(__A__)",
    "DOY": "dayofyear(__A__)",
    "WEEK": "week(__A__)",
    "MONTH": "month(__A__)",
    "QUARTER": "quarter(__A__)",
    "YEAR": "year(__A__)",
    "ISOYEAR": "isoyear(__A__)",
    "DECADE": "decade(__A__)",
    "CENTURY": "century(__A__)",
    "MILLENNIUM": "millennium(__A__)",
}
_JODA = [
    ("yyyy", "%Y"),
    ("YYYY", "%Y"),
    ("yy", "%y"),
    ("MMMM", "%B"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("M", "%-m"),
    ("dd", "%d"),
    ("d", "%-d"),
    ("HH", "%H"),
    ("H", "%-H"),
    ("hh", "%I"),
    ("h", "%-I"),
    ("mm", "%M"),
    ("m", "%-M"),
    ("ss", "%S"),
    ("s", "%-S"),
    ("SSS", "%g"),
    ("EEEE", "%A"),
    ("EEE", "%a"),
    ("a", "%p"),
    ("ZZ", "+00:00"),
    ("Z", "+0000"),
    ("DDD", "%j"),
    ("ww", "%V"),
    ("xxxx", "%G"),
]
_ISO_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"


def _interval(period: str, fn: str) -> tuple[str, bool]:
    """DuckDB interval text for an ISO-8601 period, and whether it counts months/years."""
    m = _PERIOD.match(period.upper())
    if not m or not any(m.groupdict().values()):
        raise SqlError(f"{fn}: '{period}' is not an ISO-8601 period (e.g. PT1H, P1D, P1W, P1M, P3M, P1Y).")
    g = {k: v for k, v in m.groupdict().items() if v}
    parts = []
    names = {"Y": "year", "M": "month", "W": "week", "D": "day", "h": "hour", "m": "minute", "s": "second"}
    for key in ("Y", "M", "W", "D", "h", "m", "s"):
        if key in g:
            parts.append(f"{g[key]} {names[key]}")
    return " ".join(parts), ("Y" in g or "M" in g)


_SESSION_ZONE: contextvars.ContextVar[str | None] = contextvars.ContextVar("pm_sql_time_zone", default=None)
_OFFSET = re.compile(r"^([+-])([01]\d|2[0-3]):?([0-5]\d)$")
_UTC_NAMES = {"UTC", "Z", "GMT", "ETC/UTC", "ETC/GMT", "UCT", "ZULU", "UNIVERSAL"}


@contextlib.contextmanager
def session_zone(zone: str | None) -> Iterator[None]:
    """Translate with *zone* (the query context's ``sqlTimeZone``; ``None``: UTC) as the default zone of
    the time functions."""
    token = _SESSION_ZONE.set(zone)
    try:
        yield
    finally:
        _SESSION_ZONE.reset(token)


def _known_zone(text: str) -> str | None:
    """*text* as a zone DuckDB knows (IANA name, or ``+hh:mm`` as a fixed-offset ``Etc/GMT`` zone when it is
    whole hours), ``None`` for UTC and for names Druid's parser does not know (it falls back to UTC)."""
    zone = text.strip()
    if not zone or zone.upper() in _UTC_NAMES:
        return None
    match = _OFFSET.match(zone)
    if match:
        sign, hours, minutes = match.groups()
        if int(hours) == 0 and int(minutes) == 0:
            return None
        if minutes != "00":
            raise SqlError(
                f"Time zone offset '{zone}' is not supported by the sandbox (whole hours only).",
                "unsupported",
            )
        # POSIX sign: Etc/GMT-2 is two hours ahead of UTC
        return f"Etc/GMT{'-' if sign == '+' else '+'}{int(hours)}"
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    return zone


def _zone(node: exp.Expr | None, fn: str) -> str | None:
    """The zone a time function works in: its own argument, else the session's (``None``: UTC)."""
    if node is None or isinstance(node, exp.Null):
        session = _SESSION_ZONE.get()
        return _known_zone(session) if session else None
    return _known_zone(literal_str(node, "the time zone", fn))


def _local(ts: exp.Expr, zone: str) -> exp.Expr:
    """The wall-clock time in *zone* of the UTC instant *ts*."""
    return tmpl(f"timezone('{zone}', timezone('UTC', CAST(__A__ AS TIMESTAMP)))", A=ts)


def _instant(local: exp.Expr, zone: str) -> exp.Expr:
    """The UTC instant of the wall-clock time *local* in *zone*."""
    return tmpl(f"timezone('UTC', timezone('{zone}', __A__))", A=local)


def joda_to_strftime(pattern: str) -> str:
    """Convert a Joda-Time pattern (Druid's TIME_FORMAT/TIME_PARSE) to a strftime format."""
    try:
        return datepatterns.translate(pattern, _JODA)
    except datepatterns.DatePatternError as exc:
        if exc.letter is None:
            raise SqlError(f"Unterminated quote in time format '{pattern}'.") from None
        raise SqlError(
            f"Time format letter '{exc.letter}' in '{pattern}' is not supported by the sandbox.",
            "unsupported",
        ) from None


def _unit(node: exp.Expr | None, fn: str) -> str:
    name = (
        (
            node.name
            if isinstance(node, exp.Column | exp.Var | exp.Identifier)
            else node.this
            if isinstance(node, exp.Literal)
            else ""
        )
        .upper()
        .removeprefix("SQL_TSI_")
    )
    if name == "FRAC_SECOND":
        name = "MICROSECOND"
    if name not in _UNITS:
        raise SqlError(
            f"{fn}: unknown time unit {node.sql() if node else ''!r} (use SECOND, MINUTE, HOUR, DAY, WEEK, "
            "MONTH, QUARTER or YEAR)."
        )
    return name


def _floor_local(ts: exp.Expr, a: list[exp.Expr], fn: str, zone: str | None) -> exp.Expr:
    """``TIME_FLOOR`` of *ts* (already the wall clock of *zone*, or UTC) in that same clock."""
    iv, monthly = _interval(literal_str(a[1], "the period", fn), fn)
    if len(a) > 2 and not isinstance(a[2], exp.Null):
        origin = a[2] if zone is None else _local(a[2], zone)
        return tmpl(
            f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP), CAST(__B__ AS TIMESTAMP))",
            A=ts,
            B=origin,
        )
    if monthly or "week" in iv:
        return tmpl(f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP))", A=ts)
    return tmpl(f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP), TIMESTAMP '1970-01-01')", A=ts)


def time_floor(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIME_FLOOR(ts, period[, origin[, timezone]])``."""
    if len(a) < 2:
        raise SqlError("TIME_FLOOR needs (timestamp, period[, origin[, timezone]]).")
    zone = _zone(a[3] if len(a) > 3 else None, "TIME_FLOOR")
    if zone is None:
        return _floor_local(a[0], a, "TIME_FLOOR", None)
    return _instant(_floor_local(_local(a[0], zone), a, "TIME_FLOOR", zone), zone)


def time_ceil(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIME_CEIL(ts, period[, origin[, timezone]])``."""
    if len(a) < 2:
        raise SqlError("TIME_CEIL needs (timestamp, period[, origin[, timezone]]).")
    zone = _zone(a[3] if len(a) > 3 else None, "TIME_CEIL")
    iv, _ = _interval(literal_str(a[1], "the period", "TIME_CEIL"), "TIME_CEIL")
    ts = a[0] if zone is None else _local(a[0], zone)
    floor = _floor_local(ts, a, "TIME_CEIL", zone)
    ceil = tmpl(f"CASE WHEN __F__ = __A__ THEN __F__ ELSE __F__ + INTERVAL '{iv}' END", F=floor, A=ts)
    return ceil if zone is None else _instant(ceil, zone)


def time_shift(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIME_SHIFT(ts, period, step[, timezone])``."""
    if len(a) < 3:
        raise SqlError("TIME_SHIFT needs (timestamp, period, step[, timezone]).")
    iv, _ = _interval(literal_str(a[1], "the period", "TIME_SHIFT"), "TIME_SHIFT")
    zone = _zone(a[3] if len(a) > 3 else None, "TIME_SHIFT")
    ts = a[0] if zone is None else _local(a[0], zone)
    shifted = tmpl(f"CAST(__A__ AS TIMESTAMP) + INTERVAL '{iv}' * CAST(__B__ AS BIGINT)", A=ts, B=a[2])
    return shifted if zone is None else _instant(shifted, zone)


def time_extract(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIME_EXTRACT(ts[, unit[, timezone]])``."""
    unit = literal_str(a[1], "the unit", "TIME_EXTRACT").upper() if len(a) > 1 else "MILLISECOND"
    zone = _zone(a[2] if len(a) > 2 else None, "TIME_EXTRACT")
    if unit not in EXTRACT:
        raise SqlError(f"TIME_EXTRACT: unknown unit '{unit}' (use one of {', '.join(sorted(EXTRACT))}).")
    return tmpl(EXTRACT[unit], A=a[0] if zone is None or unit == "EPOCH" else _local(a[0], zone))


def time_format(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIME_FORMAT(ts[, pattern[, timezone]])`` (Joda pattern)."""
    pattern = _ISO_FORMAT
    if len(a) > 1 and not isinstance(a[1], exp.Null):
        pattern = literal_str(a[1], "the pattern", "TIME_FORMAT")
    zone = _zone(a[2] if len(a) > 2 else None, "TIME_FORMAT")
    if zone is not None:
        if pattern == _ISO_FORMAT:
            pattern = "yyyy-MM-dd'T'HH:mm:ss.SSS"
        if "Z" in re.sub(r"'[^']*'", "", pattern):
            raise SqlError(
                f"TIME_FORMAT: the zone offset letter 'Z' with time zone '{zone}' is not supported by the "
                "sandbox (it formats the zone's wall clock without its offset).",
                "unsupported",
            )
    fmt = joda_to_strftime(pattern).replace("'", "''")
    return tmpl(
        f"strftime(CAST(__A__ AS TIMESTAMP), '{fmt}')", A=a[0] if zone is None else _local(a[0], zone)
    )


def time_parse(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIME_PARSE(string[, pattern[, timezone]])``: NULL when the text does not parse, as in Druid."""
    zone = _zone(a[2] if len(a) > 2 else None, "TIME_PARSE")
    if len(a) > 1 and not isinstance(a[1], exp.Null):
        fmt = joda_to_strftime(literal_str(a[1], "the pattern", "TIME_PARSE")).replace("'", "''")
        parsed = tmpl(f"CAST(try_strptime(__A__, '{fmt}') AS TIMESTAMP)", A=a[0])
    else:
        parsed = tmpl("TRY_CAST(replace(replace(__A__, 'T', ' '), 'Z', '') AS TIMESTAMP)", A=a[0])
    return parsed if zone is None else _instant(parsed, zone)


def timestampdiff(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIMESTAMPDIFF(unit, ts1, ts2)`` (Calcite's argument order)."""
    if len(a) != 3:
        raise SqlError("TIMESTAMPDIFF needs (unit, timestamp1, timestamp2).")
    unit = _unit(a[0], "TIMESTAMPDIFF").lower()
    return tmpl(
        f"CAST(date_sub('{unit}', CAST(__A__ AS TIMESTAMP), CAST(__B__ AS TIMESTAMP)) AS BIGINT)",
        A=a[1],
        B=a[2],
    )


def timestampadd(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIMESTAMPADD(unit, count, ts)``."""
    if len(a) != 3:
        raise SqlError("TIMESTAMPADD needs (unit, count, timestamp).")
    unit = _unit(a[0], "TIMESTAMPADD")
    if unit == "QUARTER":
        return tmpl("CAST(__B__ AS TIMESTAMP) + INTERVAL 3 MONTH * CAST(__A__ AS BIGINT)", A=a[1], B=a[2])
    return tmpl(f"CAST(__B__ AS TIMESTAMP) + INTERVAL 1 {unit} * CAST(__A__ AS BIGINT)", A=a[1], B=a[2])


def floor_ceil_to(node: exp.Floor | exp.Ceil) -> exp.Expr:
    """``FLOOR(ts TO unit)`` / ``CEIL(ts TO unit)``."""
    unit = _unit(node.args["to"], "FLOOR/CEIL ... TO")
    zone = _zone(None, "FLOOR/CEIL ... TO")
    ts = node.this if zone is None else _local(node.this, zone)
    if isinstance(node, exp.Floor):
        out = tmpl(f"date_trunc('{unit.lower()}', __A__)", A=ts)
    else:
        out = tmpl(
            f"CASE WHEN date_trunc('{unit.lower()}', __A__) = __A__ THEN CAST(__A__ AS TIMESTAMP) "
            f"ELSE date_trunc('{unit.lower()}', __A__) + INTERVAL 1 {unit} END",
            A=ts,
        )
    return out if zone is None else _instant(out, zone)


def extract(node: exp.Extract) -> exp.Expr:
    """``EXTRACT(unit FROM ts)`` with Druid's units (ISO day of week), in the session's time zone."""
    unit = (node.this.name if isinstance(node.this, exp.Var | exp.Column) else str(node.this)).upper()
    if unit in EXTRACT:
        zone = _zone(None, "EXTRACT")
        return tmpl(
            EXTRACT[unit],
            A=node.expression if zone is None or unit == "EPOCH" else _local(node.expression, zone),
        )
    return node
