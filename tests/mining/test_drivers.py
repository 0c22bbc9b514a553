"""``log.drivers``: the statistics against scipy on generated counts (many seeds: a planted effect is found,
null data gives false positives at no more than the stated 5 %), and the whole path on logs uploaded to a
sandbox of this module's own — one with a planted driver (supplier ``Acme``'s invoices are blocked far more
often, and so take longer), one without — whose counts equal pandas on the same events; the demo project's
completion lookup and filters checked against its raw tables.

The generated demo data is left as it is (its numbers are pinned by notebooks and many tests): the planted
driver lives in this module's uploaded log."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from pm_notebook.errors import ConfigurationError, QueryError, SchemaError
from pm_notebook.mining._drivers import bh_adjust, fisher_two_sided, value_statistics

from .sources import Counting

ALPHA = 0.05


# --- the statistics, in-process -------------------------------------------------------------------------
def _random_table(rng: np.random.Generator) -> tuple[int, int, int, int]:
    n = int(rng.integers(20, 400))
    n1 = int(rng.integers(1, n))
    k = int(rng.integers(0, n + 1))
    low, high = max(0, n1 + k - n), min(n1, k)
    return int(rng.integers(low, high + 1)), n1, k, n


def test_statistics_against_scipy():
    rng = np.random.default_rng(3)
    for _ in range(300):
        a, n1, k, n = _random_table(rng)
        row = value_statistics([a], [n1], k, n).iloc[0]
        b, n0 = k - a, n - n1
        assert row["rate_with"] == pytest.approx(a / n1)
        assert row["rate_without"] == pytest.approx(b / n0)
        assert row["difference"] == pytest.approx(a / n1 - b / n0)
        if k:
            assert row["lift"] == pytest.approx((a / n1) / (k / n))
        # Newcombe's hybrid score interval from scipy's Wilson intervals of the two rates
        w1 = st.binomtest(a, n1).proportion_ci(0.95, method="wilson")
        w0 = st.binomtest(b, n0).proportion_ci(0.95, method="wilson")
        p1, p0 = a / n1, b / n0
        assert row["ci_low"] == pytest.approx(p1 - p0 - np.hypot(p1 - w1.low, w0.high - p0), abs=1e-12)
        assert row["ci_high"] == pytest.approx(p1 - p0 + np.hypot(w1.high - p1, p0 - w0.low), abs=1e-12)
        table = [[a, n1 - a], [b, n0 - b]]
        expected = st.contingency.expected_freq(np.array(table)) if 0 < k < n else np.zeros((2, 2))
        if expected.min() < 5:
            assert row["test"] == "fisher"
            assert row["p_value"] == pytest.approx(st.fisher_exact(table).pvalue, rel=1e-9, abs=1e-15)
        else:
            assert row["test"] == "z"
            rate = k / n
            z = (p1 - p0) / np.sqrt(rate * (1 - rate) * (1 / n1 + 1 / n0))
            assert row["p_value"] == pytest.approx(2 * st.norm.sf(abs(z)), rel=1e-9, abs=1e-300)


def test_fisher_and_bh_on_known_values():
    assert fisher_two_sided(1, 4, 4, 8) == pytest.approx(st.fisher_exact([[1, 3], [3, 1]]).pvalue)
    p = np.random.default_rng(5).uniform(size=40)
    assert bh_adjust(p) == pytest.approx(st.false_discovery_control(p, method="bh"))


def _null_counts(rng: np.random.Generator, base: float, effect: float = 0.0):
    """Three dimensions (5, 4 and 8 values) over 2,000 cases, the outcome drawn with rate *base*; with an
    *effect*, the cases of the first dimension's first value get rate ``base + effect``."""
    n_cases = 2000
    dims = [rng.integers(0, m, n_cases) for m in (5, 4, 8)]
    rate = np.full(n_cases, base)
    rate[dims[0] == 0] += effect
    y = rng.uniform(size=n_cases) < rate
    a, n1, names = [], [], []
    for d, codes in enumerate(dims):
        for v in np.unique(codes):
            mask = codes == v
            a.append(int(y[mask].sum()))
            n1.append(int(mask.sum()))
            names.append((d, int(v)))
    return a, n1, int(y.sum()), n_cases, names


def test_null_data_false_positive_rate_is_under_the_level():
    """Over 2,000 seeds of null data (no value changes the rate), the share of answers with at least one
    significant row — the family-wise error, which Benjamini–Hochberg bounds by 5 % under the complete null
    — is at most the level plus the binomial sampling allowance (99.9 % upper bound)."""
    seeds, any_hit, raw_hits, raw_tests = 2000, 0, 0, 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        a, n1, k, n, _ = _null_counts(rng, base=float(rng.uniform(0.05, 0.5)))
        stats = value_statistics(a, n1, k, n)
        any_hit += bool(stats["significant"].any())
        raw_hits += int((stats["p_value"] < ALPHA).sum())
        raw_tests += len(stats)
    allowance = st.binom.ppf(0.999, seeds, ALPHA)
    assert any_hit <= allowance, f"{any_hit} of {seeds} null answers had a significant row"
    # each single test holds its level too (the unadjusted p-values)
    assert raw_hits <= st.binom.ppf(0.999, raw_tests, ALPHA)
    assert any_hit > 0  # the tests are not vacuous: at the stated level some null answers do hit


def test_a_planted_effect_is_found_top_ranked():
    found = 0
    for seed in range(200):
        rng = np.random.default_rng(10_000 + seed)
        a, n1, k, n, names = _null_counts(rng, base=0.2, effect=0.15)
        stats = value_statistics(a, n1, k, n)
        stats["name"] = names
        top = stats.sort_values(["p_adjusted"], kind="stable").iloc[0]
        found += top["name"] == (0, 0) and bool(top["significant"]) and top["ci_low"] > 0
    assert found >= 195  # power is ~100 % at this size of effect


# --- the whole path, on uploaded logs ---------------------------------------------------------------------
#: the uploaded column -> the dimension name the answer shows (its Druid column without ``_lpkr``)
NAMES = {"Supplier": "supplier", "Region": "region", "Amount": "amount"}
SUPPLIERS = ("Acme", "Globex", "Initech", "Umbrella", "Hooli")


def planted_log(cases: int, seed: int, effect: bool) -> pd.DataFrame:
    """Purchase-to-pay-like cases with a case-level ``Supplier`` and ``Region`` and a numeric
    ``Amount``; ``Block Invoice`` (and its wait) happens in 15 % of the cases, and — with *effect* — in
    65 % of supplier Acme's; every 7th case has no Region (a NULL value)."""
    rng = np.random.default_rng(seed)
    rows = []
    base = pd.Timestamp("2025-01-01 08:00")
    for c in range(cases):
        supplier = SUPPLIERS[int(rng.integers(0, len(SUPPLIERS)))]
        region = None if c % 7 == 0 else ("north", "south", "east")[int(rng.integers(0, 3))]
        amount = float(np.round(rng.lognormal(7, 1), 2))
        blocked = rng.uniform() < (0.65 if effect and supplier == "Acme" else 0.15)
        steps = ["Create Order", "Receive Goods", "Receive Invoice"]
        steps += ["Block Invoice", "Unblock Invoice"] if blocked else []
        steps += ["Pay Invoice"]
        if rng.uniform() < 0.2:
            steps.insert(2, "Receive Goods")  # rework
        t = base + pd.Timedelta(hours=float(rng.uniform(0, 24 * 200)))
        for act in steps:
            hours = float(rng.exponential(24 * (10 if act == "Unblock Invoice" else 1)))
            start = t + pd.Timedelta(hours=hours)
            end = start + pd.Timedelta(minutes=float(rng.uniform(1, 120)))
            rows.append(
                {
                    "case:concept:name": f"po-{seed}-{c:05d}",
                    "concept:name": act,
                    "start_timestamp": start,
                    "time:timestamp": end,
                    "Supplier": supplier,
                    "Region": region,
                    "Amount": amount,
                }
            )
            t = end
    frame = pd.DataFrame(rows)
    for col in ("start_timestamp", "time:timestamp"):
        frame[col] = frame[col].dt.floor("ms")
    return frame


def case_table(events: pd.DataFrame) -> pd.DataFrame:
    """One row per case, from the events alone: duration (ms), rework, activities and the dimensions."""
    g = events.sort_values(["case:concept:name", "start_timestamp"]).groupby("case:concept:name")
    out = pd.DataFrame(
        {
            "start": g["start_timestamp"].min(),
            "duration": (g["time:timestamp"].max() - g["start_timestamp"].min()).dt.total_seconds() * 1000,
            "rework": g["concept:name"].agg(lambda s: s.duplicated().any()),
            "activities": g["concept:name"].agg(set),
            "Supplier": g["Supplier"].first(),
            "Region": g["Region"].first(),
            "Amount": g["Amount"].first(),
        }
    )
    return out


@pytest.fixture(scope="module")
def up_conn(tmp_path_factory, connect_workgroup):
    from pm_sandbox import start

    sb = start(cases=20, log_path=tmp_path_factory.mktemp("drivers-sandbox") / "sandbox.log")
    conn = connect_workgroup(sb)
    yield conn
    conn.close()
    sb.stop()


@pytest.fixture(scope="module")
def planted(up_conn):
    events = planted_log(1200, seed=11, effect=True)
    project = up_conn.create_project("Drivers planted")
    assert up_conn.upload(project, events).status == "DONE"
    return up_conn.mining(project).with_excluded(), events


@pytest.fixture(scope="module")
def null(up_conn):
    events = planted_log(1200, seed=12, effect=False)
    project = up_conn.create_project("Drivers null")
    assert up_conn.upload(project, events).status == "DONE"
    return up_conn.mining(project).with_excluded(), events


def _expected_counts(
    cases: pd.DataFrame, y: pd.Series, answer: pd.DataFrame, dims: tuple[str, ...]
) -> pd.DataFrame:
    """Per dimension value (numeric ones cut at the answer's own quartile edges): cases and outcome
    cases, in pandas."""
    parts = []
    for dim in dims:
        col = cases[dim]
        if dim == "Amount":
            edges = answer.attrs["bins"][NAMES["Amount"]]
            codes = np.searchsorted(np.asarray(edges), col.to_numpy(), side="left") + 1
            labels = {1: f"≤ {edges[0]:g}", len(edges) + 1: f"> {edges[-1]:g}"}
            labels.update({i + 1: f"({edges[i - 1]:g}, {edges[i]:g}]" for i in range(1, len(edges))})
            col = pd.Series([labels[int(c)] for c in codes], index=cases.index)
        keyed = pd.DataFrame({"value": col.astype(object).where(col.notna(), None), "y": y})
        grouped = keyed.groupby("value", dropna=False)["y"].agg(["size", "sum"]).reset_index()
        grouped.insert(0, "dimension", NAMES[dim])
        parts.append(grouped)
    out = pd.concat(parts, ignore_index=True).rename(columns={"size": "cases", "sum": "outcome_cases"})
    out["value"] = out["value"].astype("string")
    return out


def _check_counts(
    answer: pd.DataFrame,
    cases: pd.DataFrame,
    y: pd.Series,
    min_cases: int,
    dims: tuple[str, ...] = ("Supplier", "Region", "Amount"),
) -> None:
    expected = _expected_counts(cases, y, answer, dims)
    kept = expected[(expected["cases"] >= min_cases) & (expected["cases"] < len(cases))]
    got = answer[["dimension", "value", "cases", "outcome_cases"]].astype(
        {"dimension": object, "cases": "int64", "outcome_cases": "int64"}
    )
    want = kept.astype({"dimension": object, "cases": "int64", "outcome_cases": "int64"})
    key = ["dimension", "value"]
    got = got.sort_values(key, na_position="first").reset_index(drop=True)
    want = want.sort_values(key, na_position="first").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert answer.attrs["cases"] == len(cases)
    assert answer.attrs["outcome_cases"] == int(y.sum())
    assert answer.attrs["left_out"] == len(expected) - len(kept)
    # and the statistics are those of the counts
    stats = value_statistics(
        answer["outcome_cases"].to_numpy(), answer["cases"].to_numpy(), int(y.sum()), len(cases)
    )
    assert answer["p_adjusted"].to_numpy() == pytest.approx(stats["p_adjusted"].to_numpy())


def test_the_planted_driver_is_recovered(planted):
    log, events = planted
    cases = case_table(events)
    answer = log.drivers("with_activity:Block Invoice")
    _check_counts(answer, cases, cases["activities"].map(lambda s: "Block Invoice" in s), 30)
    top = answer.iloc[0]
    assert (top["dimension"], top["value"]) == ("supplier", "Acme")
    assert top["significant"] and top["ci_low"] > 0.3 and top["lift"] > 2
    # docs/mining.md's worked example shows this answer
    assert (int(top["cases"]), int(top["outcome_cases"])) == (246, 162)
    assert not answer.loc[answer["dimension"] != "supplier", "significant"].any()
    others = answer[(answer["dimension"] == "supplier") & (answer["value"] != "Acme")]
    assert (others["difference"] < 0).all()  # compared with a rest that holds Acme's cases
    assert answer.attrs["sql"].count("GROUPING SETS") == 1
    # the blocked invoices wait ~10 days: Acme's cases are the slow ones too
    slow = log.drivers("slow")
    threshold = slow.attrs["threshold_ms"]
    assert slow.attrs["threshold"] == pd.Timedelta(milliseconds=threshold)
    _check_counts(slow, cases, cases["duration"] > threshold, 30)
    assert tuple(slow.iloc[0][["dimension", "value"]]) == ("supplier", "Acme")
    assert slow.iloc[0]["significant"]


def test_no_driver_where_none_was_planted(null):
    log, events = null
    cases = case_table(events)
    for outcome, y in (
        ("with_activity:Block Invoice", cases["activities"].map(lambda s: "Block Invoice" in s)),
        ("rework", cases["rework"]),
    ):
        answer = log.drivers(outcome, min_cases=20)
        _check_counts(answer, cases, y, 20)
        assert not answer["significant"].any(), answer.head()


def test_outcome_forms_and_filters_against_pandas(planted):
    log, events = planted
    cases = case_table(events)
    day = 86_400_000
    answer = log.drivers(pd.Timedelta(days=15), by=["Supplier", "Amount"], min_cases=1)
    _check_counts(answer, cases, cases["duration"] > 15 * day, 1, dims=("Supplier", "Amount"))
    assert log.drivers("slow:15 days", by="Supplier")["outcome_cases"].tolist() == (
        answer.loc[answer["dimension"] == "supplier", "outcome_cases"].tolist()
    )
    # a condition, and a filter composed before the answer
    start = pd.Timestamp("2025-04-01", tz="UTC")
    sub = cases[cases["start"].dt.tz_localize("UTC") >= start]
    cond = log.between(start, None).drivers("where:tasks_count >= 7", min_cases=10)
    tasks = events.groupby("case:concept:name").size().reindex(sub.index)
    _check_counts(cond, sub, tasks >= 7, 10)
    assert "where tasks_count >= 7" in cond.attrs["outcome"]


def test_not_completed_on_the_demo_project(log, raw):
    answer = log.drivers("not_completed", by=["supplier", "company_code"], min_cases=5)
    current = raw.cases[~raw.cases["case_version"].isin(raw.excluded)]
    y = ~current["case_version"].isin(raw.completed or set())
    assert answer.attrs["cases"] == len(current)
    assert answer.attrs["outcome_cases"] == int(y.sum())
    for dim, col in (("supplier", "supplier_lpkr"), ("company_code", "company_code_lpkr")):
        want = current.assign(y=y).groupby(col)["y"].agg(["size", "sum"])
        want = want[want["size"] >= 5]
        got = answer[answer["dimension"] == dim].set_index("value")
        assert dict(got["cases"].astype(int)) == dict(want["size"].astype(int))
        assert dict(got["outcome_cases"].astype(int)) == dict(want["sum"].astype(int))


def test_bad_arguments_are_clear_errors(planted):
    log, _ = planted
    for outcome in ("fast", "slow:p150", "slow:soon", "where:tasks_count > ?", 3, "with_activity:"):
        with pytest.raises(ConfigurationError):
            log.drivers(outcome)
    with pytest.raises(SchemaError, match="Block Invoice"):
        log.drivers("with_activity:Blok Invoice")  # an unknown activity, with a suggestion
    with pytest.raises(SchemaError):
        log.drivers("rework", by=["nope"])
    with pytest.raises(ConfigurationError):
        log.drivers("rework", min_cases=0)
    with pytest.raises(QueryError, match="nosuch"):
        log.drivers("where:nosuch > 1")  # Druid's own refusal, naming the column


def test_a_log_without_cases_has_no_driver(planted):
    log, _ = planted
    for outcome in ("slow", "rework"):
        answer = log.where("tasks_count < 0").drivers(outcome)
        assert len(answer) == 0 and answer.attrs["cases"] == 0 and answer.attrs["outcome_cases"] == 0


def test_one_statement_and_one_more_for_cut_points(up_conn, planted):
    from pm_notebook.mining import ProcessLog

    source = Counting(up_conn)
    log = ProcessLog.open(source, planted[0].project).with_excluded()
    log.with_activity("Block Invoice")  # reads the activity names once per log

    def sent(ask) -> int:
        source.sent.clear()
        ask()
        return len(source.sent)

    assert sent(lambda: log.drivers("rework", by="Supplier")) == 1
    assert sent(lambda: log.drivers(pd.Timedelta(days=9), by=["Supplier", "Region"])) == 1
    assert sent(lambda: log.drivers("with_activity:Block Invoice", by="Supplier")) == 1
    assert sent(lambda: log.drivers("slow", by="Supplier")) == 2  # the p75 first
    assert sent(lambda: log.drivers("rework")) == 2  # the quartiles of Amount first
    assert sent(lambda: log.drivers("slow")) == 2  # both in one statement


def test_the_statements_as_plain_values():
    from pm_notebook.mining import Schema
    from pm_notebook.mining._filters import Filters
    from pm_notebook.mining._sql import drivers as drivers_sql

    schema = Schema(
        "p",
        {"cases": "p", "vertex": "p_vertex", "edge": "p_edge"},
        {
            "cases": {
                "caseid": "VARCHAR",
                "duration": "BIGINT",
                "case_version": "VARCHAR",
                "rework": "BIGINT",
            },
            "vertex": {},
            "edge": {},
        },
    )
    amount = drivers_sql.Dimension("amount", '"amount_lpkr"', True, (10.0, 20.5))
    assert drivers_sql.bin_expression(amount) == (
        'CASE WHEN "amount_lpkr" <= 10.0 THEN 1 WHEN "amount_lpkr" <= 20.5 THEN 2 '
        'WHEN "amount_lpkr" IS NOT NULL THEN 3 END'
    )
    supplier = drivers_sql.Dimension("supplier", '"supplier_lpkr"', False)
    statement = drivers_sql.value_counts(schema, Filters(), ('"duration" > ?', (5,)), [supplier, amount])
    assert statement.params == (5,)
    assert statement.sql.startswith('SELECT "supplier_lpkr" AS "g0", CASE WHEN "amount_lpkr" <= 10.0')
    assert statement.sql.endswith(
        'FROM "p" GROUP BY GROUPING SETS (("supplier_lpkr"), ('
        + drivers_sql.bin_expression(amount)
        + "), ())"
    )
    cut = drivers_sql.cut_points(schema, Filters(), 0.75, [amount])
    assert cut.sql == (
        'SELECT APPROX_QUANTILE_DS("duration", 0.75) AS "threshold", '
        'APPROX_QUANTILE_DS("amount_lpkr", 0.25) AS "d0_q0", '
        'APPROX_QUANTILE_DS("amount_lpkr", 0.5) AS "d0_q1", '
        'APPROX_QUANTILE_DS("amount_lpkr", 0.75) AS "d0_q2" FROM "p"'
    )
