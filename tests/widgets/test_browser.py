"""ProjectBrowser driven through refresh()/select()/insert_query() and list clicks, against the sandbox."""

from __future__ import annotations

import time

import pytest
from IPython.lib.pretty import pretty

from pm_notebook import ConfigurationError, ServiceUnavailable
from pm_notebook._context import set_current
from pm_notebook._models import Table
from pm_notebook.widgets import ProjectBrowser, pmsql_for


@pytest.fixture
def browser(demo_conn):
    widget = ProjectBrowser(demo_conn, preview_rows=5)
    yield widget
    widget.close()


def expected_tables(store, wg, project_id: str) -> list[str]:
    return sorted(store.workgroup(wg.client_id).project(project_id).tables)


def test_refresh_lists_the_workgroup_projects(browser, sandbox_store, demo):
    projects = browser.refresh()
    records = sandbox_store.workgroup(demo.client_id).projects
    assert sorted(p.id for p in projects) == sorted(demo.project_ids)
    assert {p.id: p.name for p in projects} == {r.id: r.name for r in records}
    labels = [label for label, _ in browser.project_list.options]
    assert all(f"{p.name} \u2014 {p.id}" in labels for p in projects)
    assert browser.status.kind == "ok" and browser.status_text.startswith(f"{len(projects)} projects.")


def test_select_project_lists_its_tables(browser, sandbox_store, demo):
    pid = demo.project_ids[0]
    browser.select(project=pid)
    assert browser.selected_project.id == pid
    assert [t.name for t in browser.tables] == expected_tables(sandbox_store, demo, pid)
    assert [v for _, v in browser.table_list.options] == expected_tables(sandbox_store, demo, pid)
    assert browser.query == "" and browser.inserter.disabled  # nothing to insert before a table


def test_select_table_shows_columns_preview_and_count(browser, sandbox_store, demo):
    pid = demo.project_ids[0]
    browser.select(project=pid, table=pid)  # the cases table is named after the project
    db = sandbox_store.database(demo.client_id)
    want_cols = [r[0] for r in db.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'druid' AND table_name = ? "
        "ORDER BY ordinal_position", [pid]).fetchall()]  # fmt: skip
    want_rows = db.execute(f'SELECT COUNT(*) FROM druid."{pid}"').fetchone()[0]
    assert browser.last_error is None, browser.status_text
    assert [c.name for c in browser.columns] == want_cols
    types = {c.name: c.data_type for c in browser.columns}
    assert types["__time"] == "TIMESTAMP" and types["duration"] == "BIGINT"
    assert "<code>TIMESTAMP</code>" in browser.columns_view.value
    assert browser.row_count == want_rows
    assert list(browser.preview.columns) == want_cols and len(browser.preview) == min(5, want_rows)
    assert f"<b>{want_rows:,}</b> rows" in browser.count_view.value
    assert browser.preview_view.value.count("<tr") == len(browser.preview) + 1  # header + rows
    assert browser.query == pmsql_for(browser.selected_table) and not browser.inserter.disabled
    assert f'FROM "{pid}"' in browser.query


def test_insert_query_and_frontend_outcome(browser, demo):
    pid = demo.project_ids[0]
    with pytest.raises(ConfigurationError, match="No table selected"):
        browser.insert_query()
    browser.select(project=pid, table=f"{pid}_vertex")
    assert browser.insert_query() == f'%%pmsql\nSELECT *\nFROM "{pid}_vertex"\nLIMIT 100'
    # what the frontend answers once it has acted (see tests/browser for the real thing)
    browser.inserter._handle_frontend(browser.inserter, {"event": "inserted", "how": "clipboard"}, [])
    assert browser.inserter.outcome == "clipboard" and "copied to the clipboard" in browser.status_text


def test_filter_narrows_projects_and_keeps_the_selection(browser, demo):
    projects = browser.refresh()
    target = projects[0]
    browser.filter.value = target.name[:5].upper()
    shown = [v for _, v in browser.project_list.options]
    assert target.id in shown
    assert all(target.name[:5].lower() in p.name.lower() for p in projects if p.id in shown)
    browser.filter.value = "no-such-project-xyz"
    assert browser.project_list.options == ()
    browser.filter.value = ""
    assert len(browser.project_list.options) == len(projects)


def test_clicks_load_in_background_and_the_newest_wins(browser, sandbox, sandbox_store, demo):
    browser.refresh()
    slow, fast = demo.project_ids
    sandbox.fault(f"/pub/datasources/{slow}", status=None, hold=True)  # answers only once released
    browser.project_list.value = slow  # a click
    sandbox.wait_held(requests=True)  # its request is at the server, held there
    browser.project_list.value = fast  # a second click before the first answered
    want = expected_tables(sandbox_store, demo, fast)
    deadline = time.monotonic() + 60  # a hang guard
    while [t.name for t in browser.tables] != want:
        assert time.monotonic() < deadline, browser.status_text
        time.sleep(0.02)
    assert sandbox.release()["requests"] == 1  # the first click's answer now comes, last
    assert browser.wait(60)
    assert browser.selected_project.id == fast
    assert [t.name for t in browser.tables] == want
    browser.table_list.value = f"{fast}_edge"
    assert browser.wait(60)
    assert browser.selected_table.name == f"{fast}_edge" and browser.row_count is not None


def test_service_errors_are_shown_and_recoverable(browser, sandbox):
    sandbox.fault("/pub/projects", status=503, times=5)
    browser.refresh()
    assert isinstance(browser.last_error, ServiceUnavailable)
    assert browser.status.kind == "error" and "503" in browser.status_text
    assert not browser.refresh_button.disabled
    sandbox.clear_faults()
    assert browser.refresh() and browser.status.kind == "ok"


def test_unknown_names_raise_clear_errors(browser, demo):
    with pytest.raises(ConfigurationError, match="No project 'nope'"):
        browser.select(project="nope")
    browser.select(project=demo.project_ids[0])
    with pytest.raises(ConfigurationError, match="Its tables: "):
        browser.select(table="nope")
    with pytest.raises(ConfigurationError, match="preview_rows"):
        ProjectBrowser(preview_rows=0)


def test_uses_the_current_connection_and_says_when_there_is_none(demo_conn, demo):
    lonely = ProjectBrowser()
    lonely.refresh()
    assert isinstance(lonely.last_error, ConfigurationError)
    assert "No connection to browse" in lonely.status_text and "CredentialWidget" in lonely.status_text
    set_current(demo_conn)
    assert sorted(p.id for p in lonely.refresh()) == sorted(demo.project_ids)
    lonely.close()
    assert lonely.inserter.comm is None and lonely.project_list.comm is None


def test_text_fallback_and_pmsql_for(browser):
    bundle = ProjectBrowser(autoload=False)._repr_mimebundle_()
    assert "Interactive widgets cannot be shown here" in bundle["text/plain"]
    assert "conn.projects()" in bundle["text/plain"]
    assert "State: Click Refresh" in pretty(ProjectBrowser(autoload=False))
    odd = Table(name='we"ird', project_id="p")
    assert pmsql_for(odd, limit=3) == '%%pmsql\nSELECT *\nFROM "we""ird"\nLIMIT 3'
