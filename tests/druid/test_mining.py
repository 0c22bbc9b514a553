"""docs/mining.md on a real Druid 33 and on the stand-in: every answer and every case filter gives the same
frame, and every statement an answer sends gives the same rows or the same refusal — under Druid's default
limits and again under a small ``maxSubqueryRows``, so the limit model that shapes the stand-in's refusals is
checked on the demo project's small data (300 cases, ~2,800 tasks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _compare import differences, rows
from _mining_source import RecordingSource, Sent, run

from pm_notebook.errors import QueryError
from pm_notebook.mining import ProcessLog
from pm_notebook.mining._schema import ROLES
from pm_notebook.mining._sql._base import qname
from pm_notebook.mining._sql.open_cases import LEVELS as OPEN_LEVELS

#: the small limit the statements run under a second time: fewer rows than the demo project's 300 cases, so
#: every semi-join of a case filter and the window of arrivals() is over it, and every statement that inlines
#: nothing runs as before
SMALL = {"maxSubqueryRows": 100}

#: the relative rank error of Druid's quantiles sketch (DataSketches ``k`` = 128, Druid's default): the
#: normalised rank error at 99 % confidence is 1.725 % of n (DataSketches' table for k = 128); a value
#: Druid answers for quantile q is the exact q' quantile for some |q' - q| <= this.
RANK_ERROR = 0.01725
#: how far a quantile cell may differ, as a share of the column's largest value: the rank error above on
#: large groups, one rank on a group of a few dozen values (see _same_answer)
QUANTILE_TOLERANCE = 0.2


def _is_quantile(column: str) -> bool:
    """A column computed by ``APPROX_QUANTILE_DS`` (medians, p-quantiles; ``*_interarrival`` too)."""
    return (
        column.startswith(("median", "p"))
        and column[1:2].isdigit()
        or "median" in column
        or (column.startswith("p") and column.split("_")[0][1:].isdigit())
    )


#: name -> (answer on a log, the log's filters applied first)
ANSWERS: dict[str, Callable[[ProcessLog], Any]] = {
    "summary": lambda log: log.summary(),
    "variants": lambda log: log.variants(top=None),
    "variants_model": lambda log: log.variants(top=None, by="model"),
    "throughput": lambda log: log.throughput(),
    "throughput_variant": lambda log: log.throughput(by="variant"),
    "throughput_month": lambda log: log.throughput(by="P1M"),
    "distribution": lambda log: log.distribution(),
    "activities": lambda log: log.activities(),
    "processing_and_waiting": lambda log: log.processing_and_waiting(),
    "transitions": lambda log: log.transitions(),
    "bottlenecks": lambda log: log.bottlenecks(k=5, min_count=1),
    "rework": lambda log: log.rework(),
    "rework_case": lambda log: log.rework(by="case", top=None),
    "cases_over_time": lambda log: log.cases_over_time("P1W"),
    "conformance": lambda log: log.conformance(log.process_map(paths=0.3)),
    "process_map": lambda log: log.process_map().edges,
    "endpoints": lambda log: log.endpoints(),
    "trace_lengths": lambda log: log.trace_lengths(),
    "resources": lambda log: log.resources(),
    "resources_activity": lambda log: log.resources(by="activity"),
    "arrivals": lambda log: log.arrivals("P1M"),
    "arrivals_no_quantiles": lambda log: log.arrivals("P1M", quantiles=()),
    "work_in_progress": lambda log: log.work_in_progress("P1W"),
    "dotted_data": lambda log: log.dotted_data("P1W"),
    "performance_spectrum": lambda log: log.performance_spectrum(*_pair(log), "P1M"),
    "to_pm4py": lambda log: log.to_pm4py(),
}


def _pair(log: ProcessLog) -> tuple[str, str]:
    edges = log.transitions(min_count=5)
    inner = edges[~edges["source"].isin(["START", "END"]) & ~edges["target"].isin(["START", "END"])]
    return str(inner.iloc[0]["source"]), str(inner.iloc[0]["target"])


#: the answers over a window of each case's tasks (tested on their own: their merge-buffer shape)
LATER = {"handovers": lambda log: log.handovers(), "resource_map": lambda log: log.resource_map().edges}

#: every case filter of docs/mining.md (given the project's names: see ``names``)
FILTERS: dict[str, Callable[[ProcessLog, dict[str, Any]], ProcessLog]] = {
    "where": lambda log, n: log.where("rework >= ?", 1),
    "between": lambda log, n: log.between("2025-01-01", "2025-04-01"),
    "variants_in": lambda log, n: log.variants_in(*n["variants"]),
    "top_variants": lambda log, n: log.top_variants(0.5),
    "with_activity": lambda log, n: log.with_activity(n["rare"]),
    "without_activity": lambda log, n: log.without_activity(n["rare"]),
    "directly_follows": lambda log, n: log.directly_follows(*n["pair"]),
    "eventually_follows": lambda log, n: log.eventually_follows(*n["pair"]),
    "starts_with": lambda log, n: log.starts_with(n["start"]),
    "ends_with": lambda log, n: log.ends_with(n["end"]),
    "completed_only": lambda log, n: log.completed_only(),
    "completed_only_given": lambda log, n: log.completed_only([n["end"]]),
    "case_duration": lambda log, n: log.case_duration(min="30 days"),
    "attribute": lambda log, n: log.attribute(n["attribute"][0], [n["attribute"][1]]),
    "with_resource": lambda log, n: log.with_resource(*n["resources"]),
    "with_excluded": lambda log, n: log.with_excluded(),
}
FILTERED_ANSWERS = ("summary", "activities", "transitions")


@pytest.fixture(scope="module")
def project(standin_conn, druid_conn, sandbox):
    pid = sandbox.workgroups["demo"].project_ids[0]
    return next(p for p in standin_conn.projects() if p.id == pid)


@pytest.fixture(scope="module")
def logs(standin_conn, druid_conn, project):
    """``(stand-in log, Druid log)``: the same project; SQL to each engine, REST to the stand-in."""
    ours = ProcessLog.open(RecordingSource(standin_conn, standin_conn), project)
    theirs = ProcessLog.open(RecordingSource(druid_conn, standin_conn), project)
    return ours, theirs


@pytest.fixture(scope="module")
def names(logs):
    return project_names(logs[0])


def project_names(log: ProcessLog) -> dict[str, Any]:
    """Names the filters pick from the project (read on the stand-in): its most frequent transition between
    two activities, its rarest activity, a start and an end activity, three variants, two resources and a
    value of a task dimension."""
    edges = log.transitions()
    inner = edges[~edges["source"].isin(["START", "END"]) & ~edges["target"].isin(["START", "END"])]
    starts = edges[edges["source"] == "START"].iloc[0]["target"]
    ends = edges[edges["target"] == "END"].iloc[0]["source"]
    acts = log.activities().sort_values(["executions", "activity"])
    resources = log.resources()["resource"].dropna().astype(str).tolist()[:2]
    roles = {name for accepted in ROLES["vertex"].values() for name in accepted}
    column = next(
        c
        for c, kind in sorted(log.schema.columns["vertex"].items())
        if kind == "VARCHAR" and c.lower() not in roles and "resource" not in c and not c.endswith("_id")
    )
    value = run(log._source.sql_conn, f'SELECT MIN("{column}") FROM {log.schema.table("vertex")}', [], {})
    return {
        "pair": (str(inner.iloc[0]["source"]), str(inner.iloc[0]["target"])),
        "rare": str(acts.iloc[0]["activity"]),
        "start": str(starts),
        "end": str(ends),
        "variants": log.variants(top=3)["variant"].astype(str).tolist(),
        "resources": resources,
        "attribute": (column, str(value.iloc[0, 0])),
    }


def _frame(value: Any) -> pd.DataFrame:
    return value if isinstance(value, pd.DataFrame) else pd.DataFrame(value)


def _approximate(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if _is_quantile(str(c))]


def _same_answer(ours: pd.DataFrame, theirs: pd.DataFrame) -> list[str]:
    """The exact columns equal (row for row), the quantile columns within the sketch's error."""
    approx = _approximate(ours)
    exact = [c for c in ours.columns if c not in approx]
    out = differences("", ours[exact], theirs[exact])
    for column in approx:
        a = pd.to_numeric(pd.Series(ours[column]).map(_number), errors="coerce").to_numpy(float)
        b = pd.to_numeric(pd.Series(theirs[column]).map(_number), errors="coerce").to_numpy(float)
        both = ~(np.isnan(a) | np.isnan(b))
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            out.append(f"{column}: NULLs differ")
        spread = np.nanmax(np.abs(a)) if both.any() else 0.0
        # Druid's sketch is exact below 2k = 256 values but takes the ceil(q * n)-th value in floating point
        # (0.1 * 20 = 2.0000000000000004: the 3rd of 20, where the stand-in takes the 2nd): one rank apart in
        # a small group, which moves a value by up to a fifth of the column's range on the demo's durations
        bad = both & (np.abs(a - b) > QUANTILE_TOLERANCE * max(spread, 1.0))
        if bad.any():
            out.append(f"{column}: stand-in {a[bad][:3]} vs Druid {b[bad][:3]}")
    return out


def _number(value: Any) -> float:
    if value is None or value is pd.NaT or value is pd.NA:
        return float("nan")
    if isinstance(value, pd.Timedelta):
        return value / pd.Timedelta(milliseconds=1)
    if isinstance(value, pd.Timestamp):
        return float(value.value)
    return float(value)


def _ask(log: ProcessLog, answer: Callable[[ProcessLog], Any]) -> tuple[pd.DataFrame, list[Sent]]:
    source = log._source
    assert isinstance(source, RecordingSource)
    source.sent.clear()
    frame = _frame(answer(log))
    return frame, list(source.sent)


def _cases() -> list[tuple[str, str | None]]:
    return [(a, None) for a in ANSWERS] + [(a, f) for f in FILTERS for a in FILTERED_ANSWERS]


def _ids() -> list[str]:
    return [a if f is None else f"{f}-{a}" for a, f in _cases()]


@pytest.mark.parametrize(("answer", "filter_name"), _cases(), ids=_ids())
def test_same_answer_and_same_statements(logs, names, standin_conn, druid_conn, answer, filter_name):
    ours, theirs = logs
    if filter_name is not None:
        ours, theirs = FILTERS[filter_name](ours, names), FILTERS[filter_name](theirs, names)
    a, sent_ours = _ask(ours, ANSWERS[answer])
    b, sent_theirs = _ask(theirs, ANSWERS[answer])
    assert [s.sql for s in sent_ours] == [s.sql for s in sent_theirs]  # the same schema, the same SQL
    assert _same_answer(a, b) == []
    for limit in ({}, SMALL):
        for sent in sent_theirs:
            assert _same_statement(standin_conn, druid_conn, sent, limit) == []


def _same_statement(standin_conn, druid_conn, sent: Sent, limit: dict[str, Any]) -> list[str]:
    """One recorded statement, with its own context over *limit*: the same rows, or the same refusal."""
    context = {**limit, **(sent.context or {})}
    outcome = []
    for conn in (standin_conn, druid_conn):
        try:
            outcome.append(run(conn, sent.sql, sent.params, context))
        except QueryError as exc:
            outcome.append(exc)
    ours, theirs = outcome
    where = f"[{context}] {sent.sql[:300]}"
    if isinstance(ours, QueryError) or isinstance(theirs, QueryError):
        if not (isinstance(ours, QueryError) and isinstance(theirs, QueryError)):
            return [f"{where}: stand-in {_brief(ours)} vs Druid {_brief(theirs)}"]
        if _phrase(ours) != _phrase(theirs):
            return [f"{where}: stand-in refused {_phrase(ours)!r}, Druid {_phrase(theirs)!r}"]
        return []
    approx = [c for c in ours.columns if "APPROX_QUANTILE_DS" in sent.sql and _is_quantile(str(c))]
    if approx:  # rows in the order of their exact columns (an ORDER BY may tie), quantiles within the error
        return [f"{where}: {d}" for d in _same_answer(_by_exact(ours), _by_exact(theirs))]
    return [f"{where}: {d}" for d in differences(sent.sql, ours, theirs)]


def _by_exact(frame: pd.DataFrame) -> pd.DataFrame:
    exact = [c for c in frame.columns if not _is_quantile(str(c))]
    keys = [repr(r) for r in rows(frame[exact])]
    return frame.iloc[sorted(range(len(frame)), key=keys.__getitem__)].reset_index(drop=True)


def _phrase(exc: QueryError) -> str:
    """The refusal's key phrase: Druid's error name and the limit the message names."""
    text = f"{exc} {exc.server_message or ''}"
    for phrase in ("beyond maximum", "merge buffer", "Resource limit exceeded"):
        if phrase in text:
            return phrase
    return type(exc).__name__


def _brief(outcome: Any) -> str:
    if isinstance(outcome, QueryError):
        return f"refused ({_phrase(outcome)}: {str(outcome)[:160]})"
    return f"{len(outcome)} rows"


# --- large_subqueries: bounded by the broker's memory, not by rows --------------------------------------


def _inlining(log: ProcessLog, names: dict[str, Any]) -> Callable[[], pd.DataFrame]:
    """An answer Druid can only run by inlining a subquery: the task table under a case filter on resources
    (the semi-join inlines every kept case, far more than the limit below)."""
    return lambda: log.with_resource(*names["resources"]).activities()


def _health(druid_cluster) -> bool:
    import urllib.request

    with urllib.request.urlopen(f"{druid_cluster.broker}/status/health", timeout=30) as answer:
        return bool(answer.read().strip() == b"true")


@pytest.mark.parametrize("engine", ["stand-in", "druid"])
def test_large_subqueries_is_a_memory_budget(engine, standin_conn, druid_conn, druid_cluster, project, names):
    """Under a small ``maxSubqueryRows`` (the server's limit, lowered here to 100 rows), an answer that must
    inline is refused naming ``large_subqueries=True``; with it the statement carries
    ``maxSubqueryBytes: "auto"``, which on Druid 33 replaces the row limit (it runs); with a byte budget too
    small it is refused naming the budget, in bytes — and the broker answers its health check after each."""
    sql_conn = standin_conn if engine == "stand-in" else druid_conn
    base = {"maxSubqueryRows": 100}
    plain = ProcessLog.open(RecordingSource(sql_conn, standin_conn, base), project)
    with pytest.raises(QueryError, match=r"more than 100 rows \(maxSubqueryRows\)") as refused:
        _inlining(plain, names)()
    assert "large_subqueries=True" in (refused.value.hint or "")

    source = RecordingSource(sql_conn, standin_conn, base)
    opted = ProcessLog.open(source, project, large_subqueries=True)
    got = _inlining(opted, names)()
    assert {"maxSubqueryBytes": "auto"} in [s.context for s in source.sent]
    # the oracle: the same answer with no limit in the way (Druid's default 100,000 rows)
    unlimited = ProcessLog.open(RecordingSource(sql_conn, standin_conn), project)
    assert _same_answer(got, _inlining(unlimited, names)()) == []
    assert int(got["executions"].sum()) > 100

    tight = ProcessLog.open(RecordingSource(sql_conn, standin_conn, base), project, large_subqueries=2_000)
    with pytest.raises(QueryError, match=r"more than 2,000 bytes.*\(maxSubqueryBytes\)") as budget:
        _inlining(tight, names)()
    assert "large_subqueries=<bytes>" in (budget.value.hint or "")
    if engine == "druid":
        assert _health(druid_cluster)


@pytest.mark.parametrize("answer", list(LATER))
def test_the_handover_answers_run_on_two_merge_buffers(logs, answer):
    """``handovers()`` and ``resource_map()`` run on Druid 33 with its default 2 merge buffers (a quantile of
    merged sketches in a GROUP BY over a GROUP BY over the window would not: ``handovers()`` takes its
    medians from one GROUP BY over the window), with the stand-in's answer."""
    ours, theirs = logs
    assert _same_answer(_frame(LATER[answer](ours)), _frame(LATER[answer](theirs))) == []


def test_a_merge_buffer_refusal_names_the_broker_setting(logs, druid_conn):
    """Should a broker refuse a plan for merge buffers, the error names the setting to raise: the shape that
    needs three (measured on Druid 33), sent through a log's own runner."""
    from pm_notebook.mining._sql._base import Statement

    _, theirs = logs
    pid = theirs._project.id
    window = (
        f'SELECT "caseid" AS c, "resource_lpkr" AS r, LAG("resource_lpkr") OVER (PARTITION BY "caseid" '
        f'ORDER BY "__time") AS p, TIMESTAMP_TO_MILLIS("__time") AS t FROM "{pid}_vertex"'
    )
    per_case = f"SELECT p, r, c, DS_QUANTILES_SKETCH(t) AS s FROM ({window}) GROUP BY p, r, c"
    sql = f"SELECT p, r, APPROX_QUANTILE_DS(s, 0.5) AS m FROM ({per_case}) GROUP BY p, r"
    with pytest.raises(QueryError) as info:
        theirs._run(Statement(sql, ()))
    assert "merge buffer" in (info.value.server_message or "")
    assert "druid.processing.numMergeBuffers" in str(info.value) + (info.value.hint or "")


def test_the_small_limit_is_reached(logs, names, standin_conn, druid_conn):
    """The second run of the statements is not idle: under ``maxSubqueryRows: 100`` the semi-join of a
    resource filter (it inlines the ids of the cases it keeps, more than 100) is refused by both."""
    _, theirs = logs
    _, sent = _ask(theirs.with_resource(*names["resources"]), ANSWERS["activities"])
    inlining = [s for s in sent if " IN (SELECT" in s.sql]
    assert inlining
    refused = [_same_statement(standin_conn, druid_conn, s, SMALL) for s in inlining]
    assert refused == [[] for _ in inlining]
    for s in inlining:
        with pytest.raises(QueryError, match="beyond maximum"):
            run(druid_conn, s.sql, s.params, {**SMALL, **(s.context or {})})
        with pytest.raises(QueryError, match="beyond maximum"):
            run(standin_conn, s.sql, s.params, {**SMALL, **(s.context or {})})


# --- compare(): every statement on both engines, every table the same -------------------------------------
#: name -> (a, b) of a comparison, from a log and the project's names
COMPARED: dict[str, Callable[[ProcessLog, dict[str, Any]], tuple[ProcessLog, ProcessLog]]] = {
    "periods": lambda log, n: (log.between("2025-01-01", "2025-04-01"), log.between("2025-04-01", None)),
    "rare_activity": lambda log, n: (log.with_activity(n["rare"]), log.without_activity(n["rare"])),
    "dimension": lambda log, n: (
        log.where('"supplier_lpkr" = ?', n["suppliers"][0]),
        log.where('"supplier_lpkr" = ?', n["suppliers"][1]),
    ),
}


@pytest.mark.parametrize("which", list(COMPARED))
def test_compare_same_tables_and_same_statements(logs, names, standin_conn, druid_conn, which):
    """``a.compare(b)`` on Druid and on the stand-in: the same eleven statements, each giving the same rows
    (or the same refusal) under the default limits and under ``maxSubqueryRows: 100``, and the same tables —
    counts, tests and the binned durations exact (the bins are ``FLOOR(LN(...))`` on each engine), quantiles
    within the sketch's error."""
    suppliers = logs[0].throughput(by="supplier")["supplier"].dropna().astype(str).tolist()[:2]
    n = {**names, "suppliers": suppliers}
    got = []
    for log in logs:
        a, b = COMPARED[which](log, n)
        source = log._source
        assert isinstance(source, RecordingSource)
        source.sent.clear()
        got.append((a.compare(b, top=None), list(source.sent)))
    (ours, sent_ours), (theirs, sent_theirs) = got
    assert [s.sql for s in sent_ours] == [s.sql for s in sent_theirs]
    assert len(sent_theirs) == theirs.statements == 11
    for name in ("summary", "tests", "durations", "variants", "activities", "transitions"):
        a, b = (getattr(c, name).reset_index(drop=True) for c in (ours, theirs))
        assert _same_answer(a, b) == [], name
    assert ours.cases == theirs.cases and min(theirs.cases) > 0
    if which == "rare_activity":
        acts = theirs.activities.set_index("activity")
        assert acts.loc[names["rare"], "status"] == "vanished"
    for limit in ({}, SMALL):
        for sent in sent_theirs:
            assert _same_statement(standin_conn, druid_conn, sent, limit) == []


# --- open_cases(): its three statements on Druid ---------------------------------------------------------
#: how far p_late may differ: the 0.05 of its percentile grid on each engine, and the sketch's rank error
P_LATE_TOLERANCE = 0.05 + RANK_ERROR


@pytest.mark.parametrize(
    "ask",
    [
        lambda log: log.open_cases(sla="30 days", min_evidence=5),  # by the completion lookup
        lambda log: log.open_cases(sla="20 days", end_activities=["Receive Payment"], min_evidence=5),
        lambda log: log.between("2025-04-01", None).open_cases(sla="30 days", min_evidence=5),
        lambda log: log.where("tasks_count > ?", 5).open_cases(
            sla="20 days", end_activities=["Receive Payment"]
        ),
    ],
    ids=["lookup", "end_activities", "filtered", "filtered_end_activities"],
)
def test_open_cases_same_answer_and_statements(standin_conn, druid_conn, ask):
    """Order to Cash (the demo project with open cases): the same open cases, elapsed times, levels and
    evidence (exact), the percentiles within the sketch's error, ``p_late`` within its grid and the sketch's
    error; each of the three statements gives the same rows on both engines, and under a small
    ``maxSubqueryRows`` the same refusal (its join inlines the filtered completed cases, more than 100)."""
    project = next(p for p in standin_conn.projects() if p.name == "Order to Cash")
    ours = ProcessLog.open(RecordingSource(standin_conn, standin_conn), project)
    theirs = ProcessLog.open(RecordingSource(druid_conn, standin_conn), project)
    a, sent_ours = _ask(ours, ask)
    b, sent_theirs = _ask(theirs, ask)
    assert len(a) > 0 and b.attrs["sql"].count(";\n\n") == 2  # three statements (and the activity names)
    assert [s.sql for s in sent_ours] == [s.sql for s in sent_theirs]
    assert _same_answer(a.drop(columns="p_late"), b.drop(columns="p_late")) == []
    assert np.all(np.abs(a["p_late"].to_numpy() - b["p_late"].to_numpy()) <= P_LATE_TOLERANCE)
    assert a.attrs["observations"] == b.attrs["observations"] and a.attrs["now"] == b.attrs["now"]
    for limit in ({}, SMALL):
        for sent in sent_theirs:
            if "APPROX_QUANTILE_DS" in sent.sql and not limit:
                assert _same_history(standin_conn, druid_conn, sent) == []
            else:
                assert _same_statement(standin_conn, druid_conn, sent, limit) == []
    with pytest.raises(QueryError, match="beyond maximum"):
        history = sent_theirs[-1]
        run(druid_conn, history.sql, history.params, {**SMALL, **(history.context or {})})


@pytest.mark.parametrize("filter_name", list(FILTERS))
def test_open_cases_with_every_filter(logs, names, filter_name):
    """Every case filter composes with open_cases() on Druid (Purchase to Pay, open = not ending with Pay
    Invoice: its cancelled orders): the same answer as the stand-in's, from the same statements."""
    ours, theirs = (FILTERS[filter_name](log, names) for log in logs)

    def ask(log: ProcessLog) -> pd.DataFrame:
        return log.open_cases(sla="30 days", end_activities=["Pay Invoice"], min_evidence=5)

    a, sent_ours = _ask(ours, ask)
    b, sent_theirs = _ask(theirs, ask)
    assert [s.sql for s in sent_ours] == [s.sql for s in sent_theirs]
    assert _same_answer(a.drop(columns="p_late"), b.drop(columns="p_late")) == []
    # no completed case in a filtered log (the rare activity's cases): no estimate, p_late NaN on both
    late_a, late_b = a["p_late"].to_numpy(), b["p_late"].to_numpy()
    assert np.allclose(late_a, late_b, rtol=0, atol=P_LATE_TOLERANCE, equal_nan=True)
    assert a.attrs["observations"] == b.attrs["observations"]


def _same_history(standin_conn, druid_conn, sent: Sent) -> list[str]:
    """The history statement's rows on both engines: the groups, their observations and maxima equal; each
    percentile Druid answers is the stand-in's exact quantile at a level within the sketch's rank error
    (or one rank, on a small group) of the level asked — between the stand-in's percentiles at the levels
    around that window, as the stand-in's grid gives them."""
    ours, theirs = (run(c, sent.sql, sent.params, sent.context or {}) for c in (standin_conn, druid_conn))
    key = ["grouping", "activity", "bin"]
    ours, theirs = (f.sort_values(key, na_position="first").reset_index(drop=True) for f in (ours, theirs))
    out = differences(sent.sql, ours[[*key, "observations", "p100"]], theirs[[*key, "observations", "p100"]])
    levels = np.array([*OPEN_LEVELS, 1.0])
    names = [qname(q) for q in OPEN_LEVELS]
    grid_ours = ours[[*names, "p100"]].astype("float64").to_numpy()
    grid_theirs = theirs[names].astype("float64").to_numpy()
    for i, n in enumerate(ours["observations"].astype("int64")):
        tol = RANK_ERROR + 1 / n
        for j, q in enumerate(OPEN_LEVELS):
            # the stand-in's percentiles at the grid's levels just outside [q - tol, q + tol]
            below, above = np.flatnonzero(levels <= q - tol), np.flatnonzero(levels >= q + tol)
            low = grid_ours[i, below[-1]] if len(below) else -np.inf
            high = grid_ours[i, above[0]] if len(above) else grid_ours[i, -1]
            if not low <= grid_theirs[i, j] <= high:
                out.append(f"row {i} (n={n}) {names[j]}: Druid {grid_theirs[i, j]} outside [{low}, {high}]")
    return out
