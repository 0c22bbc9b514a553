"""A Ctrl-C during a query leaves no Java interrupt behind on the main thread (JVM running in the process)."""

from __future__ import annotations

import signal
import threading

import pytest

from pm_notebook.errors import QueryCancelled

pytestmark = pytest.mark.jdbc


def test_after_a_cancelled_query_the_main_thread_can_call_java(conn, sandbox) -> None:
    import jpype

    from pm_notebook.sql._jvm import ensure_jvm

    ensure_jvm()
    conn.query("SELECT 1 AS warm", transport="druid")
    sandbox.fault("/druid/v2/sql", delay=5.0, times=1)
    main = threading.main_thread().ident
    timer = threading.Timer(0.5, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(QueryCancelled):
            conn.query("SELECT 2 AS slow", transport="druid")
    finally:
        timer.cancel()
        sandbox.clear_faults()
    # Without clearing, this first Java call of the main thread raises InterruptedException.
    assert str(jpype.JClass("java.sql.Types").VARCHAR) == "12"
