"""REST against the running sandbox: connect from arguments / env / .env, typed results, errors."""

from __future__ import annotations

import pytest

import pm_notebook
from pm_notebook import (
    AuthenticationError,
    ClosedError,
    LicenceError,
    NotFound,
    Project,
    Table,
    Workgroup,
)
from pm_notebook.api import to_frame


def _check_projects(conn, sb, key: str = "demo") -> None:
    projects = conn.projects()
    assert all(isinstance(p, Project) for p in projects)
    assert sorted(p.id for p in projects) == sorted(sb.workgroups[key].project_ids)
    assert all(p.name for p in projects)


def test_connect_from_arguments(sandbox, connect_to) -> None:
    conn = connect_to(sandbox)
    assert conn.settings.sources["client_secret"] == "argument"
    assert conn.settings.jdbc_url == sandbox.jdbc_url and conn.settings.sql_http_url == sandbox.sql_url
    _check_projects(conn, sandbox)


def test_connect_from_urls_with_pub_and_slashes(sandbox) -> None:
    wg = sandbox.workgroups["second"]
    with pm_notebook.connect(
        sandbox.base_url + "/pub/", sandbox.auth_url + "/", wg.client_id, wg.client_secret, use_keyring=False
    ) as conn:
        _check_projects(conn, sandbox, "second")


def test_connect_from_environment(sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in sandbox.env.items():
        monkeypatch.setenv(name, value)
    with pm_notebook.connect(use_keyring=False) as conn:
        assert set(conn.settings.sources.values()) == {"env"}
        _check_projects(conn, sandbox)


def test_connect_from_dotenv_in_cwd(sandbox) -> None:
    from pathlib import Path

    Path(".env").write_text(Path(sandbox.env_file).read_text())
    with pm_notebook.connect(use_keyring=False) as conn:
        assert conn.settings.sources["client_id"].startswith(".env:")
        _check_projects(conn, sandbox)


def test_connect_from_named_env_file(sandbox) -> None:
    with pm_notebook.connect(env_file=sandbox.env_file, use_keyring=False) as conn:
        _check_projects(conn, sandbox)


def test_project_details_and_frames(sandbox, connect_to) -> None:
    conn = connect_to(sandbox)
    pid = sandbox.workgroups["demo"].project_ids[0]
    project = conn.project(pid)
    assert project.id == pid and project.name and project.creation_date
    assert conn.project(project) == project
    frame = to_frame(conn.projects())
    assert list(frame.columns) == ["id", "name", "description", "creation_date"]
    assert sorted(frame["id"]) == sorted(sandbox.workgroups["demo"].project_ids)


def test_tables_of_a_project(sandbox, connect_to) -> None:
    conn = connect_to(sandbox)
    for pid in sandbox.workgroups["demo"].project_ids:
        tables = conn.tables(pid)
        assert all(isinstance(t, Table) and t.project_id == pid for t in tables)
        expected = {pid: "cases", f"{pid}_vertex": "vertex", f"{pid}_edge": "edge"}
        assert {t.name: t.kind for t in tables} == expected
        assert tables[0].sql_name.startswith('"')
    assert len(to_frame(conn.tables(conn.projects()[0]))) == 3


def test_workgroup_info(sandbox, connect_to) -> None:
    conn = connect_to(sandbox)
    wg = conn.workgroup()
    assert isinstance(wg, Workgroup)
    assert wg.id == sandbox.workgroups["demo"].client_id and wg.name == sandbox.workgroups["demo"].name
    assert to_frame(wg).loc[0, "name"] == wg.name


def test_workgroups_see_only_their_projects(sandbox, connect_to) -> None:
    demo, second = connect_to(sandbox, "demo"), connect_to(sandbox, "second")
    foreign = sandbox.workgroups["second"].project_ids[0]
    assert foreign not in {p.id for p in demo.projects()}
    with pytest.raises(NotFound):
        demo.tables(foreign)
    assert second.tables(foreign)


@pytest.mark.parametrize("bad", ["00000000-0000-0000-0000-000000000000", "no-such-project", "../projects"])
def test_unknown_project(sandbox, connect_to, bad: str) -> None:
    conn = connect_to(sandbox)
    for call in (conn.project, conn.tables):
        with pytest.raises(NotFound) as info:
            call(bad)
        assert repr(bad) in str(info.value) and "conn.projects()" in str(info.value)
        assert info.value.status == 404


@pytest.mark.parametrize("bad", ["", "   ", None, 42])
def test_project_argument_checked(sandbox, connect_to, bad) -> None:
    with pytest.raises(TypeError, match="project id"):
        connect_to(sandbox).tables(bad)


def test_wrong_secret(sandbox, connect_to) -> None:
    conn = connect_to(sandbox, secret="not-the-secret")
    with pytest.raises(AuthenticationError) as info:
        conn.projects()
    text = str(info.value)
    assert info.value.status == 401
    assert "workgroup administration page" in text and "workgroup administrator" in text
    assert sandbox.workgroups["demo"].client_id in text
    assert "not-the-secret" not in text


def test_unknown_client_id(sandbox) -> None:
    conn = pm_notebook.connect(sandbox.base_url, sandbox.auth_url, "nobody", "x", use_keyring=False)
    with conn, pytest.raises(AuthenticationError, match="nobody"):
        conn.workgroup()


def test_unlicensed_workgroup(sandbox, connect_to) -> None:
    conn = connect_to(sandbox, "unlicensed")
    for call in (conn.projects, conn.workgroup):
        with pytest.raises(LicenceError) as info:
            call()
        assert info.value.status == 403
        assert "licence" in str(info.value).lower() and "administrator" in str(info.value)


def test_wrong_auth_url(sandbox) -> None:
    wg = sandbox.workgroups["demo"]
    bad = sandbox.base_url + "/realms/no-such-realm"
    conn = pm_notebook.connect(sandbox.base_url, bad, wg.client_id, wg.client_secret, use_keyring=False)
    with conn, pytest.raises(pm_notebook.HTTPError) as info:
        conn.projects()
    assert info.value.status == 404 and "realm" in str(info.value)


def test_closed_connection(sandbox, connect_to) -> None:
    conn = connect_to(sandbox)
    conn.close()
    conn.close()
    assert "closed" in repr(conn)
    with pytest.raises(ClosedError, match="closed"):
        conn.projects()
