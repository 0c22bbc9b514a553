"""What every answer's SQL shares: the statement value, the quantile function, ISO periods, START/END."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError

if TYPE_CHECKING:
    from .._schema import Schema

__all__ = [
    "END",
    "PERIOD_ALIASES",
    "QUANTILE",
    "SKETCH",
    "START",
    "Fragment",
    "Statement",
    "between_activities",
    "check_quantiles",
    "is_period",
    "per_case",
    "period",
    "period_ms",
    "placeholders",
    "qname",
    "quantile",
    "sketch",
    "task_order",
]

#: the pseudo-activities the transitions table uses for a case's start and end
START, END = "START", "END"
#: Druid's quantile aggregator (DataSketches quantiles sketch: approximate on a real cluster, within the
#: sketch's error, about 1 % at the default size); every quantile an answer computes goes through it
QUANTILE = "APPROX_QUANTILE_DS"
#: the aggregator that keeps a group's values as a quantiles sketch, which :data:`QUANTILE` of an outer
#: query merges (Druid takes a numeric column or a sketch column there)
SKETCH = "DS_QUANTILES_SKETCH"

#: a piece of SQL and its ``?`` parameters, in text order
Fragment = tuple[str, tuple[Any, ...]]


def between_activities(schema: Schema) -> Fragment:
    """The condition that keeps the transitions between two activities (from START and into END left out)."""
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    return (f"{src} <> '{START}' AND {dst} <> '{END}'", ())


_PERIOD = re.compile(r"^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?$")
PERIOD_ALIASES = {
    "hour": "PT1H",
    "day": "P1D",
    "week": "P1W",
    "month": "P1M",
    "quarter": "P3M",
    "year": "P1Y",
}


@dataclass(frozen=True)
class Statement:
    """One SQL statement, the values of its ``?`` placeholders in text order, and its facts, stated by the
    builder that writes it (never guessed back from the text): *reads*: the table kind it reads
    (``cases``, ``vertex``, ``edge``); *inlines*: its ``WHERE`` holds a subquery Druid inlines on the broker
    (a case filter's semi-join, :meth:`~.._filters.Filters.inlines`), which ``maxSubqueryRows`` bounds;
    *windowing*: it uses
    window functions, whose input Druid's broker inlines (and their result, under an outer aggregate):
    ``maxSubqueryRows`` applies to them (Druid 32 and later need no ``enableWindowing``; the log still sends
    it, which older brokers need); *refusal_hint*: what a user can do when Druid refuses it over
    ``maxSubqueryRows`` (``None``: the log's general advice); *in_parts*: the answer cuts the log into parts
    that each keep within ``maxSubqueryRows``, so the statement first runs under that row limit, and takes
    ``large_subqueries``' byte budget only when it is refused all the same (on Druid 33 windows of ~50,000
    tasks under ``maxSubqueryBytes: "auto"`` exhausted a 512 MB broker's heap, see
    ``bench/bench_broker_memory.py``; under the row limit one runs in about two seconds)."""

    sql: str
    params: tuple[Any, ...] = ()
    windowing: bool = False
    refusal_hint: str | None = None
    in_parts: bool = False
    reads: str = ""
    inlines: bool = False

    @property
    def subquery_limited(self) -> bool:
        """Whether Druid's limit on inlined subquery results applies to it (it inlines a semi-join or a
        window's input): the statements ``large_subqueries`` raises that limit for."""
        return self.inlines or self.windowing

    @property
    def context(self) -> dict[str, Any]:
        """The query context keys it needs (``enableWindowing`` for a window function)."""
        return {"enableWindowing": True} if self.windowing else {}


def task_order(schema: Schema, res: str | None = None) -> str:
    """The one order of a case's tasks, wherever an answer reads a sequence (variants, handovers, the
    resource map, :meth:`~pm_notebook.mining.ProcessLog.to_pm4py`): start, then end, then the activity's
    name, then the resource's (*res*; a missing name sorts as the empty text, first). The service's tables
    carry no task id, so tasks equal in all four are interchangeable in every answer. An ``ORDER BY`` list
    of the task table's columns, for a window's ``OVER (PARTITION BY case ORDER BY ...)``; pandas' side is
    :func:`~pm_notebook.mining._shaping.in_task_order`."""
    t, end = schema.col("vertex", "time"), schema.col("vertex", "end")
    act = schema.col("vertex", "activity")
    keys = [t, end, f"COALESCE({act}, '')"]
    if res is not None:
        keys.append(f"COALESCE({res}, '')")
    return ", ".join(keys)


def per_case(table: str, where: str, case: str, keys: dict[str, str], *, rows: str, order: str) -> str:
    """The "group per case, then aggregate" statement, written once: per the *keys* (output name ->
    expression), ``rows`` as the column named *rows* (a SUM of the per-case counts) and ``cases`` (one per
    case group: exact, where ``COUNT(DISTINCT)`` is approximate in Druid), from a per-(keys, case) GROUP BY of
    *table* under *where* (a ``WHERE`` clause or ``""``), ordered by *order*."""
    names = ", ".join(f'"{name}"' for name in keys)
    inner = ", ".join(f'{expr} AS "{name}"' for name, expr in keys.items())
    groups = ", ".join(keys.values())
    return (
        f'SELECT {names}, SUM("n") AS "{rows}", COUNT(*) AS "cases" FROM ('
        f'SELECT {inner}, {case} AS "case_id", COUNT(*) AS "n" FROM {table}{where} '
        f"GROUP BY {groups}, {case}) "
        f"GROUP BY {names} ORDER BY {order}"
    )


def quantile(q: float, column: str) -> str:
    """The aggregate for the *q* quantile of *column*."""
    return f"{QUANTILE}({column}, {q})"


def sketch(column: str) -> str:
    """The aggregate keeping *column*'s values as a quantiles sketch, for :func:`quantile` one level up."""
    return f"{SKETCH}({column})"


def check_quantiles(quantiles: Any, *, none_ok: bool) -> tuple[float, ...]:
    """*quantiles* as floats strictly between 0 and 1 (*none_ok*: an empty sequence is fine);
    :class:`ConfigurationError` otherwise."""
    try:
        qs = tuple(float(q) for q in quantiles)
    except (TypeError, ValueError):
        qs = (math.nan,)
    if isinstance(quantiles, str) or any(not 0 < q < 1 for q in qs) or not (qs or none_ok):
        raise ConfigurationError(
            f"quantiles must be numbers strictly between 0 and 1, got {quantiles!r}.",
            hint="e.g. quantiles=(0.5, 0.9)" + (", or quantiles=() for none" if none_ok else ""),
        )
    return qs


def qname(q: float) -> str:
    """The column name of the *q* quantile: ``p10``, ``p50``, ``p99_9``."""
    text = f"{q * 100:g}".replace(".", "_")
    return f"p{text}"


def placeholders(n: int) -> str:
    """``?, ?, ?`` for *n* values."""
    return ", ".join("?" * n)


def is_period(text: str) -> bool:
    """Whether *text* names a period (an alias such as ``"week"`` or an ISO-8601 period)."""
    return text.lower() in PERIOD_ALIASES or bool(_PERIOD.match(text.upper()))


def period(freq: str) -> str:
    """The ISO-8601 period *freq* names (``"week"`` → ``P1W``); :class:`ConfigurationError` otherwise."""
    value = PERIOD_ALIASES.get(str(freq).lower(), str(freq).upper())
    if not _PERIOD.match(value):
        raise ConfigurationError(
            f"{freq!r} is not an ISO-8601 period.", hint="Use e.g. 'P1D', 'P1W', 'P1M' or 'week'."
        )
    return value


def period_ms(iso: str) -> int:
    """The length of a fixed-length ISO period in milliseconds (months and years have none)."""
    m = _PERIOD.match(iso)
    assert m is not None
    y, mo, w, d, _, h, mi, sec = (int(g[:-1]) if g and g[0] != "T" else 0 for g in m.groups())
    if y or mo:
        raise ConfigurationError(f"A duration bucket must be fixed-length (weeks, days, hours), not {iso}.")
    return ((w * 7 + d) * 24 * 3600 + h * 3600 + mi * 60 + sec) * 1000
