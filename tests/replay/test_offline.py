"""Replay mode touches no network and needs no credentials: env-driven store (``PM_CACHE=1``) against a
sandbox, then ``PM_REPLAY=1`` with the sandbox stopped and no ``PM_*`` value, or with the values pointing at
a listener of ours that must never see a connection."""

from __future__ import annotations

import socket

import pandas as pd
import pytest

import pm_notebook
from pm_notebook import ConfigurationError, ReplayMiss


def _use_env(monkeypatch, values: dict[str, str]) -> None:
    for key, value in values.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def stored_then_stopped(sandbox_factory, monkeypatch, tmp_path):
    """Run a notebook's calls with ``PM_CACHE=1`` and the sandbox's PM_* values, then stop the sandbox and
    remove every PM_* value; returns (cache folder, what the live calls returned)."""
    sb = sandbox_factory(cases=60)
    folder = tmp_path / "cache"
    with monkeypatch.context() as env:
        _use_env(env, {**sb.env, "PM_CACHE": "1", "PM_CACHE_DIR": str(folder)})
        with pm_notebook.connect(use_keyring=False) as conn:  # what a notebook does: no arguments at all
            assert conn.caching and not conn.replaying
            project = next(p for p in conn.projects() if p.name == "Purchase to Pay")
            tables = conn.tables(project)
            sql = (
                f'SELECT vertex_name, COUNT(*) AS n FROM "{project.id}_vertex" WHERE duration > ? GROUP BY 1'
            )
            frame = conn.query(sql, [1000])
    sb.stop()
    assert not sb.running()
    return folder, {"project": project, "tables": tables, "sql": sql, "frame": frame}


def _replay_the_notebook(conn, stored) -> None:
    project = next(p for p in conn.projects() if p.name == "Purchase to Pay")
    assert project == stored["project"] and conn.tables(project) == stored["tables"]
    frame = conn.query(stored["sql"], [1000])
    pd.testing.assert_frame_equal(frame, stored["frame"])
    assert frame.attrs == stored["frame"].attrs


def test_replay_needs_no_connection_value_and_opens_no_socket(
    stored_then_stopped, monkeypatch, socket_connects
):
    folder, stored = stored_then_stopped
    monkeypatch.setenv("PM_REPLAY", "1")
    monkeypatch.setenv("PM_CACHE_DIR", str(folder))
    with pm_notebook.connect(use_keyring=False) as conn:
        assert conn.replaying
        _replay_the_notebook(conn, stored)
        with pytest.raises(ReplayMiss):
            conn.query("SELECT 1")
        with pytest.raises(ReplayMiss, match="Replay mode sends no request"):
            conn.tokens.token()  # even a direct token request is refused before any socket
        with pytest.raises(ReplayMiss):
            conn.dbapi()
    assert socket_connects == []


def test_replay_with_values_of_an_unused_port_never_connects(
    stored_then_stopped, monkeypatch, socket_connects
):
    folder, stored = stored_then_stopped
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        port = listener.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        env = {
            "PM_BASE_URL": base,
            "PM_AUTH_URL": f"{base}/realms/x",
            "PM_CLIENT_ID": "someone",
            "PM_CLIENT_SECRET": "not-needed",
            "PM_JDBC_URL": f"jdbc:avatica:remote:url={base}/druid/v2/sql/avatica/",
        }
        _use_env(monkeypatch, env)
        with pm_notebook.connect(replay=True, cache_dir=folder, use_keyring=False) as conn:
            _replay_the_notebook(conn, stored)
            misses = (conn.workgroup, lambda: conn.project("nope"), lambda: conn.query("SELECT 2"))
            for call in (*misses, conn.tokens.token, conn.dbapi):
                with pytest.raises(ReplayMiss):
                    call()
        with pytest.raises(BlockingIOError):  # nobody knocked
            listener.accept()
    assert socket_connects == []


def test_a_live_connection_switched_to_replay_stops_using_the_network(
    sandbox, live_connection, tmp_path, socket_connects
):

    with live_connection(sandbox, tmp_path / "c") as conn:
        sql = "SELECT COUNT(*) AS n FROM INFORMATION_SCHEMA.TABLES"
        live = conn.query(sql)
        socket_connects.clear()
        conn.configure_cache(replay=True)
        pd.testing.assert_frame_equal(conn.query(sql), live)
        with pytest.raises(ReplayMiss):
            conn.projects()
        assert socket_connects == []
        conn.configure_cache(replay=False)  # made with connection values: it can go back online
        assert conn.query(sql).attrs == live.attrs
    assert socket_connects  # the audit hook does see real connects (so the empty lists above mean something)


def test_the_default_cache_folder_is_pm_cache_in_the_working_directory(
    sandbox, live_connection, tmp_path, monkeypatch
):

    monkeypatch.chdir(tmp_path)
    with live_connection(sandbox, None) as conn:
        assert conn.cache_dir == tmp_path / ".pm_cache"
        conn.query("SELECT 1 AS one")
    monkeypatch.chdir("/")  # the folder was fixed when the connection was made
    assert sorted(p.suffix for p in (tmp_path / ".pm_cache").iterdir() if not p.name.startswith("rest-")) == [
        ".json",
        ".parquet",
    ]


@pytest.mark.parametrize("name", ["PM_CACHE", "PM_REPLAY"])
def test_a_flag_that_is_not_yes_or_no_is_refused(monkeypatch, name) -> None:
    monkeypatch.setenv(name, "sometimes")
    with pytest.raises(ConfigurationError, match=f"{name}='sometimes' is not a yes/no value"):
        pm_notebook.connect(use_keyring=False)


def test_cache_arguments_are_checked(tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="cache_dir must be a folder path"):
        pm_notebook.connect(replay=True, cache_dir="  ")
    with pytest.raises(ConfigurationError, match="Unknown connection option"):
        pm_notebook.connect(replay=True, cache_dir=tmp_path, timout=3)
    conn = pm_notebook.connect(replay=True, cache_dir=tmp_path)
    with pytest.raises(ConfigurationError, match="cache must be True, False or None"):
        conn.query("SELECT 1", cache="yes")
