"""``%pm``: the process-mining answers in one line, with %pmsql's footer and error conventions."""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.core.error import UsageError

from pm_notebook.errors import ConfigurationError, SchemaError
from pm_notebook.magic.pm import ANSWERS, parse_pm_args

from .conftest import displayed


def test_each_answer_is_the_process_logs_answer_with_a_footer(pshell, conn, project):
    log = conn.mining(project)
    pshell.run_cell("%pm summary -o s")
    summary = pshell.user_ns["s"]
    pd.testing.assert_frame_equal(summary, log.summary())
    assert summary.attrs["sql"] == log.summary().attrs["sql"]
    footer = displayed(pshell)[-1].splitlines()[-1]
    assert footer.startswith("1 row × ") and footer.endswith(f" · via {conn.resolve_transport()}")
    pshell.run_cell("%pm variants --top 3 --by model -o v")
    pd.testing.assert_frame_equal(pshell.user_ns["v"], log.variants(top=3, by="model"))
    pshell.run_cell("%pm variants --top all -o every")
    pd.testing.assert_frame_equal(pshell.user_ns["every"], log.variants(top=None))
    assert "LIMIT" not in pshell.user_ns["every"].attrs["sql"]  # every variant
    pshell.run_cell("%pm bottlenecks --k 4 --metric total -o b")
    pd.testing.assert_frame_equal(pshell.user_ns["b"], log.bottlenecks(k=4, metric="total"))
    pshell.run_cell("%pm cases --freq P1M -o c")
    pd.testing.assert_frame_equal(pshell.user_ns["c"], log.cases_over_time("P1M"))


def test_completed_and_project_options(shell, conn, project, sandbox_store, sandbox):
    shell.run_cell(f'%pm summary --project "{project.name}" --include-excluded -o everything')
    db = sandbox_store.database(sandbox.workgroups["demo"].client_id)
    cases = db.execute(f'SELECT COUNT(*) FROM druid."{project.id}"').fetchone()[0]
    assert int(shell.user_ns["everything"]["cases"].iloc[0]) == cases  # excluded cases kept
    shell.run_cell("%pm summary --completed -o done")
    assert int(shell.user_ns["done"]["cases"].iloc[0]) <= cases


def test_map_fits_the_notebook_and_keeps_the_map(pshell):
    pshell.run_cell("%pm map --paths 0.5 -o pmap")
    pmap = pshell.user_ns["pmap"]
    (html,) = displayed(pshell, "text/html")
    # SVG (crisp at any zoom) no wider than the cell, aspect kept, scrolling past a maximum height
    assert html.startswith(
        '<div class="pm-map" style="max-height:640px;overflow:auto"><svg style="max-width:100%'
    )
    assert "</svg>\n</div>" in html and '<div class="pm-footer"' in html  # the footer of every table
    inner = len(pmap.all_nodes) - 2  # START and END are not activities
    hidden = len(pmap.all_edges) - len(pmap.edges)
    assert hidden > 0
    assert displayed(pshell)[-1].startswith(
        f"frequency: {inner} of {inner} activities, {len(pmap.edges)} of {len(pmap.all_edges)} paths "
        f"({hidden} paths hidden: "
    )


def test_sql_shows_the_statements_instead_of_the_table(pshell, conn, project):
    pshell.run_cell("%pm activities --sql")
    text = displayed(pshell)[-1]
    assert text == conn.mining(project).activities().attrs["sql"] + ";"
    assert "<table" not in displayed(pshell, "text/html")[-1]


def test_malformed_lines_are_usage_errors_with_the_hint(shell):
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("pm", "variants --k 3")
    message = str(info.value)
    assert "%pm variants does not take --k" in message and "takes --top, --by" in message
    assert "Traceback" not in message and "--verbose" not in message
    with pytest.raises(UsageError, match="invalid choice: 'nonsense'"):
        shell.run_line_magic("pm", "nonsense")


def test_without_a_project_it_says_how_to_choose_one(shell):
    with pytest.raises(ConfigurationError, match='(?s)%pm needs a project.*--project "Purchase to Pay"'):
        shell.run_line_magic("pm", "summary")


def test_help_lists_every_answer(shell):
    shell.run_cell("%pm --help")
    text = displayed(shell)[-1]
    assert all(name in text for name in ANSWERS)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('summary --project "unclosed', "No closing quotation"),
        ("map --top 3", "does not take --top"),
        ("variants --top x", "invalid int or 'all' value"),
    ],
)
def test_bad_lines_get_specific_errors(line, message):
    with pytest.raises(ConfigurationError, match=message):
        parse_pm_args(line)


def test_tab_completes_the_answer_names(bare_shell):
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        got = [c.text for c in bare_shell.Completer.completions("%pm bo", 6)]
    assert got == ["bottlenecks"]


def test_perspective_answers(pshell, conn, project):
    log = conn.mining(project)
    pshell.run_cell("%pm resources -o r")
    pd.testing.assert_frame_equal(pshell.user_ns["r"], log.resources())
    pshell.run_cell("%pm resources --by activity --resource resource -o ra")
    pd.testing.assert_frame_equal(pshell.user_ns["ra"], log.resources(by="activity"))
    pshell.run_cell("%pm handovers -o h")
    pd.testing.assert_frame_equal(pshell.user_ns["h"], log.handovers())
    pshell.run_cell("%pm arrivals --freq P1M -o a")
    pd.testing.assert_frame_equal(pshell.user_ns["a"], log.arrivals("P1M"))
    pshell.run_cell("%pm wip --freq P1M -o w")
    pd.testing.assert_frame_equal(pshell.user_ns["w"], log.work_in_progress("P1M"))
    pshell.run_cell("%pm endpoints -o e")
    pd.testing.assert_frame_equal(pshell.user_ns["e"], log.endpoints())
    footer = displayed(pshell)[-1].splitlines()[-1]
    assert footer.startswith(f"{len(pshell.user_ns['e'])} rows × ")


def test_dotted_chart_is_drawn(pshell, conn, project):
    pshell.run_cell("%pm dotted --freq P1W -o d")
    chart = pshell.user_ns["d"]
    pd.testing.assert_frame_equal(chart.data, conn.mining(project).dotted_data("P1W"))
    assert displayed(pshell, "image/png")
    assert displayed(pshell)[-1].startswith(f"{len(chart.data):,} bins · ")


def test_resource_option_names_a_missing_column(shell, project):
    with pytest.raises(SchemaError, match="Nobody"):
        shell.run_line_magic("pm", f'resources --project "{project.name}" --resource Nobody')


def test_drivers_verb_is_the_logs_answer(pshell, conn, project):
    log = conn.mining(project)
    pshell.run_cell("%pm drivers rework --by supplier,company_code --min-cases 5 -o d")
    pd.testing.assert_frame_equal(
        pshell.user_ns["d"], log.drivers("rework", by=["supplier", "company_code"], min_cases=5)
    )
    pshell.run_cell('%pm drivers "where:tasks_count > 6" -o w')
    pd.testing.assert_frame_equal(pshell.user_ns["w"], log.drivers("where:tasks_count > 6"))
    with pytest.raises(ConfigurationError, match="needs an outcome"):
        parse_pm_args("drivers --by supplier")
    with pytest.raises(ConfigurationError, match="does not take --min-cases"):
        parse_pm_args("summary --min-cases 3")


def _same_comparison(got, want) -> None:
    for name in ("summary", "tests", "durations", "variants", "activities", "transitions"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name))
    assert got.labels == want.labels and got.sql == want.sql


def test_compare_verb_is_the_logs_comparison(pshell, conn, project):
    log = conn.mining(project)
    pshell.run_cell("%pm compare 2025-01-01..2025-04-01 2025-04-01.. -o c")
    a, b = log.between("2025-01-01", "2025-04-01"), log.between("2025-04-01", None)
    _same_comparison(pshell.user_ns["c"], a.compare(b, labels=("2025-01-01..2025-04-01", "2025-04-01..")))
    shown = displayed(pshell)
    assert "Comparison of" in displayed(pshell, "text/html")[0]
    assert shown[-1].startswith("11 statements · ")
    # two values of a case dimension, every variant listed, and the compared map under the tables
    value_a, value_b = (str(v) for v in log.throughput(by="supplier")["supplier"].dropna()[:2])
    pshell.run_cell(f'%pm compare --by supplier "{value_a}" "{value_b}" --top all --map --paths 1 -o d')
    col = log.schema.dimension("cases", "supplier")
    want = log.where(f"{col} = ?", value_a).compare(
        log.where(f"{col} = ?", value_b), labels=(value_a, value_b), top=None
    )
    _same_comparison(pshell.user_ns["d"], want)
    html = displayed(pshell, "text/html")
    assert any('<div class="pm-map"' in h and "vanished from a" in h for h in html)
    pshell.run_cell('%pm compare "where:rework > 0" "where:rework = 0" -o r')
    assert pshell.user_ns["r"].cases == (
        int(log.where("rework > 0").summary()["cases"].iloc[0]),
        int(log.where("rework = 0").summary()["cases"].iloc[0]),
    )
    for line, message in (
        ("compare 2025-01-01..", "needs two parts"),
        ("compare a b c", "needs two parts"),
        ("summary extra words", "unexpected"),
        ("map --map", "--map goes with %pm compare"),
        ("compare a b --k 3", "does not take --k"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            parse_pm_args(line)
    with pytest.raises(UsageError, match="needs two parts"):
        pshell.run_line_magic("pm", "compare 2025-01-01..")
    with pytest.raises(ConfigurationError, match="neither a period"):
        pshell.run_line_magic("pm", "compare 2025 2026")


def test_open_cases_verb_is_the_logs_answer(pshell, conn):
    pshell.run_cell('%pm open_cases --project "Order to Cash" --sla 30d -o o')
    pd.testing.assert_frame_equal(pshell.user_ns["o"], conn.mining("Order to Cash").open_cases(sla="30d"))
    assert len(pshell.user_ns["o"]) > 0 and "p_late" in pshell.user_ns["o"].columns
    pshell.run_cell("%pm open_cases -o plain")
    assert "p_late" not in pshell.user_ns["plain"].columns
    pshell.run_cell('%pm open_cases --end-activities "Receive Payment, Cancel Order" -o given')
    pd.testing.assert_frame_equal(
        pshell.user_ns["given"],
        conn.mining("Order to Cash").open_cases(end_activities=["Receive Payment", "Cancel Order"]),
    )
    with pytest.raises(ConfigurationError, match="does not take --end-activities"):
        parse_pm_args("drivers rework --end-activities X")
    with pytest.raises(ConfigurationError, match="does not take --sla"):
        parse_pm_args("summary --sla 30d")
    with pytest.raises(ConfigurationError, match="no unit"):
        conn.mining("Order to Cash").open_cases(sla="30")


def _opens(sql: str) -> bool:
    """Whether *sql* is one of the statements that open a log: the schema (two) or the excluded cases'
    ids (``AS "current"``) or count (``AS "excluded_cases"``)."""
    return "INFORMATION_SCHEMA" in sql or 'AS "current"' in sql or 'AS "excluded_cases"' in sql


def test_a_session_reads_a_projects_schema_and_exclusions_once(
    bare_shell, sandbox, connect_workgroup, wire_of, project
):
    """The first %pm line opens the project's log (three statements); the next lines reuse it, whatever
    their options; an upload through %pm opens it anew."""
    with connect_workgroup(sandbox, transport="druid") as c:
        wire = wire_of(c)
        bare_shell.user_ns["c"] = c
        bare_shell.run_cell("%pmsql --connection c")
        bare_shell.run_cell(f'%pm summary --project "{project.id}" -o first')
        opening = [s for s in wire.sql if _opens(s)]
        assert len(opening) == 3
        wire.clear()
        bare_shell.run_cell("%pm summary --include-excluded -o everything")
        bare_shell.run_cell("%pm variants --top 2 --completed -o v")
        assert not [s for s in wire.sql if _opens(s)]
        assert wire.rest == []
        log = c.mining(project)
        pd.testing.assert_frame_equal(bare_shell.user_ns["first"], log.summary())
        pd.testing.assert_frame_equal(bare_shell.user_ns["everything"], log.with_excluded().summary())
        pd.testing.assert_frame_equal(bare_shell.user_ns["v"], log.completed_only().variants(top=2))
