"""Fixtures for driving the widget models against the sandbox (no browser, no frontend)."""

from __future__ import annotations

import keyring
import pytest
from keyring.backend import KeyringBackend

from pm_notebook._context import clear_current
from pm_notebook.connection import connect


class MemoryKeyring(KeyringBackend):
    """An in-process keyring, so tests never touch the developer's OS keyring."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


@pytest.fixture(autouse=True)
def memory_keyring(tmp_path, monkeypatch) -> MemoryKeyring:
    """Every widget test gets an empty in-memory keyring and a cwd without a ``.env``."""
    monkeypatch.chdir(tmp_path)
    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


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
def demo_conn(sandbox, demo):
    """A connection to the demo workgroup without retries (fault tests stay fast)."""
    conn = connect(
        sandbox.base_url, sandbox.auth_url, demo.client_id, demo.client_secret, sandbox.jdbc_url, retries=0
    )
    yield conn
    conn.close()
