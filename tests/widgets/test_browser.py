"""ProjectBrowser driven through refresh()/select()/insert_query() and list clicks, against the sandbox."""

from __future__ import annotations

import re
import threading
import time

import pytest
from IPython.lib.pretty import pretty

from pm_notebook import ConfigurationError, NotFound, ServiceUnavailable, _current
from pm_notebook._current import set_current
from pm_notebook._models import Project, Table
from pm_notebook.magic.args import parse_args
from pm_notebook.testing import TestingShell
from pm_notebook.widgets import ProjectBrowser, pmsql_for
from pm_notebook.widgets._browser_text import short_id


@pytest.fixture
def browser(demo_conn):
    widget = ProjectBrowser(demo_conn, preview_rows=5)
    yield widget
    widget.close()


def expected_tables(store, wg, project_id: str) -> list[str]:
    return sorted(store.workgroup(wg.client_id).project(project_id).tables)


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
KINDS = {"cases": "cases", "vertex": "tasks", "edge": "transitions"}


def test_refresh_lists_the_workgroup_projects_by_name(browser, sandbox_store, demo):
    projects = browser.refresh()
    records = sandbox_store.workgroup(demo.client_id).projects
    assert sorted(p.id for p in projects) == sorted(demo.project_ids)
    assert {p.id: p.name for p in projects} == {r.id: r.name for r in records}
    assert browser.project_list.options == tuple((p.name, p.id) for p in projects)  # names, ids as values
    assert browser.status.kind == "ok"
    assert browser.status_text == f"{len(projects)} projects. Select one to see its tables."


def test_select_project_labels_tables_by_kind_and_chooses_it_for_pmsql(
    browser, demo_conn, sandbox_store, demo
):
    project = next(p for p in browser.refresh() if p.id == demo.project_ids[0])
    browser.select(project=project.name)  # by name, as %pmsql --project takes it
    assert browser.selected_project.id == project.id
    assert sorted(t.name for t in browser.tables) == expected_tables(sandbox_store, demo, project.id)
    # cases, tasks, transitions, each with the project's name; the full table names are the values
    assert browser.table_list.options == (
        (f"cases \u2014 {project.name}", project.id),
        (f"tasks \u2014 {project.name}", f"{project.id}_vertex"),
        (f"transitions \u2014 {project.name}", f"{project.id}_edge"),
    )
    assert not any(
        UUID.search(label) for label, _ in browser.table_list.options + browser.project_list.options
    )
    assert browser.query == "" and browser.inserter.disabled  # nothing to insert before a table
    assert browser.status_text == (
        f"{project.name}: 3 tables. %%pmsql cells now use it: {{cases}}, {{vertex}}, {{edge}}. "
        "Select a table to see its columns and rows."
    )
    chosen = _current.get_project(demo_conn)  # the magic's --project state, set through the core
    assert chosen is not None and chosen.project == project
    assert chosen.table("vertex").name == f"{project.id}_vertex"


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
    name = browser.selected_project.name
    assert f"<b>{want_rows:,}</b> rows in cases \u2014 {name}" in browser.count_view.value
    assert browser.preview_view.value.count("<tr") == len(browser.preview) + 1  # header + rows
    assert browser.status_text == f"cases \u2014 {name}: {len(want_cols)} columns, {want_rows:,} rows."
    assert browser.query == f'%%pmsql --project "{name}"\nSELECT *\nFROM {{cases}}\nLIMIT 100'
    assert not browser.inserter.disabled


def test_preview_shows_ids_short_and_keeps_them_whole(browser, demo):
    pid = demo.project_ids[0]
    browser.select(project=pid, table="tasks")
    keys, hashes = list(browser.preview["graphkey"]), list(browser.preview["vertex_id"])
    assert all(UUID.fullmatch(v) for v in keys)  # the DataFrame keeps the whole ids
    assert all(re.fullmatch(r"[0-9a-f]{32}", v) for v in hashes)
    shown = browser.preview_view.value
    assert not UUID.search(shown) and not re.search(r"[0-9a-f]{32}", shown), "a whole id in the preview"
    assert all(f"<td>{v[:8]}\u2026</td>" in shown for v in keys + hashes)
    assert all(f"<td>{v}</td>" in shown for v in browser.preview["caseid"])  # PO-0001: not an id to cut
    assert (
        short_id(f"{pid}_vertex") == f"{pid[:8]}\u2026_vertex"
        and short_id("Receive goods") == "Receive goods"
    )


def test_the_offered_cell_and_later_cells_run_on_the_chosen_project(browser, demo_conn, demo, sandbox_store):
    pid = demo.project_ids[0]
    set_current(demo_conn)
    shell = TestingShell.create()
    other = next(p for p in browser.refresh() if p.id != pid)
    shell.run_cell(f'%pmsql --project "{other.name}"')  # chosen earlier in the notebook ...
    browser.select(project=pid, table="{vertex}")  # ... then the browser chooses another
    want = (
        sandbox_store.database(demo.client_id)
        .execute(f'SELECT COUNT(*) FROM druid."{pid}_vertex"')
        .fetchone()[0]
    )
    # a cell written later uses the browser's project without --project
    result = shell.run_cell("%%pmsql -o n --no-display\nSELECT COUNT(*) AS n FROM {vertex}")
    assert result.error_in_exec is None and int(shell.user_ns["n"].iloc[0, 0]) == want
    # the offered cell runs as it is, also where no project was chosen (after a kernel restart)
    _current.set_current(None)
    set_current(demo_conn)
    assert _current.get_project(demo_conn) is None
    cell = browser.query.replace("%%pmsql", "%%pmsql -o rows --no-display", 1)
    result = shell.run_cell(cell)
    assert result.error_in_exec is None
    assert len(shell.user_ns["rows"]) == min(100, want)
    assert list(shell.user_ns["rows"].columns) == [c.name for c in browser.columns]
    assert _current.get_project(demo_conn).project.id == pid  # and chose the project for the cells after it


def test_insert_query_and_frontend_outcome(browser, demo):
    pid = demo.project_ids[0]
    with pytest.raises(ConfigurationError, match="No table selected"):
        browser.insert_query()
    browser.select(project=pid, table=f"{pid}_edge")
    name = browser.selected_project.name
    assert browser.insert_query() == f'%%pmsql --project "{name}"\nSELECT *\nFROM {{edge}}\nLIMIT 100'
    assert '<pre class="pm-query"' in browser.query_view.value  # its own lines, under the button
    # what the frontend answers once it has acted (see tests/browser for the real thing)
    browser.inserter._handle_frontend(browser.inserter, {"event": "inserted", "how": "cell"}, [])
    assert browser.inserter.outcome == "cell" and browser.status_text.endswith("ready: run it.")
    browser.inserter._handle_frontend(browser.inserter, {"event": "inserted", "how": "clipboard"}, [])
    assert browser.inserter.outcome == "clipboard" and "copied to the clipboard" in browser.status_text


def test_filter_narrows_projects_and_the_status_says_so(browser, demo):
    projects = browser.refresh()
    target = projects[0]
    n = len(projects)
    browser.filter.value = target.name[:5].upper()
    shown = [v for _, v in browser.project_list.options]
    assert target.id in shown
    assert all(target.name[:5].lower() in p.name.lower() for p in projects if p.id in shown)
    assert (
        browser.status_text
        == f"{len(shown)} of {n} projects match {target.name[:5].upper()!r}. Select one to see its tables."
    )
    browser.filter.value = "no-such-project-xyz"
    assert browser.project_list.options == ()
    assert (
        browser.status_text
        == f"0 of {n} projects match 'no-such-project-xyz'. Clear the filter to see them all."
    )
    browser.filter.value = target.id[:8]  # ids filter too, though the list shows names
    assert [v for _, v in browser.project_list.options] == [target.id]
    browser.filter.value = ""
    assert len(browser.project_list.options) == n
    assert browser.status_text == f"{n} projects. Select one to see its tables."
    # with a table shown, the filter narrows the tables by what they hold and the status counts both
    browser.select(project=target, table="cases")
    browser.filter.value = "trans"
    assert [label for label, _ in browser.table_list.options] == [f"transitions \u2014 {target.name}"]
    assert [v for _, v in browser.project_list.options] == [target.id]  # the selection stays visible
    assert browser.status_text.endswith(f"rows. Filter 'trans': 0 of {n} projects, 1 of 3 tables.")


def test_clicks_load_in_background_and_the_newest_wins(browser, sandbox, sandbox_store, demo):
    browser.refresh()
    slow, fast = demo.project_ids
    sandbox.fault(f"/pub/datasources/{slow}", status=None, hold=True)  # answers only once released
    browser.project_list.value = slow  # a click
    sandbox.wait_held(requests=True)  # its request is at the server, held there
    browser.project_list.value = fast  # a second click before the first answered
    want = expected_tables(sandbox_store, demo, fast)
    deadline = time.monotonic() + 60  # a hang guard
    while sorted(t.name for t in browser.tables) != want:
        assert time.monotonic() < deadline, browser.status_text
        time.sleep(0.02)
    assert sandbox.release()["requests"] == 1  # the first click's answer now comes, last
    assert browser.wait(60)
    assert browser.selected_project.id == fast
    assert sorted(t.name for t in browser.tables) == want
    browser.table_list.value = f"{fast}_edge"
    assert browser.wait(60)
    assert browser.selected_table.name == f"{fast}_edge" and browser.row_count is not None


def test_select_right_after_display_while_its_listing_is_under_way(browser, sandbox, demo):
    # a notebook's next cell runs select() while the listing the display started is still answering
    project = demo.project_ids[0]
    sandbox.fault("/pub/projects", status=None, hold=True)  # the display's listing, held at the server
    assert browser._repr_mimebundle_() is not None  # displaying starts the listing in the background
    sandbox.wait_held(requests=True)
    browser.select(project=project, table="tasks")  # lists again itself: the held listing is superseded
    assert sandbox.release()["requests"] == 1  # the display's answer comes last, and is dropped
    assert browser.wait(60)
    assert browser.project_list.value == project and browser.table_list.value == f"{project}_vertex"
    assert browser.selected_table.name == f"{project}_vertex" and browser.row_count is not None
    assert sorted(p.id for p in browser.projects) == sorted(demo.project_ids)


def test_select_shows_what_it_chose_even_when_the_filter_hides_it(browser, demo):
    project = next(p for p in browser.refresh() if p.id == demo.project_ids[0])
    browser.filter.value = "no project is called this"
    assert browser.project_list.options == ()
    browser.select(project=project.name, table="transitions")
    assert browser.selected_project.id == project.id and browser.selected_table.name == f"{project.id}_edge"
    assert browser.project_list.options == ((project.name, project.id),)  # the selection stays visible
    assert browser.project_list.value == project.id
    assert browser.table_list.value is None and browser.row_count is not None  # loaded; the filter hides it


def test_a_background_answer_never_applies_half_way_through_a_change():
    from pm_notebook.widgets._common import Jobs

    jobs = Jobs("test")
    applying, finish = threading.Event(), threading.Event()
    seen: list[str] = []

    def done(result: str) -> None:
        applying.set()
        finish.wait(60)  # a hang guard
        seen.append(result)

    jobs.run("slot", lambda: "answer", done, lambda exc: None, wait=False)
    assert applying.wait(60)
    taken: list[bool] = []
    other = threading.Thread(target=lambda: taken.append(jobs.state.acquire(blocking=False)))
    other.start()
    other.join(60)
    assert taken == [False]  # the kernel's thread would wait: the answer is being applied
    finish.set()
    assert jobs.wait(60) and seen == ["answer"]
    assert jobs.state.acquire(blocking=False)  # free again
    jobs.state.release()


def test_service_errors_are_shown_and_recoverable(browser, sandbox):
    sandbox.fault("/pub/projects", status=503, times=5)
    browser.refresh()
    assert isinstance(browser.last_error, ServiceUnavailable)
    assert browser.status.kind == "error" and "503" in browser.status_text
    assert not browser.refresh_button.disabled
    sandbox.clear_faults()
    assert browser.refresh() and browser.status.kind == "ok"


def test_unknown_names_raise_clear_errors(browser, demo):
    with pytest.raises(NotFound, match="No project named or with id 'nope'"):
        browser.select(project="nope")
    browser.select(project=demo.project_ids[0])
    name = browser.selected_project.name
    with pytest.raises(ConfigurationError, match=f"No table 'nope' in project '{name}'") as err:
        browser.select(table="nope")
    assert "(cases, tasks, transitions)" in err.value.hint and "tasks (" in err.value.hint
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
    # a --project value with a double quote is quoted as a shell would; the magic's parser reads it back
    cell = pmsql_for(odd, project='Say "hi"', shortcut="cases")
    assert cell.splitlines()[:1] == ["%%pmsql --project 'Say \"hi\"'"] and "FROM {cases}" in cell
    assert parse_args(cell.splitlines()[0].removeprefix("%%pmsql "), "SELECT 1").project == 'Say "hi"'
    assert pmsql_for(odd, project="p", shortcut=None).endswith('FROM "we""ird"\nLIMIT 100')


def test_labels_without_names_or_with_shared_names(demo_conn):
    twin_a, twin_b = (
        Project("aaaaaaaa-0000-0000-0000-000000000001", "Twin"),
        Project("bbbbbbbb-0000-0000-0000-000000000002", "Twin"),
    )
    nameless = Project("cccccccc-0000-0000-0000-000000000003")
    browser = ProjectBrowser(demo_conn, autoload=False)
    browser._projects = [twin_a, twin_b, nameless]
    assert browser.project_label(twin_a) == "Twin (aaaaaaaa\u2026)"
    assert browser.project_label(nameless) == nameless.id  # no name known: the id is all there is
    browser._selected_project = twin_a
    browser._listing = [
        Table(twin_a.id + "_edge", twin_a.id),
        Table(twin_a.id + "_simplifiedEdge", twin_a.id),
    ]
    assert [browser.table_label(t) for t in browser._listing] == [
        "transitions \u2014 Twin (aaaaaaaa\u2026)",
        "transitions (simplifiedEdge) \u2014 Twin (aaaaaaaa\u2026)",
    ]
    browser._tables = list(browser._listing)
    assert browser._cell_for(browser._listing[1]).startswith(
        f'%%pmsql --project "{twin_a.id}"\n'
    )  # not 'Twin'
    assert f'FROM "{twin_a.id}_simplifiedEdge"' in browser._cell_for(
        browser._listing[1]
    )  # no shortcut names it
    browser.close()
