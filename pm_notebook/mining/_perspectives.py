"""The perspectives of issue 28 beside the control flow of :class:`~._log.ProcessLog`: who does the work
(organisational), when it happens (time) and how cases start, end and how long they are (control flow).

Each mixin's answers run the statements of one :mod:`._sql` module (:mod:`._sql.resources`,
:mod:`._sql.timing`, :mod:`._sql.controlflow`) through the log and shape the results like every other answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._cells import cell_int
from ..errors import ConfigurationError
from ._filtering import _strings
from ._map import default_shares
from ._shaping import LogParts, MapView, _ms, dense
from ._sql import controlflow as controlflow_sql
from ._sql import resources as resources_sql
from ._sql import stats as stats_sql
from ._sql import timing as timing_sql
from ._sql._base import Statement, check_quantiles, period, qname

if TYPE_CHECKING:  # pragma: no cover
    from ._charts import Chart
    from ._map import ProcessMap

__all__ = [
    "RESOURCE_MAP_NODES",
    "RESOURCE_MAP_PATHS",
    "ControlFlowAnswers",
    "OrganisationAnswers",
    "TimeAnswers",
]

#: the resources a resource map opens on, most tasks first (its ``activities=None``)
RESOURCE_MAP_NODES = 25
#: the most handovers among them it opens on, most frequent first (its ``paths=None``), besides the
#: strongest in and out of each and the connecting routes
RESOURCE_MAP_PATHS = 40


class OrganisationAnswers(LogParts):
    """Who does the work: resources, handovers and the resource map."""

    def _resource(self) -> str:
        return resources_sql.resource_column(self._schema(), self._resource_name)

    def resources(self, by: str | None = None) -> pd.DataFrame:
        """Who does the work (tasks whose resource is NULL are the ``<NA>`` row).

        ``by=None``: per resource ``events``, ``cases``, ``activities`` (distinct), ``share`` (of all
        events) and ``involvement`` (share of the log's cases it worked in); two statements.
        ``by="activity"``: per (activity, resource) ``events``, ``cases``, ``specialisation`` (the
        resource's share of the activity's executions) and ``involvement`` (share of the activity's cases
        it worked in); two statements.
        """
        res = self._resource()
        schema = self._schema()
        if by is None:
            sql_counts, sql_acts = resources_sql.resources(schema, self._filters, res)
            frame = self._run(sql_counts)
            acts = self._run(sql_acts)
            total = cell_int(acts["total_cases"].iloc[0]) if len(acts) else 0  # no task: no case
            frame = frame.merge(acts.drop(columns="total_cases"), on="resource", how="left")
            for col in ("events", "cases", "activities"):
                frame[col] = frame[col].astype("Int64")
            events = float(frame["events"].sum())
            frame["share"] = frame["events"].astype("float64") / events if events else math.nan
            frame["involvement"] = frame["cases"].astype("float64") / total if total else math.nan
            return self._answer(frame, [sql_counts, sql_acts], total_cases=total)
        if by == "activity":
            statement = resources_sql.resources_by_activity(schema, self._filters, res)
            frame = self._run(statement)
            sql_nodes = stats_sql.node_stats(schema, self._filters)
            nodes = self._node_frame(sql_nodes)[["activity", "frequency", "cases"]]
            for col in ("events", "cases"):
                frame[col] = frame[col].astype("Int64")
            per = nodes.set_index("activity")
            executions = frame["activity"].map(per["frequency"]).astype("float64")
            cases = frame["activity"].map(per["cases"]).astype("float64")
            frame["specialisation"] = frame["events"].astype("float64") / executions
            frame["involvement"] = frame["cases"].astype("float64") / cases
            return self._answer(frame, [statement, sql_nodes])
        raise ConfigurationError(f"resources(by=...) must be None or 'activity', got {by!r}.")

    def handovers(self) -> pd.DataFrame:
        """Handover of work: per (``from_resource``, ``to_resource``) how often a task of one is directly
        followed in its case by a task of the other — consecutive tasks in the task order (start, end,
        activity, resource), overlapping and identical tasks included, same resource included: exactly the
        counts of pm4py's ``discover_handover_of_work_network(beta=0)`` on the events in that order —, in
        how many ``cases``, and the ``mean_wait`` and ``median_wait`` between the two tasks (from the first's
        end to the second's start, zero when the second starts first). A count of the tasks, then two
        statements over a window of the tasks (see :func:`._sql.resources.handovers`), two more per part past
        ``maxSubqueryRows`` / 2 tasks."""
        res = self._resource()
        schema = self._schema()
        parts, statements = self._case_parts()
        grid = len(parts) > 1
        frames = []
        for part in parts:
            sql_counts, sql_medians = resources_sql.handovers(schema, self._filters, res, part, grid=grid)
            counts, medians = self._run(sql_counts), self._run(sql_medians)
            keys = ["from_resource", "to_resource"]
            frames.append(counts.merge(medians, on=keys, how="left", sort=False))
            statements += [sql_counts, sql_medians]
        frame = frames[0] if not grid else _merge_handovers(frames)
        frame["handovers"] = frame["handovers"].astype("Int64")
        frame["cases"] = frame["cases"].astype("Int64")
        frame["mean_wait"] = _ms(frame["mean_wait"])
        frame["median_wait"] = _ms(frame["median_wait"])
        frame = frame[["from_resource", "to_resource", "handovers", "cases", "mean_wait", "median_wait"]]
        return self._answer(frame, statements, parts=len(parts))

    def _case_parts(self) -> tuple[list[resources_sql.CaseRange], list[Statement]]:
        """The ranges of whole cases whose tasks one window may hold (``maxSubqueryRows`` / 2 tasks: Druid
        inlines a window's input and its result, beside what the filters inline), and the statements that
        found them: a count of the filtered tasks; when they are more, the tasks per case in case order, cut
        greedily."""
        # the parts always keep to the row limit (Druid's default unless the context sets one), also under
        # large_subqueries' byte budget: each part's window then stays small on the broker, and a single
        # case over the limit still runs under the budget, which replaces the row limit
        limit = int((self._context or {}).get("maxSubqueryRows", DRUID_SUBQUERY_ROWS))
        schema = self._schema()
        # what the filters inline themselves counts too: the excluded cases (their number is known), or,
        # for a case filter's semi-join, a quarter of the limit set aside — twice, with a tenth of the rest
        # kept free: on Druid 33 a 1M-task project's first part, cut at exactly (limit - excluded) / 2 tasks,
        # was refused (bench/bench_broker_memory.py); the window counts its semi-join more than once
        where, _ = self._filters.where(schema, "vertex")
        reserve = 0
        if "(SELECT" in where:
            reserve = self._excluded_cases() if not self._filters.cases else limit // 4
        budget = max(1, (limit - 2 * reserve) * 9 // 20) if limit >= 0 else 2**62
        total = resources_sql.total_tasks(schema, self._filters)
        if cell_int(self._run(total).iloc[0, 0]) <= budget:
            return [resources_sql.ALL_CASES], [total]
        plan = resources_sql.task_counts(schema, self._filters)
        counts = self._run(plan)
        parts: list[resources_sql.CaseRange] = []
        low: str | None = None
        held = 0
        for case_id, tasks in zip(counts["case_id"].astype(str), counts["tasks"], strict=True):
            if held and held + int(tasks) > budget:
                parts.append((low, case_id))
                low, held = case_id, 0
            held += int(tasks)
        parts.append((low, None))
        return parts, [total, plan]

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
        res = self._resource()
        schema = self._schema()
        sql_nodes, sql_stats = resources_sql.resource_nodes(schema, self._filters, res)
        nodes = self._run(sql_nodes).merge(self._run(sql_stats), on="activity", how="left")
        nodes["frequency"] = nodes["frequency"].astype("Int64")
        nodes["cases"] = nodes["cases"].astype("Int64")
        for col in stats_sql.STATS:
            nodes[col] = _ms(nodes[col])
        parts, statements = self._case_parts()
        grid = len(parts) > 1
        frames = []
        for part in parts:
            sql_in, sql_out = resources_sql.resource_edges(schema, self._filters, res, part, grid=grid)
            frames += [self._run(sql_in), self._run(sql_out)]
            statements += [sql_in, sql_out]
        edges = pd.concat(frames, ignore_index=True) if not grid else _merge_edges(frames)
        edges["frequency"] = edges["frequency"].astype("Int64")
        for col in stats_sql.STATS:
            edges[col] = _ms(edges[col])
        edges = edges.sort_values(["frequency", "source", "target"], ascending=[False, True, True])
        edges = edges.reset_index(drop=True)
        auto_activities, auto_paths = default_shares(
            nodes, edges, max_nodes=RESOURCE_MAP_NODES, max_paths=RESOURCE_MAP_PATHS, paths=0.3
        )
        view = MapView(
            metric=metric,
            stat=stat,
            activities=auto_activities if activities is None else activities,
            paths=auto_paths if paths is None else paths,
        )
        statements = [sql_nodes, sql_stats, *statements]
        return self._process_map(nodes, edges, statements, view, of="resources")


class ControlFlowAnswers(LogParts):
    """How cases start and end, and how long they are in tasks."""

    def endpoints(self) -> pd.DataFrame:
        """Start and end activities: ``kind`` (``"start"``/``"end"``), ``activity``, ``cases`` and
        ``share`` (of the cases of that kind); one statement."""
        statement = controlflow_sql.endpoints(self._schema(), self._filters)
        frame = self._run(statement)
        frame["cases"] = frame["cases"].astype("Int64")
        totals = frame.groupby("kind")["cases"].transform("sum").astype("float64")
        frame["share"] = frame["cases"].astype("float64") / totals
        return self._answer(frame, [statement])

    def trace_lengths(self) -> pd.DataFrame:
        """Cases per trace length (tasks per case): ``length``, ``cases``, ``share``; one statement."""
        statement = controlflow_sql.trace_lengths(self._schema(), self._filters)
        frame = self._run(statement)
        frame["length"] = frame["length"].astype("Int64")
        frame["cases"] = frame["cases"].astype("Int64")
        total = float(frame["cases"].sum())
        frame["share"] = frame["cases"].astype("float64") / total if total else math.nan
        return self._answer(frame, [statement])


class TimeAnswers(LogParts):
    """When the work happens: arrivals, work in progress, the dotted chart, the performance spectrum and
    processing beside waiting time."""

    def arrivals(self, freq: str = "P1W", quantiles: Sequence[float] = (0.5, 0.9)) -> pd.DataFrame:
        """Cases arriving (started) per period, every period from the first start's to the last's (a
        period where no case started has ``started`` 0): ``started``, ``mean_interarrival`` (the mean time
        between two consecutive starts inside the period; NaT with fewer than two) and the *quantiles* of
        those times (``p50_interarrival``…, by Druid's quantile sketch: see the docs' quantile definition).

        Two statements; the quantiles need a window function (``LAG``) whose result, one row per case,
        Druid's broker inlines: past ``maxSubqueryRows`` cases the log needs ``large_subqueries=True``.
        ``quantiles=()`` leaves them out: one statement, no subquery, any number of cases.
        """
        iso = period(freq)
        qs = check_quantiles(quantiles, none_ok=True)
        statement = timing_sql.arrivals(self._schema(), self._filters, iso)
        frame = self._run(statement)
        started = frame["started"].astype("float64")
        span = frame["last"].astype("float64") - frame["first"].astype("float64")
        out = pd.DataFrame(
            {
                "period": frame["period"].astype("datetime64[ms, UTC]"),
                "started": frame["started"].astype("Int64"),
                "mean_interarrival": _ms((span / (started - 1)).where(started > 1)),
            }
        )
        out = dense(out, iso)  # every period, none started in some: 0 and no interval
        out["started"] = out["started"].fillna(0).astype("Int64")
        statements = [statement]
        if qs:
            sql_gaps = timing_sql.interarrival(self._schema(), self._filters, iso, qs)
            statements.append(sql_gaps)
            gaps = self._run(sql_gaps)
            gaps["period"] = gaps["period"].astype("datetime64[ms, UTC]")
            gaps = gaps.set_index("period")
            for q in qs:
                column = gaps[qname(q)].reindex(out["period"]).reset_index(drop=True)
                out[f"{qname(q)}_interarrival"] = _ms(column)
        return self._answer(out, statements, freq=iso)

    def work_in_progress(self, freq: str = "P1W") -> pd.DataFrame:
        """Open cases per period, every period from the first case start's to the last case end's (as
        pandas' ``resample`` gives them: a period where no case started or finished has 0 of both and the
        open cases carried): ``active`` (open at some time in the period: started before its end and not
        finished before its start) and ``open_at_end``; the two statements of :meth:`cases_over_time`,
        the missing periods filled in here (no event is pulled)."""
        iso = period(freq)
        frame, statements = self._started_finished(iso)
        cum_started = frame["started"].cumsum()
        cum_finished = frame["finished"].cumsum()
        frame["active"] = (cum_started - cum_finished.shift(1, fill_value=0)).astype("Int64")
        frame["open_at_end"] = (cum_started - cum_finished).astype("Int64")
        frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
        return self._answer(
            frame[["period", "started", "finished", "active", "open_at_end"]], statements, freq=iso
        )

    def dotted_chart(self, freq: str = "P1D") -> Chart:
        """A dotted chart of the whole log, binned in Druid: per period of the task's start (x) and
        activity (y, one colour each) a dot sized by its number of events; no event is pulled. A notebook
        draws it inline (PNG/SVG); ``chart.data`` holds the numbers (:meth:`dotted_data`, one statement)."""
        from ._charts import dotted_chart

        data = self.dotted_data(freq)
        return dotted_chart(data, f"Dotted chart: {self._project.name or self._project.id}")

    def dotted_data(self, freq: str = "P1D") -> pd.DataFrame:
        """The numbers :meth:`dotted_chart` draws: per (``period``, ``activity``) ``events`` and ``cases``."""
        iso = period(freq)
        statement = timing_sql.dotted_bins(self._schema(), self._filters, iso)
        frame = self._run(statement)
        frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
        frame["events"] = frame["events"].astype("Int64")
        frame["cases"] = frame["cases"].astype("Int64")
        return self._answer(frame, [statement], freq=iso)

    def performance_spectrum(self, source: str, target: str, freq: str = "P1W") -> pd.DataFrame:
        """The segment *source* → *target* (directly follows) over time: per period of the segment's
        start, ``segments`` and the wait's mean/median/p90/min/max; one statement."""
        a, b = _strings((source, target), "performance_spectrum")
        iso = period(freq)
        statement = timing_sql.spectrum(self._schema(), self._filters, a, b, iso)
        frame = self._run(statement)
        frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
        frame["segments"] = frame["segments"].astype("Int64")
        for col in ("mean", "median", "p90", "min", "max"):
            frame[col] = _ms(frame[col])
        return self._answer(frame, [statement], freq=iso, source=a, target=b)

    def processing_and_waiting(self) -> pd.DataFrame:
        """Per activity its processing time (the task's own duration: start to end) next to the waiting
        time before it (from the previous task's end), mean, median and total; two statements. Processing
        time is zero where the log has one timestamp per task."""
        sql_nodes = stats_sql.node_stats(self._schema(), self._filters)
        nodes = self._node_frame(sql_nodes)
        sql_wait = timing_sql.waiting(self._schema(), self._filters)
        wait = self._run(sql_wait)
        frame = nodes[["activity", "frequency", "mean", "median", "total"]].rename(
            columns={"frequency": "executions", **{s: f"{s}_processing" for s in ("mean", "median", "total")}}
        )
        frame = frame.merge(wait, on="activity", how="left")
        for col in ("mean_waiting", "median_waiting", "total_waiting"):
            frame[col] = _ms(frame[col])
        return self._answer(frame, [sql_nodes, sql_wait])


#: Druid's default ``maxSubqueryRows`` (``druid.server.http.maxSubqueryRows``), assumed when the log sets none
DRUID_SUBQUERY_ROWS = 100_000


def _pooled_quantile(counts: np.ndarray, grids: np.ndarray, q: float) -> float:
    """The *q* quantile of several parts' values, each part known by its count and its :data:`GRID`
    quantiles: each grid point stands for 1 % of its part's values, and the quantile is the inverted-CDF one
    of that pooled, weighted sample (within 1 % of rank of the exact one, plus each part's own error)."""
    keep = counts > 0
    if not keep.any():
        return math.nan
    values = grids[keep].ravel()
    weights = np.repeat(counts[keep] / grids.shape[1], grids.shape[1])
    known = ~np.isnan(values)
    values, weights = values[known], weights[known]
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    at = int(np.searchsorted(cumulative, q * cumulative[-1] - 1e-9))
    return float(values[order][min(at, len(values) - 1)])


def _grid_columns(frame: pd.DataFrame) -> list[str]:
    return [f"g{j}" for j in range(len(resources_sql.GRID))]


def _merge_handovers(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The handovers of a log answered in parts of whole cases: counts, cases and wait sums add up (a case
    is in one part), the median is pooled from the parts' quantiles."""
    both = pd.concat(frames, ignore_index=True)
    keys = ["from_resource", "to_resource"]
    grid = _grid_columns(both)
    rows = []
    for key, group in both.groupby(keys, dropna=False, sort=False):
        waits = pd.to_numeric(group["waits"]).to_numpy(dtype="float64")
        total = float(pd.to_numeric(group["wait_total"]).sum())
        rows.append(
            {
                "from_resource": key[0],
                "to_resource": key[1],
                "handovers": int(pd.to_numeric(group["handovers"]).sum()),
                "cases": int(pd.to_numeric(group["cases"]).sum()),
                "mean_wait": total / waits.sum() if waits.sum() else math.nan,
                "median_wait": _pooled_quantile(waits, group[grid].to_numpy(dtype="float64"), 0.5),
            }
        )
    frame = _like(pd.DataFrame(rows), both, keys)
    return frame.sort_values(["handovers", *keys], ascending=[False, True, True]).reset_index(drop=True)


def _like(frame: pd.DataFrame, parts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The key columns of a merged answer in the parts' dtype (a one-statement answer's: rows built from
    Python values would otherwise come back as pandas' default ``str``)."""
    if frame.empty:
        return frame
    return frame.astype({k: parts[k].dtype for k in keys})


def _merge_edges(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The resource map's edges of a log answered in parts: frequency, total, min and max add up or
    combine exactly (the mean is total over frequency), the median and p90 are pooled from the parts'
    quantiles."""
    both = pd.concat(frames, ignore_index=True)
    grid = _grid_columns(both)
    rows = []
    for (source, target), group in both.groupby(["source", "target"], sort=False):
        frequency = pd.to_numeric(group["frequency"]).to_numpy(dtype="float64")
        total = float(pd.to_numeric(group["total"]).sum())
        points = group[grid].to_numpy(dtype="float64")
        rows.append(
            {
                "source": source,
                "target": target,
                "frequency": int(frequency.sum()),
                "mean": total / frequency.sum(),
                "median": _pooled_quantile(frequency, points, 0.5),
                "p90": _pooled_quantile(frequency, points, 0.9),
                "total": total,
                "min": float(pd.to_numeric(group["min"]).min()),
                "max": float(pd.to_numeric(group["max"]).max()),
            }
        )
    return _like(pd.DataFrame(rows), both, ["source", "target"])
