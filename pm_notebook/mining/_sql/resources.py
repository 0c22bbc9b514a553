"""The organisational perspective: the resource column, ``resources()`` and ``handovers()``.

Counts of cases are exact without ``COUNT(DISTINCT)`` (approximate in Druid): an inner GROUP BY per case
and an outer aggregate, which Druid's groupBy engine runs without inlining the inner result.
"""

from __future__ import annotations

import re

from ...errors import SchemaError
from .._filters import Filters
from .._schema import Schema
from ._base import END, START, Statement, between_activities, quantile, sketch
from .cases import total_cases

__all__ = [
    "RESOURCE_NAMES",
    "handovers",
    "resource_column",
    "resource_edges",
    "resource_nodes",
    "resources",
    "resources_by_activity",
]

#: the dimension names tried, in order, when no resource column is named
RESOURCE_NAMES = ("resource", "org:resource", "org_resource", "user", "performer")


def resource_column(schema: Schema, name: str | None) -> str:
    """The quoted resource column of the task table: *name* (a dimension, by any of its spellings) or the
    first of :data:`RESOURCE_NAMES` the project has; :class:`SchemaError` when there is none."""
    if name is not None:
        return schema.dimension("vertex", name)
    for candidate in RESOURCE_NAMES:
        try:
            return schema.dimension("vertex", candidate)
        except SchemaError:
            continue
    dims = sorted(c for c in schema.columns["vertex"] if re.search(r"_lpkr$|^detail_\d+_lpkr_", c.lower()))
    raise SchemaError(
        f"Table {schema.tables['vertex']!r} has no resource column (looked for the dimensions "
        f"{', '.join(RESOURCE_NAMES)}).",
        hint="Name the column that holds who did each task: conn.mining(project, resource='Courier'). "
        f"Dimension columns: {', '.join(dims) or 'none'}.",
    )


def resources(schema: Schema, filters: Filters, res: str) -> tuple[Statement, Statement]:
    """Per resource (NULL included): ``events`` and ``cases`` (per-case GROUP BY, then an outer sum and
    count); and, second statement, per resource its number of distinct ``activities`` (per-activity GROUP
    BY, then a count) and on every row ``total_cases``, the cases the filters keep (a one-row aggregate of
    the cases table, CROSS JOINed; a join keeps no order). The join sits on the smaller statement: Druid's
    broker inlines both of its inputs (one row per resource, and one row)."""
    case, act = schema.col("vertex", "case"), schema.col("vertex", "activity")
    where, params = filters.where(schema, "vertex")
    table = schema.table("vertex")
    sql_counts = (
        f'SELECT "resource", SUM("n") AS "events", COUNT(*) AS "cases" FROM ('
        f'SELECT {res} AS "resource", {case} AS "case_id", COUNT(*) AS "n" FROM {table}{where} '
        f'GROUP BY {res}, {case}) GROUP BY "resource" ORDER BY "events" DESC, "resource"'
    )
    activities = (
        f'SELECT "resource", COUNT(*) AS "activities" FROM ('
        f'SELECT {res} AS "resource", {act} AS "activity" FROM {table}{where} GROUP BY {res}, {act}) '
        f'GROUP BY "resource"'
    )
    total = total_cases(schema, filters, "total_cases")
    sql_activities = f'SELECT * FROM ({activities}) AS "r" CROSS JOIN ({total.sql}) AS "t"'
    return Statement(sql_counts, params), Statement(sql_activities, params + total.params)


def resources_by_activity(schema: Schema, filters: Filters, res: str) -> Statement:
    """Per (activity, resource): ``events`` and ``cases`` (per-case GROUP BY, then an outer aggregate)."""
    case, act = schema.col("vertex", "case"), schema.col("vertex", "activity")
    where, params = filters.where(schema, "vertex")
    sql = (
        f'SELECT "activity", "resource", SUM("n") AS "events", COUNT(*) AS "cases" FROM ('
        f'SELECT {act} AS "activity", {res} AS "resource", {case} AS "case_id", COUNT(*) AS "n" '
        f"FROM {schema.table('vertex')}{where} GROUP BY {act}, {res}, {case}) "
        f'GROUP BY "activity", "resource" ORDER BY "activity", "events" DESC, "resource"'
    )
    return Statement(sql, params)


def _ends(schema: Schema, res: str) -> tuple[str, str]:
    """The two task subqueries a transition is joined to: its source task (by case, activity and end
    time) and its target task (by case, activity and start time)."""
    case, act = schema.col("vertex", "case"), schema.col("vertex", "activity")
    t, end = schema.col("vertex", "time"), schema.col("vertex", "end")
    table = schema.table("vertex")
    source = f'SELECT {case} AS "c", {act} AS "a", {end} AS "t", {res} AS "r" FROM {table}'
    target = f'SELECT {case} AS "c", {act} AS "a", TIMESTAMP_TO_MILLIS({t}) AS "t", {res} AS "r" FROM {table}'
    return source, target


def handovers(schema: Schema, filters: Filters, res: str) -> Statement:
    """Handover of work, one statement: per (``from_resource``, ``to_resource``) the number of directly
    consecutive tasks of a case (``handovers``: the transitions between activities, START/END left out),
    the ``cases`` in which it happens, and the ``mean_wait`` and ``median_wait`` between the two tasks.

    Each transition is joined to its source task (same case and activity, the task's end = the
    transition's start) and to its target task (same case and activity, the task's start = the
    transition's end). An inner GROUP BY per (pair, case) counts the handovers and keeps each case's waits
    (their sum and count, and a quantiles sketch); the outer one per pair sums them, counts the cases and
    merges the sketches in its quantile, so the joins run once. Druid inlines
    both task subqueries (join inputs), so a log with more tasks than ``maxSubqueryRows`` needs the limit
    raised (``large_subqueries``).
    """
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    case, t = schema.col("edge", "case"), schema.col("edge", "time")
    end, d = schema.col("edge", "end"), schema.col("edge", "duration")
    edge = schema.table("edge")
    source, target = _ends(schema, res)
    wait = f'"e".{d}'
    where, params = filters.where(schema, "edge", between_activities(schema))
    # the filters name edge columns unqualified: the joined subqueries' columns (c, a, t, r) never clash
    joined = (
        f'FROM {edge} AS "e" '
        f'INNER JOIN ({source}) AS "f" ON "e".{case} = "f"."c" AND "e".{src} = "f"."a" '
        f'AND TIMESTAMP_TO_MILLIS("e".{t}) = "f"."t" '
        f'INNER JOIN ({target}) AS "g" ON "e".{case} = "g"."c" AND "e".{dst} = "g"."a" '
        f'AND "e".{end} = "g"."t"{where}'
    )
    per_case = (
        f'SELECT "f"."r" AS "from_resource", "g"."r" AS "to_resource", "e".{case} AS "case_id", '
        f'COUNT(*) AS "n", SUM({wait}) AS "wait_total", COUNT({wait}) AS "waits", '
        f'{sketch(wait)} AS "wait_sketch" {joined} GROUP BY "f"."r", "g"."r", "e".{case}'
    )
    sketches = '"wait_sketch"'
    sql = (
        f'SELECT "from_resource", "to_resource", SUM("n") AS "handovers", COUNT(*) AS "cases", '
        f'CAST(SUM("wait_total") AS DOUBLE) / NULLIF(SUM("waits"), 0) AS "mean_wait", '
        f'{quantile(0.5, sketches)} AS "median_wait" FROM ({per_case}) '
        f'GROUP BY "from_resource", "to_resource" ORDER BY "handovers" DESC, "from_resource", "to_resource"'
    )
    return Statement(sql, params)


def resource_edges(schema: Schema, filters: Filters, res: str) -> Statement:
    """The resource map's edges: START → first resource, handovers, last resource → END, per pair
    ``frequency`` and the waiting-time statistics of :mod:`.stats` (from the source task's end to the
    target task's start). START/END sides are joined to nothing (LEFT JOINs keep them)."""
    from .stats import _duration_stats

    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    case, t = schema.col("edge", "case"), schema.col("edge", "time")
    end, d = schema.col("edge", "end"), schema.col("edge", "duration")
    source, target = _ends(schema, res)
    where, params = filters.where(schema, "edge")
    wait = f'"e".{d}'
    from_r = f"CASE WHEN \"e\".{src} = '{START}' THEN '{START}' ELSE COALESCE(\"f\".\"r\", '(none)') END"
    to_r = f"CASE WHEN \"e\".{dst} = '{END}' THEN '{END}' ELSE COALESCE(\"g\".\"r\", '(none)') END"
    sql = (
        f'SELECT {from_r} AS "source", {to_r} AS "target", COUNT(*) AS "frequency", '
        f"{_duration_stats(wait)} "
        f'FROM {schema.table("edge")} AS "e" '
        f'LEFT JOIN ({source}) AS "f" ON "e".{case} = "f"."c" AND "e".{src} = "f"."a" '
        f'AND TIMESTAMP_TO_MILLIS("e".{t}) = "f"."t" '
        f'LEFT JOIN ({target}) AS "g" ON "e".{case} = "g"."c" AND "e".{dst} = "g"."a" '
        f'AND "e".{end} = "g"."t"{where} GROUP BY {from_r}, {to_r} '
        f'ORDER BY "frequency" DESC, "source", "target"'
    )
    return Statement(sql, params)


def resource_nodes(schema: Schema, filters: Filters, res: str) -> tuple[Statement, Statement]:
    """The resource map's nodes (NULL named ``(none)``): per resource ``frequency`` (tasks) and ``cases``
    (per-case GROUP BY, then an outer aggregate); and, second statement, the service-time statistics of
    its tasks."""
    from .stats import _duration_stats

    case, d = schema.col("vertex", "case"), schema.col("vertex", "duration")
    where, params = filters.where(schema, "vertex")
    name = f"COALESCE({res}, '(none)')"
    table = schema.table("vertex")
    sql = (
        f'SELECT "activity", SUM("n") AS "frequency", COUNT(*) AS "cases" FROM ('
        f'SELECT {name} AS "activity", {case} AS "case_id", COUNT(*) AS "n" FROM {table}{where} '
        f'GROUP BY {name}, {case}) GROUP BY "activity" ORDER BY "frequency" DESC, "activity"'
    )
    sql_stats = f'SELECT {name} AS "activity", {_duration_stats(d)} FROM {table}{where} GROUP BY {name}'
    return Statement(sql, params), Statement(sql_stats, params)
