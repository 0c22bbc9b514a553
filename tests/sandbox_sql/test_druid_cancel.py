"""``DELETE /druid/v2/sql/{sqlQueryId}`` cancels a running Druid SQL query, as Druid's broker does; Ctrl-C on
every transport stops a running query on the server.

The running queries are held by the sandbox (:meth:`Sandbox.hold_statements`): they wait inside DuckDB until
something interrupts them, so they run until cancelled whatever the machine's speed, and the verdicts are
events (the statement is held; it ended *cancelled*; the next query runs), never durations.
"""

from __future__ import annotations

import threading

import pytest
import requests

from pm_notebook.errors import QueryCancelled

HELD = 'SELECT COUNT(*) AS held FROM "{v}"'


@pytest.fixture(scope="module")
def single_slot(tmp_path_factory):
    """A sandbox running one query at a time per workgroup: the next query only runs if the interrupted one
    really stopped (its time limit, 120 s, is far beyond any hang guard here)."""
    from pm_sandbox import start

    log_path = tmp_path_factory.mktemp("single-slot") / "sandbox.log"
    args = ["--sql-max-concurrent-queries", "1", "--sql-query-timeout", "120"]
    sb = start(cases=300, extra_args=args, log_path=log_path)
    yield sb
    sb.stop()


@pytest.fixture
def held(demo) -> str:
    return HELD.format(v=f"{demo.project_ids[0]}_vertex")


def _start(url: str, auth, sql: str, query_id: str) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def run() -> None:
        box["response"] = requests.post(
            url, json={"query": sql, "context": {"sqlQueryId": query_id}}, auth=auth, timeout=120
        )

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def test_delete_cancels_the_running_query(sandbox, demo, held):
    url, auth = sandbox.sql_url + "/druid/v2/sql/", (demo.client_id, demo.client_secret)
    sandbox.hold_statements("AS held")
    thread, box = _start(url, auth, held, "test-cancel-1")
    sandbox.wait_held()  # running on the server, registered under its id
    assert requests.delete(url + "test-cancel-1", auth=auth, timeout=30).status_code == 202
    thread.join(90)
    assert not thread.is_alive()
    response = box["response"]
    assert response.status_code == 500
    assert response.json()["category"] == "CANCELED"
    assert sandbox.held()["statements"]["ended"] == {"cancelled": 1}
    assert requests.delete(url + "test-cancel-1", auth=auth, timeout=30).status_code == 404  # over


def test_only_the_owner_can_cancel_and_unknown_ids_are_404(sandbox, demo, second, held):
    url = sandbox.sql_url + "/druid/v2/sql/"
    owner, other = (demo.client_id, demo.client_secret), (second.client_id, second.client_secret)
    assert requests.delete(url + "no-such-query", auth=owner, timeout=30).status_code == 404
    assert requests.delete(url + "x", auth=(demo.client_id, "wrong"), timeout=30).status_code == 401
    sandbox.hold_statements("AS held")
    thread, box = _start(url, owner, held, "test-cancel-2")
    sandbox.wait_held()
    assert requests.delete(url + "test-cancel-2", auth=other, timeout=30).status_code == 404
    assert sandbox.held()["statements"]["held"] == 1  # still running
    assert requests.delete(url + "test-cancel-2", auth=owner, timeout=30).status_code == 202
    thread.join(90)
    assert not thread.is_alive()
    assert box["response"].status_code == 500


@pytest.mark.parametrize("transport", ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_ctrl_c_during_a_running_query_stops_it_on_the_server(
    single_slot, connect_workgroup, interrupt_when_held, transport
):
    """A real running query (not a delayed answer): Ctrl-C stops it on the server and frees the server.
    Druid: the DELETE; Avatica: closeStatement, which interrupts the statement's query; JDBC: the driver's
    statement is cancelled and closed off the main thread (its cancel waits for the running call) and the
    abandoned connection's closeConnection interrupts the query.

    The Ctrl-C comes once the server holds the statement; the verdict is that the statement ended
    *cancelled* (not timed out, the server's limit being 120 s) and that the next query runs.
    """
    sb = single_slot
    demo = sb.workgroups["demo"]
    with connect_workgroup(sb) as conn:
        conn.query("SELECT 0 AS warm", transport=transport)  # JVM and driver start-up are not interrupted
        sb.clear_faults()  # zero the counts left by the previous transport's run
        sb.hold_statements("AS held")
        with interrupt_when_held(sb), pytest.raises(QueryCancelled):
            conn.query(HELD.format(v=f"{demo.project_ids[0]}_vertex"), transport=transport)
        assert sb.wait_ended("cancelled")["ended"] == {"cancelled": 1}
        assert conn.query("SELECT 1 AS ok", transport=transport)["ok"].tolist() == [1]
