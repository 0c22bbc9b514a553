"""The organisational perspective: the resource column, ``resources()`` and ``handovers()``.

Counts of cases are exact without ``COUNT(DISTINCT)`` (approximate in Druid): an inner GROUP BY per case
and an outer aggregate, which Druid's groupBy engine runs without inlining the inner result.
"""

from __future__ import annotations

import re

from ...errors import SchemaError
from .._filters import Filters
from .._schema import Schema
from ._base import END, START, Statement, per_case, quantile, task_order
from .cases import total_cases

__all__ = [
    "ALL_CASES",
    "GRID",
    "RESOURCE_NAMES",
    "WINDOW_REFUSAL",
    "CaseRange",
    "handovers",
    "resource_column",
    "resource_edges",
    "resource_nodes",
    "resources",
    "resources_by_activity",
    "task_counts",
    "total_tasks",
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
    order = '"events" DESC, "resource"'
    sql_counts = per_case(table, where, case, {"resource": res}, rows="events", order=order)
    activities = (
        f'SELECT "resource", COUNT(*) AS "activities" FROM ('
        f'SELECT {res} AS "resource", {act} AS "activity" FROM {table}{where} GROUP BY {res}, {act}) '
        f'GROUP BY "resource"'
    )
    total = total_cases(schema, filters, "total_cases")
    sql_activities = f'SELECT * FROM ({activities}) AS "r" CROSS JOIN ({total.sql}) AS "t"'
    counts = Statement(sql_counts, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))
    inlines = filters.inlines(schema, "vertex") or total.inlines
    return counts, Statement(sql_activities, params + total.params, reads="vertex", inlines=inlines)


def resources_by_activity(schema: Schema, filters: Filters, res: str) -> Statement:
    """Per (activity, resource): ``events`` and ``cases`` (per-case GROUP BY, then an outer aggregate)."""
    case, act = schema.col("vertex", "case"), schema.col("vertex", "activity")
    where, params = filters.where(schema, "vertex")
    keys = {"activity": act, "resource": res}
    order = '"activity", "events" DESC, "resource"'
    sql = per_case(schema.table("vertex"), where, case, keys, rows="events", order=order)
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))


#: what a user can do when Druid refuses a statement that windows the tasks (answered in parts: only a single
#: case over the part size, or a broker below Druid's default limit, is refused)
WINDOW_REFUSAL = (
    "This answer orders each case's tasks in a window, and Druid holds the window's input and its result "
    "on the broker, two rows per task; the log already answers in parts of whole cases of under "
    "maxSubqueryRows / 2 tasks (about 45,000 at Druid's default). What is left is a single case with more "
    "tasks than that, or a broker whose limit is lower: leave that case out (where('case_id <> ?', ...)), "
    "or open the log with conn.mining(project, large_subqueries=True): a part that does not fit is then run "
    "again under the broker's memory budget (maxSubqueryBytes) — which a window of tens of thousands of "
    "tasks can exhaust on a small broker (measured on Druid 33 with a 512 MB heap)."
)


#: a range of case ids, ``[low, high)`` in the service's string order (``None``: unbounded): the cases of one
#: part of a log too large for one window (see :func:`task_counts`)
CaseRange = tuple[str | None, str | None]
#: every case
ALL_CASES: CaseRange = (None, None)
#: the quantiles each part of a split log reports per edge, merged by the caller (the middle of each 1 %)
GRID = tuple((j + 0.5) / 100 for j in range(100))


def _over_window(sql: str, window: Statement) -> Statement:
    """A statement over the per-case task window (*window*): answered in parts of whole cases when Druid
    refuses it whole (see :data:`WINDOW_REFUSAL`)."""
    return Statement(
        sql,
        window.params,
        windowing=True,
        refusal_hint=WINDOW_REFUSAL,
        in_parts=True,
        reads="vertex",
        inlines=window.inlines,
    )


def total_tasks(schema: Schema, filters: Filters) -> Statement:
    """The filtered log's number of tasks (``tasks``), one row: whether one window can hold them."""
    where, params = filters.where(schema, "vertex")
    sql = f'SELECT COUNT(*) AS "tasks" FROM {schema.table("vertex")}{where}'
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))


def task_counts(schema: Schema, filters: Filters) -> Statement:
    """Per case (``case_id``, in the service's order of case ids) its number of ``tasks``: where a log too
    large for one window is cut into ranges of whole cases (a GROUP BY: nothing inlined)."""
    case = schema.col("vertex", "case")
    where, params = filters.where(schema, "vertex")
    sql = (
        f'SELECT {case} AS "case_id", COUNT(*) AS "tasks" FROM {schema.table("vertex")}{where} '
        f"GROUP BY {case} ORDER BY {case}"
    )
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))


def _grid(column: str) -> str:
    return ", ".join(f'{quantile(q, column)} AS "g{j}"' for j, q in enumerate(GRID))


def _tasks_in_order(
    schema: Schema, filters: Filters, res: str, *, ends: bool = False, cases: CaseRange = ALL_CASES
) -> Statement:
    """Every task of the filtered log with its place in its case (:func:`._base.task_order`), one window
    (``LAG``/``LEAD`` over ``PARTITION BY case ORDER BY`` the task order): ``case_id``, ``resource``,
    ``start_ms``, ``end_ms``, the previous task's ``prev_resource`` and ``prev_end``, and ``pos`` (1 for the
    case's first task); with *ends*, also ``next_case`` (NULL on the case's last task) and ``case_end``
    (the latest end of the case's tasks). *cases* keeps the tasks of a range of case ids."""
    case, t, end = schema.col("vertex", "case"), schema.col("vertex", "time"), schema.col("vertex", "end")
    low, high = cases
    bounds = [(f"{case} >= ?", low), (f"{case} < ?", high)]
    kept = [(cond, value) for cond, value in bounds if value is not None]
    extra = [(" AND ".join(c for c, _ in kept), tuple(v for _, v in kept))] if kept else []
    where, params = filters.where(schema, "vertex", *extra)
    over = f"OVER (PARTITION BY {case} ORDER BY {task_order(schema, res)})"
    columns = [
        f'{case} AS "case_id"',
        f'{res} AS "resource"',
        f'TIMESTAMP_TO_MILLIS({t}) AS "start_ms"',
        f'{end} AS "end_ms"',
        f'LAG({res}) {over} AS "prev_resource"',
        f'LAG({end}) {over} AS "prev_end"',
        f'ROW_NUMBER() {over} AS "pos"',
    ]
    if ends:
        columns += [
            f'LEAD({case}) {over} AS "next_case"',
            f'MAX({end}) OVER (PARTITION BY {case}) AS "case_end"',
        ]
    sql = f"SELECT {', '.join(columns)} FROM {schema.table('vertex')}{where}"
    return Statement(sql, params, windowing=True, reads="vertex", inlines=filters.inlines(schema, "vertex"))


#: the wait before a task: from the previous task's end to its start, zero when it starts before that end
_WAIT = 'GREATEST("start_ms" - "prev_end", 0)'


def handovers(
    schema: Schema, filters: Filters, res: str, cases: CaseRange = ALL_CASES, *, grid: bool = False
) -> tuple[Statement, Statement]:
    """Handover of work, two statements over the same window of the tasks: per (``from_resource``,
    ``to_resource``) the number of directly consecutive tasks of a case (``handovers``: task *i* to task
    *i+1* in the task order of :func:`._base.task_order`, overlapping and identical tasks included, as
    pm4py's ``discover_handover_of_work_network(beta=0)`` counts them), the ``cases`` in which it happens and
    the ``mean_wait`` between the two tasks (from the first's end to the second's start, zero when the
    second starts before the first ends); then per pair the ``median_wait``.

    A window over the tasks gives each task its predecessor's resource and end (``LAG``). The counts: an
    inner GROUP BY per (pair, case) counts the handovers and sums each case's waits, the outer one per pair
    adds them up and counts the cases. The median: one GROUP BY per pair straight over the window — on
    Druid 33 a quantile of sketches merged in a GROUP BY over a GROUP BY over a window needs more than the
    broker's two merge buffers (``tests/druid/test_mining.py``), one GROUP BY does not. Druid inlines the
    window's input and its result (two rows per task; a GROUP BY over a GROUP BY is not inlined): each
    statement holds at most ``maxSubqueryRows`` / 2 tasks, so a larger log is answered in parts, each a
    *cases* range (its pairs' ``wait_total`` and ``waits`` add up; with *grid*, the :data:`GRID` quantiles
    ``g0``... of each pair's waits, which the caller merges).
    """
    window = _tasks_in_order(schema, filters, res, cases=cases)
    per_case = (
        f'SELECT "prev_resource" AS "from_resource", "resource" AS "to_resource", "case_id", '
        f'COUNT(*) AS "n", SUM({_WAIT}) AS "wait_total", COUNT({_WAIT}) AS "waits" '
        f'FROM ({window.sql}) WHERE "pos" > 1 GROUP BY "prev_resource", "resource", "case_id"'
    )
    counts = (
        f'SELECT "from_resource", "to_resource", SUM("n") AS "handovers", COUNT(*) AS "cases", '
        f'CAST(SUM("wait_total") AS DOUBLE) / NULLIF(SUM("waits"), 0) AS "mean_wait", '
        f'SUM("wait_total") AS "wait_total", SUM("waits") AS "waits" FROM ({per_case}) '
        f'GROUP BY "from_resource", "to_resource" ORDER BY "handovers" DESC, "from_resource", "to_resource"'
    )
    medians = (
        f'SELECT "prev_resource" AS "from_resource", "resource" AS "to_resource", '
        f'{quantile(0.5, _WAIT)} AS "median_wait"{", " + _grid(_WAIT) if grid else ""} '
        f'FROM ({window.sql}) WHERE "pos" > 1 GROUP BY "prev_resource", "resource"'
    )
    return _over_window(counts, window), _over_window(medians, window)


def resource_edges(
    schema: Schema, filters: Filters, res: str, cases: CaseRange = ALL_CASES, *, grid: bool = False
) -> tuple[Statement, Statement]:
    """The resource map's edges, two statements over the same window of the tasks (see :func:`handovers`),
    per (``source``, ``target``) ``frequency`` and the waiting-time statistics of :mod:`.stats`: each task's
    incoming edge (START → the case's first resource, wait zero; else the previous task's resource → its
    resource, the wait of :func:`handovers`), and each case's last resource → END (wait: from its end to the
    case's latest end). A NULL resource is named ``(none)``. *cases* and *grid* as in :func:`handovers`."""
    from .stats import _duration_stats

    window = _tasks_in_order(schema, filters, res, ends=True, cases=cases)
    none = "'(none)'"
    source = f'CASE WHEN "pos" = 1 THEN \'{START}\' ELSE COALESCE("prev_resource", {none}) END'
    target = f'COALESCE("resource", {none})'
    wait = f'CASE WHEN "pos" = 1 THEN 0 ELSE {_WAIT} END'
    incoming = (
        f'SELECT {source} AS "source", {target} AS "target", COUNT(*) AS "frequency", '
        f"{_duration_stats(wait)}{', ' + _grid(wait) if grid else ''} FROM ({window.sql}) "
        f"GROUP BY {source}, {target} "
        f'ORDER BY "frequency" DESC, "source", "target"'
    )
    end_wait = 'GREATEST("case_end" - "end_ms", 0)'
    outgoing = (
        f'SELECT {target} AS "source", \'{END}\' AS "target", COUNT(*) AS "frequency", '
        f"{_duration_stats(end_wait)}{', ' + _grid(end_wait) if grid else ''} FROM ({window.sql}) "
        f'WHERE "next_case" IS NULL GROUP BY {target} '
        f'ORDER BY "frequency" DESC, "source"'
    )
    return _over_window(incoming, window), _over_window(outgoing, window)


def resource_nodes(schema: Schema, filters: Filters, res: str) -> tuple[Statement, Statement]:
    """The resource map's nodes (NULL named ``(none)``): per resource ``frequency`` (tasks) and ``cases``
    (per-case GROUP BY, then an outer aggregate); and, second statement, the service-time statistics of
    its tasks."""
    from .stats import _duration_stats

    case, d = schema.col("vertex", "case"), schema.col("vertex", "duration")
    where, params = filters.where(schema, "vertex")
    name = f"COALESCE({res}, '(none)')"
    table = schema.table("vertex")
    order = '"frequency" DESC, "activity"'
    sql = per_case(table, where, case, {"activity": name}, rows="frequency", order=order)
    sql_stats = f'SELECT {name} AS "activity", {_duration_stats(d)} FROM {table}{where} GROUP BY {name}'
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex")), Statement(
        sql_stats, params, reads="vertex", inlines=filters.inlines(schema, "vertex")
    )
