"""The time answers of :class:`~pm_notebook.mining.ProcessLog`: ``cases_over_time``, ``arrivals``,
``work_in_progress``, the dotted chart (``dotted_chart``, ``dotted_data``), ``performance_spectrum`` and
``processing_and_waiting``, each a plain function of an :class:`~._runner.Ask` (see :mod:`._runner`) over
the statements of :mod:`._sql.timing` and :mod:`._sql.cases`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from ._filtering import _strings
from ._flow import node_frame
from ._runner import Ask
from ._shaping import _ms, dense
from ._sql import cases as cases_sql
from ._sql import stats as stats_sql
from ._sql import timing as timing_sql
from ._sql._base import check_quantiles, period, qname

if TYPE_CHECKING:  # pragma: no cover
    from ._charts import Chart

__all__ = [
    "arrivals",
    "cases_over_time",
    "dotted_chart",
    "dotted_data",
    "performance_spectrum",
    "processing_and_waiting",
    "started_finished",
    "work_in_progress",
]


def cases_over_time(ask: Ask, freq: str = "P1W") -> pd.DataFrame:
    """The answer of ``ProcessLog.cases_over_time()`` (documented there)."""
    iso = period(freq)
    frame = started_finished(ask, iso)
    frame["open"] = (frame["started"].cumsum() - frame["finished"].cumsum()).astype("Int64")
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    return ask.answer(frame, freq=iso)


def arrivals(ask: Ask, freq: str = "P1W", quantiles: Sequence[float] = (0.5, 0.9)) -> pd.DataFrame:
    """The answer of ``ProcessLog.arrivals()`` (documented there)."""
    iso = period(freq)
    qs = check_quantiles(quantiles, none_ok=True)
    statement = timing_sql.arrivals(ask.schema, ask.filters, iso)
    frame = ask.run(statement)
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
    if qs:
        sql_gaps = timing_sql.interarrival(ask.schema, ask.filters, iso, qs)
        gaps = ask.run(sql_gaps)
        gaps["period"] = gaps["period"].astype("datetime64[ms, UTC]")
        gaps = gaps.set_index("period")
        for q in qs:
            column = gaps[qname(q)].reindex(out["period"]).reset_index(drop=True)
            out[f"{qname(q)}_interarrival"] = _ms(column)
    return ask.answer(out, freq=iso)


def work_in_progress(ask: Ask, freq: str = "P1W") -> pd.DataFrame:
    """The answer of ``ProcessLog.work_in_progress()`` (documented there)."""
    iso = period(freq)
    frame = started_finished(ask, iso)
    cum_started = frame["started"].cumsum()
    cum_finished = frame["finished"].cumsum()
    frame["active"] = (cum_started - cum_finished.shift(1, fill_value=0)).astype("Int64")
    frame["open_at_end"] = (cum_started - cum_finished).astype("Int64")
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    return ask.answer(frame[["period", "started", "finished", "active", "open_at_end"]], freq=iso)


def dotted_chart(ask: Ask, freq: str = "P1D") -> Chart:
    """The answer of ``ProcessLog.dotted_chart()`` (documented there)."""
    from ._charts import dotted_chart as draw

    data = dotted_data(ask, freq)
    return draw(data, f"Dotted chart: {ask.project.name or ask.project.id}")


def dotted_data(ask: Ask, freq: str = "P1D") -> pd.DataFrame:
    """The answer of ``ProcessLog.dotted_data()`` (documented there)."""
    iso = period(freq)
    statement = timing_sql.dotted_bins(ask.schema, ask.filters, iso)
    frame = ask.run(statement)
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    frame["events"] = frame["events"].astype("Int64")
    frame["cases"] = frame["cases"].astype("Int64")
    return ask.answer(frame, freq=iso)


def performance_spectrum(ask: Ask, source: str, target: str, freq: str = "P1W") -> pd.DataFrame:
    """The answer of ``ProcessLog.performance_spectrum()`` (documented there)."""
    a, b = _strings((source, target), "performance_spectrum")
    iso = period(freq)
    statement = timing_sql.spectrum(ask.schema, ask.filters, a, b, iso)
    frame = ask.run(statement)
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    frame["segments"] = frame["segments"].astype("Int64")
    for col in ("mean", "median", "p90", "min", "max"):
        frame[col] = _ms(frame[col])
    return ask.answer(frame, freq=iso, source=a, target=b)


def processing_and_waiting(ask: Ask) -> pd.DataFrame:
    """The answer of ``ProcessLog.processing_and_waiting()`` (documented there)."""
    sql_nodes = stats_sql.node_stats(ask.schema, ask.filters)
    nodes = node_frame(ask, sql_nodes)
    sql_wait = timing_sql.waiting(ask.schema, ask.filters)
    wait = ask.run(sql_wait)
    frame = nodes[["activity", "frequency", "mean", "median", "total"]].rename(
        columns={"frequency": "executions", **{s: f"{s}_processing" for s in ("mean", "median", "total")}}
    )
    frame = frame.merge(wait, on="activity", how="left")
    for col in ("mean_waiting", "median_waiting", "total_waiting"):
        frame[col] = _ms(frame[col])
    return ask.answer(frame)


def started_finished(ask: Ask, iso: str) -> pd.DataFrame:
    """Cases ``started`` and ``finished`` per *iso* period (both columns filled, periods ascending), counted
    by the two statements of :func:`._sql.cases.cases_over_time`."""
    started, finished = (ask.run(s) for s in cases_sql.cases_over_time(ask.schema, ask.filters, iso))
    frame = pd.merge(started, finished, on="period", how="outer")
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    frame = dense(frame.sort_values("period"), iso)
    for col in ("started", "finished"):
        frame[col] = frame[col].fillna(0).astype("Int64")
    return frame
