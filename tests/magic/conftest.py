"""Layered fixtures for the magic: a connection to the sandbox → a shell with ``%load_ext pm_notebook``
that uses it → the same shell with the demo workgroup's first project chosen."""

from __future__ import annotations

import pytest

from pm_notebook import _current
from pm_notebook.testing import TestingShell


@pytest.fixture(scope="module")
def conn(sandbox, connect_workgroup):
    """A connection to the sandbox's demo workgroup, shared by a module's tests."""
    with connect_workgroup(sandbox) as c:
        yield c


@pytest.fixture
def bare_shell():
    """A fresh shell with the extension loaded and no current connection."""
    _current.clear_current()
    shell = TestingShell.create()
    yield shell
    _current.clear_current()


@pytest.fixture
def shell(bare_shell, conn):
    """A shell whose ``%pmsql`` uses :func:`conn`."""
    bare_shell.user_ns["conn"] = conn
    bare_shell.run_cell("%pmsql --connection conn")
    bare_shell.clear_displayed()
    return bare_shell


@pytest.fixture(scope="module")
def project(conn):
    """The demo workgroup's first project (as the REST listing gives it)."""
    return conn.projects()[0]


@pytest.fixture
def pshell(shell, project):
    """:func:`shell` with ``%pmsql --project`` set to :func:`project` (by name)."""
    shell.user_ns["project_name"] = project.name
    shell.run_cell(f'%pmsql --project "{project.name}"')
    shell.clear_displayed()
    return shell


def shown_text(err: BaseException) -> str:
    """What IPython (and a notebook) shows for an error a magic raised: its ``_render_traceback_`` lines."""
    return "\n".join(err._render_traceback_())


def displayed(shell, mime: str = "text/plain") -> list[str]:
    """The *mime* parts of what the shell displayed (updates included), in order."""
    return [out["data"].get(mime, "") for out in shell.displayed]
