"""Every answer and filter under Druid's ``maxSubqueryRows``: plans that inline nothing big run as they
are; the ones that must inline (a case filter applied to the task or transition table, the windows over
each case's tasks of the handovers and the resource map) are refused with an error naming
``large_subqueries``, and run with it (the raised limit goes in
those statements' query context).

Most checks lower the limit to 100 rows on a 240-case project (the same plans as 100,000 rows on a
larger one, at a fraction of the cost); one test runs a project of more than 100,000 cases at the real
default. ``ContextSource`` is a real :class:`~pm_notebook.mining.Source` over the connection's ``druid``
transport that sends a query context (the server's default limit lowered, plus what the log adds)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from pm_notebook import frames
from pm_notebook.errors import QueryError
from pm_notebook.mining import ProcessLog
from pm_notebook.sql.params import check_params

from .perspectives_data import event_log

LIMIT = 100


class ContextSource:
    """Runs the log's statements over the ``druid`` transport with a query context: *base* (e.g. a lowered
    ``maxSubqueryRows``) under the context a statement asks for; records every context sent."""

    def __init__(self, conn: Any, base: dict[str, Any] | None = None) -> None:
        self.conn, self.base, self.sent = conn, dict(base or {}), []

    def query(self, sql: str, params: Any = None, *, context: dict[str, Any] | None = None) -> pd.DataFrame:
        merged = {**self.base, **(context or {})}
        self.sent.append(context)
        result = self.conn._sql().get("druid").execute(sql, check_params(params), context=merged or None)
        try:
            table = frames.to_table(frames.parse(result.columns, result.batches()))
        finally:
            result.close()
        return frames.to_pandas(table, transport="druid")

    def query_chunks(self, sql: str, params: Any = None, *, chunk_rows: int = 100_000):
        yield self.query(sql, params)

    def resolve_transport(self, name: str | None = None) -> str:
        return "druid"

    def project(self, project_id):
        return self.conn.project(project_id)

    def projects(self):
        return self.conn.projects()

    def column_names(self, project):
        return self.conn.column_names(project)  # the project's mapping, over REST: not a statement


@pytest.fixture(scope="module")
def small(tmp_path_factory, connect_workgroup):
    """A sandbox with the generated 240-case project; ``(connection, project)``."""
    from pm_sandbox import start

    sb = start(cases=20, log_path=tmp_path_factory.mktemp("limits-sandbox") / "sandbox.log")
    conn = connect_workgroup(sb)
    project = conn.create_project("Limits")
    conn.upload(project, event_log(240))
    yield conn, project
    conn.close()
    sb.stop()


def _answers(log: ProcessLog) -> dict[str, Any]:
    """Every answer of a log (each one called once)."""
    return {
        "summary": log.summary,
        "variants": log.variants,
        "throughput": log.throughput,
        "distribution": log.distribution,
        "activities": log.activities,
        "transitions": log.transitions,
        "bottlenecks": log.bottlenecks,
        "rework": log.rework,
        "cases_over_time": log.cases_over_time,
        "conformance": lambda: log.conformance([("Register", "Check")]),
        "process_map": log.process_map,
        "resources": log.resources,
        "resources_by_activity": lambda: log.resources(by="activity"),
        "endpoints": log.endpoints,
        "trace_lengths": log.trace_lengths,
        "arrivals": lambda: log.arrivals(quantiles=()),
        "work_in_progress": log.work_in_progress,
        "dotted_data": log.dotted_data,
        "performance_spectrum": lambda: log.performance_spectrum("Register", "Check"),
        "processing_and_waiting": log.processing_and_waiting,
        "top_variants": lambda: log.top_variants(0.9).summary(),
    }


def test_every_answer_runs_under_a_lowered_limit_without_the_option(small):
    conn, project = small
    log = ProcessLog.open(ContextSource(conn, {"maxSubqueryRows": LIMIT}), project)
    for answer in _answers(log).values():
        answer()  # none inlines more than the excluded cases (about 1 %)
    # filters on keys every table has need no subquery: every answer stays under the limit
    for answer in _answers(log.top_variants(0.9)).values():
        answer()


def test_inlining_plans_name_the_option_and_run_with_it(small):
    conn, project = small
    source = ContextSource(conn, {"maxSubqueryRows": LIMIT})
    plain = ProcessLog.open(source, project)
    wide = plain.with_resource("ana", "ben", "cai", "dev")  # keeps far more than 100 cases
    for answer in (wide.activities, wide.transitions, plain.handovers, plain.resource_map, plain.arrivals):
        with pytest.raises(QueryError, match="maxSubqueryRows") as err:
            answer()
        assert "large_subqueries=True" in (err.value.hint or "")
        if answer in (plain.handovers, plain.resource_map):  # a window over the tasks: only the option helps
            assert "variants" not in (err.value.hint or "") and "quantiles" not in (err.value.hint or "")
    assert "quantiles=()" in (err.value.hint or "")  # arrivals: the counts and means need no window
    opted = ProcessLog.open(source, project, large_subqueries=True)
    assert opted.arrivals("P1M")["p50_interarrival"].notna().any()
    assert {"enableWindowing": True, "maxSubqueryBytes": "auto"} in source.sent
    want = opted.with_excluded(False).with_resource("ana", "ben", "cai", "dev").activities()
    assert int(want["executions"].sum()) > LIMIT
    assert opted.handovers()["handovers"].sum() > LIMIT
    assert {"maxSubqueryBytes": "auto"} in source.sent
    # statements that inline nothing get no context
    source.sent.clear()
    opted.summary()
    assert all(c is None for c in source.sent[:1])


def test_compare_names_the_option_past_the_limit_and_runs_with_it(small):
    """``compare()`` inlines nothing over the cases table; its task and transition statements are those of
    ``activities()`` and ``transitions()``: a side filtered on a case-only column with more cases than the
    limit is refused naming ``large_subqueries=True``, and runs with it."""
    conn, project = small
    source = ContextSource(conn, {"maxSubqueryRows": LIMIT})
    plain = ProcessLog.open(source, project)
    a, b = plain.between(None, "2025-03-01"), plain.between("2025-03-01", None)
    with pytest.raises(QueryError, match="maxSubqueryRows") as err:
        a.compare(b)
    assert "large_subqueries=True" in (err.value.hint or "")
    # variant keys filter every table directly: no subquery, whatever the number of cases
    plain.top_variants(0.5).compare(plain.top_variants(0.9))
    opted = ProcessLog.open(source, project, large_subqueries=True)
    got = opted.between(None, "2025-03-01").compare(opted.between("2025-03-01", None))
    assert min(got.cases) > LIMIT and sum(got.cases) == int(opted.summary()["cases"].iloc[0])
    assert {"maxSubqueryBytes": "auto"} in source.sent


@pytest.fixture(scope="module")
def large(tmp_path_factory, connect_workgroup):
    """A sandbox whose demo workgroup has a project of 100,500 cases."""
    from pm_sandbox import start

    sb = start(
        cases=5,
        log_path=tmp_path_factory.mktemp("large-sandbox") / "sandbox.log",
        extra_args=["--large-project-cases", "100500"],
        timeout=600,
    )
    conn = connect_workgroup(sb)
    project = conn.projects()[-1]
    yield conn, project
    conn.close()
    sb.stop()


def test_more_than_100000_cases_at_the_default_limit(large):
    conn, project = large
    log = conn.mining(project)
    everything = log.with_excluded()
    assert int(everything.summary()["cases"].iloc[0]) == 100_500
    for answer in [*_answers(log).values(), *_answers(everything).values()]:
        answer()
    wide = everything.case_duration(min=pd.Timedelta(0))  # all 100,500 cases, through a semi-join
    with pytest.raises(QueryError, match="100,000") as err:
        wide.transitions()
    assert "large_subqueries=True" in (err.value.hint or "")
    # a window over the tasks inlines two rows per task: handovers() answers in parts of whole cases
    handed = log.handovers()
    tasks = int(log.summary()["events"].iloc[0])
    cases = int(log.summary()["cases"].iloc[0])
    assert handed.attrs["parts"] > 2 * tasks // 100_000 and int(handed["handovers"].sum()) == tasks - cases
    with pytest.raises(QueryError, match="100,000"):
        everything.arrivals()  # the window over the cases: its input and result, two rows per case
    opted = ProcessLog.open(ContextSource(conn), project, large_subqueries=True).with_excluded()
    got = opted.case_duration(min=pd.Timedelta(0)).transitions()
    assert int(got.loc[got["source"] == "START", "frequency"].sum()) == 100_500
    # compare(): runs at the default limit where no side needs a semi-join, names the option where one does
    both = log.compare(everything, top=3)
    assert both.cases[1] == 100_500 and both.statements == 11
    with pytest.raises(QueryError, match="100,000") as err:
        log.compare(wide)
    assert "large_subqueries=True" in (err.value.hint or "")
    assert opted.compare(opted.case_duration(min=pd.Timedelta(0)), top=3).cases == (100_500, 100_500)


def test_open_cases_over_100000_cases_names_the_option_and_runs_with_it(large):
    """open_cases() at Druid's default limit on a project of more than 100,000 cases: its history joins the
    tasks to the ~96,000 completed cases, which Druid inlines after the semi-join that finds them (their ids):
    more than 100,000 rows together, refused naming ``large_subqueries=True``; with it, the answer runs (no
    more statements) and learns from every completed case."""
    conn, project = large
    log = conn.mining(project).with_excluded()
    with pytest.raises(QueryError, match="100,000") as err:
        log.open_cases(end_activities=["Pay Invoice"])  # the cancelled orders are the open cases
    assert "large_subqueries=True" in (err.value.hint or "")
    opted = ProcessLog.open(ContextSource(conn), project, large_subqueries=True).with_excluded()
    answer = opted.open_cases(sla="30 days", end_activities=["Pay Invoice"])
    assert answer.attrs["sql"].count(";\n\n") == 2
    tasks = int(log.summary()["events"].iloc[0])
    assert 0 < answer.attrs["observations"] <= tasks and len(answer) > 0


def _documented_statements() -> dict[str, str]:
    """docs/mining.md's table of answers: the answer's cell → its statements cell."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "mining.md").read_text(encoding="utf-8")
    table = docs.split("## Every answer, its counterparts and its statements", 1)[1].split("\n\n")[2]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    return {row[0].lstrip("| "): row[-1].rstrip(" |") for row in rows}


def test_the_statements_each_answer_sends_are_the_documented_ones(small):
    conn, project = small
    source = ContextSource(conn)
    log = ProcessLog.open(source, project)
    log.schema  # noqa: B018 - read once; no answer reads it again

    def sent(ask) -> int:
        source.sent.clear()
        ask()
        return len(source.sent)

    calls = {
        "`summary()`": [log.summary],
        "`variants(top, by)`": [log.variants, lambda: log.variants(by="model")],
        "`throughput(by)`": [log.throughput, lambda: log.throughput(by="variant")],
        "`distribution(bucket)`": [log.distribution],
        "`activities()`": [log.activities],
        "`processing_and_waiting()`": [log.processing_and_waiting],
        "`transitions()`, `bottlenecks(k, metric)`": [log.transitions, log.bottlenecks],
        "`rework(by)`": [log.rework, lambda: log.rework(by="case")],
        "`cases_over_time(freq)`": [log.cases_over_time],
        "`conformance(allowed)`": [lambda: log.conformance([("Register", "Check")])],
        "`process_map()`": [log.process_map],
        "`endpoints()`": [log.endpoints],
        "`trace_lengths()`": [log.trace_lengths],
        "`resources()`": [log.resources],
        '`resources(by="activity")`': [lambda: log.resources(by="activity")],
        "`handovers()`": [log.handovers],
        "`resource_map()`": [log.resource_map],
        "`arrivals(freq, quantiles=(0.5, 0.9))`": [log.arrivals],
        "`work_in_progress(freq)`": [log.work_in_progress],
        "`dotted_chart(freq)`, `dotted_data(freq)`": [log.dotted_chart, log.dotted_data],
        "`performance_spectrum(a, b, freq)`": [lambda: log.performance_spectrum("Register", "Check")],
        "`to_pm4py()`": [log.to_pm4py],
        "`a.compare(b)`": [lambda: log.between(None, "2025-03-01").compare(log.between("2025-03-01", None))],
        "`open_cases(sla)`": [
            lambda: log.open_cases(end_activities=["Archive"]),
            lambda: log.open_cases(sla="3 days", end_activities=["Archive"]),
        ],
    }
    log.open_cases(end_activities=["Archive"])  # the activity names, read once per log
    documented = _documented_statements()
    assert set(documented) == set(calls)
    for answer, asks in calls.items():
        counts = {sent(ask) for ask in asks}
        assert counts == {int(documented[answer].split()[0])}, answer
    assert documented["`arrivals(freq, quantiles=(0.5, 0.9))`"] == "2 (1 with `quantiles=()`)"
    last = log.summary()["last_event"].iloc[0]
    assert sent(lambda: log.open_cases(as_of=last, end_activities=["Archive"])) == 2  # no clock to read
    assert sent(lambda: log.completed_only(["Archive"]).open_cases(end_activities=["Archive"])) == 2
    assert sent(lambda: log.arrivals(quantiles=())) == 1
    assert sent(lambda: log.top_variants(0.8)) == 1  # the one filter that runs a statement when made
    filtered = log.top_variants(0.8).with_activity("Check").between("2020-01-01", "2100-01-01")
    assert sent(filtered.activities) == 1  # filters add conditions, not statements
    fresh = ProcessLog.open(source, project)
    assert sent(lambda: fresh.with_activity("Check")) == 1  # the activity names, read once per log
    assert sent(lambda: fresh.without_activity("Ship").starts_with("Register").ends_with("Ship")) == 0
    assert sent(lambda: fresh.with_resource("ana").with_resource("ben")) == 1  # the resource names, once
