"""Fixtures for SQL tests against the sandbox: a connection to the demo workgroup, its project tables, and the
same data in an in-process DuckDB for expected values (never hard-coded)."""

from __future__ import annotations

import pytest


def _demo_connection(sb):
    import pm_notebook

    demo = sb.workgroups["demo"]
    return pm_notebook.connect(
        sb.base_url, sb.auth_url, demo.client_id, demo.client_secret, sb.jdbc_url, use_keyring=False
    )


@pytest.fixture(scope="module")
def conn(sandbox):
    """A pm_notebook connection to the demo workgroup, shared by a test module."""
    connection = _demo_connection(sandbox)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def gzip_conn(gzip_sandbox):
    """The same, to the sandbox that gzips its SQL answers (``gzip_sandbox``)."""
    connection = _demo_connection(gzip_sandbox)
    yield connection
    connection.close()


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
