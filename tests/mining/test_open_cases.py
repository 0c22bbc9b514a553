"""``log.open_cases``: the open cases and their remaining-time estimate against an independent pandas
computation on the same events — generated logs with the hard shapes (ties, duplicate events, overlapping
tasks, one-event cases, activities repeated) uploaded to a sandbox of this module's own, and the 4TU receipt
log — counts exact, quantiles by the stated rule (the ⌈q·n⌉-th smallest, numpy's ``inverted_cdf``: the
stand-in computes ``APPROX_QUANTILE_DS`` exactly), ``p_late`` by its rule and within 0.05 of the exact
share; filters composed; the completion lookup against the same rule given as end activities; the
statement count; bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pm_notebook.errors import ConfigurationError, SchemaError
from pm_notebook.mining._sql.open_cases import EDGES_MS

from .perspectives_data import ordered

CASE, ACT, START, END = "case:concept:name", "concept:name", "start_timestamp", "time:timestamp"
LEVELS = ("activity+elapsed", "activity", "overall")


# --- the independent computation ----------------------------------------------------------------------
def _ms(times: pd.Series) -> np.ndarray:
    return (pd.to_datetime(times, utc=True).astype("datetime64[ms, UTC]").astype("int64")).to_numpy()


def expected(
    events: pd.DataFrame,
    end_activities: set[str],
    *,
    sla: pd.Timedelta | None,
    min_evidence: int,
    now: pd.Timestamp | None = None,
    keep: set[str] | None = None,
) -> tuple[pd.DataFrame, int]:
    """One row per open case (of the cases in *keep*, all by default) with its estimate, written from the
    definitions in docs/mining.md, and the number of observations of the history."""
    if START not in events:  # one timestamp per event: a task starts and ends at it
        events = events.assign(**{START: events[END]})
    if "resource" not in events:
        events = events.assign(resource=events.get("org:resource"))
    ev = ordered(events).copy()
    ev["s"], ev["e"] = _ms(ev[START]), _ms(ev[END])
    now_ms = int(ev["e"].max()) if now is None else int(now.value // 1_000_000)  # every case: the clock
    if keep is not None:
        ev = ev[ev[CASE].isin(keep)]
    g = ev.groupby(CASE, sort=True)
    cases = pd.DataFrame({"start": g["s"].min(), "end": g["e"].max(), "last": g[ACT].last()})
    cases["done"] = cases["last"].isin(end_activities)
    obs = ev[ev[CASE].map(cases["done"])].copy()
    obs["elapsed"] = obs["e"] - obs[CASE].map(cases["start"])
    obs["remaining"] = obs[CASE].map(cases["end"]) - obs["e"]
    cut = pd.cut(obs["elapsed"], [0, *EDGES_MS, np.inf], right=False, labels=False)
    obs["bin"] = cut.astype(int)
    levels = np.arange(1, 20) / 20

    def grid(values: pd.Series) -> np.ndarray:
        r = np.sort(values.to_numpy(dtype="float64"))
        return np.append(np.quantile(r, levels, method="inverted_cdf"), r.max())

    fine = {k: (len(v), grid(v)) for k, v in obs.groupby([ACT, "bin"])["remaining"]}
    coarse = {k: (len(v), grid(v)) for k, v in obs.groupby(ACT)["remaining"]}
    overall = (len(obs), grid(obs["remaining"])) if len(obs) else (0, np.full(20, np.nan))
    samples = {k: v.to_numpy() for k, v in obs.groupby([ACT, "bin"])["remaining"]}
    samples |= {(k, None): v.to_numpy() for k, v in obs.groupby(ACT)["remaining"]}
    rows = []
    for case, row in cases[~cases["done"]].iterrows():
        elapsed = now_ms - int(row["start"])
        b = int(pd.cut([elapsed], [0, *EDGES_MS, np.inf], right=False, labels=False)[0])
        choice = [(fine.get((row["last"], b)), LEVELS[0], (row["last"], b))]
        choice.append((coarse.get(row["last"]), LEVELS[1], (row["last"], None)))
        n, q, level, key = overall[0], overall[1], LEVELS[2], None
        for found, name, k in choice:
            if found is not None and found[0] >= min_evidence:
                (n, q), level, key = found, name, k
                break
        out = {
            "case_id": case,
            "last_activity": row["last"],
            "elapsed": pd.Timedelta(milliseconds=elapsed),
            "level": level,
            "evidence": n,
            "p50_remaining": pd.Timedelta(milliseconds=q[9]) if n else pd.NaT,
            "p90_remaining": pd.Timedelta(milliseconds=q[17]) if n else pd.NaT,
        }
        if sla is not None:
            x = sla / pd.Timedelta(milliseconds=1) - elapsed
            below = np.flatnonzero(q <= x)
            out["p_late"] = 1.0 if x < 0 else 1.0 - (below[-1] + 1) / 20 if len(below) else 1.0
            pool = samples[key] if key is not None else obs["remaining"].to_numpy()
            out["exact_share"] = float((pool > x).mean()) if x >= 0 else 1.0
        rows.append(out)
    return pd.DataFrame(rows), len(obs)


def check(answer: pd.DataFrame, want: pd.DataFrame, observations: int) -> None:
    """The answer's rows equal the pandas rows (as a set of cases; the answer's own order checked apart)."""
    assert answer.attrs["observations"] == observations
    assert len(answer) == len(want)
    got = answer.set_index("case_id").sort_index()
    want = want.set_index("case_id").sort_index()
    assert list(got.index) == list(want.index)
    assert got["last_activity"].tolist() == want["last_activity"].tolist()
    assert got["elapsed"].tolist() == want["elapsed"].tolist()
    assert got["level"].tolist() == want["level"].tolist()
    assert got["evidence"].astype(int).tolist() == want["evidence"].astype(int).tolist()
    for col in ("p50_remaining", "p90_remaining"):
        a = got[col].astype("timedelta64[ms]").to_numpy()
        b = pd.to_timedelta(want[col]).astype("timedelta64[ms]").to_numpy()
        assert np.array_equal(a, b, equal_nan=True), col
    if "p_late" in want:
        assert got["p_late"].to_numpy() == pytest.approx(want["p_late"].to_numpy(), abs=1e-12)
        # the stated tolerance: within 0.05 of the exact share of the evidence
        assert np.all(np.abs(got["p_late"].to_numpy() - want["exact_share"].to_numpy()) <= 0.05 + 1e-12)
        order = answer[["p_late", "elapsed"]].to_numpy()
        assert all(tuple(order[i]) >= tuple(order[i + 1]) for i in range(len(order) - 1))  # ranked


# --- generated logs with the hard shapes ----------------------------------------------------------------
def hard_log(cases: int, seed: int) -> pd.DataFrame:
    """Cases of 1-6 tasks of A, B, C, ending with D (completed) in two of three cases (the open ones started
    lately; some stand at E, which no completed case passed): on a coarse grid of
    start offsets (many ties), instantaneous and overlapping tasks, an activity repeated, duplicate events,
    one-event cases; each case on its own time scale (minutes, hours or days), so every elapsed bin from a
    minute to months is used."""
    rng = np.random.default_rng(seed)
    base = pd.Timestamp("2025-01-01 08:00")
    rows = []
    for c in range(cases):
        unit = pd.Timedelta(minutes=float(rng.choice([1, 20, 240, 1440, 4320])))
        n = 1 if c % 11 == 0 else int(rng.integers(2, 7))
        done = rng.uniform() < 0.67
        acts = [str(rng.choice(["A", "B", "C"])) for _ in range(n)]
        if done:
            acts[-1] = "D"
            t = base + pd.Timedelta(hours=float(rng.integers(0, 24 * 150)))
        else:  # open cases are the recent ones; a few stand at E, which no completed case passed
            t = base + pd.Timedelta(days=200) - unit * float(rng.uniform(2, 12))
            acts[-1] = "E" if c % 7 == 0 else acts[-1]
        for i, act in enumerate(acts):
            start = t + unit * int(rng.integers(0, 3))  # a coarse grid: ties
            end = start + unit * float(rng.choice([0, 0.5, 2]))  # 0: instantaneous; 2: overlaps the next
            row = {CASE: f"h{seed}-{c:04d}", ACT: act, START: start, END: end, "resource": None}
            rows.extend([row, dict(row)] if (c + i) % 9 == 0 else [row])  # a duplicate event
            t = start
    frame = pd.DataFrame(rows)
    for col in (START, END):
        frame[col] = frame[col].dt.floor("ms")
    return frame


@pytest.fixture(scope="module")
def up_conn(tmp_path_factory, connect_workgroup):
    from pm_sandbox import start

    sb = start(cases=20, log_path=tmp_path_factory.mktemp("open-cases-sandbox") / "sandbox.log")
    conn = connect_workgroup(sb)
    yield conn
    conn.close()
    sb.stop()


def _uploaded(conn, name: str, events: pd.DataFrame):
    project = conn.create_project(name)
    assert conn.upload(project, events).status == "DONE"
    return conn.mining(project)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hard_shapes_against_pandas(up_conn, seed):
    events = hard_log(240, seed)
    log = _uploaded(up_conn, f"Open cases {seed}", events)
    sla = pd.Timedelta(days=3)
    answer = log.open_cases(sla=sla, end_activities=["D"], min_evidence=8)
    want, n = expected(events, {"D"}, sla=sla, min_evidence=8)
    check(answer, want, n)
    assert {lv for lv in answer["level"]} == set(LEVELS)  # every level answers some case: not vacuous
    assert answer.attrs["sql"].count(";\n\n") == 2  # three statements: now, the open cases, the history
    assert answer.attrs["now"] == pd.Timestamp(_ms(events[END]).max(), unit="ms", tz="UTC")
    # no sla: no p_late, the oldest first
    plain = log.open_cases(end_activities="D", min_evidence=8)
    assert "p_late" not in plain.columns
    assert plain["elapsed"].is_monotonic_decreasing
    want, n = expected(events, {"D"}, sla=None, min_evidence=8)
    check(plain, want, n)


def test_filters_choose_history_and_open_cases(up_conn):
    events = hard_log(240, 4)
    log = _uploaded(up_conn, "Open cases filtered", events)
    sizes = events.groupby(CASE).size()
    keep = set(sizes[sizes >= 3].index)
    answer = log.where("tasks_count >= 3").open_cases(sla="2 days", end_activities=["D"], min_evidence=5)
    want, n = expected(events, {"D"}, sla=pd.Timedelta(days=2), min_evidence=5, keep=keep)
    check(answer, want, n)
    # a filter that needs a semi-join of its own (a task-table condition) inside the joined cases
    with_b = set(events.loc[events[ACT] == "B", CASE])
    answer = log.with_activity("B").open_cases(sla="2 days", end_activities=["D"], min_evidence=5)
    want, n = expected(events, {"D"}, sla=pd.Timedelta(days=2), min_evidence=5, keep=with_b)
    check(answer, want, n)
    # as_of: elapsed to a later clock
    later = pd.Timestamp(_ms(events[END]).max(), unit="ms", tz="UTC") + pd.Timedelta(days=10)
    answer = log.open_cases(sla="20 days", as_of=later, end_activities=["D"], min_evidence=5)
    want, n = expected(events, {"D"}, sla=pd.Timedelta(days=20), min_evidence=5, now=later)
    check(answer, want, n)
    assert answer.attrs["now"] == later and answer.attrs["now_from"] == "as_of"
    assert answer.attrs["sql"].count(";\n\n") == 1  # two statements: no "now" to read


def test_receipt_log_against_pandas(up_conn):
    from tests.lifecycle.real_logs import read

    events = read("receipt")
    log = _uploaded(up_conn, "Receipt open cases", events)
    ends = {"T10 Determine necessity to stop indication", "T05 Print and send confirmation of receipt"}
    answer = log.open_cases(sla="7 days", end_activities=sorted(ends))
    want, n = expected(events, ends, sla=pd.Timedelta(days=7), min_evidence=30)
    check(answer, want, n)
    assert len(answer) > 100 and answer.attrs["levels"]["activity"] > 0


@pytest.mark.standin_only(
    "compares the percentiles of two statements exactly; on Druid each is a sketch within its rank error "
    "(tests/druid/test_mining.py::test_open_cases_same_answer_and_statements checks them within it)"
)
def test_the_completion_lookup_is_the_rule_it_stands_for(log, conn):
    """The demo's Order to Cash project's lookup marks a case completed when it ends with Receive Payment
    or Cancel Order: the answer by the lookup is the answer by those end activities. Purchase to Pay's
    cases are all completed: no open case, and no history statement run."""
    o2c = conn.mining("Order to Cash")
    by_lookup = o2c.open_cases(sla="30 days", min_evidence=5)
    given = o2c.open_cases(sla="30 days", end_activities=["Receive Payment", "Cancel Order"], min_evidence=5)
    assert len(by_lookup) > 0
    cols = [c for c in by_lookup.columns]
    pd.testing.assert_frame_equal(pd.DataFrame(by_lookup[cols]), pd.DataFrame(given[cols]))
    assert "lookup" in by_lookup.attrs["completion"]
    none = log.open_cases()
    assert len(none) == 0 and none.attrs["sql"].count(";\n\n") == 1


def test_bad_input_is_a_clear_error(up_conn):
    events = hard_log(30, 5)
    log = _uploaded(up_conn, "Open cases errors", events)
    with pytest.raises(SchemaError, match="Dd|'D'"):
        log.open_cases(end_activities=["Dd"])  # an unknown activity, with a suggestion
    for sla in ("soon", 30, "30", "-3 days", pd.Timedelta(0), True):
        with pytest.raises(ConfigurationError, match="sla"):
            log.open_cases(sla=sla, end_activities=["D"])
    with pytest.raises(ConfigurationError, match="as_of"):
        log.open_cases(as_of="not a date", end_activities=["D"])
    with pytest.raises(ConfigurationError, match="before the last event"):
        log.open_cases(as_of="2025-01-02", end_activities=["D"])
    with pytest.raises(ConfigurationError):
        log.open_cases(end_activities=["D"], min_evidence=0)
    with pytest.raises(ConfigurationError, match="end_activities"):
        log.open_cases(end_activities=[])


def test_the_statements_as_plain_values():
    from pm_notebook.mining import Schema
    from pm_notebook.mining._filters import Condition, Filters
    from pm_notebook.mining._open_cases import bin_of, late_share
    from pm_notebook.mining._sql import open_cases as sql

    schema = Schema(
        "p",
        {"cases": "p", "vertex": "p_vertex", "edge": "p_edge"},
        {
            "cases": {
                "__time": "TIMESTAMP",
                "enddate": "BIGINT",
                "caseid": "VARCHAR",
                "case_version": "VARCHAR",
            },
            "vertex": {"enddate": "BIGINT", "caseid": "VARCHAR", "vertex_name": "VARCHAR"},
            "edge": {
                "caseid": "VARCHAR",
                "source_vertex_name": "VARCHAR",
                "destination_vertex_name": "VARCHAR",
            },
        },
    )
    done = sql.Completion(end_activities=("D", "E"))
    opened = sql.open_cases(schema, Filters(), done)
    assert opened.params == ("D", "E")
    # the side Druid inlines is the open cases' transitions to END, whatever the filters
    assert opened.sql.endswith(
        'INNER JOIN (SELECT "caseid" AS "k", "source_vertex_name" AS "last" FROM "p_edge" WHERE '
        '"destination_vertex_name" = \'END\' AND "source_vertex_name" NOT IN (?, ?)) AS e '
        'ON "caseid" = e."k"'
    )
    filtered = sql.open_cases(schema, Filters().add(Condition("x > ?", (3,))), done)
    assert filtered.params == ("D", "E", 3) and filtered.sql.endswith('ON "caseid" = e."k" WHERE (x > ?)')
    past = sql.history(schema, Filters(), done)
    assert past.params == ("D", "E")
    assert (
        past.sql.count("APPROX_QUANTILE_DS") == 19 and 'MAX((c."end_ms" - v."enddate")) AS "p100"' in past.sql
    )
    assert past.sql.endswith(
        'GROUP BY GROUPING SETS ((v."vertex_name", '
        + sql.bin_expression('(v."enddate" - c."start_ms")')
        + '), (v."vertex_name"), ())'
    )
    assert sql.bin_expression("x").startswith(
        "CASE WHEN x < 60000 THEN 0 WHEN x < 120000 THEN 1 WHEN x < 300000 THEN 2"
    )
    # the bins in the client are the bins in the SQL: at, just below and just above every edge
    probes = np.array([0, *[e + d for e in EDGES_MS for d in (-1, 0, 1)]])
    want = [sum(v >= e for e in EDGES_MS) for v in probes]
    assert bin_of(probes).tolist() == want
    grid = np.append(np.arange(5, 100, 5, dtype=float), 150.0)  # percentile k is k, the maximum 150
    assert late_share(grid, -1) == 1.0 and late_share(grid, 4.5) == 1.0
    assert late_share(grid, 10) == pytest.approx(0.9) and late_share(grid, 12) == pytest.approx(0.9)
    assert late_share(grid, 99) == pytest.approx(0.05) and late_share(grid, 150) == 0.0


def test_sla_spellings():
    import datetime as dt

    from pm_notebook.mining._open_cases import parse_sla

    day = 86_400_000
    assert parse_sla("30d") == parse_sla("30 days") == parse_sla(pd.Timedelta(days=30)) == 30 * day
    assert parse_sla("2 weeks") == parse_sla(dt.timedelta(days=14)) == 14 * day
    assert parse_sla("12 h") == parse_sla("12h") == day // 2 and parse_sla("P1D") == day
    assert parse_sla(None) is None
    for bad in ("soon", 30, 2.5, "30", "-3 days", "0 s", pd.NaT, True, "3 parsecs"):
        with pytest.raises(ConfigurationError, match="sla"):
            parse_sla(bad)


def test_over_the_subquery_limit_it_names_large_subqueries(up_conn):
    """Under ``maxSubqueryRows`` (lowered to 100 here: the same plan as 100,000 on a larger log) the
    history's join inlines more completed cases than that and is refused with an error naming
    ``large_subqueries=True``; opened with it, the answer runs and equals the unlimited one."""
    from pm_notebook.errors import QueryError
    from pm_notebook.mining import ProcessLog

    from .test_subquery_limits import ContextSource

    events = hard_log(240, 6)
    project = up_conn.create_project("Open cases limit")
    assert up_conn.upload(project, events).status == "DONE"
    limited = ProcessLog.open(ContextSource(up_conn, {"maxSubqueryRows": 100}), project)
    with pytest.raises(QueryError, match="large_subqueries=True"):
        limited.open_cases(end_activities=["D"])
    large = ProcessLog.open(ContextSource(up_conn, {"maxSubqueryRows": 100}), project, large_subqueries=True)
    answer = large.open_cases(sla="3 days", end_activities=["D"], min_evidence=8)
    whole = up_conn.mining(project).open_cases(sla="3 days", end_activities=["D"], min_evidence=8)
    pd.testing.assert_frame_equal(pd.DataFrame(answer), pd.DataFrame(whole))


def test_the_docs_example_on_helpdesk_cut_at_2013(up_conn):
    """docs/mining.md's worked example: the Helpdesk log as it stood on 2013-01-01, against pandas."""
    from tests.lifecycle.real_logs import read

    events = read("helpdesk")
    cut = pd.Timestamp("2013-01-01", tz="UTC")
    started = events.groupby(CASE)[END].transform("min")
    kept = events[(started < cut) & (events[END] <= cut)].reset_index(drop=True)
    log = _uploaded(up_conn, "Helpdesk 2012", kept)
    answer = log.open_cases(sla="45 days", as_of=cut, end_activities=["Closed"])
    want, n = expected(kept, {"Closed"}, sla=pd.Timedelta(days=45), min_evidence=30, now=cut)
    check(answer, want, n)
    assert (len(answer), n) == (49, 17800)
    assert answer.attrs["levels"] == {"activity+elapsed": 39, "activity": 9, "overall": 1}
    row = answer.set_index("case_id").loc["Case 757"]
    assert (row["level"], int(row["evidence"]), round(row["p_late"], 2)) == ("activity+elapsed", 168, 0.8)
