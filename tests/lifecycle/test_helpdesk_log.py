"""A second real event log end to end: Helpdesk (tests/data/README.md; 4,580 cases, 21,348 events,
22 resources), uploaded with ``conn.upload`` and answered with the *default* ``conn.mining(project)``; every
answer and filter of docs/mining.md against pm4py (its defaults) or pandas on the same DataFrame — counts
exact, quantiles by the documented rule (real_logs.q). The log has what the generated test data lacks:
127 pairs of identical events (same case, activity and timestamp), three cases with two activities at one
instant, days with open cases in which no case started or finished (issue 36).

The checks every real log shares are in real_logs.py (test_receipt_log.py runs them on the receipt log); the
fixtures, in conftest.py, upload the log named by :data:`LOG`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pm_notebook.errors import ConfigurationError, SchemaError

from . import real_logs as real
from .real_logs import ACT, CASE, DAY_MS, RES, TIME, monday, q

#: the log of tests/data/ the fixtures upload
LOG = "helpdesk"


@pytest.fixture(scope="module")
def log(real_log):
    return real_log


@pytest.fixture(scope="module")
def expected(real_expected):
    return real_expected


def test_the_file_is_the_helpdesk_log(expected):
    """The independent computation reads what tests/data/README.md describes, and the shapes the issue
    found are in it (so the checks below exercise them)."""
    ev = expected["ev"]
    assert (len(ev), ev[CASE].nunique(), ev[ACT].nunique(), ev[RES].nunique()) == (21348, 4580, 14, 22)
    assert ev.duplicated([CASE, ACT, TIME]).sum() == 127  # identical events
    assert len(_tied_cases(expected)) == 3  # two activities at one instant


# --- the checks every real log shares ----------------------------------------------------------------------
def test_summary(log, expected):
    row = real.check_summary(log, expected)
    assert (row["cases"], row["events"], row["activities"]) == (4580, 21348, 14)


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


def test_dfg_and_variants_against_pm4py(log, real_frame):
    real.check_dfg_and_variants_against_pm4py(log, real_frame)


def test_endpoints_and_trace_lengths(log, expected):
    real.check_endpoints_and_trace_lengths(log, expected)


def test_resources(log, expected):
    real.check_resources(log, expected)


def test_handovers_are_pm4pys_with_duplicate_events(log, expected, real_frame):
    """pm4py's handover-of-work network (beta=0) counts 16,768 handovers, one per pair of consecutive
    events; identical events of a case are each a task of their own (issue 36, finding 1)."""
    real.check_handovers(log, expected, real_frame)
    assert int(log.handovers()["handovers"].sum()) == 21348 - 4580


def test_dotted_bins_and_the_performance_spectrum(log, expected):
    real.check_dotted_bins(log, expected)
    real.check_performance_spectrum(log, expected)


# --- what this log has and the receipt log has not ------------------------------------------------------
def _tied_cases(expected) -> list[str]:
    """The cases with two different activities at the same instant."""
    ev = expected["ev"]
    per = ev.groupby([CASE, TIME])[ACT].nunique()
    return sorted(per[per > 1].index.get_level_values(0).unique())


def test_sequences_on_timestamp_ties_follow_the_task_order(log, expected):
    """Where two activities of a case share an instant, every answer that prints the case's sequence
    prints it in the one documented task order (time, then activity name), the same everywhere — pm4py's,
    given the events in that order (issue 36, finding 4)."""
    traces = expected["traces"]
    every = log.variants(top=10_000)
    for row in every.itertuples(index=False):  # each printed sequence is its example case's
        assert row.activities == " → ".join(traces[row.example_case])
    for case in _tied_cases(expected):
        one = log.where("case_id = ?", case)
        assert list(one.variants()["activities"]) == [" → ".join(traces[case])]
        assert list(one.to_pm4py(dimensions=None)[ACT]) == traces[case]
        got = one.transitions()
        trace = ["START", *traces[case], "END"]
        want = pd.Series(list(zip(trace, trace[1:], strict=False))).value_counts().to_dict()
        assert {(r.source, r.target): r.frequency for r in got.itertuples()} == want


def _periods(times: pd.Series, freq: str) -> pd.Series:
    """Each time's period as Druid's ``TIME_FLOOR`` (days; Monday-based weeks)."""
    return times.dt.floor("D") if freq == "P1D" else monday(times)


def _every_period(first: pd.Timestamp, last: pd.Timestamp, freq: str) -> pd.DatetimeIndex:
    """Every period from *first* to *last*, as pandas' ``resample`` lists them."""
    return pd.date_range(first, last, freq="D" if freq == "P1D" else "7D")


def _started_finished(expected, freq: str) -> pd.DataFrame:
    """Per period from the first start to the last finish: cases ``started`` and ``finished``, ``active``
    (started in or before it, finished in or after it) and ``open_at_end`` (finished after it)."""
    times = expected["ev"].groupby(CASE)[TIME].agg(["min", "max"])
    s, f = _periods(times["min"], freq), _periods(times["max"], freq)
    every = _every_period(s.min(), f.max(), freq)
    grid = every.to_numpy()[:, None]
    s_at, f_at = s.to_numpy()[None, :], f.to_numpy()[None, :]
    return pd.DataFrame(
        {
            "started": s.value_counts().reindex(every, fill_value=0).to_numpy(),
            "finished": f.value_counts().reindex(every, fill_value=0).to_numpy(),
            "active": ((s_at <= grid) & (f_at >= grid)).sum(axis=1),
            "open_at_end": ((s_at <= grid) & (f_at > grid)).sum(axis=1),
        },
        index=every,
    )


@pytest.mark.parametrize("freq", ["P1W", "P1D"])
def test_work_in_progress_lists_every_period(log, expected, freq):
    """Every period from the first to the last, the open cases carried through periods in which no case
    started or finished (185 of 1,452 days here; issue 36, finding 3)."""
    want = _started_finished(expected, freq)
    if freq == "P1D":  # the figures of the issue: days without a start or finish, the mean open cases
        quiet = (want["started"] == 0) & (want["finished"] == 0)
        assert (len(want), int(quiet.sum()), round(want["active"].mean(), 1)) == (1452, 185, 132.1)
    got = log.work_in_progress(freq) if freq != "P1W" else log.work_in_progress()
    got = got.set_index("period")
    assert list(got.index) == list(want.index)
    for col in ("started", "finished", "active", "open_at_end"):
        assert got[col].astype("int64").tolist() == want[col].tolist(), col
    assert got["active"].astype("float64").mean() == pytest.approx(want["active"].mean())


@pytest.mark.parametrize("freq", ["P1W", "P1D"])
def test_cases_over_time_lists_every_period(log, expected, freq):
    want = _started_finished(expected, freq)
    got = (log.cases_over_time(freq) if freq != "P1W" else log.cases_over_time()).set_index("period")
    assert list(got.index) == list(want.index)
    assert got["started"].astype("int64").tolist() == want["started"].tolist()
    assert got["finished"].astype("int64").tolist() == want["finished"].tolist()
    assert got["open"].astype("int64").tolist() == want["open_at_end"].tolist()


@pytest.mark.parametrize("freq", ["P1W", "P1D"])
def test_arrivals_list_every_period_with_their_interarrival_quantiles(log, expected, freq):
    """Every period from the first start to the last, zeros where no case started (days here; the weeks
    without a start all follow the last one), and the mean and quantiles of the times between consecutive
    starts inside each period (NaT with fewer than two)."""
    starts = expected["ev"].groupby(CASE)["ms"].min().sort_values()
    at = _periods(pd.to_datetime(starts, unit="ms", utc=True), freq)
    every = _every_period(at.min(), at.max(), freq)
    got = (log.arrivals(freq) if freq != "P1W" else log.arrivals()).set_index("period")  # median and p90
    assert list(got.index) == list(every)
    assert got["started"].astype("int64").tolist() == at.value_counts().reindex(every, fill_value=0).tolist()
    gaps_of = {period: group.diff().dropna() for period, group in starts.groupby(at)}
    for period in every:
        gaps = gaps_of.get(period, pd.Series(dtype="float64"))
        row = got.loc[period]
        if len(gaps) == 0:
            assert pd.isna(row["mean_interarrival"]) and pd.isna(row["p50_interarrival"])
            continue
        assert row["mean_interarrival"] == pd.Timedelta(milliseconds=round(gaps.mean()))
        assert row["p50_interarrival"] == q(gaps, 0.5) and row["p90_interarrival"] == q(gaps, 0.9)


def test_processing_and_waiting_times(log, expected):
    """One timestamp per event: no processing time; the waiting time before an activity is the time since
    the previous event of its case (START left out)."""
    got = log.processing_and_waiting().set_index("activity")
    ev = expected["ev"]
    assert got["executions"].astype("int64").to_dict() == ev[ACT].value_counts().to_dict()
    assert (got["median_processing"] == pd.Timedelta(0)).all() and (
        got["total_processing"] == pd.Timedelta(0)
    ).all()
    waits = real.inner_edges(expected).groupby("target")["wait"]
    assert set(got.index[got["total_waiting"].notna()]) == set(waits.groups)
    for activity, w in waits:
        assert got.loc[activity, "median_waiting"] == q(w, 0.5)
        assert got.loc[activity, "total_waiting"] == real.total(w)
        assert abs(got.loc[activity, "mean_waiting"] - pd.Timedelta(milliseconds=w.mean())) <= pd.Timedelta(
            milliseconds=1
        )


# --- every case filter: the same case ids as pm4py's filter (or pandas where pm4py has none) --------------
def _pm4py():
    import pm4py

    return pm4py


def _ids(frame: pd.DataFrame) -> set[str]:
    return set(frame[CASE].unique())


def _top_k(expected, coverage: float) -> int:
    """How many of the most frequent variants cover *coverage* of the cases."""
    counts = expected["traces"].map(tuple).value_counts()
    return int((counts.cumsum() < coverage * counts.sum() - 1e-9).sum()) + 1


def _by_start(expected, start: str, end: str) -> set[str]:
    starts = expected["ev"].groupby(CASE)[TIME].min()
    return set(
        starts.index[(starts >= pd.Timestamp(start, tz="UTC")) & (starts < pd.Timestamp(end, tz="UTC"))]
    )


def _top_variant(expected, rank: int) -> tuple[str, ...]:
    return expected["traces"].map(tuple).value_counts().index[rank]


Ours = Callable[[Any], Any]
Theirs = Callable[[pd.DataFrame, dict[str, Any]], set[str]]
WAIT, TAKE, ASSIGN, RESOLVE, CLOSED = (
    "Wait",
    "Take in charge ticket",
    "Assign seriousness",
    "Resolve ticket",
    "Closed",
)
FILTERS: dict[str, tuple[Ours, Theirs]] = {
    "where_duration": (
        lambda log: log.where("duration > ?", pd.Timedelta(days=40)),
        lambda f, e: set(e["span"].index[e["span"] > 40 * DAY_MS]),
    ),
    "where_rework": (
        lambda log: log.where("rework >= ?", 1),
        lambda f, e: set(e["traces"].index[e["traces"].map(lambda t: len(t) > len(set(t)))]),
    ),
    "between": (
        lambda log: log.between("2012-01-01", "2013-01-01"),
        lambda f, e: _by_start(e, "2012-01-01", "2013-01-01"),
    ),
    "variants_in": (
        lambda log: log.variants_in(log.variants(3)["variant"].iloc[2]),
        lambda f, e: _ids(_pm4py().filter_variants(f, [_top_variant(e, 2)])),
    ),
    "with_activity": (
        lambda log: log.with_activity(WAIT),
        lambda f, e: _ids(_pm4py().filter_event_attribute_values(f, ACT, [WAIT], level="case")),
    ),
    "without_activity": (
        lambda log: log.without_activity(WAIT),
        lambda f, e: _ids(_pm4py().filter_event_attribute_values(f, ACT, [WAIT], level="case", retain=False)),
    ),
    "completed_only": (
        lambda log: log.completed_only([CLOSED]),
        lambda f, e: _ids(_pm4py().filter_end_activities(f, [CLOSED])),
    ),
    "directly_follows": (
        lambda log: log.directly_follows(TAKE, WAIT),
        lambda f, e: _ids(_pm4py().filter_directly_follows_relation(f, [(TAKE, WAIT)])),
    ),
    "eventually_follows": (
        lambda log: log.eventually_follows(ASSIGN, WAIT),
        lambda f, e: _ids(_pm4py().filter_eventually_follows_relation(f, [(ASSIGN, WAIT)])),
    ),
    "starts_with": (
        lambda log: log.starts_with(ASSIGN),
        lambda f, e: _ids(_pm4py().filter_start_activities(f, [ASSIGN])),
    ),
    "ends_with": (
        lambda log: log.ends_with(RESOLVE, WAIT),
        lambda f, e: _ids(_pm4py().filter_end_activities(f, [RESOLVE, WAIT])),
    ),
    "case_duration": (
        lambda log: log.case_duration(min="35 days", max="45 days"),
        lambda f, e: _ids(_pm4py().filter_case_performance(f, 35 * 86_400, 45 * 86_400)),
    ),
    "case_duration_min": (
        lambda log: log.case_duration(min=pd.Timedelta(days=40)),
        lambda f, e: _ids(_pm4py().filter_case_performance(f, 40 * 86_400, float("inf"))),
    ),
    "attribute": (
        lambda log: log.attribute("product", ["Value 2", "Value 4"]),
        lambda f, e: _ids(
            _pm4py().filter_event_attribute_values(f, "product", ["Value 2", "Value 4"], level="case")
        ),
    ),
    "with_resource": (
        lambda log: log.with_resource("Value 9"),
        lambda f, e: _ids(_pm4py().filter_event_attribute_values(f, RES, ["Value 9"], level="case")),
    ),
    "top_variants": (
        lambda log: log.top_variants(),  # coverage=0.8
        lambda f, e: _ids(_pm4py().filter_variants_top_k(f, _top_k(e, 0.8))),
    ),
    "chained": (
        lambda log: log.starts_with(ASSIGN).with_resource("Value 9").without_activity(WAIT),
        lambda f, e: _ids(
            _pm4py().filter_event_attribute_values(
                _pm4py().filter_event_attribute_values(
                    _pm4py().filter_start_activities(f, [ASSIGN]), RES, ["Value 9"], level="case"
                ),
                ACT,
                [WAIT],
                level="case",
                retain=False,
            )
        ),
    ),
}


@pytest.mark.parametrize("name", list(FILTERS))
def test_filters_keep_pm4pys_cases(log, expected, real_frame, name):
    ours, theirs = FILTERS[name]
    kept = ours(log)
    want = theirs(real_frame, expected)
    assert 0 < len(want) < 4580  # the filter chooses
    assert set(kept.to_pm4py(dimensions=None)[CASE].unique()) == want
    assert kept.summary()["cases"].iloc[0] == len(want)


# --- no silent zeros, no silent cut (issue 36, finding 6 and 7) -------------------------------------------
@pytest.mark.parametrize(
    ("make", "near"),
    [
        (lambda log: log.with_activity("closed"), CLOSED),
        (lambda log: log.directly_follows("Take in charge", WAIT), TAKE),
        (lambda log: log.with_resource("value 9"), "Value 9"),
        (lambda log: log.attribute("product", "value 2"), "Value 2"),
    ],
    ids=["with_activity", "directly_follows", "with_resource", "attribute"],
)
def test_a_name_the_log_lacks_is_refused_with_the_nearest(log, make, near):
    with pytest.raises(SchemaError) as info:
        make(log).summary()
    assert near in str(info.value) and "did you mean" in str(info.value).lower()


def test_case_duration_refuses_a_bare_number(log):
    """40 would be milliseconds here and seconds in pm4py: refused, with the way to say it."""
    with pytest.raises(ConfigurationError) as info:
        log.case_duration(min=40)
    assert "40 s" in str(info.value) or "Timedelta" in str(info.value)


def test_top_none_means_every_row(log, expected):
    traces = expected["traces"]
    assert len(log.variants(top=None)) == traces.map(tuple).nunique()
    extra = traces.map(lambda t: len(t) - len(set(t)))
    assert len(log.rework(by="case", top=None)) == int((extra > 0).sum())


def test_quantiles_follow_the_stated_rule_on_this_log(expected):
    """The oracle's quantile is the documented one: the ⌈q·n⌉-th smallest value."""
    span = np.sort(expected["span"].to_numpy())
    for share in (0.1, 0.5, 0.9):
        assert q(span, share) == pd.Timedelta(milliseconds=float(span[int(np.ceil(share * len(span))) - 1]))
