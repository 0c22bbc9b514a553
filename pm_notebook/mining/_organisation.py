"""The organisational answers of :class:`~pm_notebook.mining.ProcessLog`: who does the work (``resources``),
who hands it to whom (``handovers``) and the ``resource_map``, each a plain function of an
:class:`~._runner.Ask` (see :mod:`._runner`) over the statements of :mod:`._sql.resources`; a log too large
for one window of its tasks is answered in parts of whole cases (:func:`case_parts`), merged here."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from .._cells import cell_int
from ..errors import ConfigurationError
from ._flow import node_frame
from ._map import ProcessMap, default_shares
from ._runner import Ask
from ._shaping import MapView, _ms
from ._sql import resources as resources_sql
from ._sql import stats as stats_sql

__all__ = [
    "DRUID_SUBQUERY_ROWS",
    "RESOURCE_MAP_NODES",
    "RESOURCE_MAP_PATHS",
    "case_parts",
    "handovers",
    "resource_map",
    "resources",
]

#: the resources a resource map opens on, most tasks first (its ``activities=None``)
RESOURCE_MAP_NODES = 25
#: the most handovers among them it opens on, most frequent first (its ``paths=None``), besides the
#: strongest in and out of each and the connecting routes
RESOURCE_MAP_PATHS = 40


def resources(ask: Ask, by: str | None = None) -> pd.DataFrame:
    """The answer of ``ProcessLog.resources()`` (documented there)."""
    res = ask.resource()
    schema = ask.schema
    if by is None:
        sql_counts, sql_acts = resources_sql.resources(schema, ask.filters, res)
        frame = ask.run(sql_counts)
        acts = ask.run(sql_acts)
        total = cell_int(acts["total_cases"].iloc[0]) if len(acts) else 0  # no task: no case
        frame = frame.merge(acts.drop(columns="total_cases"), on="resource", how="left")
        for col in ("events", "cases", "activities"):
            frame[col] = frame[col].astype("Int64")
        events = float(frame["events"].sum())
        frame["share"] = frame["events"].astype("float64") / events if events else math.nan
        frame["involvement"] = frame["cases"].astype("float64") / total if total else math.nan
        return ask.answer(frame, total_cases=total)
    if by == "activity":
        statement = resources_sql.resources_by_activity(schema, ask.filters, res)
        frame = ask.run(statement)
        sql_nodes = stats_sql.node_stats(schema, ask.filters)
        nodes = node_frame(ask, sql_nodes)[["activity", "frequency", "cases"]]
        for col in ("events", "cases"):
            frame[col] = frame[col].astype("Int64")
        per = nodes.set_index("activity")
        executions = frame["activity"].map(per["frequency"]).astype("float64")
        cases = frame["activity"].map(per["cases"]).astype("float64")
        frame["specialisation"] = frame["events"].astype("float64") / executions
        frame["involvement"] = frame["cases"].astype("float64") / cases
        return ask.answer(frame)
    raise ConfigurationError(f"resources(by=...) must be None or 'activity', got {by!r}.")


def handovers(ask: Ask) -> pd.DataFrame:
    """The answer of ``ProcessLog.handovers()`` (documented there)."""
    res = ask.resource()
    schema = ask.schema
    parts = case_parts(ask)
    grid = len(parts) > 1
    frames = []
    for part in parts:
        kept = ask.filters.within(*part)  # the part's own excluded ids only
        sql_counts, sql_medians = resources_sql.handovers(schema, kept, res, part, grid=grid)
        counts, medians = ask.run(sql_counts), ask.run(sql_medians)
        keys = ["from_resource", "to_resource"]
        frames.append(counts.merge(medians, on=keys, how="left", sort=False))
    frame = frames[0] if not grid else _merge_handovers(frames)
    frame["handovers"] = frame["handovers"].astype("Int64")
    frame["cases"] = frame["cases"].astype("Int64")
    frame["mean_wait"] = _ms(frame["mean_wait"])
    frame["median_wait"] = _ms(frame["median_wait"])
    frame = frame[["from_resource", "to_resource", "handovers", "cases", "mean_wait", "median_wait"]]
    return ask.answer(frame, parts=len(parts))


def case_parts(ask: Ask) -> list[resources_sql.CaseRange]:
    """The ranges of whole cases whose tasks one window may hold (``maxSubqueryRows`` / 2 tasks: Druid
    inlines a window's input and its result, beside what the filters inline), found by a count of the
    filtered tasks and, when they are more, the tasks per case in case order, cut greedily."""
    limit = int((ask.context or {}).get("maxSubqueryRows", DRUID_SUBQUERY_ROWS))
    schema = ask.schema
    # what the filters inline themselves counts too: the excluded cases (their number is known), or,
    # for a case filter's semi-join, a quarter of the limit set aside — twice, with a tenth of the rest
    # kept free: on Druid 33 a 1M-task project's first part, cut at exactly (limit - excluded) / 2 tasks,
    # was refused (bench/bench_broker_memory.py); the window counts its semi-join more than once
    reserve = 0
    if ask.filters.inlines(schema, "vertex"):
        reserve = ask.excluded_cases if not ask.filters.cases else limit // 4
    budget = max(1, (limit - 2 * reserve) * 9 // 20) if limit >= 0 else 2**62
    total = resources_sql.total_tasks(schema, ask.filters)
    if cell_int(ask.run(total).iloc[0, 0]) <= budget:
        return [resources_sql.ALL_CASES]
    plan = resources_sql.task_counts(schema, ask.filters)
    counts = ask.run(plan)
    ids = counts["case_id"].astype(str).to_numpy(dtype=object)
    held = np.cumsum(pd.to_numeric(counts["tasks"]).to_numpy(dtype="int64"))  # tasks up to each case
    parts: list[resources_sql.CaseRange] = []
    low: str | None = None
    start, before = 0, 0  # the part's first case; the tasks of the cases before it
    while start < len(ids):
        # the part keeps whole cases while they fit (a case larger than the budget alone); the next begins at
        # the first case that would not fit
        end = max(int(np.searchsorted(held, before + budget, side="right")), start + 1)
        if end >= len(ids):
            break
        parts.append((low, str(ids[end])))
        low, start, before = str(ids[end]), end, int(held[end - 1])
    parts.append((low, None))
    return parts


def resource_map(
    ask: Ask,
    metric: str = "frequency",
    stat: str = "median",
    activities: float | None = None,
    paths: float | None = None,
) -> ProcessMap:
    """The answer of ``ProcessLog.resource_map()`` (documented there)."""
    res = ask.resource()
    schema = ask.schema
    sql_nodes, sql_stats = resources_sql.resource_nodes(schema, ask.filters, res)
    nodes = ask.run(sql_nodes).merge(ask.run(sql_stats), on="activity", how="left")
    nodes["frequency"] = nodes["frequency"].astype("Int64")
    nodes["cases"] = nodes["cases"].astype("Int64")
    for col in stats_sql.STATS:
        nodes[col] = _ms(nodes[col])
    parts = case_parts(ask)
    grid = len(parts) > 1
    frames = []
    for part in parts:
        kept = ask.filters.within(*part)  # the part's own excluded ids only
        sql_in, sql_out = resources_sql.resource_edges(schema, kept, res, part, grid=grid)
        frames += [ask.run(sql_in), ask.run(sql_out)]
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
    return ask.process_map(nodes, edges, view, of="resources")


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


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    """*column* as float64 (NULL as NaN), whatever dtype the transport gave it."""
    return pd.to_numeric(frame[column]).to_numpy(dtype="float64", na_value=np.nan)


def _extreme(values: np.ndarray, reduce: Callable[[np.ndarray], Any]) -> float:
    """*reduce* (``np.min``/``np.max``) of the values that are not NaN; NaN when none is (as pandas')."""
    known = values[~np.isnan(values)]
    return float(reduce(known)) if known.size else math.nan


def _merge_handovers(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The handovers of a log answered in parts of whole cases: counts, cases and wait sums add up (a case
    is in one part), the median is pooled from the parts' quantiles. Each column is read into numpy once;
    the loop over the pairs touches arrays only."""
    both = pd.concat(frames, ignore_index=True)
    keys = ["from_resource", "to_resource"]
    handovers, cases = _numbers(both, "handovers"), _numbers(both, "cases")
    wait_total, waits = _numbers(both, "wait_total"), _numbers(both, "waits")
    points = both[_grid_columns(both)].to_numpy(dtype="float64", na_value=np.nan)
    senders, receivers = (both[k].to_numpy(dtype=object) for k in keys)  # NULL as the parts hold it
    rows = []
    for at in both.groupby(keys, dropna=False, sort=False).indices.values():
        pair_waits = waits[at]
        counted = float(np.nansum(pair_waits))
        rows.append(
            {
                "from_resource": senders[at[0]],
                "to_resource": receivers[at[0]],
                "handovers": int(np.nansum(handovers[at])),
                "cases": int(np.nansum(cases[at])),
                "mean_wait": float(np.nansum(wait_total[at])) / counted if counted else math.nan,
                "median_wait": _pooled_quantile(pair_waits, points[at], 0.5),
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
    quantiles (numpy per edge, as :func:`_merge_handovers`)."""
    both = pd.concat(frames, ignore_index=True)
    frequency, total = _numbers(both, "frequency"), _numbers(both, "total")
    low, high = _numbers(both, "min"), _numbers(both, "max")
    points = both[_grid_columns(both)].to_numpy(dtype="float64", na_value=np.nan)
    sources, targets = (both[k].to_numpy(dtype=object) for k in ("source", "target"))
    rows = []
    for at in both.groupby(["source", "target"], sort=False).indices.values():
        edge_frequency = frequency[at]
        edge_total = float(np.nansum(total[at]))
        rows.append(
            {
                "source": sources[at[0]],
                "target": targets[at[0]],
                "frequency": int(edge_frequency.sum()),
                "mean": edge_total / edge_frequency.sum(),
                "median": _pooled_quantile(edge_frequency, points[at], 0.5),
                "p90": _pooled_quantile(edge_frequency, points[at], 0.9),
                "total": edge_total,
                "min": _extreme(low[at], np.min),
                "max": _extreme(high[at], np.max),
            }
        )
    return _like(pd.DataFrame(rows), both, ["source", "target"])
