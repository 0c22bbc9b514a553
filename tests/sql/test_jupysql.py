"""JupySQL (``%load_ext sql``) on ``Connection.dbapi()``, the recipe the README shows, against the sandbox on
every transport. Expected values come from :func:`duck` (the same SQL in-process)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from _sql_transports import TRANSPORTS
from sql.connection import ConnectionManager
from sql.store import store

from pm_notebook.errors import PMError
from pm_notebook.sql import dbapi
from pm_notebook.testing import TestingShell

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def jupysql_shell(monkeypatch, tmp_path):
    """A fresh shell with ``%load_ext sql``; JupySQL's class-level connections and snippets are isolated.

    HOME and the working folder point at *tmp_path*, so no ``~/.jupysql`` or ``pyproject.toml`` settings
    (nor a default connection) leak in; telemetry is off.
    """
    monkeypatch.setenv("PLOOMBER_STATS_ENABLED", "false")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ConnectionManager, "connections", {})
    monkeypatch.setattr(ConnectionManager, "current", None)
    monkeypatch.setattr(store, "_data", {})
    shell = TestingShell.create(load_extension=False, InteractiveShell={"colors": "nocolor"})
    shell.run_cell("%load_ext sql")
    yield shell
    ConnectionManager.close_all()


@pytest.fixture(params=TRANSPORTS)
def sql_shell(request, jupysql_shell, conn):
    """:func:`jupysql_shell` whose current connection is ``conn.dbapi(transport=...)``, alias ``pm``."""
    jupysql_shell.user_ns["pm_db"] = conn.dbapi(transport=request.param)
    jupysql_shell.run_cell("%sql pm_db --alias pm")
    return jupysql_shell


def run(shell, cell: str):
    """The value of the cell's last expression (what JupySQL's magic returned)."""
    return shell.run_cell(cell).result


README_CELL = """\
%load_ext sql
pm_db = conn.dbapi()
%sql pm_db --alias pm
result = %sql SELECT COUNT(*) AS n FROM {{cases}}
df = result.DataFrame()
"""


def test_readme_recipe(jupysql_shell, conn, demo_tables, duck) -> None:
    """The README's JupySQL block, run as one cell (``%load_ext sql`` again is harmless)."""
    jupysql_shell.user_ns.update(conn=conn, cases=demo_tables["cases"])
    jupysql_shell.run_cell(README_CELL)
    expected = duck(f"SELECT COUNT(*) AS n FROM {demo_tables['cases']}")
    assert jupysql_shell.user_ns["df"]["n"].tolist() == expected["n"].tolist()


def test_registers_our_connection(sql_shell, sandbox, capsys) -> None:
    current = ConnectionManager.current
    assert current.alias == "pm" and current.is_dbapi_connection
    assert ConnectionManager.connections["pm"] is current
    assert current._connection is sql_shell.user_ns["pm_db"]  # JupySQL has no public accessor for it
    sql_shell.run_cell("%sql --connections")
    shown = capsys.readouterr().out + repr(sql_shell.displayed)
    assert "pm" in shown
    assert sandbox.workgroups["demo"].client_secret not in shown


def test_line_magic_rows_and_count(sql_shell, demo_tables, duck, sandbox, capsys) -> None:
    cases = demo_tables["cases"]
    sql = f"SELECT caseid, duration FROM {cases} ORDER BY __time LIMIT 5"
    expected = duck(sql)
    result = run(sql_shell, f"%sql {sql}")
    assert result.keys == ["caseid", "duration"]
    assert [tuple(row) for row in result] == list(expected.itertuples(index=False, name=None))
    shown = capsys.readouterr().out + repr(result) + result._repr_html_()
    assert expected["caseid"][0] in shown
    assert sandbox.workgroups["demo"].client_secret not in shown

    sql_shell.user_ns["cases"] = cases  # the README's recipe: a quoted table name through JupySQL's Jinja
    count = run(sql_shell, "%sql SELECT COUNT(*) AS n FROM {{cases}}")
    assert list(count) == [(int(duck(f"SELECT COUNT(*) AS n FROM {cases}")["n"][0]),)]


def test_cell_magic_and_assignment(sql_shell, demo_tables, duck) -> None:
    sql = (
        f"SELECT vertex_name, COUNT(*) AS n, SUM(duration) AS total FROM {demo_tables['vertex']}\n"
        "GROUP BY vertex_name ORDER BY vertex_name"
    )
    expected = duck(sql)
    result = run(sql_shell, f"%%sql\n{sql}")
    assert [tuple(row) for row in result] == list(expected.itertuples(index=False, name=None))

    sql_shell.run_cell(f"%%sql per_activity <<\n{sql}")
    assert list(sql_shell.user_ns["per_activity"].dict()["vertex_name"]) == expected["vertex_name"].tolist()


def test_dataframe_has_every_row_even_past_the_display_limit(sql_shell, demo_tables, duck) -> None:
    sql = f"SELECT caseid, duration, __time FROM {demo_tables['cases']} ORDER BY __time"
    expected = duck(sql)
    assert len(expected) > 10  # more than JupySQL's default displaylimit, so rows are still on the cursor
    result = run(sql_shell, f"%sql {sql}")
    # a second query on the same DB-API connection while the first result is still open
    other = run(sql_shell, f"%sql SELECT COUNT(*) AS n FROM {demo_tables['edge']}")
    assert list(other) == [(int(duck(f"SELECT COUNT(*) AS n FROM {demo_tables['edge']}")["n"][0]),)]

    frame = result.DataFrame()
    assert list(frame.columns) == ["caseid", "duration", "__time"]
    assert frame["caseid"].tolist() == expected["caseid"].tolist()
    assert frame["duration"].tolist() == expected["duration"].tolist()
    assert pd.to_datetime(frame["__time"], utc=True).tolist() == (
        pd.to_datetime(expected["__time"]).dt.tz_localize("UTC").tolist()
    )


@pytest.mark.standin_only(
    "its queries take MIN of a string column, which Druid 33 refuses (Aggregation [MIN] does not "
    "support type [STRING])"
)
def test_save_snippet_and_jinja_variables(sql_shell, demo_tables, duck, capsys) -> None:
    cases = demo_tables["cases"]
    threshold = int(duck(f"SELECT MEDIAN(duration) AS m FROM {cases}")["m"][0])
    expected = duck(f"SELECT COUNT(*) AS n, MIN(caseid) AS first FROM {cases} WHERE duration > {threshold}")
    sql_shell.user_ns["threshold"] = threshold
    snippet = f"SELECT caseid, duration FROM {cases} WHERE duration > {{{{threshold}}}}"  # JupySQL's Jinja
    sql_shell.run_cell(f"%%sql --save long_cases --no-execute\n{snippet}")
    result = run(sql_shell, "%sql SELECT COUNT(*) AS n, MIN(caseid) AS first FROM long_cases")
    assert "long_cases" in capsys.readouterr().out  # "Generating CTE with stored snippets: ..."
    assert list(result) == [(int(expected["n"][0]), expected["first"][0])]


def test_bad_query_shows_the_service_message(sql_shell, conn, capsys) -> None:
    bad = "SELECT nope FROM no_such_table"
    with pytest.raises(PMError) as direct:
        conn.query(bad)
    message = direct.value.message

    with pytest.raises(dbapi.ProgrammingError) as raised:
        sql_shell.run_cell(f"%sql {bad}")
    assert message in str(raised.value)

    # What the analyst sees: the service's message, not a traceback through JupySQL and pm_notebook.
    capsys.readouterr()
    sql_shell.raise_errors = False
    outcome = sql_shell.run_cell(f"%sql {bad}")
    assert isinstance(outcome.error_in_exec, dbapi.ProgrammingError)
    seen = ANSI.sub("", "".join(capsys.readouterr()))
    assert message in seen
    assert "Traceback" not in seen and "pm_notebook" not in seen and "site-packages" not in seen
