"""Fixtures for driving the widget models against the sandbox (no browser, no frontend)."""

from __future__ import annotations

import pytest

from pm_notebook._current import clear_current


@pytest.fixture(autouse=True)
def _isolated(memory_keyring, tmp_path, monkeypatch) -> None:
    """Every widget test gets an empty in-memory keyring and a cwd without a ``.env``."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _no_current_connection():
    """The notebook's current connection is global: start and end every test without one."""
    clear_current()
    yield
    clear_current()


@pytest.fixture
def demo(sandbox):
    """The sandbox's licensed demo workgroup."""
    return sandbox.workgroups["demo"]


@pytest.fixture
def demo_conn(sandbox, connect_workgroup):
    """A connection to the demo workgroup without retries (fault tests stay fast)."""
    conn = connect_workgroup(sandbox, retries=0)
    yield conn
    conn.close()
