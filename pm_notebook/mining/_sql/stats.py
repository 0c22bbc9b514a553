"""Per-activity (node) and per-transition (edge) statistics: the one statement of each, which
``activities()``, ``transitions()``, ``bottlenecks()`` and ``process_map()`` all run."""

from __future__ import annotations

from .._filters import Filters
from .._schema import Schema
from ._base import Fragment, Statement, between_activities, quantile

__all__ = ["STATS", "bottlenecks", "edge_stats", "node_stats", "transitions"]

#: the duration statistics of every node and edge, in column order (milliseconds in the result)
STATS = ("mean", "median", "p90", "total", "min", "max")


def _duration_stats(d: str) -> str:
    return (
        f'AVG(CAST({d} AS DOUBLE)) AS "mean", {quantile(0.5, d)} AS "median", {quantile(0.9, d)} AS "p90", '
        f'SUM({d}) AS "total", MIN({d}) AS "min", MAX({d}) AS "max"'
    )


def node_stats(schema: Schema, filters: Filters) -> Statement:
    """Per activity, most executed first: ``activity``, ``frequency`` (executions), ``cases``,
    ``cases_with_rework`` and the service-time :data:`STATS`.

    Cases per activity are exact without ``COUNT(DISTINCT)`` (approximate in Druid): each of the *k*
    executions of an activity in a case carries ``total_occurences_by_caseid = k``, so summing ``1/k``
    counts every (case, activity) pair once. The sums are DOUBLE; the caller rounds them.
    """
    act = schema.col("vertex", "activity")
    d = schema.col("vertex", "duration")
    occ = schema.col("vertex", "occurrences")
    where, params = filters.where(schema, "vertex")
    sql = (
        f'SELECT {act} AS "activity", COUNT(*) AS "frequency", SUM(1.0 / {occ}) AS "cases", '
        f'SUM(CASE WHEN {occ} > 1 THEN 1.0 / {occ} ELSE 0 END) AS "cases_with_rework", {_duration_stats(d)} '
        f"FROM {schema.table('vertex')}{where} GROUP BY {act} ORDER BY frequency DESC, {act}"
    )
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))


def edge_stats(
    schema: Schema,
    filters: Filters,
    *extra: Fragment,
    order: str,
    limit: int | None = None,
    min_count: int = 1,
) -> Statement:
    """Per directly-follows transition (``source``, ``target``): ``frequency`` and the waiting-time
    :data:`STATS` (from the source's end to the target's start), with the answer's *extra* conditions,
    only the transitions seen at least *min_count* times, ordered by *order* and cut at *limit*."""
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    d = schema.col("edge", "duration")
    where, params = filters.where(schema, "edge", *extra)
    sql = (
        f'SELECT {src} AS "source", {dst} AS "target", COUNT(*) AS "frequency", {_duration_stats(d)} '
        f"FROM {schema.table('edge')}{where} GROUP BY {src}, {dst}"
        + (f" HAVING COUNT(*) >= {int(min_count)}" if min_count > 1 else "")
        + f" ORDER BY {order}"
        + (f" LIMIT {limit}" if limit else "")
    )
    return Statement(sql, params, reads="edge", inlines=filters.inlines(schema, "edge"))


def transitions(schema: Schema, filters: Filters, min_count: int = 1) -> Statement:
    """Every transition seen at least *min_count* times, START and END included, most frequent first."""
    return edge_stats(schema, filters, order='"frequency" DESC, "source", "target"', min_count=min_count)


def bottlenecks(schema: Schema, filters: Filters, k: int, metric: str, min_count: int = 1) -> Statement:
    """The *k* transitions between activities (START/END left out) seen at least *min_count* times,
    ranked by *metric* (a :data:`STATS` column), slowest first."""
    return edge_stats(
        schema,
        filters,
        between_activities(schema),
        order=f'"{metric}" DESC, "source", "target"',
        limit=k,
        min_count=min_count,
    )
