"""The time perspective: ``arrivals()``, ``dotted_chart()`` bins, ``performance_spectrum()`` and the
waiting time before each activity; ``work_in_progress()`` reuses :func:`.cases.cases_over_time`."""

from __future__ import annotations

from .._filters import Filters
from .._schema import Schema
from ._base import Statement, between_activities, per_case, qname, quantile

__all__ = ["arrivals", "dotted_bins", "interarrival", "spectrum", "waiting"]


def arrivals(schema: Schema, filters: Filters, freq: str) -> Statement:
    """Per ISO period *freq* (by case start): cases ``started``, the ``first`` and ``last`` start in ms
    (their difference over ``started - 1`` is the mean time between arrivals inside the period)."""
    t = schema.col("cases", "time")
    where, params = filters.where(schema, "cases")
    floor = f"TIME_FLOOR({t}, '{freq}')"
    sql = (
        f'SELECT {floor} AS "period", COUNT(*) AS "started", MIN(TIMESTAMP_TO_MILLIS({t})) AS "first", '
        f'MAX(TIMESTAMP_TO_MILLIS({t})) AS "last" FROM {schema.table("cases")}{where} '
        f'GROUP BY {floor} ORDER BY "period"'
    )
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))


def interarrival(schema: Schema, filters: Filters, freq: str, quantiles: tuple[float, ...]) -> Statement:
    """Per ISO period *freq* (by case start): the *quantiles* of the time between two consecutive case
    starts inside the period (ms, columns ``p50``…), and how many such ``gaps`` there are.

    Druid cannot pair a case with the one that started before it without a join or a window function; the
    gaps are ``LAG`` over the cases ordered by start (``enableWindowing``, on a per-case ``GROUP BY`` as
    Druid 29 asks), aggregated per period outside. Druid's groupBy engine runs only a groupBy subquery
    itself, so the broker inlines the windowed one: one row per case, capped by ``maxSubqueryRows``.
    """
    case, t = schema.col("cases", "case"), schema.col("cases", "time")
    where, params = filters.where(schema, "cases")
    floor = f"TIME_FLOOR({t}, '{freq}')"
    ms = f"TIMESTAMP_TO_MILLIS({t})"
    gap = '"gap"'
    quants = "".join(f', {quantile(q, gap)} AS "{qname(q)}"' for q in quantiles)
    sql = (
        f'SELECT "period", COUNT(*) AS "gaps"{quants} FROM ('
        f'SELECT {floor} AS "period", {ms} - LAG({ms}) OVER (PARTITION BY {floor} ORDER BY {t}) AS {gap} '
        f"FROM {schema.table('cases')}{where} GROUP BY {t}, {case}) "
        f'WHERE {gap} IS NOT NULL GROUP BY "period" ORDER BY "period"'
    )
    return Statement(sql, params, windowing=True, reads="cases", inlines=filters.inlines(schema, "cases"))


def dotted_bins(schema: Schema, filters: Filters, freq: str) -> Statement:
    """The dotted chart of a whole log, binned: per (ISO period *freq* of the task's start, activity) the
    number of ``events`` and of ``cases`` (per-case GROUP BY, then an outer aggregate)."""
    case, act, t = (
        schema.col("vertex", "case"),
        schema.col("vertex", "activity"),
        schema.col("vertex", "time"),
    )
    where, params = filters.where(schema, "vertex")
    floor = f"TIME_FLOOR({t}, '{freq}')"
    keys = {"period": floor, "activity": act}
    sql = per_case(schema.table("vertex"), where, case, keys, rows="events", order='"period", "activity"')
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))


def spectrum(schema: Schema, filters: Filters, source: str, target: str, freq: str) -> Statement:
    """The performance spectrum of the segment *source* → *target* (directly follows), binned by the
    ISO period *freq* of the segment's start: ``segments``, mean/median/p90/min/max ``wait`` (ms)."""
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    t, d = schema.col("edge", "time"), schema.col("edge", "duration")
    where, params = filters.where(schema, "edge", (f"{src} = ? AND {dst} = ?", (source, target)))
    floor = f"TIME_FLOOR({t}, '{freq}')"
    sql = (
        f'SELECT {floor} AS "period", COUNT(*) AS "segments", AVG(CAST({d} AS DOUBLE)) AS "mean", '
        f'{quantile(0.5, d)} AS "median", {quantile(0.9, d)} AS "p90", MIN({d}) AS "min", MAX({d}) AS "max" '
        f'FROM {schema.table("edge")}{where} GROUP BY {floor} ORDER BY "period"'
    )
    return Statement(sql, params, reads="edge", inlines=filters.inlines(schema, "edge"))


def waiting(schema: Schema, filters: Filters) -> Statement:
    """Per activity, the waiting time before it: the transitions into it from another activity (START
    left out): ``mean_waiting``, ``median_waiting``, ``total_waiting`` (ms)."""
    dst, d = schema.col("edge", "target"), schema.col("edge", "duration")
    where, params = filters.where(schema, "edge", between_activities(schema))
    sql = (
        f'SELECT {dst} AS "activity", AVG(CAST({d} AS DOUBLE)) AS "mean_waiting", '
        f'{quantile(0.5, d)} AS "median_waiting", SUM({d}) AS "total_waiting" '
        f"FROM {schema.table('edge')}{where} GROUP BY {dst}"
    )
    return Statement(sql, params, reads="edge", inlines=filters.inlines(schema, "edge"))
