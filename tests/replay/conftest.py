"""Fixtures for the offline cache and replay: a live connection to the sandbox that stores every result in a
test's own cache folder, and a replay connection over that folder made with no connection values at all."""

from __future__ import annotations

import sys
import threading

import pytest

import pm_notebook

_connects: list[tuple[str, object]] = []
_recording = threading.Event()


def _audit(event: str, args: tuple) -> None:
    # An audit hook observes every socket connect of this process (Python's own, not a stand-in); it only
    # records while a test asks it to, and cannot be removed once added, hence the one module-level hook.
    if _recording.is_set() and event == "socket.connect":
        _connects.append((event, args[1] if len(args) > 1 else None))


sys.addaudithook(_audit)


@pytest.fixture
def socket_connects():
    """The socket connects made while the fixture is active (a list, filled as they happen)."""
    _connects.clear()
    _recording.set()
    yield _connects
    _recording.clear()


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh cache folder for one test."""
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def live_connection(connect_workgroup):
    """``live_connection(sandbox, cache_dir, **options)``: a connection to *sandbox*'s demo workgroup storing
    its results in *cache_dir* (every result unless ``cache`` is given); the caller closes it."""

    def connect(sandbox, cache_dir, **options):
        options.setdefault("cache", True)
        return connect_workgroup(sandbox, cache_dir=cache_dir, **options)

    return connect


@pytest.fixture
def live(sandbox, cache_dir, live_connection):
    """A live connection that stores every result in :func:`cache_dir`."""
    conn = live_connection(sandbox, cache_dir)
    yield conn
    conn.close()


@pytest.fixture
def replay(cache_dir):
    """``replay()`` → a replay connection over :func:`cache_dir` (no PM_* values exist in tests)."""
    made = []

    def make(**kwargs):
        conn = pm_notebook.connect(replay=True, cache_dir=cache_dir, use_keyring=False, **kwargs)
        made.append(conn)
        return conn

    yield make
    for conn in made:
        conn.close()


@pytest.fixture(scope="session")
def vertex(sandbox):
    """The quoted vertex table of the demo workgroup's first project."""
    return f'"{sandbox.workgroups["demo"].project_ids[0]}_vertex"'
