"""Every ProcessLog answer against an independent pandas computation over the raw tables.

The expected values come from the project's three tables pulled from the in-process store (``raw``), never
from the SQL the answers send. Counts must match exactly; quantiles must lie between the order statistics
around their rank (the sandbox answers them exactly, a real cluster with a sketch, within about 1 %).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest

from pm_notebook import ConfigurationError, NotFound, SchemaError

from .conftest import ms, quantile_bounds, same_handovers


def _in(value, bounds) -> bool:
    lo, hi = bounds
    return lo <= value <= hi


def test_summary_matches_the_raw_tables(log, raw):
    current = raw.current()
    cases = raw.cases[raw.cases["caseid"].isin(current)]
    events = raw.vertex[raw.vertex["caseid"].isin(current)]
    row = log.summary().iloc[0]
    assert row["cases"] == len(cases) and len(cases) < len(raw.cases)  # some cases are excluded
    assert row["events"] == len(events)
    assert row["variants"] == cases["processkey"].nunique()
    assert _in(row["median_throughput"], quantile_bounds(cases["duration"], 0.5))
    assert _in(row["p90_throughput"], quantile_bounds(cases["duration"], 0.9))
    assert abs(row["mean_throughput"] - ms(cases["duration"].mean())) <= pd.Timedelta(milliseconds=1)
    assert row["rework_share"] == pytest.approx((cases["rework"] > 0).mean())
    assert row["first_event"] == cases["__time"].min()
    assert row["last_event"] == pd.Timestamp(int(cases["enddate"].max()), unit="ms", tz="UTC")


def test_every_answer_carries_its_sql(log):
    for frame in (log.summary(), log.variants(3), log.activities(), log.transitions(), log.cases_over_time()):
        assert frame.attrs["sql"].startswith("SELECT ")
        assert (
            log.schema.tables["cases"] in frame.attrs["sql"]
            or log.schema.tables["vertex"] in frame.attrs["sql"]
        )


def test_including_excluded_cases(log, raw):
    assert log.with_excluded().summary()["cases"].iloc[0] == len(raw.cases)
    assert log.with_excluded().with_excluded(False).summary()["cases"].iloc[0] == len(raw.current())


def test_the_excluded_cases_leave_the_task_table_by_a_list_or_past_the_limit_by_a_subquery(
    conn, log, raw, monkeypatch
):
    """The log reads the excluded ids once (at most EXCLUDED_IDS_MAX) and leaves them out of the task and
    transition tables by a list of values; with more of them it keeps the subquery: the same answers."""
    from pm_notebook.mining import _log

    excluded = len(raw.cases) - len(raw.current())
    assert excluded > 1 and log.excluded_cases == excluded
    listed = log.activities()
    assert f"NOT IN ({', '.join('?' * excluded)})" in listed.attrs["sql"]
    assert "IS NOT NULL" not in listed.attrs["sql"]
    monkeypatch.setattr(_log, "EXCLUDED_IDS_MAX", excluded - 1)
    subquery_log = conn.mining(log.project)
    assert subquery_log.excluded_cases == excluded
    by_subquery = subquery_log.activities()
    assert "IS NOT NULL)" in by_subquery.attrs["sql"] and "NOT IN (?" not in by_subquery.attrs["sql"]
    # the quantiles too on the stand-in; a real Druid's sketches may merge in another order from one run to
    # the next (PM_TEST_DRUID=1), so there the exact columns only
    on_druid = os.environ.get("PM_TEST_DRUID") == "1"
    sketched = ["median_service", "p90_service", "median", "p90"] if on_druid else []
    for mine, theirs in ((listed, by_subquery), (log.transitions(), subquery_log.transitions())):
        kept = [c for c in mine.columns if c not in sketched]
        pd.testing.assert_frame_equal(mine[kept], theirs[kept])


def test_window_parts_leave_out_the_excluded_cases_by_their_own_ids(conn, log, raw):
    """Answered in parts of whole cases, handovers() sends each part only the excluded ids inside its range
    of case ids, and adds up to the answer of one window (excluded cases left out in both)."""
    whole = log.handovers()
    parted = conn.mining(log.project, context={"maxSubqueryRows": 600})
    got = parted.handovers()
    assert got.attrs["parts"] > 3 and got.attrs["excluded_cases"] == whole.attrs["excluded_cases"] > 1
    excluded = len(raw.cases) - len(raw.current())
    windows = [sql for sql in got.attrs["sql"].split(";\n\n") if "PARTITION BY" in sql]
    sent = sum(sql.count("?") - sql.count(">= ?") - sql.count("< ?") for sql in windows)
    assert sent == 2 * excluded  # two statements a part, each excluded id in one part only
    same_handovers(got, whole)


def _sequence(raw, caseid: str) -> str:
    rows = raw.vertex[raw.vertex["caseid"] == caseid].sort_values(["__time", "enddate"], kind="stable")
    return " → ".join(rows["vertex_name"])


def test_process_variants(log, raw):
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    counts = cases.groupby("processkey").size().reset_index(name="n")
    counts = counts.sort_values(["n", "processkey"], ascending=[False, True]).head(5)
    got = log.variants(top=5)
    assert list(got["variant"]) == list(counts["processkey"])
    assert list(got["cases"]) == list(counts["n"])
    assert got["share"].tolist() == pytest.approx((counts["n"] / len(cases)).tolist())
    assert got["cumulative_share"].tolist() == pytest.approx((counts["n"].cumsum() / len(cases)).tolist())
    for row in got.itertuples(index=False):
        members = cases[cases["processkey"] == row.variant]
        assert row.example_case in set(members["caseid"])
        # a process variant is one exact sequence: any member's tasks, ordered, spell it
        assert row.activities == _sequence(raw, members["caseid"].iloc[0])
        assert _in(row.median_duration, quantile_bounds(members["duration"], 0.5))
        assert _in(row.p90_duration, quantile_bounds(members["duration"], 0.9))
    assert got["median_duration"].dtype == "timedelta64[ms]"


def test_model_variants_are_named_through_the_lookup(log, raw):
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    counts = cases.groupby("graphkey").size().sort_values(ascending=False)
    got = log.variants(top=3, by="model")
    assert list(got["cases"]) == list(counts.head(3))
    assert list(got["name"]) == [raw.variant_names[k] for k in got["variant"]]


def test_throughput_overall_and_by_dimension(log, raw):
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    overall = log.throughput(quantiles=(0.5, 0.9)).iloc[0]
    assert overall["cases"] == len(cases)
    assert overall["min"] == ms(cases["duration"].min()) and overall["max"] == ms(cases["duration"].max())
    assert _in(overall["p50"], quantile_bounds(cases["duration"], 0.5))
    by = log.throughput(by="supplier", quantiles=(0.75,))
    expected = cases.groupby("supplier_lpkr")["duration"]
    assert dict(zip(by["supplier"], by["cases"], strict=True)) == expected.size().to_dict()
    for row in by.itertuples(index=False):
        values = expected.get_group(row.supplier)
        assert row.max == ms(values.max())
        assert _in(row.p75, quantile_bounds(values, 0.75))


def test_throughput_by_week_and_variant(log, raw):
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    weekly = log.throughput(by="week")
    weeks = cases["__time"].dt.tz_localize(None).dt.to_period("W-SUN").dt.start_time.dt.tz_localize("UTC")
    expected = cases.groupby(weeks).size()
    assert dict(zip(weekly["period"], weekly["cases"], strict=True)) == expected.to_dict()
    by_variant = log.throughput(by="variant")
    assert by_variant["cases"].sum() == len(cases) and by_variant["cases"].is_monotonic_decreasing


def test_duration_distribution(log, raw):
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    got = log.distribution("P1D")
    expected = (cases["duration"] // 86_400_000).value_counts().sort_index()
    assert list(got["from"]) == [pd.Timedelta(days=int(d)) for d in expected.index]
    assert list(got["cases"]) == list(expected)
    hours = log.distribution("PT12H")  # a bucket with a time part
    expected = (cases["duration"] // 43_200_000).value_counts().sort_index()
    assert list(hours["to"]) == [pd.Timedelta(hours=12 * (int(h) + 1)) for h in expected.index]
    assert list(hours["cases"]) == list(expected)


def test_activities(log, raw):
    v = raw.vertex[raw.vertex["caseid"].isin(raw.current())]
    got = log.activities().set_index("activity")
    per_case = v.groupby(["vertex_name", "caseid"]).size()
    for name, g in v.groupby("vertex_name"):
        row = got.loc[name]
        assert row["executions"] == len(g)
        assert row["cases"] == g["caseid"].nunique()
        assert row["cases_with_rework"] == int((per_case.loc[name] > 1).sum())
        assert row["total_service"] == ms(g["duration"].sum())
        assert _in(row["median_service"], quantile_bounds(g["duration"], 0.5))
    assert len(got) == v["vertex_name"].nunique()


def _edges(raw, current=None):
    e = raw.edge
    return e[e["caseid"].isin(current if current is not None else raw.current())]


def test_transitions_and_bottlenecks(log, raw):
    e = _edges(raw)
    grouped = e.groupby(["source_vertex_name", "destination_vertex_name"])["duration"]
    got = log.transitions()
    assert len(got) == grouped.ngroups
    for row in got.itertuples(index=False):
        values = grouped.get_group((row.source, row.target))
        assert row.frequency == len(values) and row.total == ms(values.sum()) and row.max == ms(values.max())
        assert _in(row.p90, quantile_bounds(values, 0.9))
    by_total = log.bottlenecks(k=4, metric="total")
    inner = e[(e["source_vertex_name"] != "START") & (e["destination_vertex_name"] != "END")]
    per_edge = inner.groupby(["source_vertex_name", "destination_vertex_name"])["duration"]
    top = per_edge.sum()[per_edge.size() >= 5].nlargest(4)  # the default min_count is 5
    assert [(r.source, r.target) for r in by_total.itertuples()] == list(top.index)
    assert by_total.attrs["min_count"] == 5
    by_p90 = log.bottlenecks(k=3)
    assert len(by_p90) == 3 and by_p90["p90"].is_monotonic_decreasing
    assert not ({"START"} & set(by_p90["source"]) or {"END"} & set(by_p90["target"]))


def test_min_count_keeps_rare_transitions_out_of_the_rankings(log, raw):
    e = _edges(raw)
    sizes = e.groupby(["source_vertex_name", "destination_vertex_name"]).size()
    cut = int(sizes.median())  # a cut that drops some transitions and keeps others
    got = log.transitions(min_count=cut)
    assert set(zip(got["source"], got["target"], strict=True)) == set(sizes[sizes >= cut].index)
    assert 0 < len(got) < len(sizes)
    inner = sizes.drop([k for k in sizes.index if k[0] == "START" or k[1] == "END"])
    every = log.bottlenecks(k=1000, metric="max", min_count=1)
    assert len(every) == len(inner)
    ranked = log.bottlenecks(k=1000, metric="max", min_count=cut)
    assert set(zip(ranked["source"], ranked["target"], strict=True)) == set(inner[inner >= cut].index)
    with pytest.raises(ConfigurationError, match="min_count"):
        log.transitions(min_count=0)


def test_rework_by_activity_and_case(log, raw):
    v = raw.vertex[raw.vertex["caseid"].isin(raw.current())]
    per_case = v.groupby(["vertex_name", "caseid"]).size()
    got = log.rework().set_index("activity")
    reworked = per_case[per_case > 1]
    assert set(got.index) == set(reworked.index.get_level_values(0))
    for name, row in got.iterrows():
        counts = per_case.loc[name]
        assert row["rework_executions"] == int((counts - 1).sum())
        assert row["cases_with_rework"] == int((counts > 1).sum())
    cases = raw.cases[raw.cases["caseid"].isin(raw.current()) & (raw.cases["rework"] > 0)]
    top = log.rework(by="case", top=5)
    expected = cases.sort_values(["rework", "caseid"], ascending=[False, True]).head(5)
    assert list(top["case_id"]) == list(expected["caseid"]) and list(top["rework"]) == list(
        expected["rework"]
    )


def test_cases_over_time(log, raw):
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    got = log.cases_over_time("P1M")
    start = cases["__time"].dt.tz_localize(None).dt.to_period("M").dt.start_time
    end = pd.to_datetime(cases["enddate"], unit="ms").dt.to_period("M").dt.start_time
    started = start.value_counts()
    finished = end.value_counts()
    periods = sorted(set(started.index) | set(finished.index))
    assert [p.tz_convert(None) for p in got["period"]] == periods
    assert list(got["started"]) == [int(started.get(p, 0)) for p in periods]
    assert list(got["finished"]) == [int(finished.get(p, 0)) for p in periods]
    assert got["open"].iloc[-1] == 0  # every case has ended by its last period
    weekly = log.cases_over_time()  # P1W by default
    assert weekly["started"].sum() == len(cases)


def test_conformance(log, raw):
    e = _edges(raw)
    inner = e[(e["source_vertex_name"] != "START") & (e["destination_vertex_name"] != "END")]
    pairs = inner.groupby(["source_vertex_name", "destination_vertex_name"]).size().nlargest(8).index.tolist()
    got = log.conformance(pairs)
    mask = ~inner.set_index(["source_vertex_name", "destination_vertex_name"]).index.isin(pairs)
    deviations = inner[mask]
    expected = deviations.groupby(["source_vertex_name", "destination_vertex_name"])["caseid"]
    assert {(r.source, r.target): (r.transitions, r.cases) for r in got.itertuples()} == {
        k: (len(g), g.nunique()) for k, g in expected
    }
    total = len(raw.current())
    assert got.attrs["cases"] == total
    assert got.attrs["deviating_cases"] == deviations["caseid"].nunique()
    assert got.attrs["fitness"] == pytest.approx(1 - deviations["caseid"].nunique() / total)
    # the whole observed process allows everything; START/END checked once allowed mentions them
    everything = log.conformance(log.process_map(paths=1.0))
    assert everything.empty and everything.attrs["fitness"] == 1.0


def test_filters_compose_into_every_answer(log, raw):
    start, end = pd.Timestamp("2025-03-01", tz="UTC"), pd.Timestamp("2025-07-01", tz="UTC")
    c = raw.cases[raw.cases["caseid"].isin(raw.current())]
    blocked = set(raw.vertex.loc[raw.vertex["vertex_name"] == "Block Invoice", "caseid"])
    keep = c[
        (c["__time"] >= start)
        & (c["__time"] < end)
        & c["caseid"].isin(blocked)
        & (c["supplier_lpkr"] != "Acme Industrial")
    ]
    filtered = (
        log.between(start, end).with_activity("Block Invoice").where("supplier_lpkr <> ?", "Acme Industrial")
    )
    assert 0 < len(keep) < len(c)
    row = filtered.summary().iloc[0]
    assert row["cases"] == len(keep)
    assert row["events"] == raw.vertex["caseid"].isin(keep["caseid"]).sum()
    acts = filtered.activities().set_index("activity")
    v = raw.vertex[raw.vertex["caseid"].isin(keep["caseid"])]
    assert acts["executions"].to_dict() == v.groupby("vertex_name").size().to_dict()
    tr = filtered.transitions()
    assert tr["frequency"].sum() == raw.edge["caseid"].isin(keep["caseid"]).sum()
    # the original log is untouched (immutability)
    assert log.summary()["cases"].iloc[0] == len(c)
    assert "Block Invoice" in repr(filtered) and "all cases" in repr(log)


def test_variants_in_by_key_and_by_name(log, raw):
    c = raw.cases[raw.cases["caseid"].isin(raw.current())]
    name = "Variant 2"
    key = next(k for k, v in raw.variant_names.items() if v == name)
    by_name = log.variants_in(name, by="model")
    assert by_name.summary()["cases"].iloc[0] == (c["graphkey"] == key).sum()
    pk = c["processkey"].value_counts().index[:2].tolist()
    by_key = log.variants_in(pk)
    assert by_key.summary()["cases"].iloc[0] == c["processkey"].isin(pk).sum()
    assert (
        by_key.transitions()["frequency"].sum()
        == _edges(raw, set(c.loc[c["processkey"].isin(pk), "caseid"])).shape[0]
    )


def test_completed_only_by_end_activity(log, raw):
    c = raw.current()
    ends = raw.edge[
        (raw.edge["destination_vertex_name"] == "END") & (raw.edge["source_vertex_name"] == "Pay Invoice")
    ]
    done = set(ends["caseid"]) & c
    assert 0 < len(done) < len(c)
    assert log.completed_only(["Pay Invoice"]).summary()["cases"].iloc[0] == len(done)


def test_completed_only_by_the_lookup_or_a_clear_error(log, raw):
    # the project's completion lookup is used when it exists; without it the error says what to pass
    assert (log.schema.lookup("_cases_is_completed") is None) == (raw.completed is None)
    if raw.completed is None:
        with pytest.raises(ConfigurationError, match=r"completed_only\(\["):
            log.completed_only()
    else:
        c = raw.cases[raw.cases["caseid"].isin(raw.current())]
        expected = c["case_version"].isin(raw.completed).sum()
        assert log.completed_only().summary()["cases"].iloc[0] == expected


def test_empty_results_keep_their_columns(log):
    empty = log.between("2031-01-01", "2032-01-01")
    s = empty.summary().iloc[0]
    assert s["cases"] == 0 and s["events"] == 0 and s["variants"] == 0 and pd.isna(s["median_throughput"])
    assert math.isnan(s["rework_share"])
    for frame in (
        empty.variants(),
        empty.activities(),
        empty.transitions(),
        empty.bottlenecks(),
        empty.rework(),
        empty.cases_over_time(),
        empty.throughput(),
        empty.throughput(by="supplier"),
    ):
        assert frame.empty and len(frame.columns) > 1, frame.columns
    assert empty.variants().columns[:3].tolist() == ["variant", "activities", "cases"]
    pmap = empty.process_map()
    assert set(pmap.nodes["activity"]) == {"START", "END"} and pmap.edges.empty
    assert empty.to_pm4py().empty


def test_bad_input_gets_clear_errors(conn, log):
    with pytest.raises(NotFound, match="No project"):
        conn.mining("No such project")
    with pytest.raises(ConfigurationError, match="placeholder"):
        log.where("rework > ?")
    # a comment would hide the rest of the statement (the other filters, the excluded cases) without a word
    for condition in ("rework > 0 -- only reworked", "rework > 0 /* and */"):
        with pytest.raises(ConfigurationError, match="comment"):
            log.where(condition)
        with pytest.raises(ConfigurationError, match="comment"):
            log.drivers(f"where:{condition}")
    assert log.where("case_id <> '--'").summary()["cases"].iloc[0] == log.summary()["cases"].iloc[0]
    with pytest.raises(ConfigurationError, match="not before"):
        log.between("2025-05-01", "2025-01-01")
    with pytest.raises(ConfigurationError, match="ISO-8601"):
        log.cases_over_time("fortnight")
    with pytest.raises(ConfigurationError, match="'p90'"):
        log.bottlenecks(metric="worst")
    with pytest.raises(ConfigurationError, match="positive"):
        log.variants(top=0)
    with pytest.raises(SchemaError, match="no column for the dimension 'colour'"):
        log.throughput(by="colour")
    with pytest.raises(ConfigurationError, match=r"\(source, target\) pair"):
        log.conformance([("a", "b", "c")])


def test_to_pm4py_event_frame(log, raw):
    v = raw.vertex[raw.vertex["caseid"].isin(raw.current())]
    events = log.to_pm4py()
    assert list(events.columns[:4]) == [
        "case:concept:name",
        "concept:name",
        "time:timestamp",
        "start_timestamp",
    ]
    # dimensions carry the names the project was uploaded with (its mapping), a plain resource pm4py's name
    assert "org:resource" in events.columns and "Supplier" in events.columns
    assert len(events) == len(v)
    assert events["time:timestamp"].dtype == "datetime64[ms, UTC]"
    # chunked streaming gives the same rows
    chunks = list(log.iter_events(None, chunk_rows=700))
    assert len(chunks) == math.ceil(len(v) / 700) and sum(len(c) for c in chunks) == len(v)
    counts = events.groupby("concept:name").size().to_dict()
    assert counts == v.groupby("vertex_name").size().to_dict()


def test_quantiles_are_within_rank_bounds_not_just_close():
    # the bound helper itself: a value outside the order statistics is rejected
    values = np.arange(1, 101) * 1000
    lo, hi = quantile_bounds(values, 0.5)
    assert lo <= ms(50_000) <= hi and not (lo <= ms(60_000) <= hi)


@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_bound_parameters_on_each_transport(sandbox, connect_workgroup, raw, transport):
    """Filters bind their values as ``?`` parameters (text, numbers, times) on both HTTP transports."""
    with connect_workgroup(sandbox) as conn:
        conn.sql_transport = transport
        log = conn.mining("Purchase to Pay")
        got = log.between("2025-02-01", "2025-09-01").where(
            "rework >= ? AND supplier_lpkr <> ?", 1, "Acme Industrial"
        )
        c = raw.cases[raw.cases["caseid"].isin(raw.current())]
        t0, t1 = pd.Timestamp("2025-02-01", tz="UTC"), pd.Timestamp("2025-09-01", tz="UTC")
        keep = c[
            (c["__time"] >= t0)
            & (c["__time"] < t1)
            & (c["rework"] >= 1)
            & (c["supplier_lpkr"] != "Acme Industrial")
        ]
        summary = got.summary()
        assert summary["cases"].iloc[0] == len(keep) > 0
        assert got.activities()["executions"].sum() == raw.vertex["caseid"].isin(keep["caseid"]).sum()
        assert summary.attrs["transport"] == transport


def test_where_takes_the_names_answers_print_and_pandas_values(log, raw):
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    key = log.variants(1)["variant"].iloc[0]
    by_name = log.where("variant = ?", key).summary()["cases"].iloc[0]
    assert by_name == (cases["processkey"] == key).sum() == log.variants_in(key).summary()["cases"].iloc[0]
    example = str(cases["caseid"].iloc[0])
    assert log.where("case_id = ?", example).summary()["cases"].iloc[0] == 1
    day = pd.Timedelta(days=1)
    slow = log.where("duration > ?", day).summary()["cases"].iloc[0]
    assert (
        slow
        == (cases["duration"] > 86_400_000).sum()
        == log.where("duration > ?", 86_400_000).summary()["cases"].iloc[0]
    )
    middle = cases["__time"].sort_values().iloc[len(cases) // 2].tz_convert("Europe/Paris")  # aware
    started = log.where("__time >= ?", middle).summary()["cases"].iloc[0]
    assert started == (cases["__time"] >= middle).sum()
    ended = log.where("enddate < ?", middle.to_pydatetime()).summary()["cases"].iloc[0]
    assert ended == (cases["enddate"] < middle.value // 1_000_000).sum()
    with pytest.raises(ConfigurationError, match="with_activity"):
        log.where("activity = ?", "Pay Invoice")


def test_every_answer_and_the_repr_say_how_many_cases_are_excluded(log, raw):
    excluded = len(raw.excluded)
    assert excluded > 0  # the demo projects keep a few excluded cases
    assert f"{excluded:,} excluded cases left out" in repr(log)
    assert f"{excluded:,} excluded cases included" in repr(log.with_excluded())
    for frame in (log.summary(), log.variants(3), log.transitions(), log.bottlenecks(3)):
        assert frame.attrs["excluded_cases"] == excluded and frame.attrs["include_excluded"] is False
    summary = log.summary().iloc[0]
    cases = raw.cases[raw.cases["caseid"].isin(raw.current())]
    assert summary["excluded_cases"] == excluded
    assert summary["cases_with_rework"] == (cases["rework"] > 0).sum()
    assert (
        summary["activities"]
        == raw.vertex.loc[raw.vertex["caseid"].isin(raw.current()), "vertex_name"].nunique()
    )
    assert summary["span"] == summary["last_event"] - summary["first_event"]


def test_answers_show_durations_rounded_but_keep_them_exact(log, raw):
    from pm_notebook._display import readable_duration
    from pm_notebook.mining._answer import Answer

    answer = log.bottlenecks()
    median = answer["median"]
    assert pd.api.types.is_timedelta64_dtype(median) and len(answer) > 0
    # the values stay full-precision Timedeltas: some median has a fraction of a second
    assert (median.dt.components["milliseconds"] != 0).any() or (median.dt.components["seconds"] != 0).any()
    shown = [readable_duration(v) for v in median]
    with pd.option_context("display.max_columns", None, "display.expand_frame_repr", False):
        html, text = answer._repr_html_(), repr(answer)
    for value, readable in zip(median, shown, strict=True):
        assert f"<td>{readable}</td>" in html
        assert readable in text
        assert str(value) not in html and str(value) not in text  # pandas' "0 days 00:06:56.822000"
    # what a notebook cell derives from an answer is an Answer too: rounded the same, attrs and values kept
    derived = {
        "head": answer.head(),
        "selection": answer[[answer.columns[0], "median"]],
        "sorted": answer.sort_values("median"),
        "transposed": answer[["median"]].T,
        "arithmetic": answer[["median"]] * 2,
    }
    for name, frame in derived.items():
        assert type(frame) is Answer, name
        assert frame.attrs["sql"] == answer.attrs["sql"], name
    with pd.option_context("display.max_columns", None, "display.expand_frame_repr", False):
        for name in ("head", "selection", "sorted", "transposed"):
            text = repr(derived[name])
            assert shown[0] in text and str(median.iloc[0]) not in text, name
    assert (derived["arithmetic"]["median"] == median * 2).all()
    # a transposed summary mixes durations with counts and shares in one column: the durations read rounded
    summary = log.summary()
    transposed = summary.T
    throughput = summary["median_throughput"].iloc[0]
    assert readable_duration(throughput) in repr(transposed) and str(throughput) not in repr(transposed)
    assert f"<td>{summary['cases'].iloc[0]}</td>" in transposed._repr_html_()
    assert type(answer["median"]) is pd.Series
    assert type(pd.DataFrame(answer)) is pd.DataFrame


def test_answer_display_respects_pandas_options(log):
    from pm_notebook.mining._answer import Answer

    frame = Answer(
        pd.DataFrame(
            {
                "median": pd.to_timedelta(range(30), unit="h") + pd.Timedelta("00:06:56.822"),
                "activity": [f"A{i}" for i in range(30)],
                "cases": range(30),
            }
        )
    )
    with pd.option_context("display.max_rows", 20, "display.min_rows", 6, "display.max_columns", 2):
        html, text = frame._repr_html_(), repr(frame)
    assert html.count("<tr>") == 6 + 1  # min_rows rows and the "..." row (the header's <tr> has a style)
    assert "<td>6 min 57 s</td>" in html and "<td>1 d 5 h</td>" in html and "15 h 7 min" not in html
    assert "<th>activity</th>" not in html and "<th>cases</th>" in html and "30 rows × 3 columns" in html
    assert "6 min 57 s" in text and "15 h 7 min" not in text and "activity" not in text
    assert "[30 rows x 3 columns]" in text
    with pd.option_context("display.max_rows", 100, "display.max_columns", 10, "display.width", 200):
        assert "15 h 7 min" in frame._repr_html_() and "activity" in repr(frame)
    assert type(log.activities()) is Answer
    pmap = log.process_map()
    assert all(type(f) is Answer for f in (pmap.nodes, pmap.edges, pmap.all_nodes, pmap.all_edges))
