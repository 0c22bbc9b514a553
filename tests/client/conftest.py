"""Isolation for client tests: no PM_* variables, a private working directory, an empty keyring."""

from __future__ import annotations

import pytest

from pm_notebook.config import ENV_VARS


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for name in ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)


@pytest.fixture(autouse=True)
def _empty_keyring(memory_keyring) -> None:
    """Every client test sees an empty in-memory keyring (``memory_keyring``, tests/conftest.py)."""


@pytest.fixture
def connect_to(connect_workgroup):
    """``connect_to(sb, key="demo", **options)``: :func:`connect_workgroup`, the connection closed at
    teardown."""
    opened = []

    def factory(sb, key: str = "demo", **options):
        conn = connect_workgroup(sb, key, **options)
        opened.append(conn)
        return conn

    yield factory
    for conn in opened:
        conn.close()


class ServerCounts:
    """Read the sandbox's per-endpoint request counters."""

    @staticmethod
    def token_path(sb) -> str:
        """Path of the sandbox's token endpoint."""
        from urllib.parse import urlsplit

        return urlsplit(sb.auth_url).path + "/protocol/openid-connect/token"

    def tokens(self, sb) -> int:
        """How many token requests the server received since the last ``reset_stats()``."""
        return self(sb, "POST " + self.token_path(sb))

    def __call__(self, sb, key: str) -> int:
        return sb.stats()["requests"].get(key, 0)


@pytest.fixture
def counts() -> ServerCounts:
    """``counts(sb, "GET /pub/projects")``, ``counts.tokens(sb)``, ``counts.token_path(sb)``."""
    return ServerCounts()
