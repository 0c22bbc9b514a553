"""A real event log end to end: the 4TU "receipt" log (tests/data/README.md) uploaded with ``conn.upload``,
then every answer of docs/mining.md (the perspectives too) with its *default* settings against an
independent pandas computation on the same DataFrame — counts exact, quantiles by the documented definition
(the smallest value with at least a share q of the values at or below it: numpy's ``inverted_cdf``) — and
against pm4py where cheap. The checks every real log shares are in real_logs.py (test_helpdesk_log.py runs
them on the Helpdesk log); the fixtures, in conftest.py, upload the log named by :data:`LOG`."""

from __future__ import annotations

import pandas as pd
import pytest

from . import real_logs as real
from .real_logs import CASE, TIME, monday, q

#: the log of tests/data/ the fixtures upload
LOG = "receipt"


@pytest.fixture(scope="module")
def log(real_log):
    return real_log


@pytest.fixture(scope="module")
def expected(real_expected):
    return real_expected


def test_summary(log, expected):
    row = real.check_summary(log, expected)
    assert (row["cases"], row["events"]) == (1434, 8577)


def test_variants(log, expected):
    real.check_top_variants(log, expected)


def test_variants_over_rest_agree_with_the_log(real_uploaded, log):
    real.check_variants_over_rest(real_uploaded, log)


def test_throughput_and_distribution(log, expected):
    real.check_throughput_and_distribution(log, expected)


def test_activities_and_rework(log, expected):
    real.check_activities_and_rework(log, expected)


def test_transitions_bottlenecks_and_the_map(log, expected):
    real.check_transitions_bottlenecks_and_the_map(log, expected)


def test_cases_over_time_and_conformance(log, expected):
    ev = expected["ev"]
    starts = ev.groupby(CASE)[TIME].min()
    weeks = log.cases_over_time()  # P1W: Monday-based weeks, as Druid's TIME_FLOOR
    got = weeks.set_index("period")["started"]
    assert got[got > 0].to_dict() == monday(starts).value_counts().sort_index().to_dict()
    assert weeks["finished"].sum() == len(starts)
    top = expected["edges"].groupby(["source", "target"]).size().nlargest(5).index.tolist()
    allowed = [(s, t) for s, t in top if s != "START" and t != "END"]
    result = log.conformance(allowed)
    ok = set(allowed)
    deviating = {
        c
        for c, trace in expected["traces"].items()
        if any((a, b) not in ok for a, b in zip(trace, trace[1:], strict=False))
    }
    assert result.attrs["deviating_cases"] == len(deviating) and len(real.inner_edges(expected)) > 0


def test_arrivals_and_their_interarrival_quantiles(log, expected):
    starts = expected["ev"].groupby(CASE)["ms"].min().sort_values()
    week = monday(pd.to_datetime(starts, unit="ms", utc=True))  # Druid's P1W
    got = log.arrivals().set_index("period")  # the defaults: weeks, median and p90
    counts = week.value_counts().sort_index()
    every_week = pd.date_range(counts.index[0], counts.index[-1], freq="7D")  # weeks without an arrival: 0
    assert got["started"].to_dict() == counts.reindex(every_week, fill_value=0).to_dict()
    assert got["p50_interarrival"][got["started"] == 0].isna().all()
    checked = 0
    for period, group in starts.groupby(week):
        gaps = group.diff().dropna()  # between consecutive case starts inside the week
        if len(gaps) == 0:
            assert pd.isna(got.loc[period, "p50_interarrival"])
            continue
        assert got.loc[period, "mean_interarrival"] == pd.Timedelta(milliseconds=round(gaps.mean()))
        assert got.loc[period, "p50_interarrival"] == q(gaps, 0.5)
        assert got.loc[period, "p90_interarrival"] == q(gaps, 0.9)
        checked += 1
    assert checked > 10


def test_where_and_the_uploaded_names(log, expected):
    span = expected["span"]
    day = pd.Timedelta(days=1)
    assert log.where("duration > ?", day).summary()["cases"].iloc[0] == (span > real.DAY_MS).sum()
    key = log.variants(1)["variant"].iloc[0]
    assert log.where("variant = ?", key).summary()["cases"].iloc[0] == log.variants(1)["cases"].iloc[0]
    events = log.to_pm4py()
    assert {"org:resource", "org:group", "lifecycle:transition"} <= set(events.columns)
    assert len(events) == 8577


def test_against_pm4py(log, real_frame):
    real.check_dfg_and_variants_against_pm4py(log, real_frame)


def test_endpoints_and_trace_lengths(log, expected):
    real.check_endpoints_and_trace_lengths(log, expected)


def test_resources_and_handovers(log, expected, real_frame):
    real.check_resources(log, expected)
    real.check_handovers(log, expected, real_frame)


def test_work_in_progress_dotted_data_and_spectrum(log, expected):
    times = expected["ev"].groupby(CASE)[TIME].agg(["min", "max"])
    started = monday(times["min"]).value_counts()
    finished = monday(times["max"]).value_counts()
    wip = log.work_in_progress().set_index("period")  # P1W
    assert wip["started"][wip["started"] > 0].to_dict() == started.sort_index().to_dict()
    assert wip["finished"][wip["finished"] > 0].to_dict() == finished.sort_index().to_dict()
    weeks = wip.index
    open_at_end = [int(((monday(times["min"]) <= w) & (monday(times["max"]) > w)).sum()) for w in weeks]
    assert list(wip["open_at_end"]) == open_at_end
    real.check_dotted_bins(log, expected)
    real.check_performance_spectrum(log, expected)
