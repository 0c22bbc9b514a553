"""``ProcessLog``: an immutable, chainable view of one project whose answers are computed by Druid SQL.

Every answer is one to three aggregate statements over the project's three tables (cases ``<pid>``,
tasks ``<pid>_vertex``, transitions ``<pid>_edge``); no event is pulled to the client except by
:meth:`ProcessLog.to_pm4py`, which exists to do exactly that.

The log holds the project, its schema and excluded-case count (read once), the filters (the methods of
:mod:`._filtering`) and the options; each answer method is documented here and forwards to the plain function
that defines the answer, one module per perspective: :mod:`._cases`, :mod:`._flow`, :mod:`._organisation`,
:mod:`._time`, :mod:`._drivers`, :mod:`._events`. That function is handed an :class:`~._runner.Ask` (the
schema, the filters, the options and the one :class:`~._runner.Runner` of the log's statements), writes its
statements with the pure builders of :mod:`._sql`, runs them and shapes the frames. A new answer is a function
``name(ask, ...)`` in the module of its perspective (or a module of its own, like :mod:`._drivers`) and one
method here that forwards to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._cells import cell_int
from .._checks import find_project
from .._models import Project
from ..errors import ConfigurationError, NotFound
from . import _cases, _compare, _drivers, _events, _flow, _open_cases, _organisation, _time
from ._compare import Comparison
from ._filtering import CaseFilterMethods
from ._filters import EXCLUDED_IDS_MAX, CaseFilter, Filters
from ._runner import Ask, Runner, exclusion_note
from ._schema import Schema, read_schema
from ._source import Source
from ._sql import cases as cases_sql
from ._sql import resources as resources_sql
from ._sql._base import Statement

if TYPE_CHECKING:  # pragma: no cover
    from ._charts import Chart
    from ._map import ProcessMap

__all__ = ["ProcessLog"]


class ProcessLog(CaseFilterMethods):
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
        self._project = project
        self._schema_cache = schema
        self._filters = Filters() if filters is None else filters
        self._runner = Runner(source, context, large_subqueries)
        self._excluded_cache = excluded_cases
        self._resource_name = resource
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
            runner = self._runner
            self._schema_cache = read_schema(
                self._project.id, lambda sql, p: runner.source.query(sql, p, **runner.context_kw())
            )
        return self._schema_cache

    def _excluded_cases(self) -> int:
        """How many (current) cases of the project its ``_excluded_cases`` lookup excludes (read once, with
        their ids when the lookup names at most ``EXCLUDED_IDS_MAX``: the filters then leave them out of the
        task and transition tables by that list, see :class:`Filters`)."""
        if self._excluded_cache is None:
            listed = cases_sql.excluded_ids(self._schema(), EXCLUDED_IDS_MAX)
            rows = None if listed is None else self._run(listed)
            if rows is None:
                self._excluded_cache = 0
            elif len(rows) <= EXCLUDED_IDS_MAX:
                self._excluded_cache = int((rows["current"].astype("int64") == 1).sum())
                ids = tuple(dict.fromkeys(str(v) for v in rows["case_id"]))
                self._filters = self._filters.with_excluded_ids(ids)
            else:
                counted = cases_sql.excluded_cases(self._schema())
                assert counted is not None  # the lookup exists: it listed ids
                self._excluded_cache = cell_int(self._run(counted).iloc[0, 0])
        return self._excluded_cache

    def _with(self, filters: Filters) -> ProcessLog:
        """A copy of this log (same schema, context, excluded count and options) with *filters*."""
        return ProcessLog(
            self._runner.source,
            self._project,
            schema=self._schema(),
            filters=filters,
            context=self._runner.context,
            excluded_cases=self._excluded_cache,
            resource=self._resource_name,
            large_subqueries=self._runner.large_subqueries,
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
        return self._runner.context_kw().get("context")

    def __repr__(self) -> str:
        note = exclusion_note(self._excluded_cases(), self._filters.include_excluded)
        return f"<ProcessLog {self._project.name or self._project.id!r}: {self._filters.describe()}; {note}>"

    # --- running ------------------------------------------------------------------------------------
    def _ask(self) -> Ask:
        """What one answer is computed from (:mod:`._runner`): a new one per call, so an answer's ``attrs``
        hold the statements it ran and nothing else (the schema and the excluded cases are read before)."""
        excluded = self._excluded_cases()  # first: reading them may set the excluded ids in the filters
        return Ask(
            schema=self._schema(),
            filters=self._filters,
            project=self._project,
            runner=self._runner,
            excluded_cases=excluded,
            resource_name=self._resource_name,
            check_activities=self._check_activities,
        )

    @property
    def _source(self) -> Source:
        """The :class:`Source` the log's statements go through (its runner's)."""
        return self._runner.source

    def _run(self, statement: Statement) -> pd.DataFrame:
        """Run a statement of the log itself (a filter's, the excluded cases') through its runner."""
        return self._runner.query(statement)

    def _resource(self) -> str:
        return resources_sql.resource_column(self._schema(), self._resource_name)

    # --- the case perspective (defined in _cases.py) ----------------------------------------------
    def summary(self) -> pd.DataFrame:
        """One row: cases, events, variants, activities, mean/median/p90 throughput, cases with rework and
        their share, first/last event and the time span between them, and ``excluded_cases`` (the cases a
        user excluded: left out of the other columns unless the log includes them)."""
        return _cases.summary(self._ask())

    def variants(self, top: int | None = 20, by: str = "process") -> pd.DataFrame:
        """The *top* variants by cases (``top=None``: every variant): ordered activities, cases, share,
        cumulative share, median and p90 duration, an example case; ``by="model"`` groups by model variant
        and names it (``Variant 1``...)."""
        return _cases.variants(self._ask(), top, by)

    def throughput(
        self, by: str | None = None, quantiles: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9)
    ) -> pd.DataFrame:
        """Case duration (throughput time) statistics: cases, mean, min, the *quantiles* (``p10``...), max.

        :param by: ``None`` (whole log), ``"variant"`` / ``"model"`` (variant keys), a period (``"week"``,
            ``"month"``, ``"P1D"``... by case start) or a case dimension (``"supplier"``).
        """
        return _cases.throughput(self._ask(), by, quantiles)

    def distribution(self, bucket: str = "P1D") -> pd.DataFrame:
        """Histogram of case durations: cases per duration bucket (``P1D`` = whole days) from 0 upwards."""
        return _cases.distribution(self._ask(), bucket)

    def rework(self, by: str = "activity", top: int | None = 50) -> pd.DataFrame:
        """Rework: executions of an activity beyond its first in a case.

        ``by="activity"``: per reworked activity, rework executions, cases, cases with rework and their
        share; ``by="case"``: the *top* cases with the most rework (case, variant, rework, duration;
        ``top=None``: every case with rework).
        """
        return _cases.rework(self._ask(), by, top)

    # --- control flow (_flow.py) ------------------------------------------------------------------
    def activities(self) -> pd.DataFrame:
        """Per activity: executions, cases, cases with rework, mean/median/p90/total service time.

        The same statement as the nodes of :meth:`process_map` (see :func:`._sql.stats.node_stats` for how
        cases per activity are counted exactly).
        """
        return _flow.activities(self._ask())

    def transitions(self, min_count: int = 1) -> pd.DataFrame:
        """Every directly-follows transition (START/END included) seen at least *min_count* times, most
        frequent first: frequency and waiting time (mean, median, p90, total, min, max) from the source's
        end to the target's start.

        :param min_count: the fewest occurrences a transition needs to be listed. The default, 1, lists the
            whole directly-follows graph (what pm4py's DFG holds); raise it to drop rare transitions, whose
            times rest on one or two waits.
        """
        return _flow.transitions(self._ask(), min_count)

    def bottlenecks(self, k: int = 10, metric: str = "p90", min_count: int = 5) -> pd.DataFrame:
        """The *k* transitions between activities (START/END left out) with the longest waits, ranked by
        ``metric``: ``"p90"``, ``"median"``, ``"mean"``, ``"total"`` (sum of waiting, i.e. impact) or
        ``"max"``.

        :param min_count: only transitions seen at least this many times are ranked (default 5), so the
            ranking is not made of transitions seen once or twice whose "median" is a single wait; pass 1
            to rank every transition.
        """
        return _flow.bottlenecks(self._ask(), k, metric, min_count)

    def process_map(
        self, metric: str = "frequency", stat: str = "median", activities: float = 1.0, paths: float = 0.3
    ) -> ProcessMap:
        """The directly-follows graph from the transitions table (START/END included), as a
        :class:`~pm_notebook.mining.ProcessMap`: both views' numbers are fetched once (two queries), so
        :meth:`ProcessMap.view` and the interactive widget never query again."""
        return _flow.process_map(self._ask(), metric, stat, activities, paths)

    def endpoints(self) -> pd.DataFrame:
        """Start and end activities: ``kind`` (``"start"``/``"end"``), ``activity``, ``cases`` and
        ``share`` (of the cases of that kind); one statement."""
        return _flow.endpoints(self._ask())

    def trace_lengths(self) -> pd.DataFrame:
        """Cases per trace length (tasks per case): ``length``, ``cases``, ``share``; one statement."""
        return _flow.trace_lengths(self._ask())

    def conformance(self, allowed: Any) -> pd.DataFrame:
        """Transitions outside *allowed*, with how often they occur, in how many cases and their share.

        :param allowed: ``(source, target)`` pairs, a DataFrame with ``source``/``target`` columns, or a
            :class:`ProcessMap` (its kept edges). START/END transitions are checked only when *allowed*
            mentions START or END. ``df.attrs`` holds ``cases``, ``deviating_cases`` and ``fitness``
            (share of cases with no disallowed transition).
        """
        return _flow.conformance(self._ask(), allowed)

    # --- the organisational perspective (_organisation.py) ----------------------------------------
    def resources(self, by: str | None = None) -> pd.DataFrame:
        """Who does the work (tasks whose resource is NULL are the ``<NA>`` row).

        ``by=None``: per resource ``events``, ``cases``, ``activities`` (distinct), ``share`` (of all
        events) and ``involvement`` (share of the log's cases it worked in); two statements.
        ``by="activity"``: per (activity, resource) ``events``, ``cases``, ``specialisation`` (the
        resource's share of the activity's executions) and ``involvement`` (share of the activity's cases
        it worked in); two statements.
        """
        return _organisation.resources(self._ask(), by)

    def handovers(self) -> pd.DataFrame:
        """Handover of work: per (``from_resource``, ``to_resource``) how often a task of one is directly
        followed in its case by a task of the other — consecutive tasks in the task order (start, end,
        activity, resource), overlapping and identical tasks included, same resource included: exactly the
        counts of pm4py's ``discover_handover_of_work_network(beta=0)`` on the events in that order —, in
        how many ``cases``, and the ``mean_wait`` and ``median_wait`` between the two tasks (from the first's
        end to the second's start, zero when the second starts first). A count of the tasks, then two
        statements over a window of the tasks (see :func:`._sql.resources.handovers`), two more per part past
        ``maxSubqueryRows`` / 2 tasks."""
        return _organisation.handovers(self._ask())

    def resource_map(
        self,
        metric: str = "frequency",
        stat: str = "median",
        activities: float | None = None,
        paths: float | None = None,
    ) -> ProcessMap:
        """A :class:`~pm_notebook.mining.ProcessMap` over resources: a node per resource (NULL as
        ``(none)``), an edge per handover (START → first resource and last resource → END included); the
        same rendering, explorer and exports as :meth:`process_map`; handovers counted as :meth:`handovers`
        counts them (four statements; the two edge statements window the tasks as :meth:`handovers` does).

        Every resource and handover is fetched; the map *opens* on a readable part of them. By default
        (``activities=None``) it shows the :data:`RESOURCE_MAP_NODES` (25) resources with the most tasks
        and (``paths=None``) the most frequent handovers among them: 30 % of them, at most
        :data:`RESOURCE_MAP_PATHS` (40), plus what every map shows at any setting (each resource's
        strongest handover in and out, the start and end paths of 5 % of the cases, the routes that
        connect them). A share (0..1) shows that share instead; ``pmap.view(activities=1.0)`` or the
        explorer's sliders show more without querying again (thousands of resources take Graphviz
        minutes to lay out, which is why the default does not)."""
        return _organisation.resource_map(self._ask(), metric, stat, activities, paths)

    # --- the time perspective (_time.py) ----------------------------------------------------------
    def cases_over_time(self, freq: str = "P1W") -> pd.DataFrame:
        """Cases started and finished per period (``freq``: ISO period or ``"week"``...), and cases open at
        the end of each period (started so far minus finished so far); every period from the first start's
        to the last end's, those where nothing started or finished included (0 and 0, the open count
        carried), as pandas' ``resample`` gives them."""
        return _time.cases_over_time(self._ask(), freq)

    def arrivals(self, freq: str = "P1W", quantiles: Sequence[float] = (0.5, 0.9)) -> pd.DataFrame:
        """Cases arriving (started) per period, every period from the first start's to the last's (a
        period where no case started has ``started`` 0): ``started``, ``mean_interarrival`` (the mean time
        between two consecutive starts inside the period; NaT with fewer than two) and the *quantiles* of
        those times (``p50_interarrival``…, by Druid's quantile sketch: see the docs' quantile definition).

        Two statements; the quantiles need a window function (``LAG``) whose result, one row per case,
        Druid's broker inlines: past ``maxSubqueryRows`` cases the log needs ``large_subqueries=True``.
        ``quantiles=()`` leaves them out: one statement, no subquery, any number of cases.
        """
        return _time.arrivals(self._ask(), freq, quantiles)

    def work_in_progress(self, freq: str = "P1W") -> pd.DataFrame:
        """Open cases per period, every period from the first case start's to the last case end's (as
        pandas' ``resample`` gives them: a period where no case started or finished has 0 of both and the
        open cases carried): ``active`` (open at some time in the period: started before its end and not
        finished before its start) and ``open_at_end``; the two statements of :meth:`cases_over_time`,
        the missing periods filled in here (no event is pulled)."""
        return _time.work_in_progress(self._ask(), freq)

    def dotted_chart(self, freq: str = "P1D") -> Chart:
        """A dotted chart of the whole log, binned in Druid: per period of the task's start (x) and
        activity (y, one colour each) a dot sized by its number of events; no event is pulled. A notebook
        draws it inline (PNG/SVG); ``chart.data`` holds the numbers (:meth:`dotted_data`, one statement)."""
        return _time.dotted_chart(self._ask(), freq)

    def dotted_data(self, freq: str = "P1D") -> pd.DataFrame:
        """The numbers :meth:`dotted_chart` draws: per (``period``, ``activity``) ``events`` and ``cases``."""
        return _time.dotted_data(self._ask(), freq)

    def performance_spectrum(self, source: str, target: str, freq: str = "P1W") -> pd.DataFrame:
        """The segment *source* → *target* (directly follows) over time: per period of the segment's
        start, ``segments`` and the wait's mean/median/p90/min/max; one statement."""
        return _time.performance_spectrum(self._ask(), source, target, freq)

    def processing_and_waiting(self) -> pd.DataFrame:
        """Per activity its processing time (the task's own duration: start to end) next to the waiting
        time before it (from the previous task's end), mean, median and total; two statements. Processing
        time is zero where the log has one timestamp per task."""
        return _time.processing_and_waiting(self._ask())

    # --- drivers (_drivers.py) --------------------------------------------------------------------
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
        return _drivers.drivers(self._ask(), outcome, by, min_cases)

    def compare(self, other: Any, *, labels: Sequence[str] | None = None, top: int | None = 20) -> Comparison:
        """This log (*a*, the baseline) against *other* (*b*), a log of the same project with other filters:
        side by side and as differences ``b - a``, with tests of the rates and of the case durations.

        >>> before, after = log.between("2025-01-01", "2025-04-01"), log.between("2025-04-01", "2025-07-01")
        >>> c = before.compare(after)  # doctest: +SKIP
        >>> c.summary, c.tests, c.variants, c.activities, c.transitions  # doctest: +SKIP
        >>> c.process_map(metric="performance")  # doctest: +SKIP

        :param labels: the names of the two logs (default: what their filters keep).
        :param top: the variants listed (the largest changes; ``None``: every variant); all of them count in
            the tests and in ``variants.attrs`` (new and vanished variants and their shares).

        Eleven statements (five per log over the cases, task and transition tables, one for the listed
        variants' sequences); the statistics are described in :mod:`pm_notebook.mining._compare` and
        docs/mining.md.
        """
        if not isinstance(other, ProcessLog):
            raise ConfigurationError(
                f"compare() needs another ProcessLog, got {type(other).__name__}.",
                hint='before.compare(after), e.g. log.between("2025-01-01", "2025-04-01")'
                '.compare(log.between("2025-04-01", "2025-07-01"))',
            )
        if other._project.id != self._project.id or other._source is not self._source:
            raise ConfigurationError(
                f"compare() compares two logs of one project on one connection; got "
                f"{self._project.name or self._project.id!r} and {other._project.name or other._project.id!r}"
                + (" on two connections." if other._project.id == self._project.id else "."),
                hint="Filter one log twice: a = log.between(...); b = log.between(...); a.compare(b).",
            )
        if labels is None:
            names = (self._filters.describe(), other._filters.describe())
        elif (
            isinstance(labels, str)
            or len(labels) != 2
            or not all(isinstance(x, str) and x.strip() for x in labels)
        ):
            raise ConfigurationError(f"compare(labels=...) must be two names, got {labels!r}.")
        else:
            names = (str(labels[0]), str(labels[1]))
        return _compare.compare(self._ask(), other._ask(), names, _cases._top(top))

    def open_cases(
        self,
        sla: Any = None,
        *,
        as_of: Any = None,
        end_activities: Iterable[str] | None = None,
        min_evidence: int = 30,
    ) -> pd.DataFrame:
        """The cases not yet completed, each with its last activity, its elapsed time and an estimate of its
        remaining time from the completed cases' history: ``p50_remaining`` and ``p90_remaining`` of the
        completed cases' remaining time after a task of the same activity at a similar elapsed time (the
        ``level`` and ``evidence`` columns say which history answered and how much of it), and with *sla*
        ``p_late``, the estimated probability of finishing after the sla, highest first.

        :param sla: a duration (``pd.Timedelta(days=30)``, ``"30 days"``, ``"30d"``); ``None``: no ``p_late``.
        :param as_of: the time elapsed is measured to (default: the project's last event end).
        :param end_activities: a case is completed when its last activity is one of these (default: the
            project's completion lookup).
        :param min_evidence: the fewest observations an estimate rests on before it falls back to the
            activity's, then to the whole history.

        The log's filters choose both the open cases and the completed cases of the history. Definitions in
        :mod:`pm_notebook.mining._open_cases` and docs/mining.md.
        """
        return _open_cases.open_cases(
            self._ask(), sla, as_of=as_of, end_activities=end_activities, min_evidence=min_evidence
        )

    # --- the events for pm4py (_events.py) --------------------------------------------------------
    def event_sql(self, dimensions: Iterable[str] | str | None = "all") -> tuple[str, tuple[Any, ...]]:
        """The statement (and its parameters) :meth:`to_pm4py` runs: one row per task with pm4py's names."""
        statement = _events.event_statement(self._ask(), dimensions)
        return statement.sql, statement.params

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
        return _events.to_pm4py(self._ask(), dimensions, chunk_rows=chunk_rows)

    def iter_events(
        self, dimensions: Iterable[str] | str | None = "all", *, chunk_rows: int = 200_000
    ) -> Iterator[pd.DataFrame]:
        """The events of :meth:`to_pm4py` as DataFrames of at most *chunk_rows* rows each (unsorted)."""
        return _events.iter_events(self._ask(), dimensions, chunk_rows=chunk_rows)


def _find(source: Source, wanted: str) -> Project:
    """The project *wanted* names: the one with that id (one REST call, whatever the number of projects),
    else the one with that name (:func:`~pm_notebook._checks.find_project` over the listing, which reads
    every project's details)."""
    try:
        return source.project(wanted)
    except NotFound:
        return find_project(source.projects(), wanted)
