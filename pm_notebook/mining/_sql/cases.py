"""Answers over the cases table (one row per case): the case count, ``summary``, ``throughput``,
``distribution`` and ``cases_over_time``."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import ConfigurationError
from .._filters import Filters
from .._schema import Schema, quote
from ._base import Statement, is_period, period, period_ms, qname, quantile

__all__ = [
    "cases_over_time",
    "distribution",
    "excluded_cases",
    "excluded_ids",
    "group_key",
    "summary",
    "throughput",
    "total_cases",
]


def total_cases(schema: Schema, filters: Filters, name: str = "cases") -> Statement:
    """One row, column *name*: how many cases the filters keep (also the one-row count other answers
    ``CROSS JOIN`` beside their rows)."""
    where, params = filters.where(schema, "cases")
    sql = f'SELECT COUNT(*) AS "{name}" FROM {schema.table("cases")}{where}'
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))


def _excluded(schema: Schema) -> tuple[str, str | None] | None:
    """The two conditions on a cases-table row that :func:`excluded_cases` and :func:`excluded_ids` share:
    the ``<pid>_excluded_cases`` lookup names it, and (``None`` without the lookup of outdated versions) it is
    the case's current version; ``None`` when the project has no excluded-cases lookup."""
    excluded = schema.lookup("_excluded_cases")
    if excluded is None:
        return None
    version = schema.col("cases", "case_version")
    outdated = schema.lookup("")
    current = f"LOOKUP({version}, '{outdated}') IS NULL" if outdated else None
    return f"LOOKUP({version}, '{excluded}') IS NOT NULL", current


def excluded_cases(schema: Schema) -> Statement | None:
    """``excluded_cases``: the project's current cases its ``<pid>_excluded_cases`` lookup lists (cases a
    user excluded), whatever the filters; ``None`` when the project has no such lookup."""
    conds = _excluded(schema)
    if conds is None:
        return None
    where = " AND ".join(c for c in conds if c)
    sql = f'SELECT COUNT(*) AS "excluded_cases" FROM {schema.table("cases")} WHERE {where}'
    return Statement(sql, reads="cases")


def excluded_ids(schema: Schema, limit: int) -> Statement | None:
    """The case ids (``case_id``) the ``<pid>_excluded_cases`` lookup names, in any version, with ``current``
    (1 for a current version: those :func:`excluded_cases` counts), at most *limit* + 1 rows (one more than
    *limit* tells there are more: the caller then counts them and keeps the subquery of
    :class:`~pm_notebook.mining._filters.Filters`); ``None`` without the lookup. The same cases as that
    subquery leaves out."""
    conds = _excluded(schema)
    if conds is None:
        return None
    named, is_current = conds
    current = f"CASE WHEN {is_current} THEN 1 ELSE 0 END" if is_current else "1"
    sql = (
        f'SELECT {schema.col("cases", "case")} AS "case_id", {current} AS "current" '
        f"FROM {schema.table('cases')} WHERE {named} LIMIT {int(limit) + 1}"
    )
    return Statement(sql, reads="cases")


def summary(schema: Schema, filters: Filters) -> tuple[Statement, Statement]:
    """Two one-row statements. Over the cases table: the case statistics (cases, mean/median/p90
    throughput, cases with rework, first event, last end in ms) beside the variant count (a per-variant
    ``GROUP BY`` and an outer count), the two one-row aggregates side by side in a ``CROSS JOIN``. Over the
    task table: the event count and the number of distinct activities (exact: a per-activity ``GROUP BY``
    whose counts an outer aggregate sums and counts)."""
    d, t, end = schema.col("cases", "duration"), schema.col("cases", "time"), schema.col("cases", "end")
    where_c, pc = filters.where(schema, "cases")
    rework = schema.col("cases", "rework")
    stats = (
        f'SELECT COUNT(*) AS "cases", AVG(CAST({d} AS DOUBLE)) AS "mean_throughput", '
        f'{quantile(0.5, d)} AS "median_throughput", {quantile(0.9, d)} AS "p90_throughput", '
        f'SUM(CASE WHEN {rework} > 0 THEN 1 ELSE 0 END) AS "rework_cases", '
        f'MIN({t}) AS "first_event", MAX({end}) AS "last_event_ms" FROM {schema.table("cases")}{where_c}'
    )
    key = schema.col("cases", "variant")
    variants = (
        f'SELECT COUNT(*) AS "variants" FROM '
        f"(SELECT {key} FROM {schema.table('cases')}{where_c} GROUP BY {key})"
    )
    sql_cases = f'SELECT * FROM ({stats}) AS "c" CROSS JOIN ({variants}) AS "v"'
    act = schema.col("vertex", "activity")
    where_v, pv = filters.where(schema, "vertex")
    sql_events = (
        f'SELECT SUM("n") AS "events", COUNT(*) AS "activities" FROM '
        f'(SELECT {act}, COUNT(*) AS "n" FROM {schema.table("vertex")}{where_v} GROUP BY {act})'
    )
    return Statement(sql_cases, pc + pc, reads="cases", inlines=filters.inlines(schema, "cases")), Statement(
        sql_events, pv, reads="vertex", inlines=filters.inlines(schema, "vertex")
    )


def group_key(schema: Schema, by: str | None) -> tuple[str | None, str, str]:
    """``(expression, column name, ORDER BY)`` of a case grouping: ``None`` (no grouping), ``"variant"``
    or ``"process"``, ``"model"``, a period (by case start) or a case dimension."""
    if by is None:
        return None, "", ""
    if not isinstance(by, str) or not by.strip():
        raise ConfigurationError(f"by must be None, 'variant', a period or a dimension name, got {by!r}.")
    if by in ("variant", "process"):
        return schema.col("cases", "variant"), "variant", "cases DESC, variant"
    if by == "model":
        return schema.col("cases", "model"), "model", "cases DESC, model"
    if is_period(by):
        return f"TIME_FLOOR({schema.col('cases', 'time')}, '{period(by)}')", "period", '"period"'
    return schema.dimension("cases", by), by, f"cases DESC, {quote(by)}"


def throughput(schema: Schema, filters: Filters, by: str | None, quantiles: Sequence[float]) -> Statement:
    """Case duration statistics (``cases``, ``mean``, ``min``, one ``p<q>`` per quantile, ``max``), for the
    whole log or per :func:`group_key` of *by*."""
    d = schema.col("cases", "duration")
    key, label, order = group_key(schema, by)
    where, params = filters.where(schema, "cases")
    qcols = ", ".join(f'{quantile(q, d)} AS "{qname(q)}"' for q in quantiles)
    select_key = f"{key} AS {quote(label)}, " if key else ""
    group = f" GROUP BY {key} ORDER BY {order}" if key else ""
    sql = (
        f'SELECT {select_key}COUNT(*) AS "cases", AVG(CAST({d} AS DOUBLE)) AS "mean", MIN({d}) AS "min", '
        f'{qcols}, MAX({d}) AS "max" FROM {schema.table("cases")}{where}{group}'
    )
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))


def distribution(schema: Schema, filters: Filters, bucket: str) -> Statement:
    """Cases per duration ``bucket`` number (duration // the length of the ISO period *bucket*)."""
    width = period_ms(bucket)
    d = schema.col("cases", "duration")
    where, params = filters.where(schema, "cases")
    sql = (
        f'SELECT {d} / {width} AS "bucket", COUNT(*) AS "cases" FROM {schema.table("cases")}{where} '
        f"GROUP BY {d} / {width} ORDER BY bucket"
    )
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))


def cases_over_time(schema: Schema, filters: Filters, freq: str) -> tuple[Statement, Statement]:
    """Cases ``started`` per ISO period *freq* (by start time), and cases ``finished`` per period (by end)."""
    t, end = schema.col("cases", "time"), schema.col("cases", "end")
    where, params = filters.where(schema, "cases")
    sql_start = (
        f'SELECT TIME_FLOOR({t}, \'{freq}\') AS "period", COUNT(*) AS "started" FROM {schema.table("cases")}'
        f"{where} GROUP BY TIME_FLOOR({t}, '{freq}') ORDER BY \"period\""
    )
    fin = f"TIME_FLOOR(MILLIS_TO_TIMESTAMP({end}), '{freq}')"
    sql_end = (
        f'SELECT {fin} AS "period", COUNT(*) AS "finished" FROM {schema.table("cases")}{where} '
        f'GROUP BY {fin} ORDER BY "period"'
    )
    return Statement(sql_start, params, reads="cases", inlines=filters.inlines(schema, "cases")), Statement(
        sql_end, params, reads="cases", inlines=filters.inlines(schema, "cases")
    )
