"""``open_cases()``: the open cases and the remaining-time history of the completed ones, in three statements
at most.

* :func:`now`: one row, the latest event end over the project's current cases (every case, whatever the
  filters): the "now" elapsed time is measured to, when the user gives no ``as_of``.
* :func:`open_cases`: one row per open case of the filtered log: its id, its last activity (the source of
  its transition to END), its start and its latest event end: the transitions to END joined to the cases
  table (Druid inlines one side: one row per open case).
* :func:`history`: per (activity, elapsed bin), per activity and once for the whole log (``GROUPING SETS``):
  the observations of the completed cases and the percentiles 5, 10, ..., 95 of their remaining time, and its
  maximum. An *observation* is one task of a completed case: its activity, the elapsed time from the case's
  first event to the task's end, and the remaining time from the task's end to the case's last event. The
  tasks are joined to the filtered completed cases (Druid inlines that subquery: one row per completed case).

The elapsed bins are fixed, so no statement computes them: under 1 min, [1 min, 2 min), [2 min, 5 min),
10 min, 20 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h, 1 day, 2, 4, 7, 14, 30, 60, 90, 180, 365, 730 days and more
(:data:`EDGES_MS`) — round durations, each about twice the one before (1.5 to 2.5 times), so a bin is "a
similar elapsed time" at every scale, from a minute to two years.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._filters import CompletedByLookup, EndsWith, Filters
from .._schema import Schema
from ._base import END, Fragment, Statement, placeholders, qname, quantile

__all__ = [
    "EDGES_MS",
    "LEVELS",
    "Completion",
    "bin_expression",
    "history",
    "now",
    "open_cases",
]

_MIN, _HOUR, _DAY = 60_000, 3_600_000, 86_400_000
#: the upper edges of the elapsed bins 0..21, in ms: round durations about twice the one before (1 min ...
#: 2 years); bin 22 is the rest
EDGES_MS: tuple[int, ...] = (
    *(m * _MIN for m in (1, 2, 5, 10, 20, 30)),
    *(h * _HOUR for h in (1, 2, 4, 8, 12)),
    *(d * _DAY for d in (1, 2, 4, 7, 14, 30, 60, 90, 180, 365, 730)),
)
#: the percentile levels :func:`history` computes (5 %, 10 %, ... 95 %; the maximum is the 100th). Every
#: level is a post-aggregation of one sketch on Druid, but a quantile of its own on the stand-in (about 0.3 s
#: per level over a million observations): a step of 5 % keeps a 100,000-case history to seconds there, and
#: is finer than the sampling error of a bin of 30 observations (about ±9 % on a share)
LEVELS: tuple[float, ...] = tuple(k / 20 for k in range(1, 20))

_REFUSAL = (
    "Open the log with conn.mining(project, large_subqueries=True): open_cases() joins the tasks (or the "
    "transitions to END) to the filtered completed (or open) cases, and Druid inlines those cases, one row "
    "each; or narrow the log first, e.g. log.between(start, end)."
)


@dataclass(frozen=True)
class Completion:
    """What makes a case completed: the project's completion *lookup* (``case_version`` → ``"true"``), or,
    with *end_activities*, a last activity among them."""

    lookup: str | None = None
    end_activities: tuple[str, ...] = ()

    def completed(self, schema: Schema) -> Fragment:
        """The condition on the cases table that keeps the completed cases."""
        if self.end_activities:
            built = EndsWith(self.end_activities).render(schema, "cases")
        else:
            assert self.lookup is not None
            built = CompletedByLookup(self.lookup).render(schema, "cases")
        assert built is not None
        return built


def bin_expression(elapsed: str) -> str:
    """The bin number (0..22) of the elapsed time *elapsed* (an expression in ms, never negative)."""
    whens = " ".join(f"WHEN {elapsed} < {edge} THEN {i}" for i, edge in enumerate(EDGES_MS))
    return f"CASE {whens} ELSE {len(EDGES_MS)} END"


def now(schema: Schema) -> Statement:
    """One row, ``now_ms``: the latest event end over the project's current cases (filters not applied)."""
    every = Filters(include_excluded=True)
    where, params = every.where(schema, "cases")
    sql = f'SELECT MAX({schema.col("cases", "end")}) AS "now_ms" FROM {schema.table("cases")}{where}'
    return Statement(sql, params, reads="cases", inlines=every.inlines(schema, "cases"))


def _cases(schema: Schema, filters: Filters, condition: Fragment | None) -> Fragment:
    """The filtered cases (meeting *condition*) as a join input: ``k`` (case id), ``start_ms``, ``end_ms``."""
    extra = () if condition is None else (condition,)
    where, params = filters.where(schema, "cases", *extra)
    case, t, end = schema.col("cases", "case"), schema.col("cases", "time"), schema.col("cases", "end")
    sql = (
        f'SELECT {case} AS "k", TIMESTAMP_TO_MILLIS({t}) AS "start_ms", {end} AS "end_ms" '
        f"FROM {schema.table('cases')}{where}"
    )
    return sql, params


def open_cases(schema: Schema, filters: Filters, completion: Completion) -> Statement:
    """One row per open case of the filtered log: ``case_id``, ``last_activity``, ``start_ms``,
    ``last_ms`` (its latest event end).

    The side Druid inlines is the smaller one it can be: by the lookup, the filtered cases that are not
    completed (the transitions to END joined to them); given end activities, the transitions to END from
    any other activity — the open cases of the whole project — joined to the filtered cases table."""
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    e_case = schema.col("edge", "case")
    if completion.end_activities:
        where, params = filters.where(schema, "cases")
        case, t, end = schema.col("cases", "case"), schema.col("cases", "time"), schema.col("cases", "end")
        ends = completion.end_activities
        sql = (
            f'SELECT {case} AS "case_id", e."last" AS "last_activity", '
            f'TIMESTAMP_TO_MILLIS({t}) AS "start_ms", {end} AS "last_ms" '
            f"FROM {schema.table('cases')} INNER JOIN "
            f'(SELECT {e_case} AS "k", {src} AS "last" FROM {schema.table("edge")} '
            f"WHERE {dst} = '{END}' AND {src} NOT IN ({placeholders(len(ends))})) AS e "
            f'ON {case} = e."k"{where}'
        )
        return Statement(sql, (*ends, *params), refusal_hint=_REFUSAL, reads="cases", inlines=True)
    version = schema.col("cases", "case_version")
    not_done = (f"COALESCE(LOOKUP({version}, '{completion.lookup}'), 'false') <> 'true'", ())
    inner, inner_params = _cases(schema, filters, not_done)
    sql = (
        f'SELECT e.{e_case} AS "case_id", e.{src} AS "last_activity", '
        f'c."start_ms" AS "start_ms", c."end_ms" AS "last_ms" '
        f"FROM {schema.table('edge')} AS e INNER JOIN ({inner}) AS c "
        f'ON e.{e_case} = c."k" '
        f"WHERE e.{dst} = '{END}'"
    )
    return Statement(sql, inner_params, refusal_hint=_REFUSAL, reads="edge", inlines=True)


def history(schema: Schema, filters: Filters, completion: Completion) -> Statement:
    """Per ``GROUPING SETS ((activity, bin), (activity), ())`` over the observations of the filtered completed
    cases: ``activity``, ``bin``, ``grouping`` (``GROUPING(activity, bin)``: 0, 1 or 3), ``observations``,
    ``p5``, ``p10`` .. ``p95`` (:data:`._base.QUANTILE` of the remaining time, ms) and ``p100`` (its
    maximum)."""
    act, end = schema.col("vertex", "activity"), schema.col("vertex", "end")
    inner, params = _cases(schema, filters, completion.completed(schema))
    elapsed = f'(v.{end} - c."start_ms")'
    remaining = f'(c."end_ms" - v.{end})'
    key_bin = bin_expression(elapsed)
    grid = ", ".join(f'{quantile(q, remaining)} AS "{qname(q)}"' for q in LEVELS)
    sql = (
        f'SELECT v.{act} AS "activity", {key_bin} AS "bin", GROUPING(v.{act}, {key_bin}) AS "grouping", '
        f'COUNT(*) AS "observations", {grid}, MAX({remaining}) AS "p100" '
        f"FROM {schema.table('vertex')} AS v INNER JOIN ({inner}) AS c "
        f'ON v.{schema.col("vertex", "case")} = c."k" '
        f"GROUP BY GROUPING SETS ((v.{act}, {key_bin}), (v.{act}), ())"
    )
    return Statement(sql, params, refusal_hint=_REFUSAL, reads="vertex", inlines=True)
