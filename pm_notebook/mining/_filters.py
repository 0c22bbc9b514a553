"""Case filters as values, and :class:`Filters`, the set of them a log carries, which writes their SQL.

Every filter is a *case* filter: a case is in or out as a whole. On the cases table a filter is a plain
``WHERE`` condition; on the task (``vertex``) and transition (``edge``) tables a filter on columns those
tables share (the variant keys) is applied directly and any other one becomes
``caseid IN (SELECT caseid FROM <cases> WHERE ...)``. Excluded cases (the ``<pid>_excluded_cases`` lookup)
are left out unless asked for, with ``caseid NOT IN (...)`` over the (small) excluded set when no other case
filter needs a semi-join: a list of the excluded ids when the log has read them
(:attr:`Filters.excluded_ids`, a filter Druid applies while it scans), else a subquery of the cases table
(which Druid 33's planner turns into a join: on a 1M-task project about three times slower,
``bench/README.md``). Druid materialises a semi-join's subquery (``maxSubqueryRows``, 100,000 rows by
default), so filters that keep more cases than that need a raised limit on a real cluster.

A new filter is a frozen dataclass with a ``label`` and a ``render(schema, kind)``; the values it holds are
already checked (:class:`~pm_notebook.mining.ProcessLog` checks what the user passed).
"""

from __future__ import annotations

import datetime as dt
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ._schema import Schema
from ._sql._base import END, START, Fragment, placeholders

#: the most excluded case ids a log reads to write as a list of values; past it, a subquery (:class:`Filters`)
EXCLUDED_IDS_MAX = 5_000

__all__ = [
    "EXCLUDED_IDS_MAX",
    "AttributeIn",
    "CaseDuration",
    "CaseFilter",
    "DirectlyFollows",
    "EventuallyFollows",
    "LastActivity",
    "StartsWith",
    "TopVariants",
    "WithoutActivity",
    "CompletedByLookup",
    "Condition",
    "EndsWith",
    "Filters",
    "StartedBetween",
    "VariantsIn",
    "WithActivity",
]


#: a semi-join or join on a subquery in SQL a user wrote (``caseid IN (SELECT ...)``), its strings blanked
_USER_SUBQUERY = re.compile(r"\b(?:IN|(?<!CROSS )JOIN) \(SELECT\b", re.IGNORECASE)
_STRING = re.compile(r"'(?:[^']|'')*'")


def user_subquery(condition: str) -> bool:
    """Whether a condition a user wrote (``log.where``, ``drivers("where:...")``) joins a subquery Druid
    inlines: the one fact read from SQL text, since only the user knows what they wrote."""
    return bool(_USER_SUBQUERY.search(_STRING.sub("''", condition)))


class CaseFilter(ABC):
    """One case filter: a label (for ``repr``) and its SQL on each table kind."""

    @property
    @abstractmethod
    def label(self) -> str:
        """How ``repr(log)`` names the filter."""

    def semi_join(self, schema: Schema) -> bool:
        """Whether the cases-table form reads another table through a subquery (``caseid IN (SELECT ...)``),
        which Druid inlines on the broker: a fact of the statements that carry the filter."""
        return False

    @abstractmethod
    def render(self, schema: Schema, kind: str) -> Fragment | None:
        """The condition on the *kind* table (``cases``, ``vertex``, ``edge``), or ``None`` when that table
        cannot express it (then the cases-table form is applied through a ``caseid`` semi-join). Every
        filter has a cases-table form."""


@dataclass(frozen=True)
class Condition(CaseFilter):
    """A Druid SQL condition on the cases table with its ``?`` parameters (``log.where``)."""

    condition: str
    params: tuple[Any, ...] = ()

    @property
    def label(self) -> str:
        return f"where {self.condition}"

    def semi_join(self, schema: Schema) -> bool:
        return user_subquery(self.condition)

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        return (f"({self.condition})", self.params) if kind == "cases" else None


@dataclass(frozen=True)
class StartedBetween(CaseFilter):
    """Cases that started in ``[start, end)``; either bound may be ``None`` (``log.between``)."""

    start: dt.datetime | None
    end: dt.datetime | None

    @property
    def label(self) -> str:
        return f"started in [{self.start}, {self.end})"

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        t = schema.col("cases", "time")
        conds, values = [], []
        if self.start is not None:
            conds.append(f"{t} >= ?")
            values.append(self.start)
        if self.end is not None:
            conds.append(f"{t} < ?")
            values.append(self.end)
        return "(" + " AND ".join(conds) + ")", tuple(values)


@dataclass(frozen=True)
class VariantsIn(CaseFilter):
    """Cases of the given variant keys; with ``by="model"`` also model variant names (``Variant 1``) through
    the ``<pid>_variant_name`` lookup when the project has it (``log.variants_in``)."""

    values: tuple[str, ...]
    by: str = "process"  # "process" (exact sequence) or "model"

    @property
    def label(self) -> str:
        return f"{self.by} variant in {list(self.values)}"

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        col = schema.col(kind, "model" if self.by == "model" else "variant")
        cond = f"{col} IN ({placeholders(len(self.values))})"
        names = schema.lookup("_variant_name") if self.by == "model" else None
        if names is None:
            return f"({cond})", self.values
        named = f"LOOKUP({col}, '{names}') IN ({placeholders(len(self.values))})"
        return f"({cond} OR {named})", self.values * 2


@dataclass(frozen=True)
class WithActivity(CaseFilter):
    """Cases in which *activity* was executed at least once (``log.with_activity``)."""

    activity: str

    @property
    def label(self) -> str:
        return f"with activity {self.activity!r}"

    def semi_join(self, schema: Schema) -> bool:
        return not schema.has("cases", "activities")

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        if schema.has("cases", "activities"):
            return f"MV_CONTAINS({schema.col('cases', 'activities')}, ?)", (self.activity,)
        sub = (
            f"SELECT {schema.col('vertex', 'case')} FROM {schema.table('vertex')} "
            f"WHERE {schema.col('vertex', 'activity')} = ?"
        )
        return f"{schema.col('cases', 'case')} IN ({sub})", (self.activity,)


@dataclass(frozen=True)
class CompletedByLookup(CaseFilter):
    """Completed cases by the project's ``<pid>_cases_is_completed`` lookup (``case_version`` →
    ``"true"``)."""

    lookup: str

    @property
    def label(self) -> str:
        return "completed (lookup)"

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        return f"LOOKUP({schema.col('cases', 'case_version')}, '{self.lookup}') = 'true'", ()


@dataclass(frozen=True)
class EndsWith(CaseFilter):
    """Cases whose last activity (the source of their transition to END) is one of *activities*
    (``log.completed_only([...])``)."""

    activities: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"completed (ends with {list(self.activities)})"

    def semi_join(self, schema: Schema) -> bool:
        return True

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        cond = (
            f"{schema.col('edge', 'target')} = '{END}' "
            f"AND {schema.col('edge', 'source')} IN ({placeholders(len(self.activities))})"
        )
        return _edge_cases(schema, cond), self.activities


@dataclass(frozen=True)
class Filters:
    """The case filters of a log, in the order they were added, and whether excluded cases count.

    Immutable: :meth:`add` and :meth:`with_excluded` return new values. :meth:`where` writes the ``WHERE``
    clause of a query on one table kind.
    """

    cases: tuple[CaseFilter, ...] = ()
    include_excluded: bool = False
    #: the ids of the cases the excluded-cases lookup names (any version), when the log has read them (at most
    #: :data:`EXCLUDED_IDS_MAX`): the task and transition tables then leave them out by that list of values
    #: instead of a ``NOT IN`` subquery; ``None``: not read, the subquery (left out of ``repr``: thousands)
    excluded_ids: tuple[str, ...] | None = field(default=None, repr=False)

    def add(self, case_filter: CaseFilter) -> Filters:
        """These filters and *case_filter*."""
        return replace(self, cases=(*self.cases, case_filter))

    def with_excluded(self, include: bool) -> Filters:
        """These filters, with the excluded cases included (or not)."""
        return replace(self, include_excluded=include)

    def with_excluded_ids(self, ids: tuple[str, ...] | None) -> Filters:
        """These filters, with the excluded cases' ids read (``None``: not read, the subquery is used)."""
        return replace(self, excluded_ids=ids)

    def within(self, low: str | None, high: str | None) -> Filters:
        """These filters for a statement that keeps only the cases with ``low <= id < high`` (``None``: no
        bound), as a window's part does: the excluded ids outside that range are dropped from the list, as
        they cannot match. An id stays when either text order puts it inside — code points (DuckDB, Python) or
        UTF-16 units (Java's ``String.compareTo``) — so no engine's order can leave an excluded case in."""
        if not self.excluded_ids or (low is None and high is None):
            return self

        def inside(key: Callable[[str], Any]) -> Callable[[str], bool]:
            lo = None if low is None else key(low)
            hi = None if high is None else key(high)
            return lambda i: (lo is None or lo <= key(i)) and (hi is None or key(i) < hi)

        by_points, by_units = inside(str), inside(lambda text: text.encode("utf-16-be", "surrogatepass"))
        kept = tuple(i for i in self.excluded_ids if by_points(i) or by_units(i))
        return replace(self, excluded_ids=kept)

    def describe(self) -> str:
        """What the filters keep, for ``repr``: ``"all cases"`` when nothing is filtered."""
        parts = [f.label for f in self.cases]
        if self.include_excluded:
            parts.append("including excluded cases")
        return "; ".join(parts) if parts else "all cases"

    def where(self, schema: Schema, kind: str, *extra: Fragment) -> Fragment:
        """``" WHERE ..."`` (or ``""``) for a query on the *kind* table: the filters, the current case
        versions, the exclusions, then the answer's own *extra* conditions; parameters in text order."""
        return self._clause(schema, kind, extra)[0]

    def inlines(self, schema: Schema, kind: str) -> bool:
        """Whether :meth:`where` on the *kind* table holds a subquery Druid inlines on the broker (so that
        ``maxSubqueryRows`` bounds it): a filter the table cannot express, applied through a semi-join on the
        cases table; the excluded cases left out of the task or transition table; or a filter whose
        cases-table form reads another table (:meth:`CaseFilter.semi_join`)."""
        return self._clause(schema, kind, ())[1]

    def _clause(self, schema: Schema, kind: str, extra: tuple[Fragment, ...]) -> tuple[Fragment, bool]:
        """:meth:`where` and :meth:`inlines`, written once."""
        direct: list[Fragment] = []
        case_level: list[Fragment] = []
        inlines = False
        for f in self.cases:
            built = f.render(schema, kind)
            if built is not None:
                direct.append(built)
                inlines = inlines or (kind == "cases" and f.semi_join(schema))
            else:
                on_cases = f.render(schema, "cases")
                if on_cases is None:  # every filter has a cases-table form (see CaseFilter.render)
                    raise TypeError(f"filter {f.label!r} cannot be written on the cases table")
                case_level.append(on_cases)
        excluded = None if self.include_excluded else schema.lookup("_excluded_cases")
        version = schema.col("cases", "case_version")
        # The lookup named like the project maps outdated case versions (a later file brought more events of
        # the case) to the current one: IS NULL keeps each case once, in its current version.
        outdated = schema.lookup("")
        current = (f"LOOKUP({version}, '{outdated}') IS NULL", ())
        not_excluded = (f"LOOKUP({version}, '{excluded}') IS NULL", ())
        if kind == "cases":
            if outdated:
                direct.append(current)
            if excluded:
                direct.append(not_excluded)
        elif case_level:
            if outdated:
                case_level.append(current)
            if excluded:
                case_level.append(not_excluded)
            inner = " AND ".join(s for s, _ in case_level)
            sub = f"SELECT {schema.col('cases', 'case')} FROM {schema.table('cases')} WHERE {inner}"
            direct.append((f"{schema.col(kind, 'case')} IN ({sub})", sum((p for _, p in case_level), ())))
            inlines = True
        elif excluded and self.excluded_ids is not None:
            if self.excluded_ids:
                ids = self.excluded_ids
                direct.append((f"{schema.col(kind, 'case')} NOT IN ({placeholders(len(ids))})", ids))
        elif excluded:
            sub = (
                f"SELECT {schema.col('cases', 'case')} FROM {schema.table('cases')} "
                f"WHERE LOOKUP({version}, '{excluded}') IS NOT NULL"
            )
            direct.append((f"{schema.col(kind, 'case')} NOT IN ({sub})", ()))
            inlines = True
        parts = [*direct, *extra]
        if not parts:
            return ("", ()), inlines
        return (" WHERE " + " AND ".join(s for s, _ in parts), sum((p for _, p in parts), ())), inlines


def duration_text(ms: int) -> str:
    """*ms* milliseconds as exact text: ``40 s``, ``2 days 3 h``, ``1 min 0.5 s``, ``0 s``."""
    sign, rest = ("-", -ms) if ms < 0 else ("", ms)
    days, rest = divmod(rest, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes else []
    if rest or not parts:
        seconds = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
        parts.append(f"{seconds} s")
    return sign + " ".join(parts)


# --- control-flow, performance, attribute and resource filters (issue 28) ------------------------------
def _vertex_cases(schema: Schema, condition: str) -> str:
    """``caseid IN (the cases with a task matching *condition*)`` on the cases table."""
    sub = f"SELECT {schema.col('vertex', 'case')} FROM {schema.table('vertex')} WHERE {condition}"
    return f"{schema.col('cases', 'case')} IN ({sub})"


def _edge_cases(schema: Schema, condition: str) -> str:
    """``caseid IN (the cases with a transition matching *condition*)`` on the cases table."""
    sub = f"SELECT {schema.col('edge', 'case')} FROM {schema.table('edge')} WHERE {condition}"
    return f"{schema.col('cases', 'case')} IN ({sub})"


@dataclass(frozen=True)
class DirectlyFollows(CaseFilter):
    """Cases in which *target* directly follows *source* at least once (``log.directly_follows``)."""

    source: str
    target: str

    @property
    def label(self) -> str:
        return f"{self.source!r} directly followed by {self.target!r}"

    def semi_join(self, schema: Schema) -> bool:
        return True

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        cond = f"{schema.col('edge', 'source')} = ? AND {schema.col('edge', 'target')} = ?"
        return _edge_cases(schema, cond), (self.source, self.target)


@dataclass(frozen=True)
class EventuallyFollows(CaseFilter):
    """Cases in which a *target* task starts no earlier than a *source* task ends
    (``log.eventually_follows``): per case (GROUP BY caseid) the first end of *source* against the last
    start of *target*."""

    source: str
    target: str

    @property
    def label(self) -> str:
        return f"{self.source!r} eventually followed by {self.target!r}"

    def semi_join(self, schema: Schema) -> bool:
        return True

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        case, act = schema.col("vertex", "case"), schema.col("vertex", "activity")
        t, end = schema.col("vertex", "time"), schema.col("vertex", "end")
        sub = (
            f"SELECT {case} FROM {schema.table('vertex')} WHERE {act} IN (?, ?) GROUP BY {case} "
            f"HAVING MIN(CASE WHEN {act} = ? THEN {end} END) <= "
            f"MAX(CASE WHEN {act} = ? THEN TIMESTAMP_TO_MILLIS({t}) END)"
        )
        return f"{schema.col('cases', 'case')} IN ({sub})", (
            self.source,
            self.target,
            self.source,
            self.target,
        )


@dataclass(frozen=True)
class StartsWith(CaseFilter):
    """Cases whose first activity (the target of their transition from START) is one of *activities*."""

    activities: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"starts with {list(self.activities)}"

    def semi_join(self, schema: Schema) -> bool:
        return True

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        cond = (
            f"{schema.col('edge', 'source')} = '{START}' "
            f"AND {schema.col('edge', 'target')} IN ({placeholders(len(self.activities))})"
        )
        return _edge_cases(schema, cond), self.activities


@dataclass(frozen=True)
class LastActivity(EndsWith):
    """Cases whose last activity is one of *activities* (``log.ends_with``; same SQL as ``EndsWith``)."""

    @property
    def label(self) -> str:
        return f"ends with {list(self.activities)}"


@dataclass(frozen=True)
class WithoutActivity(CaseFilter):
    """Cases in which *activity* was never executed (``log.without_activity``)."""

    activity: str

    @property
    def label(self) -> str:
        return f"without activity {self.activity!r}"

    def semi_join(self, schema: Schema) -> bool:
        return not schema.has("cases", "activities")

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        if schema.has("cases", "activities"):
            return f"NOT MV_CONTAINS({schema.col('cases', 'activities')}, ?)", (self.activity,)
        inside = _vertex_cases(schema, f"{schema.col('vertex', 'activity')} = ?")
        return f"NOT ({inside})", (self.activity,)


@dataclass(frozen=True)
class CaseDuration(CaseFilter):
    """Cases whose duration (ms) lies in ``[minimum, maximum]``; either bound may be ``None``."""

    minimum: int | None
    maximum: int | None

    @property
    def label(self) -> str:
        low = "0 s" if self.minimum is None else duration_text(self.minimum)
        high = "∞" if self.maximum is None else duration_text(self.maximum)
        return f"duration between {low} and {high}"

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        d = schema.col("cases", "duration")
        conds, values = [], []
        if self.minimum is not None:
            conds.append(f"{d} >= ?")
            values.append(self.minimum)
        if self.maximum is not None:
            conds.append(f"{d} <= ?")
            values.append(self.maximum)
        return "(" + " AND ".join(conds) + ")", tuple(values)


@dataclass(frozen=True)
class AttributeIn(CaseFilter):
    """Cases with at least one task whose *column* (a task dimension, by any of its spellings) is one of
    *values* (``log.attribute``, ``log.with_resource``). On the cases table the per-case list of the
    column's values (``all_<column>``) answers without a subquery when the project has it."""

    column: str
    values: tuple[str, ...]
    what: str = "attribute"

    @property
    def label(self) -> str:
        if self.what == "resource":
            return f"with resource in {list(self.values)}"
        return f"attribute {self.column!r} in {list(self.values)}"

    def semi_join(self, schema: Schema) -> bool:
        col = schema.dimension("vertex", self.column)
        return f"all_{col[1:-1]}" not in schema.columns["cases"]

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if kind != "cases":
            return None
        col = schema.dimension("vertex", self.column)
        listed = f'"all_{col[1:-1]}"' if f"all_{col[1:-1]}" in schema.columns["cases"] else None
        if listed is not None:
            ors = " OR ".join(f"MV_CONTAINS({listed}, ?)" for _ in self.values)
            return f"({ors})", self.values
        return _vertex_cases(schema, f"{col} IN ({placeholders(len(self.values))})"), self.values


@dataclass(frozen=True)
class TopVariants(CaseFilter):
    """The cases of the most frequent process variants that together cover *coverage* of the cases
    (``log.top_variants``): the keys are chosen when the filter is made, so every table filters them
    directly (no subquery)."""

    keys: tuple[str, ...]
    coverage: float

    @property
    def label(self) -> str:
        return f"top {len(self.keys)} variants ({self.coverage:.0%} coverage)"

    def render(self, schema: Schema, kind: str) -> Fragment | None:
        if not self.keys:
            return "(1 = 0)", ()
        return f"{schema.col(kind, 'variant')} IN ({placeholders(len(self.keys))})", self.keys
