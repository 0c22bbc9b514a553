"""``%pmsql`` / ``%%pmsql`` in a real IPython shell against the sandbox (HTTP + SQL ports)."""

from __future__ import annotations

import threading
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest
from IPython.core.error import UsageError

from pm_notebook import ConfigurationError, NotFound, QueryCancelled, QueryError, _current
from pm_notebook.magic.template import TemplateError
from pm_notebook.testing import TestingShell

from .conftest import displayed, shown_text


def _count(sandbox, sandbox_store, sql: str) -> int:
    """An expected value computed in-process on the same deterministic data (DuckDB, schema ``druid``)."""
    db = sandbox_store.database(sandbox.workgroups["demo"].client_id)
    return db.cursor().execute(sql).fetchone()[0]


# --- results, display, capture ---------------------------------------------------------------------------
def test_cell_displays_table_and_footer(pshell, project, sandbox, sandbox_store):
    n = _count(sandbox, sandbox_store, f'SELECT COUNT(*) FROM druid."{project.id}"')
    pshell.run_cell("%config PmSql.displaylimit = 5")
    pshell.run_cell("%%pmsql\nSELECT caseid, duration FROM {cases} ORDER BY __time")
    (out,) = pshell.displayed
    html = out["data"]["text/html"]
    assert html.count("<tr") == 6  # header + displaylimit rows
    assert f"{n:,} rows × 2 columns" in html
    assert " s · via " in html
    assert "Showing the first 5 rows" in html


def test_capture_with_output_and_no_display(pshell, conn, project):
    sql = f'SELECT caseid, duration, __time FROM "{project.id}" ORDER BY __time LIMIT 25'
    pshell.run_cell(f"%%pmsql -o df --no-display\n{sql}")
    assert pshell.displayed == []
    pd.testing.assert_frame_equal(pshell.user_ns["df"], conn.query(sql))


def test_capture_with_output_still_displays(pshell):
    pshell.run_cell("%%pmsql -o small\nSELECT caseid FROM {cases} ORDER BY __time LIMIT 3")
    assert len(pshell.user_ns["small"]) == 3
    assert "3 rows × 1 column" in displayed(pshell)[0]


def test_line_form_returns_the_dataframe(pshell, project, sandbox, sandbox_store):
    expected = _count(sandbox, sandbox_store, f'SELECT COUNT(*) FROM druid."{project.id}_vertex"')
    pshell.run_cell("df = %pmsql SELECT COUNT(*) AS n FROM {vertex}")
    df = pshell.user_ns["df"]
    assert isinstance(df, pd.DataFrame)
    assert int(df["n"].iloc[0]) == expected
    assert pshell.displayed == []  # the line form shows nothing itself: Out[] does


def test_empty_result_keeps_its_columns(pshell):
    pshell.run_cell("%%pmsql -o none\nSELECT caseid, duration FROM {cases} WHERE 1 = 0")
    assert list(pshell.user_ns["none"].columns) == ["caseid", "duration"]
    assert len(pshell.user_ns["none"]) == 0
    assert "0 rows × 2 columns" in displayed(pshell)[0]


def test_bare_line_shows_connection_and_project(pshell, sandbox, project):
    pshell.run_cell("%pmsql")
    shown = displayed(pshell)[0]
    assert f"Connected to {sandbox.base_url}" in shown
    kinds = "{cases} (cases), {vertex} (tasks), {edge} (transitions)"
    assert f"Project {project.name!r}: {kinds}." in shown
    assert project.id not in shown  # names, not UUIDs


def test_project_with_no_display_chooses_silently(shell, project):
    shell.run_cell(f'%pmsql --project "{project.name}" --no-display')
    assert shell.displayed == []
    shell.run_cell("n = %pmsql SELECT COUNT(*) AS n FROM {vertex}")
    assert int(shell.user_ns["n"]["n"].iloc[0]) > 0


def test_trailing_semicolon_is_accepted(pshell):
    pshell.run_cell("got = %pmsql SELECT COUNT(*) AS n FROM {cases};")
    assert int(pshell.user_ns["got"]["n"].iloc[0]) > 0


# --- templating and binding ------------------------------------------------------------------------------
def test_identifier_from_python_variable_is_quoted(shell, project, sandbox, sandbox_store):
    shell.user_ns["tbl"] = f"{project.id}_edge"
    expected = _count(sandbox, sandbox_store, f'SELECT COUNT(*) FROM druid."{project.id}_edge"')
    shell.run_cell("r = %pmsql SELECT COUNT(*) AS n FROM {tbl}")
    assert int(shell.user_ns["r"]["n"].iloc[0]) == expected


@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_value_with_quotes_and_keywords_is_bound_not_pasted(pshell, transport):
    evil = "x' OR '1'='1'; DROP TABLE cases; -- \"{cases}\" :other"
    pshell.user_ns["evil"] = evil
    pshell.run_cell(f"%%pmsql -o echo --no-display --transport {transport}\nSELECT :evil AS v")
    assert pshell.user_ns["echo"]["v"].iloc[0] == evil
    pshell.run_cell(
        f"%%pmsql -o hits --no-display --transport {transport}\n"
        "SELECT COUNT(*) AS n FROM {cases} WHERE caseid = :evil"
    )
    assert int(pshell.user_ns["hits"]["n"].iloc[0]) == 0


def test_list_value_expands_for_in(pshell, project, sandbox, sandbox_store):
    db = sandbox_store.database(sandbox.workgroups["demo"].client_id)
    ids = [
        r[0]
        for r in db.cursor()
        .execute(f'SELECT caseid FROM druid."{project.id}" ORDER BY caseid LIMIT 3')
        .fetchall()
    ]
    pshell.user_ns["ids"] = ids
    pshell.user_ns["minimum"] = 0
    pshell.run_cell(
        "%%pmsql -o got --no-display\n"
        "SELECT caseid FROM {cases} WHERE caseid IN (:ids) AND duration >= :minimum\n"
        "GROUP BY caseid ORDER BY caseid"
    )
    assert pshell.user_ns["got"]["caseid"].tolist() == ids


def test_ipython_does_not_expand_braces_in_the_line(pshell):
    pshell.user_ns["cases"] = "not a table"  # the shortcut wins; IPython must not paste this in
    pshell.run_cell("got = %pmsql SELECT COUNT(*) AS n FROM {cases}")
    assert int(pshell.user_ns["got"]["n"].iloc[0]) > 0


def test_unknown_template_name_is_a_short_error(shell):
    with pytest.raises(
        TemplateError, match=r"\{nope\} \(line 1, column 15\): no Python variable named 'nope'"
    ) as info:
        shell.run_cell("%pmsql SELECT * FROM {nope}")
    # shown with a caret under the placeholder in the magic's line, not with the query's own line numbers
    text = shown_text(info.value)
    assert text.startswith("TemplateError: {nope}: no Python variable named 'nope'")
    assert "    %pmsql SELECT * FROM {nope}\n                         ^" in text


# --- project shortcuts -----------------------------------------------------------------------------------
def test_project_by_id_and_all_three_shortcuts(shell, conn):
    second = conn.projects()[1]
    shell.run_cell(f"%pmsql --project {second.id}")
    assert f"Project {second.name!r}: {{cases}} (cases)" in displayed(shell)[0]
    for kind, suffix in (("cases", ""), ("vertex", "_vertex"), ("edge", "_edge")):
        shell.run_cell(f"got = %pmsql SELECT COUNT(*) AS n FROM {{{kind}}}")
        direct = conn.query(f'SELECT COUNT(*) AS n FROM "{second.id}{suffix}"')
        assert int(shell.user_ns["got"]["n"].iloc[0]) == int(direct["n"].iloc[0])


def test_project_name_is_case_insensitive_and_unknown_names_list_choices(shell, project):
    shell.run_cell(f'%pmsql --project "{project.name.upper()}"')
    with pytest.raises(ConfigurationError) as info:
        shell.run_cell("%pmsql --project nonexistent")
    assert "No project named or with id 'nonexistent'" in str(info.value)
    assert project.name in str(info.value)


def test_shortcut_without_project_explains_what_to_do(shell):
    with pytest.raises(TemplateError, match="choose a project with %pmsql --project"):
        shell.run_cell("%pmsql SELECT * FROM {vertex}")


# --- options ---------------------------------------------------------------------------------------------
def test_autolimit_config_and_limit_option(pshell, project, sandbox, sandbox_store):
    n = _count(sandbox, sandbox_store, f'SELECT COUNT(*) FROM druid."{project.id}"')
    pshell.run_cell("%config PmSql.autolimit = 7")
    pshell.run_cell("%%pmsql -o a\nSELECT caseid FROM {cases}")
    assert len(pshell.user_ns["a"]) == 7
    assert "Stopped at the row limit (7)" in displayed(pshell)[-1]
    pshell.run_cell("b = %pmsql --limit 0 SELECT caseid FROM {cases}")
    assert len(pshell.user_ns["b"]) == n
    pshell.run_cell("c = %pmsql --limit 3 SELECT caseid FROM {cases}")
    assert len(pshell.user_ns["c"]) == 3


def test_limit_equal_to_size_is_not_reported_as_cut(pshell):
    pshell.run_cell("%%pmsql -o a --limit 4\nSELECT caseid FROM {cases} ORDER BY __time LIMIT 4")
    assert len(pshell.user_ns["a"]) == 4
    assert "Stopped" not in displayed(pshell)[-1]


@pytest.mark.parametrize("transport", ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_transport_option_and_config(pshell, conn, project, transport):
    sql = f'SELECT caseid, duration FROM "{project.id}" ORDER BY __time LIMIT 10'
    pshell.run_cell(f"%%pmsql -o df --transport {transport}\n{sql}")
    pd.testing.assert_frame_equal(pshell.user_ns["df"], conn.query(sql, transport=transport))
    assert f"via {transport}" in displayed(pshell)[-1]
    pshell.run_cell(f"%config PmSql.transport = '{transport}'")
    pshell.run_cell(f"%%pmsql\n{sql}")
    assert f"via {transport}" in displayed(pshell)[-1]


def test_footer_names_the_transport_that_served_the_cell(pshell, conn):
    sql = "SELECT caseid FROM {cases} GROUP BY caseid ORDER BY caseid LIMIT 3"
    pshell.run_cell(f"%%pmsql -o auto\n{sql}")  # no --transport: the connection's "auto" choice
    served = pshell.user_ns["auto"].attrs["transport"]
    assert served in {"druid", "avatica", "jdbc"}
    assert served == conn.fetch("SELECT 1").transport
    assert displayed(pshell)[-1].splitlines()[-1].endswith(f" · via {served}")


def test_a_small_chunk_rows_still_fetches_every_row_and_zero_is_refused(pshell, project):
    from traitlets import TraitError

    from pm_notebook.magic import PmSql

    pshell.run_cell("%config PmSql.chunk_rows = 2")
    sql = "SELECT caseid FROM {cases} GROUP BY caseid ORDER BY caseid LIMIT 5"
    pshell.run_cell(f"%%pmsql --transport avatica -o few\n{sql}")
    assert len(pshell.user_ns["few"]) == 5
    (magic,) = [c for c in pshell.configurables if isinstance(c, PmSql)]
    with pytest.raises(TraitError, match="chunk_rows must be a positive number of rows, got 0"):
        magic.chunk_rows = 0
    assert magic.chunk_rows == 2
    with pytest.raises(TraitError, match="autolimit must be 0 \\(no limit\\) or a number of rows, got -1"):
        magic.autolimit = -1


def test_chunks_stream_dataframes(pshell, project, sandbox, sandbox_store):
    n = _count(sandbox, sandbox_store, f'SELECT COUNT(*) FROM druid."{project.id}"')
    pshell.run_cell("%%pmsql --chunks 40 -o parts\nSELECT caseid FROM {cases}")
    sizes = [len(part) for part in pshell.user_ns["parts"]]
    assert sum(sizes) == n and max(sizes) <= 40 and len(sizes) >= n // 40
    assert "parts streams the result" in displayed(pshell)[0]
    with pytest.raises(UsageError, match="keep it with -o NAME"):
        pshell.run_cell("%%pmsql --chunks 40\nSELECT 1")
    pshell.run_cell("it = %pmsql --chunks 1000 SELECT caseid FROM {cases}")
    assert sum(len(part) for part in pshell.user_ns["it"]) == n


@pytest.mark.parametrize("transport", ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_chunks_kept_across_cells_survive_the_cells_between(
    pshell, project, sandbox, sandbox_store, transport
):
    """`%%pmsql --chunks N -o it`, one chunk read, other `%%pmsql` cells on the same transport, then the rest:
    every row arrives. The sandbox holds the statement mid-result until the other cells ran (it cannot have
    ended before them); reading the rest, the reader reaches the hold, which is then released."""
    select = (
        "SELECT v.caseid, v.vertex_name, c.caseid AS across_cells FROM {vertex} AS v "
        "CROSS JOIN (SELECT caseid FROM {cases} LIMIT 60) AS c"
    )
    real = select.format(vertex=f'druid."{project.id}_vertex"', cases=f'druid."{project.id}"')
    db = sandbox_store.database(sandbox.workgroups["demo"].client_id)
    expected = db.cursor().execute(real).df()
    after = 110_000
    assert len(expected) > after
    pshell.run_cell(f"%%pmsql --transport {transport}\nSELECT 1 AS warm")
    pshell.run_cell(f"%%pmsql --chunks 1000 -o it --transport {transport}\n{select}")
    sandbox.hold_statements("across_cells", after_rows=after)
    pshell.run_cell("first = next(it)")
    n = _count(sandbox, sandbox_store, f'SELECT COUNT(*) FROM druid."{project.id}"')
    pshell.run_cell(f"%%pmsql -o other --transport {transport}\nSELECT COUNT(*) AS n FROM {{cases}}")
    assert pshell.user_ns["other"]["n"].tolist() == [n]
    pshell.run_cell(f"again = %pmsql --transport {transport} SELECT COUNT(*) AS n FROM {{cases}}")
    assert pshell.user_ns["again"]["n"].tolist() == [n]
    rest: list = []
    failed: list[BaseException] = []

    def read() -> None:
        try:
            rest.extend(pshell.user_ns["it"])
        except BaseException as exc:  # reported below
            failed.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    sandbox.wait_held(1, timeout=60)
    sandbox.release()
    reader.join(60)  # a hang guard, not a measure
    assert not reader.is_alive(), "the iterator hangs"
    assert not failed, failed
    got = pd.concat([pshell.user_ns["first"], *rest], ignore_index=True)

    def norm(frame):
        return frame.astype(str).sort_values(list(frame.columns)).reset_index(drop=True)

    pd.testing.assert_frame_equal(norm(got), norm(expected))
    assert sandbox.held()["statements"]["ended"] == {"released": 1}


def test_to_parquet_writes_every_row(pshell, project, sandbox, sandbox_store, tmp_path):
    n = _count(sandbox, sandbox_store, f'SELECT COUNT(*) FROM druid."{project.id}_vertex"')
    path = tmp_path / "vertex out.parquet"
    pshell.run_cell(f"%%pmsql --to-parquet '{path}'\nSELECT * FROM {{vertex}}")
    assert pq.read_metadata(path).num_rows == n
    assert f"Wrote {n:,} rows to {path}" in displayed(pshell)[0]


def test_explain_shows_the_plan(pshell):
    pshell.run_cell("%%pmsql --explain -o plan\nSELECT COUNT(*) FROM {cases}")
    shown = displayed(pshell)[0]
    assert shown.strip()
    assert shown.rstrip() == "\n".join(str(v) for v in pshell.user_ns["plan"].iloc[:, 0]).rstrip()


def test_tables_listing(shell, conn, project):
    shell.run_cell("everything = %pmsql --tables")
    expected = {t.name for p in conn.projects() for t in conn.tables(p)}
    assert set(shell.user_ns["everything"]["table"]) == expected
    shell.run_cell(f"%pmsql --project {project.id}")
    shell.run_cell("mine = %pmsql --tables")
    got = shell.user_ns["mine"]
    assert set(got["kind"]) == {"cases", "vertex", "edge"}
    assert set(got["project_id"]) == {project.id}


def test_columns_listing(pshell, conn, project):
    pshell.run_cell("cols = %pmsql --columns vertex")
    cols = pshell.user_ns["cols"]
    expected = conn.columns(f"{project.id}_vertex")
    assert cols["name"].tolist() == [c.name for c in expected]
    assert "vertex_name" in set(cols["name"])
    pshell.run_cell(f'%pmsql --columns "{project.id}_edge" -o edge_columns')
    n = len(conn.columns(f"{project.id}_edge"))
    assert f"{n} rows × 4 columns" in displayed(pshell)[-1]


def test_verbose_shows_sql_and_raises_the_real_error(pshell):
    pshell.user_ns["v"] = 5
    pshell.run_cell("%%pmsql -v --no-display -o x\nSELECT :v AS v")
    shown = displayed(pshell)[0]
    assert "parameters: :v" in shown and "SELECT ? AS v" in shown
    with pytest.raises(QueryError):
        pshell.run_cell("%%pmsql --verbose\nSELECT no_such_column FROM {cases}")


def test_help(shell):
    shell.run_cell("%pmsql --help")
    assert "--to-parquet PATH" in displayed(shell)[0]


# --- errors ----------------------------------------------------------------------------------------------
def test_sql_error_shows_server_message_and_marks_the_line(pshell):
    with pytest.raises(QueryError) as info:
        pshell.run_cell("%%pmsql\nSELECT caseid,\n       no_such_column\nFROM {cases}")
    text = shown_text(info.value)
    assert text.startswith("QueryError: Column 'no_such_column' not found in any table\n")
    # one position: the caret, with the cell's line numbers (the %%pmsql line is line 1), no "(line [2], ...)"
    assert "    3 |        no_such_column\n      |        ^" in text
    assert "line [" not in text and "column [" not in text
    assert "Traceback" not in text and "java." not in text and "at org." not in text


def test_caret_points_into_the_cell_as_typed(pshell, project):
    """The caret is under what the user typed ({vertex}, :name), not under the SQL sent (a UUID, a ?)."""
    pshell.user_ns["who"] = "x"
    with pytest.raises(QueryError) as info:
        pshell.run_cell(
            "%%pmsql --limit 3\nSELECT caseid FROM {vertex}\nWHERE caseid = :who AND vertex_nme = 'y'"
        )
    text = shown_text(info.value)
    assert "    3 | WHERE caseid = :who AND vertex_nme = 'y'\n      |                         ^" in text
    assert project.id not in text
    with pytest.raises(QueryError) as info:
        pshell.run_cell("%pmsql --explain SELECT {cases}.caseid, duratio FROM {cases}")
    assert (
        "    %pmsql --explain SELECT {cases}.caseid, duratio FROM {cases}\n" + " " * 44 + "^"
        in shown_text(info.value)
    )


@pytest.mark.parametrize(
    ("sql", "meant"),
    [
        ("SELECT vertex_nam FROM {vertex}", "vertex_name"),
        ("SELECT COUNT(*) FROM vertex", "{vertex}"),
        ("SELECT TIME_FLOR(__time, 'P1D') FROM {cases}", "TIME_FLOOR"),
        ("SELECT source_vertex_nam FROM {edge}", "source_vertex_name"),
    ],
)
def test_did_you_mean_from_what_completion_knows(pshell, sql, meant):
    with pytest.raises(QueryError) as info:
        pshell.run_cell(f"%%pmsql\n{sql}")
    assert f"\n  Did you mean {meant}?" in shown_text(info.value)


def test_user_sees_no_traceback(pshell, capsys):
    pshell.raise_errors = False
    result = pshell.run_cell("%%pmsql\nSELEC 1")
    assert isinstance(result.error_in_exec, QueryError)
    err = capsys.readouterr()
    shown = err.out + err.err
    assert "QueryError: Unexpected 'SELEC'" in shown
    assert "Traceback" not in shown and "UsageError" not in shown


def test_service_errors_become_short_messages(shell, sandbox):
    sandbox.fault("/pub/projects", status=404, times=5)
    with pytest.raises(NotFound) as info:
        shell.run_cell("%pmsql --tables")
    assert shown_text(info.value).startswith("NotFound: ")
    assert "--verbose" in shown_text(info.value)


# --- connection ------------------------------------------------------------------------------------------
def test_connects_from_environment_when_nothing_is_current(bare_shell, sandbox, monkeypatch):
    for key, value in sandbox.env.items():
        monkeypatch.setenv(key, value)
    bare_shell.run_cell("one = %pmsql SELECT 1 AS one")
    assert int(bare_shell.user_ns["one"]["one"].iloc[0]) == 1
    conn = _current.get_current()
    assert conn is not None and conn.settings.base_url.startswith(sandbox.base_url)


def test_connect_with_env_file_replaces_own_connection(bare_shell, sandbox, monkeypatch):
    for key, value in sandbox.env.items():
        monkeypatch.setenv(key, value)
    bare_shell.run_cell("%pmsql --connect")
    first = _current.get_current()
    bare_shell.run_cell(f"%pmsql --env-file '{sandbox.env_file}'")
    second = _current.get_current()
    assert second is not first and first.closed
    assert "Connected to" in displayed(bare_shell)[-1]
    with pytest.raises(ConfigurationError, match="no such file"):
        bare_shell.run_cell("%pmsql --env-file /nonexistent/.env")


def test_connection_variable_must_be_a_connection(bare_shell):
    bare_shell.user_ns["c"] = 42
    with pytest.raises(ConfigurationError, match="expected a pm_notebook Connection, got a int"):
        bare_shell.run_cell("%pmsql --connection c")


def test_secret_never_shown(bare_shell, sandbox, monkeypatch, capsys):
    for key, value in sandbox.env.items():
        monkeypatch.setenv(key, value)
    bare_shell.run_cell("%pmsql -v --connect")
    bare_shell.raise_errors = False
    bare_shell.run_cell("%pmsql -v SELECT nope")
    secret = sandbox.env["PM_CLIENT_SECRET"]
    everything = "".join(displayed(bare_shell)) + "".join(capsys.readouterr())
    assert secret not in everything


# --- progress and interrupt ------------------------------------------------------------------------------
def test_progress_line_for_slow_query_then_cleared(pshell, sandbox):
    """The query is held on the server until the progress line has been shown, then released."""
    pshell.run_cell("%config PmSql.progress_delay = 0.1")
    sandbox.hold_statements("AS held_caseid")

    def release_once_shown() -> None:
        sandbox.wait_held()
        deadline = time.monotonic() + 60  # a hang guard: the line shows after 0.1 s of running
        while not any(o["transient"] and o["data"]["text/plain"] for o in list(pshell.displayed)):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        sandbox.release()

    releaser = threading.Thread(target=release_once_shown, daemon=True)
    releaser.start()
    pshell.run_cell(
        "%%pmsql --transport druid -o r --no-display\nSELECT caseid AS held_caseid FROM {cases} LIMIT 5"
    )
    releaser.join(90)
    updates = [o for o in pshell.displayed if o["transient"]]
    texts = [o["data"]["text/plain"] for o in updates]
    assert any(t.startswith("Running… ") and "rows fetched" in t for t in texts)
    assert texts[-1] == "" and updates[-1]["update"]
    assert len({o["transient"]["display_id"] for o in updates}) == 1
    assert len(pshell.user_ns["r"]) == 5
    assert sandbox.held()["statements"]["ended"] == {"released": 1}


@pytest.mark.parametrize("transport", ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_interrupt_cancels_the_query_on_the_server(pshell, sandbox, interrupt_when_held, transport):
    sandbox.hold_statements("AS held")  # runs on the server until the interrupt cancels it
    sandbox.reset_stats()
    # what a kernel interrupt does: the main thread raises KeyboardInterrupt (sent once the server holds it)
    with (
        interrupt_when_held(sandbox, how="interrupt_main"),
        pytest.raises(QueryCancelled, match="cancelled"),
    ):
        pshell.run_cell(f"%%pmsql --transport {transport}\nSELECT COUNT(*) AS held FROM {{cases}}")
    assert sandbox.wait_ended("cancelled")["ended"] == {"cancelled": 1}  # the cancel reached the server
    requests = sandbox.stats()["requests"]
    if transport == "druid":
        assert any(k.startswith("DELETE /druid/v2/sql/") for k in requests), requests
    # the connection is still usable afterwards
    pshell.run_cell(f"one = %pmsql --transport {transport} SELECT 1 AS one")
    assert int(pshell.user_ns["one"]["one"].iloc[0]) == 1


# --- completion (the completions themselves: test_completion.py) ------------------------------------------
def test_reload_ext_keeps_one_magic_and_one_matcher(shell):
    shell.run_line_magic("reload_ext", "pm_notebook")
    from pm_notebook.magic import PmSql

    assert sum(isinstance(c, PmSql) for c in shell.configurables) == 1
    ids = [getattr(m, "matcher_identifier", None) for m in shell.Completer.custom_matchers]
    assert ids.count("pm_notebook.pmsql") == 1


def test_testing_shell_without_extension():
    sh = TestingShell.create(load_extension=False)
    with pytest.raises(UsageError):
        sh.run_cell("%pmsql SELECT 1")
