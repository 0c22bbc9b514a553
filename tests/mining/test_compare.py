"""``log.compare``: the statistics against scipy (the rank test on binned counts, its bound against the test
on the exact durations; the rate tests), and the whole comparison against pandas on the same events — the
generated log with the hard shapes of ``perspectives_data.event_log`` (ties, duplicates, overlaps, one-event
cases) split by a case dimension and by period, and the receipt log of tests/data split by period — each count
exact; the statements it sends (eleven, no event pulled), the compared map drawn by Graphviz, and bad
input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from pm_notebook.errors import ConfigurationError
from pm_notebook.mining import ProcessLog
from pm_notebook.mining._compare import rank_test, rate_tests
from pm_notebook.mining._comparemap import NEW, VANISHED, ComparedMap, change_colour
from pm_notebook.mining._sql.compare import BINS_PER_E

from .perspectives_data import event_log, ordered
from .sources import Counting

CASE, ACT, START_T, END_T = "case:concept:name", "concept:name", "start_timestamp", "time:timestamp"


# --- the statistics, in-process -------------------------------------------------------------------------
def _binned(ms: np.ndarray) -> np.ndarray:
    """The bin of each duration, as the SQL computes it (written here from the documented rule)."""
    return np.floor(np.log(ms.astype("float64") / 1000.0 + 1.0) * BINS_PER_E).astype("int64")


def _counts(bins_a: np.ndarray, bins_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    index = np.union1d(bins_a, bins_b)
    return (
        np.array([(bins_a == i).sum() for i in index]),
        np.array([(bins_b == i).sum() for i in index]),
    )


def test_the_rank_test_is_mann_whitney_on_the_bins_and_near_it_on_the_durations():
    rng = np.random.default_rng(21)
    for trial in range(200):
        na, nb = int(rng.integers(1, 300)), int(rng.integers(1, 300))
        scale = float(rng.choice([5e3, 3.6e6, 8.64e7, 2e9]))
        shift = float(rng.choice([1.0, 1.0, 1.3, 3.0]))
        a = np.round(rng.lognormal(0, 1.2, na) * scale)
        b = np.round(rng.lognormal(0, 1.2, nb) * scale * shift)
        if trial % 10 == 0:
            b[: nb // 2] = a[0]  # many ties with a value of the other side
        ba, bb = _binned(a), _binned(b)
        ca, cb = _counts(ba, bb)
        got = rank_test(ca, cb)
        on_bins = st.mannwhitneyu(bb, ba, method="asymptotic", use_continuity=True)
        assert got["u"] == pytest.approx(on_bins.statistic, abs=1e-9)
        if np.unique(np.concatenate([ba, bb])).size > 1:
            assert got["p_value"] == pytest.approx(on_bins.pvalue, rel=1e-9, abs=1e-300)
        # the bound: the exact durations' probability lies within prob_error of the binned one
        exact = st.mannwhitneyu(b, a, method="asymptotic").statistic / (na * nb)
        assert abs(exact - got["prob_b_longer"]) <= got["prob_error"] + 1e-12
        # and the bound is the share of a-b pairs within one bin, halved
        shared = sum(int((ba == i).sum()) * int((bb == i).sum()) for i in np.unique(ba))
        assert got["prob_error"] == pytest.approx(0.5 * shared / (na * nb))
    assert math.isnan(rank_test([0, 0], [1, 2])["p_value"])
    assert rank_test([3], [4])["p_value"] == 1.0  # every duration in one bin: nothing to tell apart


def test_a_planted_slowdown_is_found_and_null_data_holds_the_level():
    hits, found = 0, 0
    for seed in range(400):
        rng = np.random.default_rng(seed)
        a = np.round(rng.lognormal(0, 1, 150) * 8.64e7)
        b = np.round(rng.lognormal(0, 1, 170) * 8.64e7)
        hits += rank_test(*_counts(_binned(a), _binned(b)))["p_value"] < 0.05
        slow = np.round(rng.lognormal(0.5, 1, 170) * 8.64e7)
        found += rank_test(*_counts(_binned(a), _binned(slow)))["p_value"] < 0.05
    assert hits <= st.binom.ppf(0.999, 400, 0.05)
    assert found >= 380


def test_the_rate_tests_are_the_two_proportion_tests():
    rng = np.random.default_rng(4)
    na, nb = 240, 310
    xa = rng.integers(0, na + 1, 60)
    xb = rng.integers(0, nb + 1, 60)
    got = rate_tests(xa, na, xb, nb)
    for i in range(60):
        a, b = int(xa[i]), int(xb[i])
        assert got["difference"][i] == pytest.approx(b / nb - a / na)
        assert got["ci_low"][i] <= b / nb - a / na <= got["ci_high"][i]
        table = np.array([[a, na - a], [b, nb - b]])
        expected = st.contingency.expected_freq(table) if 0 < a + b < na + nb else np.zeros((2, 2))
        if expected.min() < 5:
            assert got["test"][i] == "fisher"
            assert got["p_value"][i] == pytest.approx(st.fisher_exact(table).pvalue, rel=1e-9, abs=1e-15)
        else:
            p = (a + b) / (na + nb)
            z = (b / nb - a / na) / math.sqrt(p * (1 - p) * (1 / na + 1 / nb))
            assert got["p_value"][i] == pytest.approx(2 * st.norm.sf(abs(z)), rel=1e-9, abs=1e-300)
    assert got["p_adjusted"].to_numpy() == pytest.approx(
        st.false_discovery_control(got["p_value"].to_numpy(), method="bh")
    )
    assert list(got["significant"]) == list(got["p_adjusted"] < 0.05)
    empty = rate_tests([0], 0, [3], 10)
    assert math.isnan(empty["p_value"][0]) and not empty["significant"][0]


def test_the_change_colours():
    assert change_colour(1.0) == "#e0e0e0"
    assert change_colour(2.0) == change_colour(5.0) == "#b2182b"
    assert change_colour(0.5) == change_colour(0.1) == change_colour(0.0) == "#2166ac"
    assert change_colour(math.inf) == "#b2182b" and change_colour(math.nan) == "#e0e0e0"
    half = change_colour(2**0.5)  # halfway on the log scale: the mid-point of grey and red
    assert half == "#" + "".join(
        f"{round((g + r) / 2):02x}" for g, r in zip((224, 224, 224), (178, 24, 43), strict=True)
    )


# --- the whole path, against pandas ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def up_conn(tmp_path_factory, connect_workgroup):
    from pm_sandbox import start

    sb = start(cases=20, log_path=tmp_path_factory.mktemp("compare-sandbox") / "sandbox.log")
    conn = connect_workgroup(sb)
    yield conn
    conn.close()
    sb.stop()


@pytest.fixture(scope="module")
def shaped(up_conn):
    events = event_log(360, seed=31)
    project = up_conn.create_project("Compare shapes")
    assert up_conn.upload(project, events).status == "DONE"
    return up_conn.mining(project).with_excluded(), events


@pytest.fixture(scope="module")
def receipt(up_conn):
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "receipt.csv.gz"
    events = pd.read_csv(path, dtype=str, keep_default_na=False)
    events[END_T] = pd.to_datetime(events[END_T], utc=True).dt.tz_convert(None).dt.floor("ms")
    project = up_conn.create_project("Compare receipt")
    assert up_conn.upload(project, events, progress=False).status == "DONE"
    events[START_T] = events[END_T]  # one timestamp: every task is instantaneous
    events["resource"] = events["org:resource"].where(events["org:resource"] != "", None)
    return up_conn.mining(project).with_excluded(), events


def _q(values: np.ndarray, share: float) -> float:
    return float(np.quantile(values.astype("float64"), share, method="inverted_cdf"))


def _side(events: pd.DataFrame) -> dict:
    """The pandas computation of one side: cases, durations, rework, sequences, activities, transitions."""
    ev = ordered(events).reset_index(drop=True)
    ev["s"] = ev[START_T].astype("datetime64[ms]").astype("int64")
    ev["e"] = ev[END_T].astype("datetime64[ms]").astype("int64")
    g = ev.groupby(CASE)
    duration = (g["e"].max() - g["s"].min()).to_numpy()
    rework = g[ACT].agg(lambda s: bool(s.duplicated().any()))
    sequences = g[ACT].agg(lambda s: " → ".join(s))
    nxt = g[ACT].shift(-1)
    wait = (g["s"].shift(-1) - ev["e"]).clip(lower=0)
    inner = pd.DataFrame({"source": ev[ACT], "target": nxt, "wait": wait}).dropna()
    edges = pd.concat(
        [
            inner,
            pd.DataFrame({"source": "START", "target": g[ACT].first().to_numpy(), "wait": 0.0}),
            # the wait into END runs from the last task's end to the case's latest end (docs/mining.md)
            pd.DataFrame(
                {
                    "source": g[ACT].last().to_numpy(),
                    "target": "END",
                    "wait": (g["e"].max() - g["e"].last()).to_numpy(dtype="float64"),
                }
            ),
        ],
        ignore_index=True,
    )
    return {
        "cases": len(duration),
        "duration": duration,
        "rework": int(rework.sum()),
        "variants": sequences.value_counts(),
        "executions": ev[ACT].value_counts(),
        "act_cases": ev.groupby(ACT)[CASE].nunique(),
        "service": (ev["e"] - ev["s"]).groupby(ev[ACT]).agg(list),
        "edges": edges.groupby(["source", "target"])["wait"].agg(list),
    }


def check(comparison, events_a: pd.DataFrame, events_b: pd.DataFrame) -> None:
    """Every number of *comparison* against pandas on the two sides' events."""
    a, b = _side(events_a), _side(events_b)
    na, nb = a["cases"], b["cases"]
    s = comparison.summary
    assert comparison.cases == (na, nb)
    assert list(s["cases"]) == [na, nb, nb - na]
    assert list(s["cases_with_rework"]) == [a["rework"], b["rework"], b["rework"] - a["rework"]]
    assert list(s["variants"][:2]) == [len(a["variants"]), len(b["variants"])]
    for row, side in (("a", a), ("b", b)):
        d = side["duration"]
        assert s.loc[row, "min"] == pd.Timedelta(milliseconds=int(d.min()))
        assert s.loc[row, "max"] == pd.Timedelta(milliseconds=int(d.max()))
        assert abs(s.loc[row, "mean"] / pd.Timedelta(milliseconds=1) - d.mean()) <= 0.5
        for q in (0.1, 0.25, 0.5, 0.75, 0.9):
            assert s.loc[row, f"p{int(q * 100)}"] == pd.Timedelta(milliseconds=_q(d, q)), (row, q)

    # the binned durations and the rank test
    ba, bb = _binned(a["duration"]), _binned(b["duration"])
    ca, cb = _counts(ba, bb)
    got = comparison.durations
    assert list(got["bin"]) == list(np.union1d(ba, bb))
    assert list(got["cases_a"]) == list(ca) and list(got["cases_b"]) == list(cb)
    tests = comparison.tests.set_index("measure")
    mw = st.mannwhitneyu(bb, ba, method="asymptotic")
    assert tests.loc["case_duration", "p_value"] == pytest.approx(mw.pvalue, rel=1e-9)
    exact = st.mannwhitneyu(b["duration"], a["duration"]).statistic / (na * nb)
    effect, error = tests.loc["case_duration", "effect"], tests.loc["case_duration", "effect_error"]
    assert abs(effect - exact) <= error + 1e-12
    rework = st.fisher_exact([[a["rework"], na - a["rework"]], [b["rework"], nb - b["rework"]]]).pvalue
    if tests.loc["rework_share", "test"] == "Fisher exact":
        assert tests.loc["rework_share", "p_value"] == pytest.approx(rework)
    else:
        p = (a["rework"] + b["rework"]) / (na + nb)
        z = (b["rework"] / nb - a["rework"] / na) / math.sqrt(p * (1 - p) * (1 / na + 1 / nb))
        assert tests.loc["rework_share", "p_value"] == pytest.approx(2 * st.norm.sf(abs(z)))

    # variants: every one listed (top=None), by its sequence
    v = comparison.variants
    want = pd.concat([a["variants"].rename("a"), b["variants"].rename("b")], axis=1).fillna(0).astype(int)
    assert len(v) == len(want)
    got_v = {r.activities: (r.cases_a, r.cases_b, r.status) for r in v.itertuples()}
    status = {k: "both" if r.a and r.b else "new" if r.b else "vanished" for k, r in want.iterrows()}
    assert got_v == {k: (r.a, r.b, status[k]) for k, r in want.iterrows()}
    stats = rate_tests(v["cases_a"].to_numpy(int), na, v["cases_b"].to_numpy(int), nb)
    assert v["p_adjusted"].to_numpy() == pytest.approx(stats["p_adjusted"].to_numpy())
    assert v.attrs["new_variants"] == sum(1 for x in status.values() if x == "new")
    assert v.attrs["vanished_variants"] == sum(1 for x in status.values() if x == "vanished")

    # activities: cases with it and executions, exact; the median service time
    acts = comparison.activities.set_index("activity")
    names = set(a["executions"].index) | set(b["executions"].index)
    assert set(acts.index) == names
    for name in names:
        row = acts.loc[name]
        for side, suffix in ((a, "_a"), (b, "_b")):
            assert row["executions" + suffix] == side["executions"].get(name, 0), name
            assert row["cases" + suffix] == side["act_cases"].get(name, 0), name
            if name in side["service"]:
                want_median = _q(np.asarray(side["service"][name]), 0.5)
                assert row["median_service" + suffix] == pd.Timedelta(milliseconds=want_median), name
    stats = rate_tests(acts["cases_a"].to_numpy(int), na, acts["cases_b"].to_numpy(int), nb)
    assert acts["p_value"].to_numpy() == pytest.approx(stats["p_value"].to_numpy(), nan_ok=True)

    # transitions: frequencies exact (START and END included), the median wait
    tr = comparison.transitions.set_index(["source", "target"])
    pairs = set(a["edges"].index) | set(b["edges"].index)
    assert set(tr.index) == pairs
    for key in pairs:
        row = tr.loc[key]
        for side, suffix in ((a, "_a"), (b, "_b")):
            waits = side["edges"].get(key, [])
            assert row["frequency" + suffix] == len(waits), key
            if waits:
                assert row["median_wait" + suffix] == pd.Timedelta(milliseconds=_q(np.asarray(waits), 0.5)), (
                    key
                )
        # the rank test of its waiting times, on the binned waits of pandas
        wa, wb = (np.asarray(side["edges"].get(key, []), dtype="float64") for side in (a, b))
        if len(wa) and len(wb):
            ba, bb = _binned(wa), _binned(wb)
            got = rank_test(*_counts(ba, bb))
            assert row["wait_p_value"] == pytest.approx(got["p_value"], rel=1e-12), key
            if len(np.union1d(ba, bb)) > 1:
                mw = st.mannwhitneyu(bb, ba, method="asymptotic")
                assert row["wait_p_value"] == pytest.approx(mw.pvalue, rel=1e-9), key
            exact = st.mannwhitneyu(wb, wa).statistic / (len(wa) * len(wb))
            assert abs(row["wait_prob_b_longer"] - exact) <= row["wait_prob_error"] + 1e-12, key
        else:
            assert math.isnan(row["wait_p_value"]) and not row["wait_significant"], key
    steps_a, steps_b = int(tr["frequency_a"].sum()), int(tr["frequency_b"].sum())
    # a case of n tasks takes n + 1 steps (START and END included)
    assert (steps_a, steps_b) == (len(events_a) + na, len(events_b) + nb)
    assert steps_a == sum(len(w) for w in a["edges"])
    stats = rate_tests(tr["frequency_a"].to_numpy(int), steps_a, tr["frequency_b"].to_numpy(int), steps_b)
    assert tr["p_value"].to_numpy() == pytest.approx(stats["p_value"].to_numpy(), nan_ok=True)
    tested = tr["wait_p_value"].notna()
    assert tr.loc[tested, "wait_p_adjusted"].to_numpy() == pytest.approx(
        st.false_discovery_control(tr.loc[tested, "wait_p_value"].to_numpy(), method="bh")
    )


def _starts(events: pd.DataFrame) -> pd.Series:
    return events.groupby(CASE)[START_T].transform("min")


def test_two_periods_of_the_shaped_log(shaped):
    log, events = shaped
    cut = pd.Timestamp("2025-03-01 08:00")
    first = log.between(None, cut)
    second = log.between(cut, None)
    comparison = first.compare(second, top=None)
    starts = _starts(events)
    check(comparison, events[starts < cut], events[starts >= cut])
    assert comparison.labels == (first.filters.describe(), second.filters.describe())


def test_two_values_of_a_dimension_of_the_shaped_log(shaped):
    log, events = shaped
    north = log.where("region_lpkr = ?", "north")
    south = log.where("region_lpkr = ?", "south")
    comparison = north.compare(south, labels=("north", "south"), top=None)
    check(comparison, events[events["Region"] == "north"], events[events["Region"] == "south"])
    assert comparison.labels == ("north", "south")
    # a filter on a column of the task table (a semi-join on the task and transition tables) composes too
    a, b = north.with_activity("Reject"), south.with_activity("Reject")
    rejected = set(events.loc[events[ACT] == "Reject", CASE])
    sub = events[events[CASE].isin(rejected)]
    check(a.compare(b, top=None), sub[sub["Region"] == "north"], sub[sub["Region"] == "south"])


def test_the_receipt_log_by_period(receipt):
    log, events = receipt
    cut = pd.Timestamp("2011-01-01")
    comparison = log.between(None, cut).compare(log.between(cut, None), top=None)
    starts = _starts(events)
    check(comparison, events[starts < cut], events[starts >= cut])
    assert comparison.cases[0] > 100 and comparison.cases[1] > 100


def test_new_and_vanished_and_the_map(shaped, tmp_path):
    log, events = shaped
    # cases with Reject against cases without it: Reject and its transitions vanish
    a, b = log.with_activity("Reject"), log.without_activity("Reject")
    comparison = a.compare(b, labels=("with Reject", "without"))
    acts = comparison.activities.set_index("activity")
    assert acts.loc["Reject", "status"] == "vanished"
    assert (acts.loc[acts.index != "Reject", "status"] == "both").all()
    pmap = comparison.process_map(paths=1.0)
    assert isinstance(pmap, ComparedMap)
    dot = pmap.to_dot()
    gone = [line for line in dot.splitlines() if "vanished:" in line]
    assert gone and all(VANISHED in line and "dashed" in line for line in gone)
    assert "rank=sink; legend" in dot and "new in b" in dot and "vanished from a" in dot
    svg = pmap.svg()  # drawn by Graphviz
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "vanished from a" in svg and "Reject" in svg
    assert pmap.png().startswith(b"\x89PNG")
    # the reverse: Reject is new; the performance view colours by the median times; view() keeps the class
    back = b.compare(a).process_map(paths=1.0).view(metric="performance")
    assert isinstance(back, ComparedMap) and back.metric == "performance"
    born = [line for line in back.to_dot().splitlines() if "new:" in line]
    assert born and all(NEW in line for line in born)
    assert "median time" in back.to_dot()
    assert back.save(tmp_path / "compared.svg").read_text(encoding="utf-8").count("<svg") == 1
    text = repr(comparison)
    assert "with Reject" in text and "(11 statements)" in text
    assert "<b>summary</b>" in comparison._repr_html_()


def test_eleven_statements_and_no_event_pulled(up_conn, shaped):
    source = Counting(up_conn)
    log = ProcessLog.open(source, shaped[0].project).with_excluded()
    a, b = log.between(None, "2025-03-01 08:00"), log.between("2025-03-01 08:00", None)
    source.sent.clear()
    comparison = a.compare(b, top=5)
    # five per log (cases: stats, variants and bins; tasks; transitions; their waits' bins) and the five
    # listed variants' sequences
    assert len(source.sent) == comparison.statements == 11
    assert comparison.sql.count(";\n\n") == 10
    tasks = [s for s in source.sent if "_vertex" in s and "GROUP BY" not in s]
    assert len(tasks) == 1 and tasks[0].count("?") == 5  # the example cases of the 5 listed variants
    assert sum("GROUPING SETS" in s for s in source.sent) == 2


def test_bad_input_is_a_clear_error(up_conn, shaped, receipt):
    log = shaped[0]
    for other in (None, "south", log.summary()):
        with pytest.raises(ConfigurationError, match="another ProcessLog"):
            log.compare(other)
    with pytest.raises(ConfigurationError, match="one project") as err:
        log.compare(receipt[0])
    assert "Compare shapes" in str(err.value) and "Compare receipt" in str(err.value)
    with pytest.raises(ConfigurationError, match="two names"):
        log.compare(log, labels=("only one",))
    with pytest.raises(ConfigurationError):
        log.compare(log, top=0)


def test_an_empty_side_has_no_test(shaped):
    log, events = shaped
    comparison = log.where("tasks_count < 0").compare(log)
    assert comparison.cases == (0, events[CASE].nunique())
    assert comparison.tests["p_value"].isna().all()
    assert (comparison.variants["status"] == "new").all()
    # both sides empty: a clear refusal (was a TypeError from pandas)
    nothing = log.where("tasks_count < 0")
    with pytest.raises(ConfigurationError, match="neither log holds a case"):
        nothing.compare(nothing.where("tasks_count < 1"))


def test_the_worked_example_of_the_docs(log):
    """docs/mining.md's worked example: the demo project's first quarter against the next four months."""
    c = log.between("2025-01-01", "2025-04-01").compare(log.between("2025-04-01", "2025-08-01"))
    assert c.cases == (77, 87)
    assert list(c.summary["cases_with_rework"][:2]) == [24, 35]
    tests = c.tests.set_index("measure")
    assert round(tests.loc["case_duration", "effect"], 3) == 0.489
    assert round(tests.loc["case_duration", "p_value"], 3) == 0.816
    assert round(tests.loc["rework_share", "p_value"], 3) == 0.228
    assert not tests["significant"].any()
    first = c.activities.iloc[:2]
    assert set(first["activity"]) == {"Create Purchase Requisition", "Approve Purchase Requisition"}
    assert list(first["cases_a"]) == [52, 52] and list(first["cases_b"]) == [76, 76]
    assert round(first["p_adjusted"].iloc[0], 3) == 0.015 and first["significant"].all()
    top = c.variants.iloc[0]
    assert top["activities"].startswith("Create Purchase Order")
    assert (top["cases_a"], top["cases_b"], round(top["p_adjusted"], 3)) == (25, 8, 0.002)
    assert c.variants.attrs["new_variants"] == 2 and c.variants.attrs["vanished_variants"] == 0
    edges = c.transitions.set_index(["source", "target"])
    assert tuple(edges.loc[("START", "Create Purchase Order"), ["frequency_a", "frequency_b"]]) == (25, 11)
    assert "transitions: 3 new, 0 vanished, 0 changed significantly in frequency, 0 in waiting time" in repr(
        c
    )


def test_the_statements_as_plain_values():
    from pm_notebook.mining import Schema
    from pm_notebook.mining._filters import Filters, StartedBetween
    from pm_notebook.mining._sql import compare as compare_sql

    schema = Schema(
        "p",
        {"cases": "p", "vertex": "p_vertex", "edge": "p_edge"},
        {
            "cases": {
                "__time": "TIMESTAMP",
                "caseid": "VARCHAR",
                "duration": "BIGINT",
                "case_version": "VARCHAR",
                "rework": "BIGINT",
                "processkey": "VARCHAR",
            },
            "vertex": {},
            "edge": {
                "caseid": "VARCHAR",
                "duration": "BIGINT",
                "source_vertex_name": "VARCHAR",
                "destination_vertex_name": "VARCHAR",
            },
        },
    )
    binned = 'CAST(FLOOR(LN(GREATEST(CAST("duration" AS DOUBLE), 0.0) / 1000.0 + 1.0) * 24) AS BIGINT)'
    assert compare_sql.duration_bin('"duration"') == binned
    assert compare_sql.case_groups(schema, Filters()).sql == (
        f'SELECT "processkey" AS "variant", {binned} AS "bin", '
        f'GROUPING("processkey", {binned}) AS "grouping", COUNT(*) AS "cases", '
        'SUM("duration") AS "total_duration", EARLIEST("caseid", 1024) AS "example_case" '
        f'FROM "p" GROUP BY GROUPING SETS (("processkey"), ({binned}))'
    )
    stats = compare_sql.case_stats(schema, Filters(), (0.5,))
    assert stats.sql == (
        'SELECT COUNT(*) AS "cases", SUM(CASE WHEN "rework" > 0 THEN 1 ELSE 0 END) AS "rework_cases", '
        'AVG(CAST("duration" AS DOUBLE)) AS "mean", MIN("duration") AS "min", '
        'APPROX_QUANTILE_DS("duration", 0.5) AS "p50", MAX("duration") AS "max" FROM "p"'
    )
    # a case-only filter reaches the transitions through the caseid semi-join, its value a parameter
    since = Filters().add(StartedBetween(pd.Timestamp("2025-01-01").to_pydatetime(), None))
    waits = compare_sql.wait_bins(schema, since)
    assert waits.sql.startswith(
        'SELECT "source_vertex_name" AS "source", "destination_vertex_name" AS "target", '
    )
    assert ' WHERE "caseid" IN (SELECT "caseid" FROM "p" WHERE ("__time" >= ?)) GROUP BY ' in waits.sql
    assert len(waits.params) == 1
    # the bins' edges invert the rule: bin i holds [e^(i/24) - 1, e^((i+1)/24) - 1) seconds
    low, high = compare_sql.bin_edges_ms(24)
    assert (low, high) == pytest.approx(((math.e - 1) * 1000, (math.exp(25 / 24) - 1) * 1000))
    ms = np.array([0, 42, 43, 999, 1000, 86_400_000])
    assert list(_binned(ms)) == [0, 0, 1, 16, 16, 272]
    for value in np.random.default_rng(2).lognormal(10, 4, 500).round():
        low, high = compare_sql.bin_edges_ms(int(_binned(np.array([value]))[0]))
        assert low * (1 - 1e-12) <= value < high * (1 + 1e-12)


def test_the_map_explorer_takes_a_compared_map(shaped):
    from pm_notebook.widgets import ProcessMapExplorer

    log, _ = shaped
    pmap = log.with_activity("Reject").compare(log.without_activity("Reject")).process_map()
    explorer = ProcessMapExplorer(pmap)
    assert explorer.current is pmap and "vanished from a" in explorer.picture.value
    shown = explorer.set(metric="performance", paths=1.0)
    assert isinstance(shown, ComparedMap) and shown.labels == pmap.labels and shown.cases == pmap.cases
    assert len(shown.edges) == len(pmap.all_edges) and "median time" in explorer.picture.value
