"""A Ctrl-C during a query leaves no Java interrupt behind on the main thread (JVM running in the process)."""

from __future__ import annotations

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
