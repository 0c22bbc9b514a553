"""A Ctrl-C reaches Python with a JVM running in the process and leaves no Java interrupt behind on the main
thread."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from pm_notebook.errors import QueryCancelled

pytestmark = pytest.mark.jdbc


def test_after_a_cancelled_query_the_main_thread_can_call_java(conn, sandbox, interrupt_when_held) -> None:
    import jpype

    from pm_notebook.sql._jvm import ensure_jvm

    ensure_jvm()
    conn.query("SELECT 1 AS warm", transport="druid")
    sandbox.hold_statements("AS held")  # runs on the server until the Ctrl-C cancels it
    with interrupt_when_held(sandbox), pytest.raises(QueryCancelled):
        conn.query("SELECT 2 AS held", transport="druid")
    sandbox.wait_ended("cancelled")
    # Without clearing, this first Java call of the main thread raises InterruptedException.
    assert str(jpype.JClass("java.sql.Types").VARCHAR) == "12"


def test_a_process_directed_sigint_reaches_python_with_the_jvm_running() -> None:
    """What a kernel interrupt (``killpg``) and a terminal send: any thread of the process may take it, the
    JVM's many included; JPype is started with ``interrupt=False``, so the JVM leaves it to Python (with
    ``True`` the JVM's handler would end the process). The main thread waits as a query does
    (:func:`run_interruptible`): a signal another thread took does not wake a blocking wait of the main
    thread."""
    import jpype

    from pm_notebook.sql import after_interrupt, run_interruptible
    from pm_notebook.sql._jvm import ensure_jvm

    ensure_jvm()
    call_ended = threading.Event()

    def call() -> bool:
        # sent from the worker, once the main thread is inside run_interruptible (a signal sent before could
        # land anywhere in the main thread, e.g. in Thread.start)
        os.kill(os.getpid(), signal.SIGINT)
        return call_ended.wait(60)

    with pytest.raises(KeyboardInterrupt):  # the worker's 60 s are a hang guard, ended by on_interrupt
        run_interruptible(call, on_interrupt=call_ended.set)
    after_interrupt()  # as Connection does after a Ctrl-C
    assert str(jpype.JClass("java.sql.Types").VARCHAR) == "12"
