"""The organisational, time and control-flow answers and filters, each against pandas on the same
generated events (NULL resources, one-event cases, ties in timestamps), uploaded to a sandbox of this
module's own (the session sandbox's project lists stay as other tests expect); handovers also against
pm4py's handover-of-work network."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pm_notebook.errors import ConfigurationError, SchemaError

from .conftest import same_handovers
from .perspectives_data import event_log, ordered

CASES = 240


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    return event_log(CASES)


@pytest.fixture(scope="module")
def gen_conn(tmp_path_factory, connect_workgroup):
    from pm_sandbox import start

    sb = start(cases=20, log_path=tmp_path_factory.mktemp("persp-sandbox") / "sandbox.log")
    conn = connect_workgroup(sb)
    yield conn
    conn.close()
    sb.stop()


@pytest.fixture(scope="module")
def glog(gen_conn, events):
    project = gen_conn.create_project("Perspectives")
    done = gen_conn.upload(project, events)
    assert done.status == "DONE"
    # every case counts (the sandbox excludes about 1 % of cases by a business rule)
    return gen_conn.mining(project).with_excluded()


def _pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """Directly consecutive tasks of each case: from/to resource and activity, and the wait."""
    ev = ordered(frame).reset_index(drop=True)
    nxt = ev.shift(-1)
    same = ev["case:concept:name"] == nxt["case:concept:name"]
    return pd.DataFrame(
        {
            "case": ev["case:concept:name"][same],
            "from_resource": ev["resource"][same],
            "to_resource": nxt["resource"][same],
            "source": ev["concept:name"][same],
            "target": nxt["concept:name"][same],
            # the documented waiting time: zero when the next task starts before this one ends
            "wait": (nxt["start_timestamp"] - ev["time:timestamp"]).clip(lower=pd.Timedelta(0))[same],
        }
    )


def _ms(duration: pd.Timedelta) -> float:
    return duration / pd.Timedelta(milliseconds=1)


def _key(value) -> str:
    return (
        "<NULL>"
        if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
        else str(value)
    )


def test_the_data_has_what_the_answers_must_handle(events):
    sizes = events.groupby("case:concept:name").size()
    assert (sizes == 1).any() and events["resource"].isna().any()
    ev = ordered(events)
    by_case = ev.groupby("case:concept:name")
    prev_end, prev_start = by_case["time:timestamp"].shift(1), by_case["start_timestamp"].shift(1)
    assert (ev["start_timestamp"] == prev_end).any()  # ties: a task starting at the previous one's end
    assert (ev["start_timestamp"] < prev_end).any()  # overlapping tasks
    assert events.duplicated().any()  # duplicate events
    same = (ev["start_timestamp"] == prev_start) & (ev["time:timestamp"] == prev_end)
    other = ev["concept:name"] != by_case["concept:name"].shift(1)
    assert (same & other).any()  # two activities of a case at the same instant
    assert (~other & by_case.cumcount().gt(0)).any()  # an activity twice in a row


def test_resources(glog, events):
    got = glog.resources()
    assert got.attrs["sql"].count("SELECT") >= 3
    want = (
        events.assign(r=events["resource"].map(_key))
        .groupby("r")
        .agg(
            events=("concept:name", "size"),
            cases=("case:concept:name", "nunique"),
            activities=("concept:name", "nunique"),
        )
    )
    rows = {_key(r.resource): r for r in got.itertuples()}
    assert set(rows) == set(want.index)  # the NULL resource is a row of its own
    for name, w in want.iterrows():
        r = rows[name]
        assert (r.events, r.cases, r.activities) == (w["events"], w["cases"], w["activities"]), name
        assert r.share == pytest.approx(w["events"] / len(events))
        assert r.involvement == pytest.approx(w["cases"] / CASES)


def test_resources_by_activity(glog, events):
    got = glog.resources(by="activity")
    ev = events.assign(r=events["resource"].map(_key))
    want = ev.groupby(["concept:name", "r"]).agg(
        events=("concept:name", "size"), cases=("case:concept:name", "nunique")
    )
    per_act = ev.groupby("concept:name").agg(n=("concept:name", "size"), c=("case:concept:name", "nunique"))
    assert len(got) == len(want)
    for r in got.itertuples():
        w = want.loc[(r.activity, _key(r.resource))]
        assert (r.events, r.cases) == (w["events"], w["cases"])
        assert r.specialisation == pytest.approx(w["events"] / per_act.loc[r.activity, "n"])
        assert r.involvement == pytest.approx(w["cases"] / per_act.loc[r.activity, "c"])


def test_handovers_against_pandas(glog, events):
    got = glog.handovers()
    pairs = _pairs(events).assign(
        f=lambda p: p["from_resource"].map(_key), t=lambda p: p["to_resource"].map(_key)
    )
    want = pairs.groupby(["f", "t"]).agg(n=("case", "size"), cases=("case", "nunique"))
    rows = {(_key(r.from_resource), _key(r.to_resource)): r for r in got.itertuples()}
    assert set(rows) == set(want.index)
    for key, w in want.iterrows():
        assert (rows[key].handovers, rows[key].cases) == (w["n"], w["cases"]), key
        waits = pairs.loc[(pairs["f"] == key[0]) & (pairs["t"] == key[1]), "wait"]
        ms = (waits / pd.Timedelta(milliseconds=1)).to_numpy()
        # durations are whole milliseconds: the mean rounded to one, the median a wait seen (docs/mining.md)
        assert abs(_ms(rows[key].mean_wait) - ms.mean()) <= 0.5, key
        assert _ms(rows[key].median_wait) == np.quantile(ms, 0.5, method="inverted_cdf"), key


def test_handovers_match_pm4py(glog, events):
    import pm4py  # a test dependency (pyproject's test extra)

    # pm4py reads the events in the frame's order: each case's tasks in the order the transitions link them
    frame = ordered(events.assign(**{"org:resource": events["resource"].fillna("<NULL>")}))
    network = pm4py.discover_handover_of_work_network(
        frame,
        beta=0,
        resource_key="org:resource",
        timestamp_key="time:timestamp",
        case_id_key="case:concept:name",
    )
    got = glog.handovers()
    total = int(got["handovers"].sum())
    ours = {(_key(r.from_resource), _key(r.to_resource)): r.handovers / total for r in got.itertuples()}
    assert set(ours) == set(network.connections)
    for key, share in network.connections.items():
        assert ours[key] == pytest.approx(share), key


def test_resource_map(glog, events):
    shown = glog.resource_map()
    nodes = shown.nodes.set_index("activity")
    ev = events.assign(r=events["resource"].fillna("(none)"))
    for name, n in ev.groupby("r").size().items():
        assert nodes.loc[name, "frequency"] == n
    m = glog.resource_map(paths=1.0)
    edges = {(e.source, e.target): e.frequency for e in m.edges.itertuples()}
    by_case = ordered(ev).groupby("case:concept:name")["r"]
    want = {("START", r): n for r, n in by_case.first().value_counts().items()}
    want |= {(r, "END"): n for r, n in by_case.last().value_counts().items()}
    pairs = _pairs(events).assign(
        f=lambda p: p["from_resource"].fillna("(none)"), t=lambda p: p["to_resource"].fillna("(none)")
    )
    want |= {(f, t): n for (f, t), n in pairs.groupby(["f", "t"]).size().items()}
    assert edges == want  # every edge, START and END included, exactly; no other
    default = {(e.source, e.target): e.frequency for e in shown.edges.itertuples()}
    assert default and all(edges[k] == n for k, n in default.items())  # the default map shows some of them
    assert "<svg" in m.svg() and "(none)" in m.to_dot()


def test_sequences_follow_the_one_task_order(glog, events):
    """Same-instant, duplicate and overlapping tasks: variants(), their example cases and to_pm4py() print
    each case's activities in the documented order (start, end, activity, resource), the same every time."""
    want = ordered(events).groupby("case:concept:name")["concept:name"].apply(tuple)
    frame = glog.to_pm4py(None)
    got = frame.groupby("case:concept:name", sort=False)["concept:name"].apply(tuple)
    assert got.to_dict() == want.to_dict()
    assert frame["case:concept:name"].is_monotonic_increasing  # grouped by case, in case order
    tied = {c for c, g in events.groupby("case:concept:name") if g["start_timestamp"].duplicated().any()}
    variants = glog.variants(top=1000)
    assert int(variants["cases"].sum()) == len(want)  # every variant listed: each example case checked
    shown = 0
    for row in variants.itertuples():
        assert tuple(str(row.activities).split(" → ")) == want[row.example_case], row.example_case
        shown += row.example_case in tied
    assert shown  # some example cases have tasks at the same instant
    # the variant of a tied example case, filtered alone, prints the same sequence
    row = next(r for r in variants.itertuples() if r.example_case in tied)
    alone = glog.variants_in(str(row.variant)).variants()
    assert len(alone) == 1 and alone["activities"].iloc[0] == " → ".join(want[row.example_case])


def test_a_log_larger_than_one_window_is_answered_in_parts_of_whole_cases(gen_conn, glog, events):
    """Under a limit of 60 rows one window holds 30 tasks: handovers() and the resource map cut the log into
    ranges of whole cases and add the parts up — counts exact, the same as in one window; medians pooled
    from the parts' percentiles, within 1 % of rank of the exact ones."""
    whole = glog.handovers()
    small = gen_conn.mining(glog.project, context={"maxSubqueryRows": 60}).with_excluded()
    got = small.handovers()
    assert got.attrs["parts"] > 30 and got.attrs["sql"].count("PARTITION BY") >= 3 * got.attrs["parts"]
    same_handovers(got, whole)
    pairs = _pairs(events).assign(
        f=lambda p: p["from_resource"].map(_key), t=lambda p: p["to_resource"].map(_key)
    )
    for r in got.itertuples():
        waits = pairs.loc[(pairs["f"] == _key(r.from_resource)) & (pairs["t"] == _key(r.to_resource)), "wait"]
        ms = np.sort((waits / pd.Timedelta(milliseconds=1)).to_numpy())
        lo = np.quantile(ms, max(0.0, 0.5 - 0.01), method="inverted_cdf")
        hi = np.quantile(ms, min(1.0, 0.5 + 0.01), method="inverted_cdf")
        assert lo <= _ms(r.median_wait) <= hi, (r.from_resource, r.to_resource)
    edges = small.resource_map(paths=1.0).edges.set_index(["source", "target"])
    want = glog.resource_map(paths=1.0).edges.set_index(["source", "target"])
    assert edges["frequency"].sort_index().equals(want["frequency"].sort_index())
    for col in ("total", "min", "max"):
        assert edges[col].sort_index().equals(want[col].sort_index()), col


def test_endpoints_and_trace_lengths(glog, events):
    ev = ordered(events)
    got = glog.endpoints()
    first = ev.groupby("case:concept:name")["concept:name"].first().value_counts()
    last = ev.groupby("case:concept:name")["concept:name"].last().value_counts()
    starts = got[got["kind"] == "start"].set_index("activity")["cases"]
    ends = got[got["kind"] == "end"].set_index("activity")["cases"]
    assert starts.to_dict() == first.to_dict() and ends.to_dict() == last.to_dict()
    assert got.loc[got["kind"] == "end", "share"].sum() == pytest.approx(1)
    lengths = glog.trace_lengths().set_index("length")["cases"]
    assert lengths.to_dict() == events.groupby("case:concept:name").size().value_counts().to_dict()


def _kept(glog) -> set[str]:
    frame = glog.to_pm4py(None)
    return set(frame["case:concept:name"].astype(str))


def test_case_filters_against_pandas(glog, events):
    ev = ordered(events)
    by_case = ev.groupby("case:concept:name")
    seqs = by_case["concept:name"].apply(list)
    pairs = _pairs(events)
    dur = by_case["time:timestamp"].max() - by_case["start_timestamp"].min()
    first_end = ev[ev["concept:name"] == "Check"].groupby("case:concept:name")["time:timestamp"].min()
    last_start = ev[ev["concept:name"] == "Ship"].groupby("case:concept:name")["start_timestamp"].max()
    ef = (first_end.reindex(seqs.index) <= last_start.reindex(seqs.index)).fillna(False)
    with_ana = set(events.loc[events["resource"] == "ana", "case:concept:name"])
    north = set(events.loc[events["Region"] == "north", "case:concept:name"])
    expected = {
        "directly_follows": (
            glog.directly_follows("Check", "Approve"),
            set(pairs.loc[(pairs["source"] == "Check") & (pairs["target"] == "Approve"), "case"]),
        ),
        "eventually_follows": (glog.eventually_follows("Check", "Ship"), set(ef[ef].index)),
        "starts_with": (
            glog.starts_with("Register"),
            set(seqs[seqs.map(lambda s: s[0] == "Register")].index),
        ),
        "ends_with": (
            glog.ends_with("Ship", "Archive"),
            set(seqs[seqs.map(lambda s: s[-1] in ("Ship", "Archive"))].index),
        ),
        "without_activity": (
            glog.without_activity("Reject"),
            set(seqs[seqs.map(lambda s: "Reject" not in s)].index),
        ),
        "case_duration": (
            glog.case_duration(min=pd.Timedelta("1 day"), max="5 days"),
            set(dur[(dur >= pd.Timedelta("1 day")) & (dur <= pd.Timedelta("5 days"))].index),
        ),
        "attribute": (glog.attribute("Region", ["north"]), north),
        "with_resource": (glog.with_resource("ana"), with_ana),
        "composed": (
            glog.with_resource("ana").without_activity("Reject"),
            with_ana & set(seqs[seqs.map(lambda s: "Reject" not in s)].index),
        ),
    }
    for name, (filtered, want) in expected.items():
        assert want, name  # the data exercises the filter
        assert int(filtered.summary()["cases"].iloc[0]) == len(want), name
        assert _kept(filtered) == want, name


def test_top_variants_by_coverage(glog, events):
    seqs = ordered(events).groupby("case:concept:name")["concept:name"].apply(tuple)
    counts = seqs.value_counts()
    got = glog.top_variants(0.5)
    kept = int(got.summary()["cases"].iloc[0])
    need = counts.sort_values(ascending=False).cumsum()
    n_variants = int((need < 0.5 * len(seqs)).sum()) + 1
    assert kept == int(counts.sort_values(ascending=False).iloc[:n_variants].sum())
    assert "IN (SELECT" not in got.transitions().attrs["sql"]  # a key list: no subquery on any table


def test_arrivals_and_work_in_progress(glog, events):
    starts = events.groupby("case:concept:name")["start_timestamp"].min().dt.tz_localize("UTC")
    ends = events.groupby("case:concept:name")["time:timestamp"].max().dt.tz_localize("UTC")
    got = glog.arrivals("month").set_index("period")
    month = starts.dt.tz_localize(None).dt.to_period("M").dt.start_time.dt.tz_localize("UTC")
    assert got["started"].to_dict() == month.value_counts().sort_index().to_dict()
    assert got.attrs["sql"].count("SELECT ") == 3  # two statements, the second with a windowed subquery
    assert list(got.columns) == ["started", "mean_interarrival", "p50_interarrival", "p90_interarrival"]
    ties = 0
    for p, group in starts.groupby(month):
        gaps = group.sort_values().diff().dropna()
        ties += int((gaps == pd.Timedelta(0)).sum())
        want = gaps.mean() if len(gaps) else pd.NaT
        assert (pd.isna(got.loc[p, "mean_interarrival"]) and pd.isna(want)) or abs(
            got.loc[p, "mean_interarrival"] - want
        ) <= pd.Timedelta(milliseconds=1)
        for share in (0.5, 0.9):  # the documented quantile: numpy's inverted_cdf
            value = got.loc[p, f"p{int(share * 100)}_interarrival"]
            if len(gaps) == 0:
                assert pd.isna(value)
                continue
            ms = gaps.dt.total_seconds().to_numpy() * 1000
            assert value == pd.Timedelta(milliseconds=float(np.quantile(ms, share, method="inverted_cdf")))
    assert ties > 0  # cases starting at the same instant: gaps of zero, counted
    quarter = glog.arrivals("P3M", quantiles=(0.25,))
    assert [c for c in quarter.columns if c.endswith("_interarrival")] == [
        "mean_interarrival",
        "p25_interarrival",
    ]
    plain = glog.arrivals("month", quantiles=())
    assert plain.attrs["sql"].count("SELECT ") == 1 and "OVER" not in plain.attrs["sql"]
    pd.testing.assert_frame_equal(plain, got.reset_index()[list(plain.columns)], check_like=True)
    with pytest.raises(ConfigurationError, match="quantiles"):
        glog.arrivals("month", quantiles=(0.5, 1.0))
    wip = glog.work_in_progress("P1W")
    for row in wip.itertuples():
        stop = row.period + pd.Timedelta(weeks=1)
        assert row.active == int(((starts < stop) & (ends >= row.period)).sum())
        assert row.open_at_end == int(((starts < stop) & (ends >= stop)).sum())


def test_dotted_chart_is_binned_in_druid(glog, events):
    chart = glog.dotted_chart("P1W")
    data = chart.data
    week = events["start_timestamp"].dt.to_period("W-SUN").dt.start_time.dt.tz_localize("UTC")
    want = events.assign(week=week).groupby(["week", "concept:name"]).size()
    assert {(r.period, r.activity): r.events for r in data.itertuples()} == want.to_dict()
    assert "caseid" not in data.attrs["sql"].split("FROM")[0]  # the bins, not the events, come back
    assert chart._repr_png_().startswith(b"\x89PNG") and "<svg" in chart.to_svg()


def test_performance_spectrum_and_waiting(glog, events):
    pairs = _pairs(events)
    seg = pairs[(pairs["source"] == "Check") & (pairs["target"] == "Approve")]
    got = glog.performance_spectrum("Check", "Approve", "P1W")
    assert int(got["segments"].sum()) == len(seg)
    assert got["max"].max() == seg["wait"].max().floor("ms")
    pw = glog.processing_and_waiting().set_index("activity")
    service = (events["time:timestamp"] - events["start_timestamp"]).groupby(events["concept:name"]).sum()
    for act, total in service.items():
        assert pw.loc[act, "total_processing"] == total
    waits = pairs.groupby("target")["wait"].sum()
    for act, total in waits.items():
        assert pw.loc[act, "total_waiting"] == total


def test_no_resource_column_is_a_schema_error(conn):
    log = conn.mining("Purchase to Pay", resource="Nobody")
    with pytest.raises(SchemaError, match="Nobody"):
        log.resources()


def test_bad_filter_arguments(glog):
    with pytest.raises(ConfigurationError, match="duration"):
        glog.case_duration(min="soon")
    with pytest.raises(ConfigurationError, match="coverage"):
        glog.top_variants(1.5)
    with pytest.raises(ConfigurationError, match="starts_with"):
        glog.starts_with()


# --- the service's column naming (detail_<n>_lpkr_<slug>), on the session sandbox's Parcel Delivery project
@pytest.fixture(scope="module")
def parcel_log(sandbox, sandbox_store, connect_workgroup):
    from .conftest import _frame

    wg = sandbox.workgroups["second"]
    conn = connect_workgroup(sandbox, "second")
    project = next(p for p in conn.projects() if p.name.startswith("Parcel Delivery"))
    db = sandbox_store.database(wg.client_id).cursor()
    try:
        cases = _frame(db, f'SELECT * FROM druid."{project.id}"')
        vertex = _frame(db, f'SELECT * FROM druid."{project.id}_vertex"')
        skip = set(_frame(db, f'SELECT k FROM lookup."{project.id}"')["k"])
        skip |= set(_frame(db, f'SELECT k FROM lookup."{project.id}_excluded_cases"')["k"])
    finally:
        db.close()
    current = set(cases.loc[~cases["case_version"].isin(skip), "caseid"])
    yield conn.mining(project, resource="Courier"), vertex[vertex["caseid"].isin(current)], len(current)
    conn.close()


def test_resources_on_service_named_columns(parcel_log):
    log, vertex, n_cases = parcel_log
    column = next(c for c in vertex.columns if c.startswith("detail_") and c.endswith("_lpkr_courier"))
    got = log.resources().set_index("resource")
    want = vertex.groupby(column).agg(
        events=("caseid", "size"), cases=("caseid", "nunique"), activities=("vertex_name", "nunique")
    )
    # by value: the resource names are a string index here and an object one in the DuckDB frame on pandas 2
    got_counts = got[["events", "cases", "activities"]].astype("int64").to_dict("index")
    assert got_counts == want.to_dict("index")
    assert got["involvement"].max() <= 1 and int(log.summary()["cases"].iloc[0]) == n_cases
    kept = log.with_resource(str(want.index[0]))
    assert (
        int(kept.summary()["cases"].iloc[0])
        == vertex.loc[vertex[column] == want.index[0], "caseid"].nunique()
    )
