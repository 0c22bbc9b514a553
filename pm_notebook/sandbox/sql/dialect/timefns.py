"""Druid's time functions over DuckDB: ISO-8601 periods, Joda patterns, UTC only.

``TIME_FLOOR`` buckets are counted from the epoch (weeks from a Monday, months from a month start);
``EXTRACT(DOW ...)`` is ISO (Monday = 1); time zones other than UTC are refused (the sandbox's data and
``__time`` are UTC). Each ``time_*`` function takes the call node and its arguments and returns the DuckDB
expression (they are the handlers of the function table in :mod:`.functions`).
"""

from __future__ import annotations

import re

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


def _check_tz(node: exp.Expression | None, fn: str) -> None:
    if node is None or isinstance(node, exp.Null):
        return
    tz = literal_str(node, "the time zone", fn)
    if tz.upper() not in ("UTC", "ETC/UTC", "Z", "+00:00", "GMT"):
        raise SqlError(f"{fn}: time zone '{tz}' is not supported by the sandbox (only UTC).", "unsupported")


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


def _unit(node: exp.Expression | None, fn: str) -> str:
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


def time_floor(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIME_FLOOR(ts, period[, origin[, timezone]])``."""
    if len(a) < 2:
        raise SqlError("TIME_FLOOR needs (timestamp, period[, origin[, timezone]]).")
    iv, monthly = _interval(literal_str(a[1], "the period", "TIME_FLOOR"), "TIME_FLOOR")
    _check_tz(a[3] if len(a) > 3 else None, "TIME_FLOOR")
    if len(a) > 2 and not isinstance(a[2], exp.Null):
        return tmpl(
            f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP), CAST(__B__ AS TIMESTAMP))",
            A=a[0],
            B=a[2],
        )
    if monthly or "week" in iv:
        return tmpl(f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP))", A=a[0])
    return tmpl(f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP), TIMESTAMP '1970-01-01')", A=a[0])


def time_ceil(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIME_CEIL(ts, period[, origin[, timezone]])``."""
    floor = time_floor(node, a)
    iv, _ = _interval(literal_str(a[1], "the period", "TIME_CEIL"), "TIME_CEIL")
    return tmpl(f"CASE WHEN __F__ = __A__ THEN __F__ ELSE __F__ + INTERVAL '{iv}' END", F=floor, A=a[0])


def time_shift(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIME_SHIFT(ts, period, step[, timezone])``."""
    if len(a) < 3:
        raise SqlError("TIME_SHIFT needs (timestamp, period, step[, timezone]).")
    iv, _ = _interval(literal_str(a[1], "the period", "TIME_SHIFT"), "TIME_SHIFT")
    _check_tz(a[3] if len(a) > 3 else None, "TIME_SHIFT")
    return tmpl(f"CAST(__A__ AS TIMESTAMP) + INTERVAL '{iv}' * CAST(__B__ AS BIGINT)", A=a[0], B=a[2])


def time_extract(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIME_EXTRACT(ts[, unit[, timezone]])``."""
    unit = literal_str(a[1], "the unit", "TIME_EXTRACT").upper() if len(a) > 1 else "MILLISECOND"
    _check_tz(a[2] if len(a) > 2 else None, "TIME_EXTRACT")
    if unit not in EXTRACT:
        raise SqlError(f"TIME_EXTRACT: unknown unit '{unit}' (use one of {', '.join(sorted(EXTRACT))}).")
    return tmpl(EXTRACT[unit], A=a[0])


def time_format(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIME_FORMAT(ts[, pattern[, timezone]])`` (Joda pattern)."""
    pattern = _ISO_FORMAT
    if len(a) > 1 and not isinstance(a[1], exp.Null):
        pattern = literal_str(a[1], "the pattern", "TIME_FORMAT")
    _check_tz(a[2] if len(a) > 2 else None, "TIME_FORMAT")
    fmt = joda_to_strftime(pattern).replace("'", "''")
    return tmpl(f"strftime(CAST(__A__ AS TIMESTAMP), '{fmt}')", A=a[0])


def time_parse(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIME_PARSE(string[, pattern[, timezone]])``: NULL when the text does not parse, as in Druid."""
    _check_tz(a[2] if len(a) > 2 else None, "TIME_PARSE")
    if len(a) > 1 and not isinstance(a[1], exp.Null):
        fmt = joda_to_strftime(literal_str(a[1], "the pattern", "TIME_PARSE")).replace("'", "''")
        return tmpl(f"CAST(try_strptime(__A__, '{fmt}') AS TIMESTAMP)", A=a[0])
    return tmpl("TRY_CAST(replace(replace(__A__, 'T', ' '), 'Z', '') AS TIMESTAMP)", A=a[0])


def timestampdiff(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIMESTAMPDIFF(unit, ts1, ts2)`` (Calcite's argument order)."""
    if len(a) != 3:
        raise SqlError("TIMESTAMPDIFF needs (unit, timestamp1, timestamp2).")
    unit = _unit(a[0], "TIMESTAMPDIFF").lower()
    return tmpl(
        f"CAST(date_sub('{unit}', CAST(__A__ AS TIMESTAMP), CAST(__B__ AS TIMESTAMP)) AS BIGINT)",
        A=a[1],
        B=a[2],
    )


def timestampadd(node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """``TIMESTAMPADD(unit, count, ts)``."""
    if len(a) != 3:
        raise SqlError("TIMESTAMPADD needs (unit, count, timestamp).")
    unit = _unit(a[0], "TIMESTAMPADD")
    if unit == "QUARTER":
        return tmpl("CAST(__B__ AS TIMESTAMP) + INTERVAL 3 MONTH * CAST(__A__ AS BIGINT)", A=a[1], B=a[2])
    return tmpl(f"CAST(__B__ AS TIMESTAMP) + INTERVAL 1 {unit} * CAST(__A__ AS BIGINT)", A=a[1], B=a[2])


def floor_ceil_to(node: exp.Floor | exp.Ceil) -> exp.Expression:
    """``FLOOR(ts TO unit)`` / ``CEIL(ts TO unit)``."""
    unit = _unit(node.args["to"], "FLOOR/CEIL ... TO")
    if isinstance(node, exp.Floor):
        return tmpl(f"date_trunc('{unit.lower()}', __A__)", A=node.this)
    return tmpl(
        f"CASE WHEN date_trunc('{unit.lower()}', __A__) = __A__ THEN CAST(__A__ AS TIMESTAMP) "
        f"ELSE date_trunc('{unit.lower()}', __A__) + INTERVAL 1 {unit} END",
        A=node.this,
    )


def extract(node: exp.Extract) -> exp.Expression:
    """``EXTRACT(unit FROM ts)`` with Druid's units (ISO day of week)."""
    unit = (node.this.name if isinstance(node.this, exp.Var | exp.Column) else str(node.this)).upper()
    if unit in EXTRACT:
        return tmpl(EXTRACT[unit], A=node.expression)
    return node
