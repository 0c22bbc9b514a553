"""Fixtures for SQL tests against the sandbox: a connection to the demo workgroup, its project tables, and the
same data in an in-process DuckDB for expected values (never hard-coded)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def conn(sandbox, connect_workgroup):
    """A pm_notebook connection to the demo workgroup, shared by a test module."""
    with connect_workgroup(sandbox) as connection:
        yield connection


@pytest.fixture(scope="module")
def gzip_conn(gzip_sandbox, connect_workgroup):
    """The same, to the sandbox that gzips its SQL answers (``gzip_sandbox``)."""
    with connect_workgroup(gzip_sandbox) as connection:
        yield connection


@pytest.fixture(scope="session")
def demo_tables(sandbox):
    """``{"cases": '"<pid>"', "vertex": '"<pid>_vertex"', "edge": ...}`` for the demo's first project."""
    pid = sandbox.workgroups["demo"].project_ids[0]
    return {"cases": f'"{pid}"', "vertex": f'"{pid}_vertex"', "edge": f'"{pid}_edge"', "pid": pid}


@pytest.fixture(scope="session")
def duck(sandbox, sandbox_store):
    """``duck(sql, params=())`` → the same query on the same data in-process (DuckDB → pandas, native
    types)."""
    db = sandbox_store.database(sandbox.workgroups["demo"].client_id)

    def run(sql: str, params=()):
        cursor = db.cursor()
        try:
            cursor.execute("SET search_path = 'druid'")
            return cursor.execute(sql, list(params)).df()
        finally:
            cursor.close()

    return run
