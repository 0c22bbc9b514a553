"""The daemon threads that run the transports' blocking calls: reused while free, never while busy."""

from __future__ import annotations

import threading
import time

import pytest

from pm_notebook._workers import _Workers
from pm_notebook.sql import Pending, run_interruptible


def _wait_until(predicate, timeout: float = 60.0) -> bool:  # a hang guard, not a measure
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_consecutive_calls_reuse_one_thread() -> None:
    pool = _Workers(keep=4, idle_seconds=30)
    threads: set[int] = set()
    for _ in range(50):
        done = threading.Event()
        pool.run(lambda done=done: (threads.add(threading.get_ident()), done.set()))
        assert done.wait(60)
        assert _wait_until(lambda: len(pool._idle) == 1)  # back in the pool once its call is over
    assert len(threads) == 1
    assert threading.get_ident() not in threads  # off the calling thread
    assert run_interruptible(threading.get_ident) != threading.get_ident()


def test_a_busy_worker_is_not_given_the_next_call() -> None:
    release = threading.Event()
    stuck = Pending(lambda: (release.wait(60), threading.get_ident())[1])  # e.g. a call Ctrl-C gave up on
    try:
        other = run_interruptible(threading.get_ident)  # does not wait for the stuck call
    finally:
        release.set()
    assert stuck.result() != other


def test_errors_reach_the_caller_and_the_worker_survives() -> None:
    def fail() -> None:
        raise ValueError("from the worker")

    with pytest.raises(ValueError, match="from the worker"):
        run_interruptible(fail)
    assert run_interruptible(lambda: 42) == 42


def test_idle_workers_end_and_run_their_exit_hooks() -> None:
    pool = _Workers(keep=1, idle_seconds=0.2)
    ended: list[int] = []
    pool.exit_hooks.append(lambda: ended.append(threading.get_ident()))
    ran: list[int] = []
    done = threading.Event()
    pool.run(lambda: (ran.append(threading.get_ident()), done.set()))
    assert done.wait(60)
    assert _wait_until(lambda: ended == ran)  # idle for 0.2 s: it ends and runs the hook on its own thread
    assert not any(t.ident == ran[0] for t in threading.enumerate())


def test_workers_beyond_keep_end_when_their_call_is_over() -> None:
    pool = _Workers(keep=1, idle_seconds=30)
    ended: list[int] = []
    pool.exit_hooks.append(lambda: ended.append(threading.get_ident()))
    release = threading.Event()
    started = threading.Barrier(3)
    ran: list[int] = []

    def call() -> None:
        ran.append(threading.get_ident())
        started.wait(60)
        release.wait(60)

    pool.run(call)
    pool.run(call)  # the first worker is busy: a second one starts
    started.wait(60)
    release.set()
    assert _wait_until(lambda: len(ended) == 1)  # one stays for the next call, the other ends
    assert len(set(ran)) == 2 and ended[0] in ran
    assert _wait_until(lambda: len(pool._idle) == 1)
    kept = (set(ran) - set(ended)).pop()
    again: list[int] = []
    done = threading.Event()
    pool.run(lambda: (again.append(threading.get_ident()), done.set()))
    assert done.wait(60) and again == [kept]


@pytest.mark.jdbc
def test_a_jdbc_worker_stays_attached_to_the_jvm_between_calls_and_detaches_at_its_end(monkeypatch) -> None:
    import _jpype
    import jpype

    from pm_notebook import _workers as sql
    from pm_notebook.sql._jvm import ensure_jvm
    from pm_notebook.sql.jdbc import _detach_thread, run_java

    ensure_jvm()
    system = jpype.JClass("java.lang.System")
    pool = _Workers(keep=1, idle_seconds=0.5)  # one worker, so both calls below run on it
    pool.exit_hooks.extend(sql._WORKERS.exit_hooks)  # what the transports' pool runs as a worker ends
    monkeypatch.setattr(sql, "_WORKERS", pool)
    attached_at_end: list[bool] = []
    pool.exit_hooks.append(lambda: attached_at_end.append(_jpype.isThreadAttachedToJVM()))
    assert _detach_thread in pool.exit_hooks

    worker = run_java(lambda: (system.nanoTime(), threading.get_ident())[1])
    assert _wait_until(lambda: len(pool._idle) == 1)  # back in the pool
    # The next call finds the thread still attached before it calls Java (attaching and detaching cost about
    # a millisecond per call). No Java call here: the check must not attach the thread itself.
    again, attached = run_interruptible(lambda: (threading.get_ident(), _jpype.isThreadAttachedToJVM()))
    assert again == worker and attached
    assert _wait_until(lambda: attached_at_end == [False])  # idle for 0.5 s: detached as it ended
