"""``DELETE /druid/v2/sql/{sqlQueryId}`` cancels a running Druid SQL query, as Druid's broker does; Ctrl-C on
every transport stops a running query on the server."""

from __future__ import annotations

import threading
import time

import pytest
import requests

import pm_notebook
from pm_notebook.errors import QueryCancelled

# Minutes of work for DuckDB: the cross join is far too big to finish during a test.
ENDLESS = 'SELECT COUNT(*) AS n FROM "{v}" AS a CROSS JOIN "{v}" AS b CROSS JOIN "{v}" AS c'


@pytest.fixture
def endless(demo) -> str:
    return ENDLESS.format(v=f"{demo.project_ids[0]}_vertex")


def _start(url: str, auth, sql: str, query_id: str) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def run() -> None:
        started = time.monotonic()
        box["response"] = requests.post(
            url, json={"query": sql, "context": {"sqlQueryId": query_id}}, auth=auth, timeout=60
        )
        box["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def _delete(url: str, auth, query_id: str) -> int:
    deadline = time.monotonic() + 10
    while True:  # the query may not be registered yet
        status = requests.delete(url + query_id, auth=auth, timeout=10).status_code
        if status != 404 or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def test_delete_cancels_the_running_query(sandbox, demo, endless):
    url, auth = sandbox.sql_url + "/druid/v2/sql/", (demo.client_id, demo.client_secret)
    thread, box = _start(url, auth, endless, "test-cancel-1")
    time.sleep(0.3)
    assert _delete(url, auth, "test-cancel-1") == 202
    thread.join(30)
    response = box["response"]
    assert box["seconds"] < 15
    assert response.status_code == 500
    assert response.json()["category"] == "CANCELED"
    assert requests.delete(url + "test-cancel-1", auth=auth, timeout=10).status_code == 404  # over


def test_only_the_owner_can_cancel_and_unknown_ids_are_404(sandbox, demo, second, endless):
    url = sandbox.sql_url + "/druid/v2/sql/"
    owner, other = (demo.client_id, demo.client_secret), (second.client_id, second.client_secret)
    assert requests.delete(url + "no-such-query", auth=owner, timeout=10).status_code == 404
    assert requests.delete(url + "x", auth=(demo.client_id, "wrong"), timeout=10).status_code == 401
    thread, box = _start(url, owner, endless, "test-cancel-2")
    time.sleep(0.3)
    assert requests.delete(url + "test-cancel-2", auth=other, timeout=10).status_code == 404
    assert _delete(url, owner, "test-cancel-2") == 202
    thread.join(30)
    assert box["response"].status_code == 500


@pytest.mark.parametrize("transport", ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_ctrl_c_during_a_running_query_stops_it_on_the_server(sandbox_factory, transport):
    """A real running query (not a delayed answer): Ctrl-C returns at once and frees the server. Druid: the
    DELETE; Avatica: closeStatement, which interrupts the statement's query; JDBC: the driver's statement is
    cancelled and closed off the main thread (its cancel waits for the running call) and the abandoned
    connection's closeConnection interrupts the query."""
    import signal

    # One query at a time per workgroup: the next query only runs if the interrupted one really stopped.
    sb = sandbox_factory(cases=300, extra_args=["--sql-max-concurrent-queries", "1"])
    demo = sb.workgroups["demo"]
    endless = ENDLESS.format(v=f"{demo.project_ids[0]}_vertex")
    conn = pm_notebook.connect(
        sb.base_url, sb.auth_url, demo.client_id, demo.client_secret, sb.jdbc_url, use_keyring=False
    )
    with conn:
        conn.query("SELECT 0 AS warm", transport=transport)  # JVM and driver start-up are not interrupted
        main = threading.main_thread().ident
        timer = threading.Timer(0.7, lambda: signal.pthread_kill(main, signal.SIGINT))
        timer.start()
        started = time.monotonic()
        try:
            with pytest.raises(QueryCancelled):
                conn.query(endless, transport=transport)
        finally:
            timer.cancel()
        assert time.monotonic() - started < 5
        started = time.monotonic()
        assert conn.query("SELECT 1 AS ok", transport=transport)["ok"].tolist() == [1]
        assert time.monotonic() - started < 5
