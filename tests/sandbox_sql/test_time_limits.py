"""Statement time limits in the engine: one watchdog thread, whatever the number of queries."""

from __future__ import annotations

import threading
import time

import pytest

from pm_notebook.sandbox.sql import engine as sqlengine
from pm_notebook.sandbox.sql.engine import SqlEngine, SqlOptions
from pm_notebook.sandbox.sql.errors import SqlError

ENDLESS = "SELECT COUNT(*) AS n FROM {v} AS a CROSS JOIN {v} AS b CROSS JOIN {v} AS c"


@pytest.fixture(scope="module")
def engine(sandbox_store):
    return SqlEngine(sandbox_store, SqlOptions(query_timeout=30))


@pytest.mark.parametrize("how", ["execute", "stream"])
def test_a_statement_over_its_time_limit_is_interrupted(engine, demo, tables, how):
    sql = tables.fmt(ENDLESS)
    started = time.monotonic()
    with pytest.raises(SqlError, match=r"Query timeout: the statement ran longer than 0.4 s") as info:
        if how == "execute":
            engine.execute(demo.client_id, sql, timeout=0.4)
        else:
            with engine.stream(demo.client_id, sql, None, lambda c, s, d: s, timeout=0.4) as stream:
                list(stream)
    assert info.value.kind == "timeout"
    assert time.monotonic() - started < 10
    # The slot is free and the next statement runs in full.
    assert engine.execute(demo.client_id, "SELECT 1 AS x").table.num_rows == 1


def test_the_earliest_deadline_fires_first_whatever_the_order_of_the_statements(engine, demo, tables):
    sql = tables.fmt(ENDLESS)
    ended: dict[float, tuple[str, float]] = {}

    def run(limit: float) -> None:
        started = time.monotonic()
        try:
            engine.execute(demo.client_id, sql, timeout=limit)
        except SqlError as exc:
            ended[limit] = (exc.kind, time.monotonic() - started)

    long = threading.Thread(target=run, args=(4.0,))
    long.start()
    time.sleep(0.3)  # the long limit is watched first; the short one must not wait behind it
    run(0.5)
    long.join(timeout=30)
    assert ended[0.5][0] == "timeout" and ended[0.5][1] < 3.5
    assert ended[4.0][0] == "timeout" and ended[4.0][1] >= 4.0


def test_finished_statements_do_not_pile_up_in_the_watchdog(engine, demo):
    for _ in range(3000):  # each leaves a closed guard behind until its 30 s deadline
        engine.execute(demo.client_id, "SELECT 1 AS x")
    watchdog = sqlengine._WATCHDOG
    assert len(watchdog._heap) < 2100  # compacted, not 3000
    assert all(guard._cursor is None for _, _, guard in watchdog._heap)  # nothing runs: no cursor is held
    assert sum(t.name == "pm-sql-deadlines" for t in threading.enumerate()) == 1
