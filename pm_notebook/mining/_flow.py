"""The control-flow answers of :class:`~pm_notebook.mining.ProcessLog`: ``activities``, ``transitions``,
``bottlenecks``, ``process_map``, ``endpoints``, ``trace_lengths`` and ``conformance``, each a plain function
of an :class:`~._runner.Ask` (see :mod:`._runner`) over the statements of :mod:`._sql.stats`,
:mod:`._sql.controlflow` and :mod:`._sql.conformance`; the shaping of the node and edge statistics that other
perspectives share (:func:`node_frame`, :func:`edge_frame`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._cells import cell_int
from .._checks import positive_int
from ..errors import ConfigurationError
from ._runner import Ask
from ._shaping import MapView, _ms, _rounded
from ._sql import cases as cases_sql
from ._sql import conformance as conformance_sql
from ._sql import controlflow as controlflow_sql
from ._sql import stats as stats_sql
from ._sql._base import Statement

if TYPE_CHECKING:  # pragma: no cover
    from ._map import ProcessMap

__all__ = [
    "activities",
    "bottlenecks",
    "conformance",
    "edge_frame",
    "endpoints",
    "node_frame",
    "process_map",
    "trace_lengths",
    "transitions",
]


def activities(ask: Ask) -> pd.DataFrame:
    """The answer of ``ProcessLog.activities()`` (documented there)."""
    statement = stats_sql.node_stats(ask.schema, ask.filters)
    nodes = node_frame(ask, statement)
    frame = nodes[["activity", "frequency", "cases", "cases_with_rework", "mean", "median", "p90", "total"]]
    frame = frame.rename(
        columns={
            "frequency": "executions",
            **{s: f"{s}_service" for s in ("mean", "median", "p90", "total")},
        }
    )
    return ask.answer(frame)


def node_frame(ask: Ask, statement: Statement) -> pd.DataFrame:
    """The per-activity statistics of *statement* (:func:`._sql.stats.node_stats`) with pandas types."""
    nodes = ask.run(statement)
    nodes["frequency"] = nodes["frequency"].astype("Int64")
    for col in ("cases", "cases_with_rework"):
        nodes[col] = _rounded(nodes[col])
    for col in stats_sql.STATS:
        nodes[col] = _ms(nodes[col])
    return nodes


def edge_frame(ask: Ask, statement: Statement) -> pd.DataFrame:
    """The per-transition statistics of *statement* (:func:`._sql.stats.edge_stats`) with pandas types."""
    frame = ask.run(statement)
    frame["frequency"] = frame["frequency"].astype("Int64")
    for col in stats_sql.STATS:
        frame[col] = _ms(frame[col])
    return frame


def transitions(ask: Ask, min_count: int = 1) -> pd.DataFrame:
    """The answer of ``ProcessLog.transitions()`` (documented there)."""
    min_count = positive_int(min_count, "min_count")
    statement = stats_sql.transitions(ask.schema, ask.filters, min_count)
    return ask.answer(edge_frame(ask, statement), min_count=min_count)


def bottlenecks(ask: Ask, k: int = 10, metric: str = "p90", min_count: int = 5) -> pd.DataFrame:
    """The answer of ``ProcessLog.bottlenecks()`` (documented there)."""
    k = positive_int(k, "k")
    min_count = positive_int(min_count, "min_count")
    if metric not in ("p90", "median", "mean", "total", "max"):
        raise ConfigurationError(f"metric must be 'p90', 'median', 'mean', 'total' or 'max', got {metric!r}.")
    statement = stats_sql.bottlenecks(ask.schema, ask.filters, k, metric, min_count)
    frame = edge_frame(ask, statement)
    return ask.answer(frame, metric=metric, min_count=min_count)


def process_map(
    ask: Ask, metric: str = "frequency", stat: str = "median", activities: float = 1.0, paths: float = 0.3
) -> ProcessMap:
    """The answer of ``ProcessLog.process_map()`` (documented there)."""
    sql_nodes = stats_sql.node_stats(ask.schema, ask.filters)
    nodes = node_frame(ask, sql_nodes).drop(columns="cases_with_rework")
    sql_edges = stats_sql.transitions(ask.schema, ask.filters)
    edges = edge_frame(ask, sql_edges)
    view = MapView(metric=metric, stat=stat, activities=activities, paths=paths)
    return ask.process_map(nodes, edges, view)


def endpoints(ask: Ask) -> pd.DataFrame:
    """The answer of ``ProcessLog.endpoints()`` (documented there)."""
    statement = controlflow_sql.endpoints(ask.schema, ask.filters)
    frame = ask.run(statement)
    frame["cases"] = frame["cases"].astype("Int64")
    totals = frame.groupby("kind")["cases"].transform("sum").astype("float64")
    frame["share"] = frame["cases"].astype("float64") / totals
    return ask.answer(frame)


def trace_lengths(ask: Ask) -> pd.DataFrame:
    """The answer of ``ProcessLog.trace_lengths()`` (documented there)."""
    statement = controlflow_sql.trace_lengths(ask.schema, ask.filters)
    frame = ask.run(statement)
    frame["length"] = frame["length"].astype("Int64")
    frame["cases"] = frame["cases"].astype("Int64")
    total = float(frame["cases"].sum())
    frame["share"] = frame["cases"].astype("float64") / total if total else math.nan
    return ask.answer(frame)


def conformance(ask: Ask, allowed: Any) -> pd.DataFrame:
    """The answer of ``ProcessLog.conformance()`` (documented there)."""
    sql, sql_dev = conformance_sql.deviations(ask.schema, ask.filters, _pairs(allowed))
    frame = ask.run(sql)
    deviating = cell_int(ask.run(sql_dev).iloc[0, 0])
    total = total_cases(ask)
    frame["transitions"] = frame["transitions"].astype("Int64")
    frame["cases"] = frame["cases"].astype("Int64")
    frame["case_share"] = frame["cases"].astype("float64") / total if total else math.nan
    fitness = (1 - deviating / total) if total else math.nan
    return ask.answer(frame, cases=total, deviating_cases=deviating, fitness=fitness)


def total_cases(ask: Ask) -> int:
    """How many cases the filters keep."""
    return cell_int(ask.run(cases_sql.total_cases(ask.schema, ask.filters)).iloc[0, 0])


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
