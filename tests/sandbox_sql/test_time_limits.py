"""Statement time limits in the engine: one watchdog thread, whatever the number of queries.

The statements that must be interrupted are held (:class:`StatementHolds`): they wait inside DuckDB until
their time limit interrupts them, so no verdict depends on how fast this machine runs a query. A statement
whose limit must end it while held is admitted with the limit clock stopped (``LIMIT_CLOCK.stopped()``):
admission and translation count against the limit, and on a busy machine they could use it all up before
the statement reaches its hold. Elapsed times are only compared with the limits themselves (a limit never
fires early) or used as hang guards.
"""

from __future__ import annotations

import threading
import time

import pytest

from pm_sandbox.sql import deadline as sqldeadline
from pm_sandbox.sql.engine import SqlEngine, SqlOptions
from pm_sandbox.sql.errors import SqlError

HELD = "SELECT COUNT(*) AS held FROM {v}"


@pytest.fixture(scope="module")
def engine(sandbox_store):
    return SqlEngine(sandbox_store, SqlOptions(query_timeout=120))


@pytest.fixture(autouse=True)
def _no_hold_left(engine):
    yield
    engine.holds.clear()


def _wait_held(engine: SqlEngine, count: int) -> None:
    deadline = time.monotonic() + 60  # a hang guard, not a measure
    while engine.holds.state()["held"] < count:
        assert time.monotonic() < deadline, engine.holds.state()
        time.sleep(0.01)


@pytest.mark.parametrize("how", ["execute", "stream"])
def test_a_statement_over_its_time_limit_is_interrupted(engine, demo, tables, how):
    engine.holds.arm("AS held")
    sql = tables.fmt(HELD)
    errors: list[SqlError] = []

    def run() -> None:
        with pytest.raises(SqlError) as info:
            if how == "execute":
                engine.execute(demo.client_id, sql, timeout=0.4)
            else:
                with engine.stream(demo.client_id, sql, None, lambda c, s, d: s, timeout=0.4) as stream:
                    list(stream)
        errors.append(info.value)

    with sqldeadline.LIMIT_CLOCK.stopped():  # however slow its admission, the statement reaches its hold
        worker = threading.Thread(target=run)
        worker.start()
        _wait_held(engine, 1)
        held = time.monotonic()
    worker.join(60)
    assert not worker.is_alive() and len(errors) == 1
    assert errors[0].kind == "timeout"
    assert str(errors[0]).startswith("Query timeout: the statement ran longer than 0.4 s")
    assert time.monotonic() - held >= 0.4  # the limit, not something else, ended it
    assert engine.holds.state() == {"armed": [], "held": 0, "by_workgroup": {}, "ended": {"timed_out": 1}}
    # The slot is free and the next statement runs in full.
    assert engine.execute(demo.client_id, "SELECT 1 AS x").table.num_rows == 1


def test_a_cancel_interrupts_a_held_statement_and_release_lets_it_finish(engine, demo, tables):
    engine.holds.arm("AS held", times=2)
    sql = tables.fmt(HELD)
    cancels: list = []
    stopper = threading.Thread(target=lambda: (_wait_held(engine, 1), cancels[0]()))
    stopper.start()
    with pytest.raises(SqlError, match="cancelled") as info:
        engine.execute(demo.client_id, sql, on_open=cancels.append)
    stopper.join(60)
    assert info.value.kind == "cancelled"
    releaser = threading.Thread(target=lambda: (_wait_held(engine, 1), engine.holds.release()))
    releaser.start()
    rows = engine.execute(demo.client_id, sql).table.column("held").to_pylist()
    releaser.join(60)
    expected = engine.execute(demo.client_id, tables.fmt("SELECT COUNT(*) AS n FROM {v}")).table
    assert rows == expected.column("n").to_pylist()
    assert engine.holds.state()["ended"] == {"cancelled": 1, "released": 1}


def test_the_earliest_deadline_fires_first_whatever_the_order_of_the_statements(engine, demo, tables):
    """The long limit is watched first; the short one must not wait behind it.

    Both statements are held, so each ends only when something interrupts it; the verdict is which one the
    watchdog ended (events), not a duration. The long one is then cancelled rather than waited for.
    """
    engine.holds.arm("AS held", times=2)
    sql = tables.fmt(HELD)
    ended: list[tuple[float, str]] = []
    cancels: list = []
    lock = threading.Lock()

    def run(limit: float) -> None:
        try:
            engine.execute(demo.client_id, sql, timeout=limit, on_open=cancels.append)
        except SqlError as exc:
            with lock:
                ended.append((limit, exc.kind))

    long = threading.Thread(target=run, args=(120.0,))
    long.start()
    _wait_held(engine, 1)  # the long statement is admitted and its limit watched
    short = threading.Thread(target=run, args=(0.5,))
    short.start()
    short.join(60)
    assert not short.is_alive()
    assert ended == [(0.5, "timeout")]  # the short limit fired while the long statement still waits
    assert long.is_alive() and engine.holds.state()["held"] == 1
    cancels[0]()
    long.join(60)
    assert ended == [(0.5, "timeout"), (120.0, "cancelled")]


def test_finished_statements_do_not_pile_up_in_the_watchdog(engine, demo):
    for _ in range(3000):  # each leaves a closed guard behind until its deadline (120 s)
        engine.execute(demo.client_id, "SELECT 1 AS x")
    watchdog = sqldeadline._WATCHDOG
    assert len(watchdog._heap) < 2100  # compacted, not 3000
    assert all(guard._cursor is None for _, _, guard in watchdog._heap)  # nothing runs: no cursor is held
    assert sum(t.name == "pm-sql-deadlines" for t in threading.enumerate()) == 1
