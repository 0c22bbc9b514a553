"""Fixtures for the SQL port: Druid SQL API helper, reference data, and SQL apps with custom limits.

* ``demo`` / ``second``: the fixture sandbox's workgroups; ``tables``: the demo's first project's names.
* ``druid``: ``druid(sql, **body)`` posts to the fixture sandbox's ``/druid/v2/sql/`` as demo.
* ``reference``: a DuckDB cursor on the same generated data (built in-process, unsealed) to compute
  expected values with hand-written DuckDB SQL, independently of the translator.
* ``sql_server(**options)``: the SQL app alone, with custom :class:`SqlOptions`, served by uvicorn on a
  free 127.0.0.1 port in a thread (for expiry, timeout and limit tests); stopped at teardown.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import pytest
import requests

SMALL_CASES = 120


@dataclass(frozen=True)
class Tables:
    """Quoted names of one project's tables and lookups."""

    pid: str

    @property
    def cases(self) -> str:
        return f'"{self.pid}"'

    @property
    def vertex(self) -> str:
        return f'"{self.pid}_vertex"'

    @property
    def edge(self) -> str:
        return f'"{self.pid}_edge"'

    @property
    def variants(self) -> str:
        return f"{self.pid}_variant_name"

    @property
    def excluded(self) -> str:
        return f"{self.pid}_excluded_cases"

    def fmt(self, sql: str) -> str:
        """Fill ``{c}``, ``{v}``, ``{e}`` (quoted tables), ``{vn}``, ``{ex}`` (lookup names), ``{pid}``."""
        return sql.format(
            c=self.cases, v=self.vertex, e=self.edge, vn=self.variants, ex=self.excluded, pid=self.pid
        )


@pytest.fixture(scope="session")
def demo(sandbox):
    return sandbox.workgroups["demo"]


@pytest.fixture(scope="session")
def second(sandbox):
    return sandbox.workgroups["second"]


@pytest.fixture(scope="session")
def tables(demo) -> Tables:
    return Tables(demo.project_ids[0])


@pytest.fixture(scope="session")
def http():
    with requests.Session() as s:
        yield s


@pytest.fixture(scope="session")
def druid(sandbox, demo, http):
    url = sandbox.sql_url + "/druid/v2/sql/"

    def post(sql: str, *, auth=None, **body) -> requests.Response:
        return http.post(
            url, json={"query": sql, **body}, auth=auth or (demo.client_id, demo.client_secret), timeout=120
        )

    return post


@pytest.fixture(scope="session")
def reference(sandbox_store, demo):
    cur = sandbox_store.database(demo.client_id).cursor()
    yield cur
    cur.close()


@dataclass
class SqlServer:
    """A running SQL app: its URLs, store and app (``app.state.avatica``, ``app.state.sql_engine``)."""

    url: str
    store: object
    app: object

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:avatica:remote:url={self.url}/druid/v2/sql/avatica/"


@pytest.fixture(scope="session")
def small_store():
    from pm_sandbox.data.store import build_store

    store = build_store(cases=SMALL_CASES)
    yield store
    store.close()


@pytest.fixture
def sql_server(small_store, serve_app):
    from pm_sandbox.sql.app import SqlOptions, create_sql_app

    with contextlib.ExitStack() as servers:

        def factory(**options) -> SqlServer:
            app = create_sql_app(small_store, options=SqlOptions(**options))
            return SqlServer(servers.enter_context(serve_app(app)), small_store, app)

        yield factory
