"""The shared half of the real-log tests (``test_receipt_log.py``, ``test_helpdesk_log.py``): reading a log of
tests/data/, the independent pandas computation every check compares with, the documented quantile rule, and
the checks that are the same on every real log, each a plain function over the log and the computation.

Every check uploads nothing itself: the module-scoped fixtures of tests/lifecycle/conftest.py (``real_frame``,
``real_expected``, ``real_uploaded``, ``real_log``) upload the log named by the test module's ``LOG`` once.
Quantiles follow docs/mining.md: the smallest value with at least a share q of the values at or below it
(numpy's ``inverted_cdf``). Counts are exact.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

DATA = Path(__file__).parent.parent / "data"
CASE, ACT, TIME, RES = "case:concept:name", "concept:name", "time:timestamp", "org:resource"
DAY_MS = 86_400_000


def read(name: str) -> pd.DataFrame:
    """``tests/data/<name>.csv.gz`` as pm4py's event DataFrame: text columns, UTC timestamps, each case's
    events in the product's documented task order (time, then activity, then resource: docs/mining.md, "The
    order of a case's tasks"). pm4py keeps the input's order on a timestamp tie (the file's, which the
    service's tables do not keep), so it is given the events in that order and its sequences compare."""
    events = pd.read_csv(DATA / f"{name}.csv.gz", dtype=str, keep_default_na=False)
    events[TIME] = pd.to_datetime(events[TIME], utc=True)
    return events.sort_values([CASE, TIME, ACT, RES], kind="stable").reset_index(drop=True)


def q(values: Any, share: float) -> pd.Timedelta:
    """The documented quantile of millisecond *values*."""
    return pd.Timedelta(
        milliseconds=float(np.quantile(np.asarray(values, dtype="float64"), share, method="inverted_cdf"))
    )


def total(values: Any) -> np.timedelta64:
    """The sum of millisecond *values* as a millisecond duration (a total over a real log can pass the
    ~292 years that nanoseconds hold; the answers keep milliseconds too)."""
    return np.timedelta64(int(round(float(np.sum(np.asarray(values, dtype="float64"))))), "ms")


def monday(times: pd.Series) -> pd.Series:
    """The Monday-based week of each time, as Druid's ``TIME_FLOOR(…, 'P1W')``."""
    return times.dt.floor("D") - pd.to_timedelta(times.dt.day_of_week, unit="D")


def independent(frame: pd.DataFrame) -> dict[str, Any]:
    """The independent computation: events in case and time order (ties in the task order :func:`read`
    gives them, which pm4py keeps), per-case traces and durations, the directly-follows pairs with their
    waits (START and END included), executions per (activity, case)."""
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


def inner_edges(expected: dict[str, Any]) -> pd.DataFrame:
    """The directly-follows pairs between two activities (START and END left out)."""
    edges = expected["edges"]
    return edges[(edges["source"] != "START") & (edges["target"] != "END")]


# --- the checks that are the same on every real log ------------------------------------------------------
def check_summary(log, expected) -> pd.Series:
    traces, span, ev = expected["traces"], expected["span"], expected["ev"]
    row = log.summary().iloc[0]
    assert (row["cases"], row["events"]) == (len(traces), len(ev))
    assert row["excluded_cases"] == 0 and "no excluded cases" in repr(log)  # an upload excludes nothing
    assert row["variants"] == traces.map(tuple).nunique()
    assert row["activities"] == ev[ACT].nunique()
    rework = traces.map(lambda t: len(t) > len(set(t)))
    assert row["cases_with_rework"] == rework.sum() and row["rework_share"] == pytest.approx(rework.mean())
    assert row["median_throughput"] == q(span, 0.5) and row["p90_throughput"] == q(span, 0.9)
    assert abs(row["mean_throughput"] - pd.Timedelta(milliseconds=span.mean())) <= pd.Timedelta(
        milliseconds=1
    )
    assert row["first_event"] == ev[TIME].min() and row["last_event"] == ev[TIME].max()
    assert row["span"] == row["last_event"] - row["first_event"]
    return row


def check_top_variants(log, expected) -> None:
    """``variants()`` with its default ``top=20``: counts, shares and median durations."""
    traces, span = expected["traces"], expected["span"]
    label = traces.map(" → ".join)
    got = log.variants()
    counts = label.value_counts()
    assert list(got["cases"]) == list(counts.head(20))
    for row in got.itertuples(index=False):
        assert counts[row.activities] == row.cases
        assert row.median_duration == q(span[label == row.activities], 0.5)
    assert got["share"].iloc[0] == pytest.approx(counts.iloc[0] / len(traces))


def check_variants_over_rest(uploaded, log) -> None:
    from pm_notebook.api import to_frame

    conn, project = uploaded
    rest = to_frame(conn.variants(project)).set_index("id")["occurrences"]
    ours = log.variants(top=10_000, by="model").set_index("variant")["cases"]
    assert rest.sort_index().astype(int).to_dict() == ours.sort_index().astype(int).to_dict()


def check_throughput_and_distribution(log, expected) -> None:
    span = expected["span"]
    got = log.throughput().iloc[0]
    assert got["cases"] == len(span) and got["min"] == pd.Timedelta(milliseconds=span.min())
    for share in (0.1, 0.25, 0.5, 0.75, 0.9):
        assert got[f"p{share * 100:g}"] == q(span, share)
    days = log.distribution()  # P1D buckets
    want = (span // DAY_MS).value_counts().sort_index()
    assert dict(zip(days["from"].dt.days, days["cases"], strict=True)) == want.to_dict()


def check_activities_and_rework(log, expected) -> None:
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


def check_transitions_bottlenecks_and_the_map(log, expected) -> None:
    edges = expected["edges"]
    grouped = edges.groupby(["source", "target"])["wait"]
    got = log.transitions()
    assert {(r.source, r.target): r.frequency for r in got.itertuples()} == grouped.size().to_dict()
    for r in got.itertuples():
        waits = grouped.get_group((r.source, r.target))
        assert r.median == q(waits, 0.5) and r.total == total(waits)
    ranked = log.bottlenecks()  # k=10, metric="p90", min_count=5
    inner = inner_edges(expected)
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


def check_dfg_and_variants_against_pm4py(log, frame) -> None:
    """The directly-follows graph (its pm4py export too) and every variant with its count, as pm4py's."""
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


def check_endpoints_and_trace_lengths(log, expected) -> None:
    ev = expected["ev"]
    firsts, lasts = ev.groupby(CASE)[ACT].first(), ev.groupby(CASE)[ACT].last()
    got = log.endpoints()
    for kind, acts in (("start", firsts), ("end", lasts)):
        rows = got[got["kind"] == kind].set_index("activity")
        assert rows["cases"].to_dict() == acts.value_counts().to_dict()
        assert rows["share"].to_dict() == pytest.approx(acts.value_counts(normalize=True).to_dict())
    lengths = log.trace_lengths().set_index("length")
    assert lengths["cases"].to_dict() == ev.groupby(CASE).size().value_counts().to_dict()


def check_resources(log, expected) -> None:
    """``resources()``, ``resources(by="activity")`` and the resource map's nodes."""
    ev = expected["ev"]
    got = log.resources().set_index("resource")  # the column found by its name
    want = ev.groupby(RES).agg(events=(CASE, "size"), cases=(CASE, "nunique"), activities=(ACT, "nunique"))
    assert got[["events", "cases", "activities"]].astype("int64").to_dict("index") == want.to_dict("index")
    n_cases = ev[CASE].nunique()
    assert got["involvement"].to_dict() == pytest.approx((want["cases"] / n_cases).to_dict())
    assert got["share"].to_dict() == pytest.approx((want["events"] / len(ev)).to_dict())
    by_activity = log.resources(by="activity").set_index(["activity", "resource"])
    assert by_activity["events"].to_dict() == ev.groupby([ACT, RES]).size().to_dict()
    assert by_activity["cases"].to_dict() == ev.groupby([ACT, RES])[CASE].nunique().to_dict()
    nodes = log.resource_map().all_nodes.set_index("activity")  # a node per resource, START and END
    assert nodes.loc[want.index, "frequency"].astype("int64").to_dict() == want["events"].to_dict()


def handover_pairs(expected) -> pd.DataFrame:
    """Each task and the next task of its case (in the order pm4py reads them): resources, case, wait."""
    ev = expected["ev"]
    return pd.DataFrame(
        {
            "from": ev[RES],
            "to": ev.groupby(CASE)[RES].shift(-1),
            "case": ev[CASE],
            "wait": ev.groupby(CASE)["ms"].shift(-1) - ev["ms"],
        }
    ).dropna(subset=["to"])


def pm4py_handovers(frame: pd.DataFrame) -> dict[tuple[str, str], int]:
    """pm4py's handover-of-work network (``beta=0``, its default) as counts: pm4py gives each pair's share
    of all handovers, whose sum is one handover per pair of consecutive events (events - cases)."""
    import pm4py

    network = pm4py.discover_handover_of_work_network(frame, beta=0)
    total = len(frame) - frame[CASE].nunique()
    counts = {pair: share * total for pair, share in network.connections.items()}
    assert all(abs(c - round(c)) < 1e-6 for c in counts.values())
    return {pair: round(c) for pair, c in counts.items()}


def check_handovers(log, expected, frame) -> None:
    """``handovers()``: pm4py's counts on every pair, the cases and waits of the pairs pm4py counts, and
    the resource map's edges between resources the same counts."""
    pairs = handover_pairs(expected)
    grouped = pairs.groupby(["from", "to"])
    theirs = pm4py_handovers(frame)
    assert grouped.size().to_dict() == theirs  # the pandas pairs are pm4py's
    hand = log.handovers()
    assert {(r.from_resource, r.to_resource): r.handovers for r in hand.itertuples()} == theirs
    assert int(hand["handovers"].sum()) == sum(theirs.values())
    cases = grouped["case"].nunique()
    for r in hand.itertuples():
        waits = grouped.get_group((r.from_resource, r.to_resource))["wait"]
        assert r.cases == cases[(r.from_resource, r.to_resource)]
        assert r.median_wait == q(waits, 0.5)
    edges = log.resource_map(paths=1.0).all_edges
    inner = edges[(edges["source"] != "START") & (edges["target"] != "END")]
    assert {(r.source, r.target): r.frequency for r in inner.itertuples()} == theirs


def check_dotted_bins(log, expected) -> None:
    ev = expected["ev"]
    dots = log.dotted_data().set_index(["period", "activity"])  # P1D
    day = ev[TIME].dt.floor("D")
    assert dots["events"].to_dict() == ev.groupby([day, ACT]).size().to_dict()
    assert dots["cases"].to_dict() == ev.groupby([day, ACT])[CASE].nunique().to_dict()


def check_performance_spectrum(log, expected) -> None:
    ev = expected["ev"]
    a, b = inner_edges(expected).groupby(["source", "target"]).size().idxmax()
    spectrum = log.performance_spectrum(a, b).set_index("period")  # P1W, by the segment's start
    seg = ev.assign(nxt=ev.groupby(CASE)[ACT].shift(-1), wait=ev.groupby(CASE)["ms"].shift(-1) - ev["ms"])
    seg = seg[(seg[ACT] == a) & (seg["nxt"] == b)]
    by_week = seg.groupby(monday(seg[TIME]))["wait"]
    assert spectrum["segments"].to_dict() == by_week.size().to_dict()
    for period, waits in by_week:
        assert spectrum.loc[period, "median"] == q(waits, 0.5)
