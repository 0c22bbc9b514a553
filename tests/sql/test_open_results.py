"""Open results on one transport, against the sandbox over real HTTP / the real JDBC driver.

A statement still being read (a chunk iterator part-read, a reader on another thread) is never closed or
corrupted by the next statement on the same transport; a result its owner closed fails its reader at once with
a :class:`ClosedError` that says what closed it. The timing comes from the sandbox's statement holds (a held
statement cannot end before :meth:`Sandbox.release`), never from sleeps; the only timeouts are hang guards.
Expected rows come from the same data in an in-process DuckDB (``duck``).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from _sql_transports import TRANSPORTS

from pm_notebook.errors import ClosedError

#: seconds a test waits for a thread or a held statement before calling it a hang (a guard, not a measure)
HANG_GUARD = 60.0
#: the held statements stop after this many rows: more than the sandbox's first Avatica block (50,000) and
#: its first Druid megabytes, fewer than the statement has, so it cannot end before it is released
AFTER = 110_000


def big_sql(tables: dict[str, str], marker: str) -> str:
    """About 170,000 rows (every task × 60 cases), none NULL; *marker* names a column, for the holds."""
    return (
        f"SELECT v.caseid, v.vertex_name, c.caseid AS {marker} FROM {tables['vertex']} AS v "
        f"CROSS JOIN (SELECT caseid FROM {tables['cases']} LIMIT 60) AS c"
    )


def same_rows(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The same rows in any order (the statements have no ORDER BY)."""
    assert list(got.columns) == list(expected.columns)
    assert not expected.isna().any().any()

    def norm(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.astype(str).sort_values(list(frame.columns)).reset_index(drop=True)

    pd.testing.assert_frame_equal(norm(got), norm(expected))


def in_thread(call: Callable[[], Any]) -> Callable[[], Any]:
    """Run *call* on a daemon thread now; the returned function waits for it (hang guard) and gives its value
    or raises its error."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="open-results-reader", daemon=True)
    thread.start()

    def result() -> Any:
        thread.join(HANG_GUARD)
        assert not thread.is_alive(), "the reader hangs"
        if "error" in box:
            raise box["error"]
        return box["value"]

    return result


def other_statements(conn: Any, tables: dict[str, str], duck: Any, transport: str) -> None:
    """Statements run while another is open on *transport*: plain, parameterised, chunked; each checked."""
    assert conn.query('SELECT 1 AS "one"', transport=transport)["one"].tolist() == [1]
    sql = f"SELECT caseid, COUNT(*) AS n FROM {tables['vertex']} WHERE caseid <> ? GROUP BY caseid"
    expected = duck(sql.replace("?", "$1"), ["none"])
    same_rows(conn.query(sql, ["none"], transport=transport), expected)
    chunks = list(conn.query_chunks(sql, ["none"], chunk_rows=7, transport=transport))
    same_rows(pd.concat(chunks, ignore_index=True), expected)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_statements_between_two_chunks_leave_the_open_result_whole(
    conn, sandbox, demo_tables, duck, transport
) -> None:
    sql = big_sql(demo_tables, "between_chunks")
    expected = duck(sql)
    assert len(expected) > AFTER
    conn.query("SELECT 1 AS warm", transport=transport)  # JVM/driver start-up is not what this is about
    sandbox.hold_statements("between_chunks", after_rows=AFTER)  # it cannot end before release()
    chunks = conn.query_chunks(sql, chunk_rows=1000, transport=transport)
    first = next(chunks)
    other_statements(conn, demo_tables, duck, transport)  # while the first is open on the same transport
    rest = in_thread(lambda: list(chunks))  # reading on, it reaches the hold
    sandbox.wait_held(1, timeout=HANG_GUARD)
    sandbox.release()
    same_rows(pd.concat([first, *rest()], ignore_index=True), expected)
    assert sandbox.held()["statements"]["ended"] == {"released": 1}  # never cancelled by the others


@pytest.mark.parametrize("where", ["before its rows", "mid-result"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_two_threads_on_one_transport_each_run_their_own_statement(
    conn, sandbox, demo_tables, duck, transport, where
) -> None:
    """Thread A's statement is held on the server (before any row, or with part of its rows sent) while the
    main thread runs its statements on the same transport: they neither wait for A nor end it."""
    sql = big_sql(demo_tables, "two_threads")
    expected = duck(sql)
    conn.query("SELECT 1 AS warm", transport=transport)
    sandbox.hold_statements("two_threads", after_rows=AFTER if where == "mid-result" else 0)
    a = in_thread(lambda: conn.query(sql, transport=transport))
    sandbox.wait_held(1, timeout=HANG_GUARD)  # A is inside its statement, waiting for the server
    other_statements(conn, demo_tables, duck, transport)
    sandbox.release()
    same_rows(a(), expected)
    assert sandbox.held()["statements"]["ended"] == {"released": 1}


@pytest.mark.parametrize("where", ["before its rows", "mid-result"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_closing_the_connection_fails_a_waiting_reader_at_once(
    sandbox, connect_workgroup, demo_tables, transport, where
) -> None:
    """The reader is blocked on a held statement (executing it, or reading its rows) when its owner closes the
    connection: it fails at once with ClosedError (it does not hang, nor blame the server), and the statement
    is cancelled on the server."""
    sql = big_sql(demo_tables, "closed_while_read")
    with connect_workgroup(sandbox) as own:
        own.query("SELECT 1 AS warm", transport=transport)
        sandbox.hold_statements("closed_while_read", after_rows=AFTER if where == "mid-result" else 0)
        chunks = own.query_chunks(sql, chunk_rows=1000, transport=transport)
        reader = in_thread(lambda: sum(len(chunk) for chunk in chunks))
        sandbox.wait_held(1, timeout=HANG_GUARD)  # the reader waits for rows the server holds back
        own.close()
        with pytest.raises(ClosedError, match=r"connection was closed .*Run the query again"):
            reader()
    assert sandbox.wait_ended("cancelled", timeout=HANG_GUARD)["ended"] == {"cancelled": 1}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resuming_a_closed_chunk_iterator_is_a_clear_error(
    conn, sandbox, demo_tables, duck, transport
) -> None:
    """``close()`` on a part-read iterator ends its statement; asking it for more is a ClosedError, not a
    silent end that a ``for`` loop would take for the last chunk."""
    sql = big_sql(demo_tables, "closed_by_owner")
    conn.query("SELECT 1 AS warm", transport=transport)
    chunks = conn.query_chunks(sql, chunk_rows=1000, transport=transport)
    assert len(next(chunks)) == 1000
    chunks.close()
    with pytest.raises(ClosedError, match=r"closed before its last chunk"):
        next(chunks)
    with pytest.raises(ClosedError):
        list(chunks)
    other_statements(conn, demo_tables, duck, transport)  # the transport goes on
    whole = conn.query_chunks('SELECT 1 AS "one"', transport=transport)
    assert [frame["one"].tolist() for frame in whole] == [[1]]
    whole.close()  # closing an iterator read to the end changes nothing
    assert list(whole) == []


def test_a_dropped_druid_result_stops_its_reader_thread(sandbox, demo_tables) -> None:
    """A druid result dropped part-read (garbage, never closed) ends its HTTP reader thread and the query,
    and a closed one refuses to go on at once, naming who closed it."""
    from pm_notebook.sql.base import Target
    from pm_notebook.sql.druid import DruidTransport

    wg = sandbox.workgroups["demo"]
    transport = DruidTransport(Target.from_jdbc_url(sandbox.jdbc_url, wg.client_id, wg.client_secret))
    try:
        sql = big_sql(demo_tables, "dropped_result")
        sandbox.hold_statements("dropped_result", after_rows=AFTER)
        result = transport.execute(sql, batch_rows=1000)
        batches = result.batches()
        next(batches)
        exchange = result._reader
        del result, batches
        gc.collect()
        assert exchange.finished.wait(HANG_GUARD), "the reader thread goes on polling"
        closing = transport.execute(sql, batch_rows=1000)
        batches = closing.batches()
        next(batches)
        closing.close()
        with pytest.raises(ClosedError, match="closed before all its rows were read"):
            next(batches)
        assert closing._reader is not None and closing._reader.finished.wait(HANG_GUARD)
    finally:
        transport.close()
