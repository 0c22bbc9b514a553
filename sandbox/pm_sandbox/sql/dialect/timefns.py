"""Druid's time functions over DuckDB: ISO-8601 periods, Joda patterns, time zones.

``TIME_FLOOR`` buckets are counted from the epoch (weeks from a Monday, months from a month start);
``EXTRACT(DOW ...)`` is ISO (Monday = 1). Each ``time_*`` function takes the call node and its arguments and
returns the DuckDB expression (they are the handlers of the function table in :mod:`.functions`).

Time zones: the data and ``__time`` are UTC instants. A function's time-zone argument, or else the query
context's ``sqlTimeZone`` (:func:`session_zone`, set for one translation), makes it work on the zone's wall
clock, as Druid does: the instant is turned into the zone's local time, floored, shifted, extracted or
formatted there, and turned back into an instant (``FLOOR(__time TO DAY)`` in Europe/Paris is the instant of
local midnight). A zone Druid's parser does not know means UTC, as in Druid; a ``+hh:mm`` offset is a fixed
shift (``+05:30`` too).

``sqlTimeZone`` is also the zone of what Druid reads as wall-clock time (Druid's docs: "Literal timestamps
in the connection time zone", ``TIME_PARSE`` text without an offset, ``CURRENT_DATE``): timestamp literals,
strings and DATEs cast to TIMESTAMP or compared with a timestamp (:func:`mark_wall_clock`). Month, quarter
and year arithmetic (``TIMESTAMPADD``, ``TIMESTAMPDIFF``, ``+ INTERVAL '1' MONTH``) runs on the zone's
calendar, as Druid's ``timestamp_shift``/``subtract_months`` do; day-time arithmetic is a fixed length (a day
is 86,400 s: Druid's docs say its datetime arithmetic does not take daylight saving time into account).
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
    "MILLISECOND": "CAST(millisecond(__A__) % 1000 AS BIGINT)",  # 0..999, before 1970 too
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
    """*text* as a zone the translation knows (an IANA name, or a ``+hh:mm`` fixed offset), ``None`` for UTC
    and for names Druid's parser does not know (it falls back to UTC)."""
    zone = text.strip()
    if not zone or zone.upper() in _UTC_NAMES:
        return None
    match = _OFFSET.match(zone)
    if match:
        sign, hours, minutes = match.groups()
        if int(hours) == 0 and int(minutes) == 0:
            return None
        return f"{sign}{hours}:{minutes}"
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    return zone


def _offset_minutes(zone: str) -> int | None:
    """The minutes a ``+hh:mm`` zone is ahead of UTC; ``None`` for an IANA zone."""
    match = _OFFSET.match(zone)
    if not match:
        return None
    sign, hours, minutes = match.groups()
    return (1 if sign == "+" else -1) * (int(hours) * 60 + int(minutes))


def _zone(node: exp.Expr | None, fn: str) -> str | None:
    """The zone a time function works in: its own argument, else the session's (``None``: UTC)."""
    if node is None or isinstance(node, exp.Null):
        session = _SESSION_ZONE.get()
        return _known_zone(session) if session else None
    return _known_zone(literal_str(node, "the time zone", fn))


def _local(ts: exp.Expr, zone: str) -> exp.Expr:
    """The wall-clock time in *zone* of the UTC instant *ts*."""
    offset = _offset_minutes(zone)
    if offset is not None:
        return tmpl(f"CAST(__A__ AS TIMESTAMP) + INTERVAL ({offset}) MINUTE", A=ts)
    return tmpl(f"timezone('{zone}', timezone('UTC', CAST(__A__ AS TIMESTAMP)))", A=ts)


def _instant(local: exp.Expr, zone: str) -> exp.Expr:
    """The UTC instant of the wall-clock time *local* in *zone*."""
    offset = _offset_minutes(zone)
    if offset is not None:
        return tmpl(f"CAST(__A__ AS TIMESTAMP) - INTERVAL ({offset}) MINUTE", A=local)
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


_HAS_OFFSET = r"[T ][0-9:.]*(Z|[+-][0-9][0-9](:?[0-9][0-9])?)$"


def time_parse(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIME_PARSE(string[, pattern[, timezone]])``: NULL when the text does not parse, as in Druid.

    The zone (the argument, else ``sqlTimeZone``) is that of text without an offset; ISO text with one
    (``Z``, ``+02:00``) is that instant."""
    zone = _zone(a[2] if len(a) > 2 else None, "TIME_PARSE")
    if len(a) > 1 and not isinstance(a[1], exp.Null):
        fmt = joda_to_strftime(literal_str(a[1], "the pattern", "TIME_PARSE")).replace("'", "''")
        parsed = tmpl(f"CAST(try_strptime(__A__, '{fmt}') AS TIMESTAMP)", A=a[0])
        return parsed if zone is None else _instant(parsed, zone)
    naive = tmpl("TRY_CAST(replace(__A__, 'T', ' ') AS TIMESTAMP)", A=a[0])
    # DuckDB's TIMESTAMP cast drops an offset; its TIMESTAMPTZ cast applies it
    offset = tmpl("timezone('UTC', TRY_CAST(replace(__A__, 'T', ' ') AS TIMESTAMPTZ))", A=a[0])
    return tmpl(
        f"CASE WHEN regexp_matches(__A__, '{_HAS_OFFSET}') THEN __O__ ELSE __N__ END",
        A=a[0],
        O=offset,
        N=naive if zone is None else _instant(naive, zone),
    )


#: the units of Calcite's year-month intervals: Druid shifts by them on the zone's calendar
#: (``timestamp_shift``, ``subtract_months``); day-time units are fixed lengths (a day is 86,400 s)
MONTHLY = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def timestampdiff(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIMESTAMPDIFF(unit, ts1, ts2)`` (Calcite's argument order); months, quarters and years are counted
    on the session zone's calendar, the other units are fixed lengths."""
    if len(a) != 3:
        raise SqlError("TIMESTAMPDIFF needs (unit, timestamp1, timestamp2).")
    unit = _unit(a[0], "TIMESTAMPDIFF")
    zone = _zone(None, "TIMESTAMPDIFF") if unit in MONTHLY else None
    start, end = (a[1], a[2]) if zone is None else (_local(a[1], zone), _local(a[2], zone))
    return tmpl(
        f"CAST(date_sub('{unit.lower()}', CAST(__A__ AS TIMESTAMP), CAST(__B__ AS TIMESTAMP)) AS BIGINT)",
        A=start,
        B=end,
    )


def timestampadd(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TIMESTAMPADD(unit, count, ts)``: ``ts + count * INTERVAL '1' unit`` (see :func:`add_interval`)."""
    if len(a) != 3:
        raise SqlError("TIMESTAMPADD needs (unit, count, timestamp).")
    unit = _unit(a[0], "TIMESTAMPADD")
    if unit in MONTHLY:
        step = tmpl(f"INTERVAL {MONTHLY[unit]} MONTH * CAST(__A__ AS BIGINT)", A=a[1])
    else:
        step = tmpl(f"INTERVAL 1 {unit} * CAST(__A__ AS BIGINT)", A=a[1])
    return _shift(a[2], step, unit in MONTHLY, "+")


def _shift(ts: exp.Expr, step: exp.Expr, monthly: bool, sign: str) -> exp.Expr:
    """*ts* plus or minus the interval *step*: on the session zone's calendar when *monthly*."""
    zone = _zone(None, "TIMESTAMPADD") if monthly else None
    local = ts if zone is None else _local(ts, zone)
    out = tmpl(f"CAST(__A__ AS TIMESTAMP) {sign} __B__", A=local, B=step)
    return out if zone is None else _instant(out, zone)


def add_interval(node: exp.Add | exp.Sub) -> exp.Expr:
    """``ts + INTERVAL 'n' MONTH`` (or ``QUARTER``, ``YEAR``) with a session zone: Druid shifts on the zone's
    calendar (a month from 31 March 00:30 in Paris is 30 April 00:30 there); day-time intervals, and any
    interval in UTC, are left to DuckDB (a day is 86,400 s, as Druid's docs say)."""
    interval = node.expression
    if not isinstance(interval, exp.Interval) or _is_date(node.this):
        return node  # a DATE moves by calendar days and months already
    unit = interval.unit.name.upper() if interval.unit is not None else ""
    if unit not in MONTHLY or _zone(None, "+") is None:
        return node
    return _shift(node.this, interval, True, "+" if isinstance(node, exp.Add) else "-")


def current_date() -> exp.Expr | None:
    """``CURRENT_DATE`` in the session zone (Druid: "current date in the connection's time zone");
    ``None`` in UTC."""
    zone = _zone(None, "CURRENT_DATE")
    if zone is None:
        return None
    return tmpl("CAST(__A__ AS DATE)", A=_local(tmpl("timezone('UTC', current_timestamp)"), zone))


def wall_clock_cast(node: exp.Cast, strict: bool) -> exp.Expr | None:
    """A cast to TIMESTAMP of a string or a DATE (a timestamp literal, or a string or date compared with a
    timestamp), read as the session zone's wall clock, as Druid reads timestamp literals; ``None`` in UTC.

    :param strict: a cast the comparison implies (not written): it fails on text that is no timestamp."""
    zone = _zone(None, "CAST")
    if zone is None:
        return None
    cast = exp.Cast if strict else exp.TryCast
    return _instant(cast(this=node.this, to=node.to), zone)


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


#: the mark (in a cast's ``meta``) of a cast read as the session zone's wall clock: ``True`` for a cast the
#: comparison implies (strict), ``False`` for one written in the query (NULL when the text does not convert)
WALL_CLOCK = "pm_wall_clock"
#: the calls whose value is a timestamp (by their Druid name, before the rewrite)
_TIME_CALLS = {
    "TIME_FLOOR",
    "TIME_CEIL",
    "TIME_SHIFT",
    "TIME_PARSE",
    "MILLIS_TO_TIMESTAMP",
    "TIMESTAMPADD",
    "EARLIEST",
    "LATEST",
    "EARLIEST_BY",
    "LATEST_BY",
    "ANY_VALUE",
}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _is_type(node: exp.Expr, kind: str) -> bool:
    return isinstance(node, exp.Cast) and node.to.is_type(kind)


def _is_date(node: exp.Expr) -> bool:
    """Whether *node* is a DATE: ``CURRENT_DATE``, ``DATE '…'``, a cast to DATE, or one plus an interval."""
    node = node.unnest()
    if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
        return _is_date(node.this)
    return isinstance(node, exp.CurrentDate) or _is_type(node, "DATE")


def _is_text(node: exp.Expr, columns: dict[str, str]) -> bool:
    node = node.unnest()
    if isinstance(node, exp.Literal):
        return node.is_string
    return isinstance(node, exp.Column) and columns.get(node.name) == "VARCHAR"


def _is_time(node: exp.Expr, columns: dict[str, str]) -> bool:
    """Whether *node* is a TIMESTAMP (a column, a cast, a time function, an aggregate of one...)."""
    node = node.unnest()
    if isinstance(node, exp.Column):
        return columns.get(node.name) == "TIMESTAMP"
    if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
        return _is_time(node.this, columns)
    if isinstance(node, exp.Max | exp.Min | exp.AnyValue):
        return _is_time(node.this, columns)
    if isinstance(node, exp.Anonymous):
        name = str(node.this).upper()
        if name in ("EARLIEST", "LATEST", "EARLIEST_BY", "LATEST_BY", "ANY_VALUE"):
            return bool(node.expressions) and _is_time(node.expressions[0], columns)
        return name in _TIME_CALLS
    if isinstance(node, exp.Floor | exp.Ceil):
        return node.args.get("to") is not None
    return isinstance(node, exp.CurrentTimestamp | exp.TimestampTrunc | exp.DateTrunc) or _is_type(
        node, "TIMESTAMP"
    )


def _wall_clock(node: exp.Expr) -> None:
    """Wrap the string or DATE *node*, compared with a timestamp, in the cast the comparison implies."""
    cast = exp.Cast(this=node.copy(), to=exp.DataType.build("TIMESTAMP"))
    cast.meta[WALL_CLOCK] = True
    node.replace(cast)


def mark_wall_clock(tree: exp.Expr, columns: dict[str, str]) -> None:
    """Mark the casts to TIMESTAMP that Druid reads as the session zone's wall clock (with a session zone):
    timestamp literals, casts of strings and DATEs, and the strings and DATEs compared with a timestamp
    (``__time >= '2024-01-01'``, ``__time >= CURRENT_DATE``), which Calcite casts to TIMESTAMP.

    :param columns: the Druid type (``TIMESTAMP``, ``VARCHAR``...) of each column name.
    """
    if _zone(None, "CAST") is None:
        return
    for node in list(tree.walk()):
        if isinstance(node, exp.Cast) and _is_type(node, "TIMESTAMP"):
            if _is_text(node.this, columns) or _is_date(node.this):
                node.meta.setdefault(WALL_CLOCK, False)
        elif isinstance(node, _COMPARISONS):
            left, right = node.this, node.expression
            for mine, other in ((left, right), (right, left)):
                if _is_time(mine, columns) and (_is_literal_text(other) or _is_date(other)):
                    _wall_clock(other)
        elif isinstance(node, exp.Between) and _is_time(node.this, columns):
            for key in ("low", "high"):
                bound = node.args.get(key)
                if bound is not None and (_is_literal_text(bound) or _is_date(bound)):
                    _wall_clock(bound)
        elif isinstance(node, exp.In) and _is_time(node.this, columns):
            for item in node.expressions:
                if _is_literal_text(item) or _is_date(item):
                    _wall_clock(item)


def _is_literal_text(node: exp.Expr) -> bool:
    node = node.unnest()
    return isinstance(node, exp.Literal) and node.is_string
