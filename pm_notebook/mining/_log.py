"""``ProcessLog``: an immutable, chainable view of one project whose answers are computed by Druid SQL.

Every answer is one to three aggregate statements over the project's three tables (cases ``<pid>``,
tasks ``<pid>_vertex``, transitions ``<pid>_edge``); no event is pulled to the client except by
:meth:`ProcessLog.to_pm4py`, which exists to do exactly that. The statements are written by the pure
builders of :mod:`._sql` from the project's :class:`Schema` and the log's :class:`~._filters.Filters`
(how case filters become SQL is described there); this module checks the user's arguments, runs the
statements through a :class:`~._source.Source` and shapes the results into typed DataFrames.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._cells import cell_int
from .._checks import find_project, positive_int
from .._models import Project
from ..errors import ConfigurationError, NotFound, PMError, QueryError
from ._answer import Answer
from ._drivers import drivers as drivers_answer
from ._filtering import CaseFilterMethods, _variant_by
from ._filters import (
    CaseFilter,
    Filters,
)
from ._perspectives import ControlFlowAnswers, OrganisationAnswers, TimeAnswers
from ._schema import Schema, read_schema
from ._shaping import MapView, _ms, _rounded, in_task_order
from ._source import Source
from ._sql import cases as cases_sql
from ._sql import conformance as conformance_sql
from ._sql import events as events_sql
from ._sql import rework as rework_sql
from ._sql import stats as stats_sql
from ._sql import variants as variants_sql
from ._sql._base import Statement, check_quantiles, period, period_ms, qname

if TYPE_CHECKING:  # pragma: no cover
    from ._map import ProcessMap

__all__ = ["ProcessLog"]


#: Druid's refusal of inlined subquery results over ``maxSubqueryRows`` (Druid 0.20-27 and 28+ wordings) or
#: over ``maxSubqueryBytes`` ("... beyond maximum[N] bytes")
_SUBQUERY_LIMIT = re.compile(
    r"[Ss]ubquer(?:y|ies) generated results beyond maximum\[(\d+)\](?: (rows|bytes))?"
)
#: Druid's refusal of a plan that needs more of the broker's merge buffers than it has (2 by default)
_MERGE_BUFFERS = re.compile(r"Not enough merge buffer memory", re.IGNORECASE)
#: the ``maxSubqueryBytes`` that ``large_subqueries=True`` sets: Druid's broker sizes the budget from its own
#: heap, so an answer either fits in memory or is refused — the broker never holds more than it can
LARGE_SUBQUERY_BYTES = "auto"


def _subquery_budget(large: bool | int) -> str | int | None:
    """The ``maxSubqueryBytes`` of *large* (``False``: none sent, the server's row limit applies; ``True``:
    ``"auto"``, a budget the broker derives from its heap; an integer: that many bytes)."""
    if large is True:
        return LARGE_SUBQUERY_BYTES
    if large is False or large is None:
        return None
    if isinstance(large, int) and large > 0:
        return large
    raise ConfigurationError(
        f"large_subqueries must be True, False or a positive number of bytes, got {large!r}.",
        hint="conn.mining(project, large_subqueries=True)",
    )


class ProcessLog(CaseFilterMethods, OrganisationAnswers, ControlFlowAnswers, TimeAnswers):
    """One project's process log, filtered; each answer is a typed DataFrame computed by Druid SQL.

    Build it with :meth:`pm_notebook.Connection.mining`. It is immutable: every filter returns a new log,
    so ``log.between("2025-01-01", "2025-04-01").variants()`` leaves ``log`` as it was. Each answer
    carries the statements that produced it in ``df.attrs["sql"]``; durations are ``Timedelta``.

    >>> log = conn.mining("Purchase to Pay")                     # doctest: +SKIP
    >>> log.with_activity("Block Invoice").throughput(by="week")  # doctest: +SKIP
    """

    def __init__(
        self,
        source: Source,
        project: Project,
        *,
        schema: Schema | None = None,
        filters: Filters | None = None,
        context: Mapping[str, Any] | None = None,
        excluded_cases: int | None = None,
        resource: str | None = None,
        large_subqueries: bool | int = False,
        values: dict[str, frozenset[str] | None] | None = None,
    ) -> None:
        self._source = source
        self._project = project
        self._schema_cache = schema
        self._filters = Filters() if filters is None else filters
        self._context = None if context is None else dict(context)
        self._excluded_cache = excluded_cases
        self._resource_name = resource
        self._large: bool | int = large_subqueries
        self._subquery_bytes = _subquery_budget(large_subqueries)
        # the distinct values of the task columns a filter named, read once per log (see _filtering)
        self._values = {} if values is None else values

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        source: Source,
        project: Project | str,
        *,
        include_excluded: bool = False,
        context: Mapping[str, Any] | None = None,
        resource: str | None = None,
        large_subqueries: bool | int = False,
    ) -> ProcessLog:
        """Resolve *project* (a :class:`Project`: no REST call; a project id: one; a project name: the
        listing of the projects), read its schema and count its excluded cases (three statements).

        :param context: Druid's query context (``{"timeout": 60000}``), sent with every statement the log
            runs; the :class:`Source` checks it.
        :param resource: the task dimension that names who did each task (default: a dimension called
            ``resource`` or ``org:resource``), for the organisational answers.
        :param large_subqueries: allow the statements that Druid can only run by inlining a subquery (a
            case filter applied to the task or transition table, the handover joins, the window of
            inter-arrival times) to inline more than the server's ``maxSubqueryRows`` (100,000 by default),
            bounded by memory instead of rows: ``True`` sends ``maxSubqueryBytes: "auto"`` in those
            statements' query context (a budget Druid's broker derives from its heap; on Druid 33 a byte
            limit replaces the row limit), an integer that many bytes. An answer then runs or is refused
            naming the budget; the broker is never asked to hold more than it has.
        """
        if isinstance(project, Project):
            resolved = project
        elif isinstance(project, str) and project.strip():
            resolved = _find(source, project)
        else:
            raise ConfigurationError(
                f"mining() needs a project name, id or Project, got {type(project).__name__}.",
                hint='conn.mining("Purchase to Pay")',
            )
        log = cls(
            source,
            resolved,
            filters=Filters(include_excluded=include_excluded),
            context=context,
            resource=resource,
            large_subqueries=large_subqueries,
        )
        log._schema()  # fail early on a project whose tables lack a needed column
        log._excluded_cases()
        return log

    def _schema(self) -> Schema:
        if self._schema_cache is None:
            self._schema_cache = read_schema(
                self._project.id, lambda sql, p: self._source.query(sql, p, **self._context_kw())
            )
        return self._schema_cache

    def _context_kw(self) -> dict[str, Any]:
        # Sent only when set, so a Source without a context parameter still serves a log without one.
        return {} if self._context is None else {"context": self._context}

    def _excluded_cases(self) -> int:
        """How many (current) cases of the project its ``_excluded_cases`` lookup excludes (read once)."""
        if self._excluded_cache is None:
            statement = cases_sql.excluded_cases(self._schema())
            self._excluded_cache = 0 if statement is None else cell_int(self._run(statement).iloc[0, 0])
        return self._excluded_cache

    def _with(self, filters: Filters) -> ProcessLog:
        """A copy of this log (same schema, context, excluded count and options) with *filters*."""
        return ProcessLog(
            self._source,
            self._project,
            schema=self._schema(),
            filters=filters,
            context=self._context,
            excluded_cases=self._excluded_cache,
            resource=self._resource_name,
            large_subqueries=self._large,
            values=self._values,
        )

    def _add(self, case_filter: CaseFilter) -> ProcessLog:
        # resolve the columns now: a bad filter fails where it is written
        case_filter.render(self._schema(), "cases")
        return self._with(self._filters.add(case_filter))

    @property
    def project(self) -> Project:
        """The project this log reads."""
        return self._project

    @property
    def schema(self) -> Schema:
        """The project's tables, their columns and lookups (read once from INFORMATION_SCHEMA)."""
        return self._schema()

    @property
    def filters(self) -> Filters:
        """The case filters of this log (and whether excluded cases count), as a value."""
        return self._filters

    @property
    def excluded_cases(self) -> int:
        """How many cases of the project a user excluded (its ``_excluded_cases`` lookup); the answers
        leave them out unless the log includes them (:meth:`with_excluded`)."""
        return self._excluded_cases()

    @property
    def context(self) -> dict[str, Any] | None:
        """The query context every statement of this log is sent with (``None``: the source's default)."""
        return None if self._context is None else dict(self._context)

    def _exclusion_note(self) -> str:
        n = self._excluded_cases()
        if not n:
            return "no excluded cases"
        what = "included" if self._filters.include_excluded else "left out"
        return f"{n:,} excluded case{'s' if n != 1 else ''} {what}"

    def __repr__(self) -> str:
        return (
            f"<ProcessLog {self._project.name or self._project.id!r}: {self._filters.describe()}; "
            f"{self._exclusion_note()}>"
        )

    # --- running and shaping ------------------------------------------------------------------------
    def _run(self, statement: Statement) -> pd.DataFrame:
        """Run one statement with the log's query context; one that inlines a subquery gets the
        ``maxSubqueryBytes`` budget when the log allows large subqueries (a part of an answer cut into parts,
        ``Statement.in_parts``, only when the row limit refuses it), and Druid's refusal of a too-large one
        names what to raise."""
        context = self._context
        if statement.context:
            context = {**(context or {}), **statement.context}
        large = self._subquery_bytes is not None and statement.subquery_limited
        if large and not statement.in_parts:
            context = {**(context or {}), "maxSubqueryBytes": self._subquery_bytes}
        try:
            try:
                return self._query(statement, context)
            except QueryError as exc:
                # a part of an answer cut into parts that still does not fit the row limit: once more under
                # the byte budget (first under the rows: on a small broker a window's frames under the
                # budget can take its heap)
                retry = large and statement.in_parts and _SUBQUERY_LIMIT.search(f"{exc} {exc.server_message}")
                if not retry:
                    raise
                return self._query(statement, {**(context or {}), "maxSubqueryBytes": self._subquery_bytes})
        except QueryError as exc:
            text = f"{exc} {exc.server_message or ''}"
            limit = _SUBQUERY_LIMIT.search(text)
            if limit is None and _MERGE_BUFFERS.search(text):
                raise QueryError(
                    "Druid refused the answer: its plan nests more GROUP BYs over joins than the broker has "
                    "merge buffers for (druid.processing.numMergeBuffers, 2 by default).",
                    sql=statement.sql,
                    sqlstate=exc.sqlstate,
                    server_message=exc.server_message,
                    hint="Ask the service's operator to raise the broker's druid.processing.numMergeBuffers "
                    "(each one takes druid.processing.buffer.sizeBytes of direct memory); the plan's shape, "
                    "not the log's size, needs them, so a filter does not help.",
                ) from exc
            if limit is None:
                raise
            raise self._limit_error(statement, exc, int(limit.group(1)), limit.group(2) == "bytes") from exc

    def _query(self, statement: Statement, context: dict[str, Any] | None) -> pd.DataFrame:
        # the context is sent only when set, so a Source without a context parameter still serves a log
        # without one
        kw: dict[str, Any] = {} if context is None else {"context": context}
        return self._source.query(statement.sql, list(statement.params), **kw)

    def _limit_error(self, statement: Statement, exc: QueryError, limit: int, in_bytes: bool) -> QueryError:
        what = (
            "a subquery it must inline (a case filter on the task or transition table, a join, or a window: "
            "the one over each case's tasks, or the one of inter-arrival times)"
        )
        narrower = (
            "ask arrivals(freq, quantiles=()) for the counts and mean gaps alone (no window)."
            if statement.windowing
            else "filter with variants_in()/top_variants(), which need no subquery."
        )
        if in_bytes:
            message = (
                f"Druid refused the answer: {what} produced more than {limit:,} bytes, the broker's memory "
                f"budget for inlined results (maxSubqueryBytes)."
            )
            hint = (
                "Pass a larger budget in bytes, conn.mining(project, large_subqueries=<bytes>), only if the "
                "broker's heap has room for it (the 'auto' budget comes from that heap: ask the operator "
                "for a larger broker heap), or " + narrower
            )
        else:
            message = f"Druid refused the answer: {what} produced more than {limit:,} rows (maxSubqueryRows)."
            hint = (
                "Open the log with conn.mining(project, large_subqueries=True): those statements are then "
                "bounded by the broker's memory (maxSubqueryBytes 'auto') instead of rows, or " + narrower
            )
        return QueryError(
            message,
            sql=statement.sql,
            sqlstate=exc.sqlstate,
            server_message=exc.server_message,
            hint=statement.refusal_hint or hint,
        )

    def _answer(
        self, frame: pd.DataFrame, statements: Sequence[Statement], *, events: bool = False, **attrs: Any
    ) -> pd.DataFrame:
        # an Answer shows its durations rounded (only the display: the values stay exact Timedeltas); the
        # events handed to pm4py stay a plain DataFrame, the only type pm4py takes for a DataFrame log
        frame = frame.reset_index(drop=True) if events else Answer(frame.reset_index(drop=True))
        frame.attrs.clear()
        frame.attrs["sql"] = ";\n\n".join(s.sql for s in statements)
        frame.attrs["transport"] = self._source.resolve_transport()  # every statement went through it
        # every answer says how many cases a user excluded and whether they count in it
        frame.attrs["excluded_cases"] = self._excluded_cases()
        frame.attrs["include_excluded"] = self._filters.include_excluded
        frame.attrs["excluded_note"] = self._exclusion_note()
        frame.attrs.update(attrs)
        return frame

    def _total_cases(self) -> tuple[int, Statement]:
        statement = cases_sql.total_cases(self._schema(), self._filters)
        return cell_int(self._run(statement).iloc[0, 0]), statement

    # --- answers ---------------------------------------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """One row: cases, events, variants, activities, mean/median/p90 throughput, cases with rework and
        their share, first/last event and the time span between them, and ``excluded_cases`` (the cases a
        user excluded: left out of the other columns unless the log includes them)."""
        statements = cases_sql.summary(self._schema(), self._filters)
        sql_cases, sql_events = statements
        c = self._run(sql_cases)
        e = self._run(sql_events)
        variants = cell_int(c["variants"].iloc[0])
        activities = cell_int(e["activities"].iloc[0])
        events = cell_int(e["events"].iloc[0]) if activities else 0  # SUM over no activity is NULL
        n = cell_int(c["cases"].iloc[0])
        rework_cases = cell_int(c["rework_cases"].iloc[0]) if n else 0
        row = {
            "cases": n,
            "events": events,
            "variants": variants,
            "activities": activities,
            "mean_throughput": _ms(c["mean_throughput"]).iloc[0],
            "median_throughput": _ms(c["median_throughput"]).iloc[0],
            "p90_throughput": _ms(c["p90_throughput"]).iloc[0],
            "cases_with_rework": rework_cases,
            "rework_share": (rework_cases / n) if n else math.nan,
            "first_event": c["first_event"].iloc[0] if n else pd.NaT,
            "last_event": pd.to_datetime(c["last_event_ms"].astype("float64"), unit="ms", utc=True).iloc[0]
            if n
            else pd.NaT,
        }
        ints = ("cases", "events", "variants", "activities", "cases_with_rework")
        frame = pd.DataFrame([row]).astype(dict.fromkeys(ints, "Int64"))
        for col in ("first_event", "last_event"):
            frame[col] = pd.to_datetime(frame[col], utc=True).astype("datetime64[ms, UTC]")
        frame["span"] = (frame["last_event"] - frame["first_event"]).astype("timedelta64[ms]")
        frame["excluded_cases"] = pd.array([self._excluded_cases()], dtype="Int64")
        return self._answer(frame, statements)

    def variants(self, top: int | None = 20, by: str = "process") -> pd.DataFrame:
        """The *top* variants by cases (``top=None``: every variant): ordered activities, cases, share,
        cumulative share, median and p90 duration, an example case; ``by="model"`` groups by model variant
        and names it (``Variant 1``...)."""
        limit = _top(top)
        statement = variants_sql.variants(self._schema(), self._filters, limit, _variant_by(by))
        frame = self._run(statement)
        total = cell_int(frame["total_cases"].iloc[0]) if len(frame) else 0  # no variant: no case
        frame = frame.drop(columns="total_cases")
        frame = frame.sort_values(["cases", "variant"], ascending=[False, True], na_position="first")
        frame = frame.reset_index(drop=True)
        sequences, sql_seq = self._sequences([str(x) for x in frame["example_case"].dropna()])
        frame.insert(
            2 if "name" in frame.columns else 1,
            "activities",
            # pandas-stubs: insert() refuses an ExtensionArray, which pandas accepts as a column
            pd.array([sequences.get(str(x), "") for x in frame["example_case"]], dtype="string"),  # type: ignore[arg-type]
        )
        frame["cases"] = frame["cases"].astype("Int64")
        share = (
            frame["cases"].astype("float64") / total if total else frame["cases"].astype("float64") * np.nan
        )
        frame.insert(_after(frame, "cases"), "share", share)
        frame.insert(_after(frame, "share"), "cumulative_share", share.cumsum())
        frame["median_duration"] = _ms(frame["median_duration"])
        frame["p90_duration"] = _ms(frame["p90_duration"])
        return self._answer(frame, [statement, *sql_seq], total_cases=total)

    def _sequences(self, case_ids: list[str]) -> tuple[dict[str, str], list[Statement]]:
        """``caseid -> "A → B → C"`` for a few example cases (their tasks in the task order: start, end, then
        the activity's name)."""
        if not case_ids:
            return {}, []
        statement = variants_sql.sequences(self._schema(), case_ids)
        rows = in_task_order(self._run(statement), "case_id", "started", "ended", "activity")
        out = {str(k): " → ".join(g["activity"].astype(str)) for k, g in rows.groupby("case_id", sort=False)}
        return out, [statement]

    def throughput(
        self, by: str | None = None, quantiles: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9)
    ) -> pd.DataFrame:
        """Case duration (throughput time) statistics: cases, mean, min, the *quantiles* (``p10``...), max.

        :param by: ``None`` (whole log), ``"variant"`` / ``"model"`` (variant keys), a period (``"week"``,
            ``"month"``, ``"P1D"``... by case start) or a case dimension (``"supplier"``).
        """
        qs = list(check_quantiles(quantiles, none_ok=False))
        statement = cases_sql.throughput(self._schema(), self._filters, by, qs)
        frame = self._run(statement)
        frame["cases"] = frame["cases"].astype("Int64")
        for col in ["mean", "min", *(qname(q) for q in qs), "max"]:
            frame[col] = _ms(frame[col])
        if by is None and int(frame["cases"].iloc[0]) == 0:
            frame = frame.iloc[0:0]
        return self._answer(frame, [statement])

    def distribution(self, bucket: str = "P1D") -> pd.DataFrame:
        """Histogram of case durations: cases per duration bucket (``P1D`` = whole days) from 0 upwards."""
        iso = period(bucket)
        width = period_ms(iso)
        statement = cases_sql.distribution(self._schema(), self._filters, iso)
        frame = self._run(statement)
        out = pd.DataFrame(
            {
                "from": _ms(frame["bucket"].astype("float64") * width),
                "to": _ms((frame["bucket"].astype("float64") + 1) * width),
                "cases": frame["cases"].astype("Int64"),
            }
        )
        return self._answer(out, [statement], bucket=iso)

    def activities(self) -> pd.DataFrame:
        """Per activity: executions, cases, cases with rework, mean/median/p90/total service time.

        The same statement as the nodes of :meth:`process_map` (see :func:`._sql.stats.node_stats` for how
        cases per activity are counted exactly).
        """
        statement = stats_sql.node_stats(self._schema(), self._filters)
        nodes = self._node_frame(statement)
        frame = nodes[
            ["activity", "frequency", "cases", "cases_with_rework", "mean", "median", "p90", "total"]
        ]
        frame = frame.rename(
            columns={
                "frequency": "executions",
                **{s: f"{s}_service" for s in ("mean", "median", "p90", "total")},
            }
        )
        return self._answer(frame, [statement])

    def _node_frame(self, statement: Statement) -> pd.DataFrame:
        nodes = self._run(statement)
        nodes["frequency"] = nodes["frequency"].astype("Int64")
        for col in ("cases", "cases_with_rework"):
            nodes[col] = _rounded(nodes[col])
        for col in stats_sql.STATS:
            nodes[col] = _ms(nodes[col])
        return nodes

    def _edge_frame(self, statement: Statement) -> pd.DataFrame:
        frame = self._run(statement)
        frame["frequency"] = frame["frequency"].astype("Int64")
        for col in stats_sql.STATS:
            frame[col] = _ms(frame[col])
        return frame

    def transitions(self, min_count: int = 1) -> pd.DataFrame:
        """Every directly-follows transition (START/END included) seen at least *min_count* times, most
        frequent first: frequency and waiting time (mean, median, p90, total, min, max) from the source's
        end to the target's start.

        :param min_count: the fewest occurrences a transition needs to be listed. The default, 1, lists the
            whole directly-follows graph (what pm4py's DFG holds); raise it to drop rare transitions, whose
            times rest on one or two waits.
        """
        min_count = positive_int(min_count, "min_count")
        statement = stats_sql.transitions(self._schema(), self._filters, min_count)
        return self._answer(self._edge_frame(statement), [statement], min_count=min_count)

    def bottlenecks(self, k: int = 10, metric: str = "p90", min_count: int = 5) -> pd.DataFrame:
        """The *k* transitions between activities (START/END left out) with the longest waits, ranked by
        ``metric``: ``"p90"``, ``"median"``, ``"mean"``, ``"total"`` (sum of waiting, i.e. impact) or
        ``"max"``.

        :param min_count: only transitions seen at least this many times are ranked (default 5), so the
            ranking is not made of transitions seen once or twice whose "median" is a single wait; pass 1
            to rank every transition.
        """
        k = positive_int(k, "k")
        min_count = positive_int(min_count, "min_count")
        if metric not in ("p90", "median", "mean", "total", "max"):
            raise ConfigurationError(
                f"metric must be 'p90', 'median', 'mean', 'total' or 'max', got {metric!r}."
            )
        statement = stats_sql.bottlenecks(self._schema(), self._filters, k, metric, min_count)
        frame = self._edge_frame(statement)
        return self._answer(frame, [statement], metric=metric, min_count=min_count)

    def rework(self, by: str = "activity", top: int | None = 50) -> pd.DataFrame:
        """Rework: executions of an activity beyond its first in a case.

        ``by="activity"``: per reworked activity, rework executions, cases, cases with rework and their
        share; ``by="case"``: the *top* cases with the most rework (case, variant, rework, duration;
        ``top=None``: every case with rework).
        """
        if by == "activity":
            statement = rework_sql.rework_by_activity(self._schema(), self._filters)
            frame = self._run(statement)
            frame["executions"] = frame["executions"].astype("Int64")
            for col in ("rework_executions", "cases", "cases_with_rework"):
                frame[col] = _rounded(frame[col])
            frame["rework_share"] = frame["cases_with_rework"].astype("float64") / frame["cases"].astype(
                "float64"
            )
            return self._answer(frame, [statement])
        if by == "case":
            statement = rework_sql.rework_by_case(self._schema(), self._filters, _top(top))
            frame = self._run(statement)
            frame["rework"] = frame["rework"].astype("Int64")
            frame["duration"] = _ms(frame["duration"])
            return self._answer(frame, [statement])
        raise ConfigurationError(f"rework(by=...) must be 'activity' or 'case', got {by!r}.")

    def cases_over_time(self, freq: str = "P1W") -> pd.DataFrame:
        """Cases started and finished per period (``freq``: ISO period or ``"week"``...), and cases open at
        the end of each period (started so far minus finished so far); every period from the first start's
        to the last end's, those where nothing started or finished included (0 and 0, the open count
        carried), as pandas' ``resample`` gives them."""
        iso = period(freq)
        frame, statements = self._started_finished(iso)
        frame["open"] = (frame["started"].cumsum() - frame["finished"].cumsum()).astype("Int64")
        frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
        return self._answer(frame, statements, freq=iso)

    def conformance(self, allowed: Any) -> pd.DataFrame:
        """Transitions outside *allowed*, with how often they occur, in how many cases and their share.

        :param allowed: ``(source, target)`` pairs, a DataFrame with ``source``/``target`` columns, or a
            :class:`ProcessMap` (its kept edges). START/END transitions are checked only when *allowed*
            mentions START or END. ``df.attrs`` holds ``cases``, ``deviating_cases`` and ``fitness``
            (share of cases with no disallowed transition).
        """
        sql, sql_dev = conformance_sql.deviations(self._schema(), self._filters, _pairs(allowed))
        frame = self._run(sql)
        deviating = cell_int(self._run(sql_dev).iloc[0, 0])
        total, sql_total = self._total_cases()
        frame["transitions"] = frame["transitions"].astype("Int64")
        frame["cases"] = frame["cases"].astype("Int64")
        frame["case_share"] = frame["cases"].astype("float64") / total if total else math.nan
        fitness = (1 - deviating / total) if total else math.nan
        return self._answer(
            frame, [sql, sql_dev, sql_total], cases=total, deviating_cases=deviating, fitness=fitness
        )

    def drivers(self, outcome: Any, by: Any = None, min_cases: int = 30) -> pd.DataFrame:
        """Which values of the case dimensions go with an *outcome*, ranked by adjusted p-value then by
        the size of the difference: per value, cases, outcome rate with and without it, lift, the
        difference with its 95 % interval, a test and its Benjamini-Hochberg adjusted p-value.

        :param outcome: ``"slow"`` (duration above its p75), ``"slow:p90"``, ``"slow:20 days"`` or a
            ``Timedelta``; ``"rework"``; ``"not_completed"``; ``"with_activity:<name>"``; or
            ``"where:<SQL condition on the cases table>"``.
        :param by: the dimensions to test (default: every dimension and metric column of the cases table;
            numeric ones are cut at their quartiles).
        :param min_cases: values with fewer cases are left out (``df.attrs["left_out"]`` counts them).

        The statistics are described in :mod:`pm_notebook.mining._drivers` and docs/mining.md.
        """
        return drivers_answer(self, outcome, by, min_cases)

    # --- process map and event export -------------------------------------------------------------
    def process_map(
        self, metric: str = "frequency", stat: str = "median", activities: float = 1.0, paths: float = 0.3
    ) -> ProcessMap:
        """The directly-follows graph from the transitions table (START/END included), as a
        :class:`~pm_notebook.mining.ProcessMap`: both views' numbers are fetched once (two queries), so
        :meth:`ProcessMap.view` and the interactive widget never query again."""
        sql_nodes = stats_sql.node_stats(self._schema(), self._filters)
        nodes = self._node_frame(sql_nodes).drop(columns="cases_with_rework")
        sql_edges = stats_sql.transitions(self._schema(), self._filters)
        edges = self._edge_frame(sql_edges)
        view = MapView(metric=metric, stat=stat, activities=activities, paths=paths)
        return self._process_map(nodes, edges, [sql_nodes, sql_edges], view)

    def event_sql(self, dimensions: Iterable[str] | str | None = "all") -> tuple[str, tuple[Any, ...]]:
        """The statement (and its parameters) :meth:`to_pm4py` runs: one row per task with pm4py's names."""
        statement = events_sql.events(self._schema(), self._filters, dimensions, self._uploaded_names())
        return statement.sql, statement.params

    def _uploaded_names(self) -> dict[str, str]:
        """Druid column → the name the log was uploaded with, from the project's mapping (``{}`` when the
        service has none for it)."""
        try:
            named = self._source.column_names(self._project)
        except PMError:  # a project without a mapping (an empty one, say): the columns' own names
            return {}
        return {column: name for name, column in named.items()}

    def to_pm4py(
        self, dimensions: Iterable[str] | str | None = "all", *, chunk_rows: int = 200_000
    ) -> pd.DataFrame:
        """Every task of the filtered log as pm4py's event DataFrame (``case:concept:name``,
        ``concept:name``, ``time:timestamp`` = task end, ``start_timestamp``, dimensions under the names
        the log was uploaded with — ``org:resource``, ``lifecycle:transition`` — where the project's
        mapping knows them; a plain ``resource`` becomes ``org:resource``), fetched in chunks of
        *chunk_rows*, grouped by case and each case's tasks in the task order of every answer (start, end,
        activity, ``org:resource``; docs/mining.md). pm4py's own functions re-sort by their
        ``timestamp_key`` (stable): pass ``timestamp_key="start_timestamp"`` to keep this order.

        pm_notebook never imports pm4py; pass the frame to ``pm4py.format_dataframe`` or its functions.
        """
        frames = list(self.iter_events(dimensions, chunk_rows=chunk_rows))
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        frame = in_task_order(
            frame, "case:concept:name", "start_timestamp", "time:timestamp", "concept:name", "org:resource"
        )
        sql, params = self.event_sql(dimensions)
        return self._answer(frame, [Statement(sql, params)], events=True)

    def iter_events(
        self, dimensions: Iterable[str] | str | None = "all", *, chunk_rows: int = 200_000
    ) -> Iterator[pd.DataFrame]:
        """The events of :meth:`to_pm4py` as DataFrames of at most *chunk_rows* rows each (unsorted)."""
        sql, params = self.event_sql(dimensions)
        yield from self._source.query_chunks(sql, list(params), chunk_rows=chunk_rows, **self._context_kw())


# --- small helpers ----------------------------------------------------------------------------------


def _find(source: Source, wanted: str) -> Project:
    """The project *wanted* names: the one with that id (one REST call, whatever the number of projects),
    else the one with that name (:func:`~pm_notebook._checks.find_project` over the listing, which reads
    every project's details)."""
    try:
        return source.project(wanted)
    except NotFound:
        return find_project(source.projects(), wanted)


def _top(top: Any) -> int | None:
    """A ``top=`` argument: a positive integer, or ``None`` for every row."""
    return None if top is None else positive_int(top, "top")


def _after(frame: pd.DataFrame, column: str) -> int:
    """The position just after *column* (a name the frame holds once)."""
    position = frame.columns.get_loc(column)
    if not isinstance(position, int):  # a repeated name: these frames never have one
        raise TypeError(f"column {column!r} is not unique")
    return position + 1


def _pairs(allowed: Any) -> list[tuple[str, str]]:
    from ._map import ProcessMap

    if isinstance(allowed, ProcessMap):
        frame = allowed.edges
        pairs = list(zip(frame["source"].astype(str), frame["target"].astype(str), strict=True))
    elif isinstance(allowed, pd.DataFrame):
        if not {"source", "target"} <= set(allowed.columns):
            raise ConfigurationError(
                "conformance(): an allowed DataFrame needs 'source' and 'target' columns."
            )
        pairs = list(zip(allowed["source"].astype(str), allowed["target"].astype(str), strict=True))
    else:
        try:
            pairs = [tuple(p) for p in allowed]
        except TypeError:
            raise ConfigurationError(
                "conformance() needs (source, target) pairs, a DataFrame or a ProcessMap."
            ) from None
        if not all(len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs):
            raise ConfigurationError(
                "conformance(): every allowed transition must be a (source, target) pair."
            )
    return list(dict.fromkeys(pairs))
