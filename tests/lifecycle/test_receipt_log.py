"""A real event log end to end: the 4TU "receipt" log (tests/data/README.md) uploaded with ``conn.upload``,
then every answer of docs/mining.md (the perspectives too) with its *default* settings against an
independent pandas computation on the same DataFrame — counts exact, quantiles by the documented definition
(the smallest value with at least a share q of the values at or below it: numpy's ``inverted_cdf``) — and
against pm4py where cheap."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

RECEIPT = Path(__file__).parent.parent / "data" / "receipt.csv.gz"
CASE, ACT, TIME = "case:concept:name", "concept:name", "time:timestamp"


def q(values, share: float) -> pd.Timedelta:
    """The documented quantile of millisecond *values*."""
    return pd.Timedelta(
        milliseconds=float(np.quantile(np.asarray(values, dtype="float64"), share, method="inverted_cdf"))
    )


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    events = pd.read_csv(RECEIPT, dtype=str, keep_default_na=False)
    events[TIME] = pd.to_datetime(events[TIME], utc=True)
    return events


@pytest.fixture(scope="module")
def expected(frame):
    """The independent computation: events in case and time order, per-case traces, waits between events."""
    ev = frame.sort_values([CASE, TIME], kind="stable").reset_index(drop=True)
    ev["ms"] = ev[TIME].astype("datetime64[ms, UTC]").astype("int64")
    traces = ev.groupby(CASE, sort=True)[ACT].agg(list)
    span = ev.groupby(CASE)["ms"].agg(lambda s: s.max() - s.min())
    nxt = ev.groupby(CASE)[ACT].shift(-1)
    wait = ev.groupby(CASE)["ms"].shift(-1) - ev["ms"]
    inner = pd.DataFrame({"source": ev[ACT], "target": nxt, "wait": wait}).dropna()
    first = ev.groupby(CASE).head(1)
    last = ev.groupby(CASE).tail(1)
    edges = pd.concat(
        [
            inner,
            pd.DataFrame({"source": "START", "target": first[ACT], "wait": 0.0}),
            pd.DataFrame({"source": last[ACT], "target": "END", "wait": 0.0}),
        ],
        ignore_index=True,
    )
    per_case_act = ev.groupby([ACT, CASE]).size()
    return {"ev": ev, "traces": traces, "span": span, "edges": edges, "per_case_act": per_case_act}


@pytest.fixture(scope="module")
def uploaded(lc_sandbox, connect_workgroup, frame):
    conn = connect_workgroup(lc_sandbox)
    project = conn.create_project("receipt (4TU)", description="the 4TU receipt log, from a test")
    conn.upload(project, frame, progress=False)
    yield conn, project
    conn.delete_project(project, confirm=project.name)
    conn.close()


@pytest.fixture(scope="module")
def log(uploaded):
    conn, project = uploaded
    return conn.mining(project)


def test_summary(log, expected):
    traces, span = expected["traces"], expected["span"]
    row = log.summary().iloc[0]
    assert (row["cases"], row["events"]) == (1434, 8577) == (len(traces), len(expected["ev"]))
    assert row["excluded_cases"] == 0 and "no excluded cases" in repr(log)  # an upload excludes nothing
    assert row["variants"] == traces.map(tuple).nunique()
    assert row["activities"] == expected["ev"][ACT].nunique()
    rework = traces.map(lambda t: len(t) > len(set(t)))
    assert row["cases_with_rework"] == rework.sum() and row["rework_share"] == pytest.approx(rework.mean())
    assert row["median_throughput"] == q(span, 0.5) and row["p90_throughput"] == q(span, 0.9)
    assert abs(row["mean_throughput"] - pd.Timedelta(milliseconds=span.mean())) <= pd.Timedelta(
        milliseconds=1
    )
    assert (
        row["first_event"] == expected["ev"][TIME].min() and row["last_event"] == expected["ev"][TIME].max()
    )
    assert row["span"] == row["last_event"] - row["first_event"]


def test_variants(log, expected):
    traces, span = expected["traces"], expected["span"]
    label = traces.map(" → ".join)
    got = log.variants()  # top=20
    counts = label.value_counts()
    assert list(got["cases"]) == list(counts.head(20))
    for row in got.itertuples(index=False):
        assert counts[row.activities] == row.cases
        assert row.median_duration == q(span[label == row.activities], 0.5)
    assert got["share"].iloc[0] == pytest.approx(counts.iloc[0] / len(traces))


def test_variants_over_rest_agree_with_the_log(uploaded, log):
    from pm_notebook.api import to_frame

    conn, project = uploaded
    rest = to_frame(conn.variants(project)).set_index("id")["occurrences"]
    ours = log.variants(top=10_000, by="model").set_index("variant")["cases"]
    assert rest.sort_index().astype(int).to_dict() == ours.sort_index().astype(int).to_dict()


def test_throughput_and_distribution(log, expected):
    span = expected["span"]
    got = log.throughput().iloc[0]
    assert got["cases"] == len(span) and got["min"] == pd.Timedelta(milliseconds=span.min())
    for share in (0.1, 0.25, 0.5, 0.75, 0.9):
        assert got[f"p{share * 100:g}"] == q(span, share)
    days = log.distribution()  # P1D buckets
    want = (span // 86_400_000).value_counts().sort_index()
    assert dict(zip(days["from"].dt.days, days["cases"], strict=True)) == want.to_dict()


def test_activities_and_rework(log, expected):
    ev, per = expected["ev"], expected["per_case_act"]
    got = log.activities().set_index("activity")
    assert got["executions"].to_dict() == ev[ACT].value_counts().to_dict()
    assert got["cases"].to_dict() == per.groupby(level=0).size().to_dict()
    assert got["cases_with_rework"].to_dict() == (per > 1).groupby(level=0).sum().to_dict()
    assert (got["median_service"] == pd.Timedelta(0)).all()  # one timestamp per event: no service time
    rework = log.rework().set_index("activity")
    reworked = per[per > 1]
    assert rework["rework_executions"].to_dict() == (reworked - 1).groupby(level=0).sum().to_dict()
    by_case = log.rework(by="case")  # top=50
    extra = expected["traces"].map(lambda t: len(t) - len(set(t)))
    extra = extra[extra > 0].rename("rework").reset_index()
    top = extra.sort_values(["rework", CASE], ascending=[False, True]).head(50)
    assert list(by_case["case_id"]) == list(top[CASE]) and list(by_case["rework"]) == list(top["rework"])


def test_transitions_bottlenecks_and_the_map(log, expected):
    edges = expected["edges"]
    grouped = edges.groupby(["source", "target"])["wait"]
    got = log.transitions()
    assert {(r.source, r.target): r.frequency for r in got.itertuples()} == grouped.size().to_dict()
    for r in got.itertuples():
        waits = grouped.get_group((r.source, r.target))
        assert r.median == q(waits, 0.5) and r.total == pd.Timedelta(milliseconds=waits.sum())
    ranked = log.bottlenecks()  # k=10, metric="p90", min_count=5
    inner = edges[(edges["source"] != "START") & (edges["target"] != "END")]
    stats = inner.groupby(["source", "target"])["wait"].agg(n="size", p90=lambda w: q(w, 0.9)).reset_index()
    stats = stats[stats["n"] >= 5].sort_values(["p90", "source", "target"], ascending=[False, True, True])
    assert (
        list(zip(ranked["source"], ranked["target"], strict=True))
        == list(zip(stats["source"], stats["target"], strict=True))[:10]
    )
    assert (ranked["frequency"] >= 5).all()
    pmap = log.process_map()  # paths=0.3
    assert len(pmap.all_edges) == grouped.ngroups
    perf = pmap.view(metric="performance").to_dot()
    # activities are labelled by name only (no invented service time); the waits stay on the paths
    assert pmap.single_timestamp and "\\n" not in perf
    assert re.search(r'-> n\d+ \[label="[0-9.]+[mhd]"', perf)  # the waits on the paths


def test_cases_over_time_and_conformance(log, expected):
    ev = expected["ev"]
    starts = ev.groupby(CASE)[TIME].min()
    weeks = log.cases_over_time()  # P1W: Monday-based weeks, as Druid's TIME_FLOOR
    monday = (
        starts.dt.tz_convert("UTC").dt.floor("D") - pd.to_timedelta(starts.dt.day_of_week, unit="D")
    ).value_counts()
    got = weeks.set_index("period")["started"]
    assert got[got > 0].to_dict() == monday.sort_index().to_dict()
    assert weeks["finished"].sum() == len(starts)
    top = expected["edges"].groupby(["source", "target"]).size().nlargest(5).index.tolist()
    allowed = [(s, t) for s, t in top if s != "START" and t != "END"]
    result = log.conformance(allowed)
    inner = expected["edges"][
        (expected["edges"]["source"] != "START") & (expected["edges"]["target"] != "END")
    ]
    ok = set(allowed)
    deviating = {
        c
        for c, trace in expected["traces"].items()
        if any((a, b) not in ok for a, b in zip(trace, trace[1:], strict=False))
    }
    assert result.attrs["deviating_cases"] == len(deviating) and len(inner) > 0


def test_arrivals_and_their_interarrival_quantiles(log, expected):
    starts = expected["ev"].groupby(CASE)["ms"].min().sort_values()
    week = pd.to_datetime(starts, unit="ms", utc=True)
    monday = week.dt.floor("D") - pd.to_timedelta(week.dt.day_of_week, unit="D")  # Druid's P1W
    got = log.arrivals().set_index("period")  # the defaults: weeks, median and p90
    counts = monday.value_counts().sort_index()
    every_week = pd.date_range(counts.index[0], counts.index[-1], freq="7D")  # weeks without an arrival: 0
    assert got["started"].to_dict() == counts.reindex(every_week, fill_value=0).to_dict()
    checked = 0
    for period, group in starts.groupby(monday):
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
    assert log.where("duration > ?", day).summary()["cases"].iloc[0] == (span > 86_400_000).sum()
    key = log.variants(1)["variant"].iloc[0]
    assert log.where("variant = ?", key).summary()["cases"].iloc[0] == log.variants(1)["cases"].iloc[0]
    events = log.to_pm4py()
    assert {"org:resource", "org:group", "lifecycle:transition"} <= set(events.columns)
    assert len(events) == 8577


def test_against_pm4py(log, frame):
    import pm4py

    ours = log.to_pm4py()
    dfg, starts, ends = pm4py.discover_dfg(ours, case_id_key=CASE, activity_key=ACT, timestamp_key=TIME)
    theirs = pm4py.discover_dfg(frame, case_id_key=CASE, activity_key=ACT, timestamp_key=TIME)
    assert (dict(dfg), dict(starts), dict(ends)) == tuple(dict(x) for x in theirs)
    pmap = log.process_map(paths=1.0)
    assert pmap.to_pm4py() == tuple(dict(x) for x in theirs)
    variants = pm4py.get_variants(frame, case_id_key=CASE, activity_key=ACT, timestamp_key=TIME)
    counts = {" → ".join(k): v for k, v in variants.items()}
    got = log.variants(top=10_000)
    assert dict(zip(got["activities"], got["cases"], strict=True)) == counts


def _monday(times: pd.Series) -> pd.Series:
    """The Monday-based week of each time, as Druid's ``TIME_FLOOR(…, 'P1W')``."""
    return times.dt.floor("D") - pd.to_timedelta(times.dt.day_of_week, unit="D")


def test_endpoints_and_trace_lengths(log, expected):
    ev = expected["ev"]
    firsts, lasts = ev.groupby(CASE)[ACT].first(), ev.groupby(CASE)[ACT].last()
    got = log.endpoints()
    for kind, acts in (("start", firsts), ("end", lasts)):
        rows = got[got["kind"] == kind].set_index("activity")
        assert rows["cases"].to_dict() == acts.value_counts().to_dict()
        assert rows["share"].to_dict() == pytest.approx(acts.value_counts(normalize=True).to_dict())
    lengths = log.trace_lengths().set_index("length")
    assert lengths["cases"].to_dict() == ev.groupby(CASE).size().value_counts().to_dict()


def test_resources_and_handovers(log, expected):
    ev = expected["ev"]
    res = "org:resource"
    got = log.resources().set_index("resource")  # the column found by its name
    want = ev.groupby(res).agg(events=(CASE, "size"), cases=(CASE, "nunique"), activities=(ACT, "nunique"))
    assert got[["events", "cases", "activities"]].astype("int64").to_dict("index") == want.to_dict("index")
    n_cases = ev[CASE].nunique()
    assert got["involvement"].to_dict() == pytest.approx((want["cases"] / n_cases).to_dict())
    by_activity = log.resources(by="activity").set_index(["activity", "resource"])
    assert by_activity["events"].to_dict() == ev.groupby([ACT, res]).size().to_dict()
    # handovers: each task to the next one of its case (one timestamp per event: every pair is a handover)
    pairs = pd.DataFrame(
        {
            "from": ev[res],
            "to": ev.groupby(CASE)[res].shift(-1),
            "case": ev[CASE],
            "wait": ev.groupby(CASE)["ms"].shift(-1) - ev["ms"],
        }
    ).dropna(subset=["to"])
    grouped = pairs.groupby(["from", "to"])
    hand = log.handovers()
    assert {
        (r.from_resource, r.to_resource): r.handovers for r in hand.itertuples()
    } == grouped.size().to_dict()
    cases = grouped["case"].nunique()
    for r in hand.itertuples():
        waits = grouped.get_group((r.from_resource, r.to_resource))["wait"]
        assert r.cases == cases[(r.from_resource, r.to_resource)]
        assert r.median_wait == q(waits, 0.5)
    nodes = log.resource_map().all_nodes.set_index("activity")  # a node per resource, START and END
    assert nodes.loc[want.index, "frequency"].astype("int64").to_dict() == want["events"].to_dict()


def test_work_in_progress_dotted_data_and_spectrum(log, expected):
    ev = expected["ev"]
    times = ev.groupby(CASE)[TIME].agg(["min", "max"])
    started = _monday(times["min"]).value_counts()
    finished = _monday(times["max"]).value_counts()
    wip = log.work_in_progress().set_index("period")  # P1W
    assert wip["started"][wip["started"] > 0].to_dict() == started.sort_index().to_dict()
    assert wip["finished"][wip["finished"] > 0].to_dict() == finished.sort_index().to_dict()
    weeks = wip.index
    open_at_end = [int(((_monday(times["min"]) <= w) & (_monday(times["max"]) > w)).sum()) for w in weeks]
    assert list(wip["open_at_end"]) == open_at_end
    dots = log.dotted_data().set_index(["period", "activity"])  # P1D
    day = ev[TIME].dt.floor("D")
    assert dots["events"].to_dict() == ev.groupby([day, ACT]).size().to_dict()
    assert dots["cases"].to_dict() == ev.groupby([day, ACT])[CASE].nunique().to_dict()
    edges = expected["edges"]
    inner = edges[(edges["source"] != "START") & (edges["target"] != "END")]
    a, b = inner.groupby(["source", "target"]).size().idxmax()
    spectrum = log.performance_spectrum(a, b).set_index("period")  # P1W, by the segment's start
    seg = ev.assign(nxt=ev.groupby(CASE)[ACT].shift(-1), wait=ev.groupby(CASE)["ms"].shift(-1) - ev["ms"])
    seg = seg[(seg[ACT] == a) & (seg["nxt"] == b)]
    by_week = seg.groupby(_monday(seg[TIME]))["wait"]
    assert spectrum["segments"].to_dict() == by_week.size().to_dict()
    for period, waits in by_week:
        assert spectrum.loc[period, "median"] == q(waits, 0.5)
