"""The worker threads of a query, the one threading idiom of its reader and its parser: reused daemon threads
for blocking calls (a transport's socket read or Java call, the parse of a batch of rows in
:mod:`pm_notebook.frames`), :class:`Pending`, one such call whose result is waited for while staying
responsive to Ctrl-C, and the hooks that tidy a thread after a Ctrl-C."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = [
    "Abandoned",
    "Pending",
    "after_interrupt",
    "at_interrupt",
    "at_worker_exit",
    "run_in_worker",
    "run_interruptible",
]

log = logging.getLogger("pm_notebook.sql")

T = TypeVar("T")


class _Worker:
    """One daemon thread of :class:`_Workers`: runs the calls given to it, then waits for the next."""

    def __init__(self, pool: _Workers) -> None:
        self._pool = pool
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="pm-sql-worker", daemon=True).start()

    def give(self, call: Callable[[], None]) -> None:
        self._calls.put(call)

    def _loop(self) -> None:
        try:
            while True:
                try:
                    call = self._calls.get(timeout=self._pool.idle_seconds)
                except queue.Empty:
                    if self._pool.retire(self):
                        return
                    continue  # handed a call just as the wait ended: it is in the queue
                try:
                    call()
                except BaseException:  # calls report their own errors; a worker must not die of one
                    log.exception("a background SQL call failed")
                if not self._pool.rest(self):
                    return
        finally:
            for hook in self._pool.exit_hooks:
                try:
                    hook()
                except Exception:
                    log.exception("a worker's exit hook failed")


class _Workers:
    """Daemon threads kept for the blocking calls of the transports (a socket read, a Java call).

    Starting a thread costs 0.1-0.8 ms on a small, busy machine, and a query makes one or two such calls; a
    worker is reused while it is free. A worker still busy (say, with a call Ctrl-C gave up on) is simply
    not reused: the next call gets another. At most *keep* wait for work, each for *idle_seconds*; a worker
    runs :attr:`exit_hooks` as it ends (the JDBC transport's workers stay attached to the JVM while they live:
    attaching and detaching a thread costs about a millisecond per call).
    """

    def __init__(self, keep: int = 4, idle_seconds: float = 60.0) -> None:
        self.keep = keep
        self.idle_seconds = idle_seconds
        self.exit_hooks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def run(self, call: Callable[[], None]) -> None:
        """Run *call* (which must not raise) on a free worker, or on a new one."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        (worker or _Worker(self)).give(call)

    def rest(self, worker: _Worker) -> bool:
        """Take back a worker whose call is over; ``False``: enough wait already, it may end."""
        with self._lock:
            if len(self._idle) >= self.keep:
                return False
            self._idle.append(worker)
            return True

    def retire(self, worker: _Worker) -> bool:
        """Let an idle worker end; ``False`` if it was handed a call meanwhile."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


_WORKERS = _Workers()


def run_in_worker(call: Callable[[], None]) -> None:
    """Run *call* in the background on a reused daemon thread; *call* must handle its own errors."""
    _WORKERS.run(call)


def at_worker_exit(hook: Callable[[], None]) -> None:
    """Run *hook* on each worker thread as it ends (once per hook, however often it is registered)."""
    if hook not in _WORKERS.exit_hooks:
        _WORKERS.exit_hooks.append(hook)


class Abandoned(Exception):
    """Raised by :meth:`Pending.result` when its *stop* event is set: the waiter gave up on the call."""


class Pending(Generic[T]):
    """A blocking call (a socket read, a Java call, a parse) running on a worker thread (see
    :func:`run_in_worker`).

    A Ctrl-C may be delivered to any thread of the process (the JVM has many) and does not interrupt a
    blocking read of another thread; :meth:`result` waits in short slices so the waiting thread stays
    responsive. Starting the next call before consuming the current result overlaps server and client work.
    """

    def __init__(self, call: Callable[[], T]) -> None:
        self._box: dict[str, Any] = {}
        self._done = threading.Event()

        def work() -> None:
            try:
                self._box["value"] = call()
            except BaseException as exc:  # handed over to the waiting thread
                self._box["error"] = exc
            finally:
                self._done.set()

        run_in_worker(work)

    def done(self) -> bool:
        """Whether the call is over (its result, or its error, is waiting)."""
        return self._done.is_set()

    def result(
        self, *, on_interrupt: Callable[[], None] | None = None, stop: threading.Event | None = None
    ) -> T:
        """Wait for the call; on KeyboardInterrupt run *on_interrupt* (to end the call) and re-raise.

        :param stop: stop waiting as soon as it is set (the call's owner gave up on it; the call ends on its
            worker and its result is dropped): raises :class:`Abandoned`.
        """
        try:
            while not self._done.wait(0.05):
                if stop is not None and stop.is_set():
                    raise Abandoned
            if stop is not None and stop.is_set():
                raise Abandoned
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt()
            raise
        if "error" in self._box:
            raise self._box["error"]
        value: T = self._box["value"]
        return value


def run_interruptible(
    call: Callable[[], T],
    *,
    on_interrupt: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
) -> T:
    """Run *call* on a worker thread and wait for it, staying responsive to Ctrl-C and to *stop* (see
    :class:`Pending`)."""
    return Pending(call).result(on_interrupt=on_interrupt, stop=stop)


_INTERRUPT_HOOKS: list[Callable[[], None]] = []


def at_interrupt(hook: Callable[[], None]) -> None:
    """Have :func:`after_interrupt` run *hook* (once per hook, however often it is registered).

    The JDBC transport's JVM registers one: a Ctrl-C leaves the interrupted thread's Java peer interrupted.
    """
    if hook not in _INTERRUPT_HOOKS:
        _INTERRUPT_HOOKS.append(hook)


def after_interrupt() -> None:
    """Make the calling thread fit for the next statement after a KeyboardInterrupt (runs the hooks)."""
    for hook in list(_INTERRUPT_HOOKS):
        try:
            hook()
        except Exception:
            log.exception("an interrupt hook failed")
