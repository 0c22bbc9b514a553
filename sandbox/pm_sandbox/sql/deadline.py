"""A running statement's time limit, cancel and hold: :class:`Deadline` and :class:`StatementHolds`.

Every statement of the SQL port runs under a :class:`Deadline`: one watchdog thread interrupts DuckDB at its
time limit, a client's cancel interrupts it at once, and the deadline tells which of them (or the query's
own error) ended it.

:class:`StatementHolds` is the sandbox's "slow statement" switch: a statement matching an armed hold waits
inside DuckDB (in a Python function that blocks without using CPU) until its time limit or a cancel
interrupts it, or the hold is released. Tests use it to make a statement run until it is interrupted by
construction, whatever the machine's speed.

:data:`LIMIT_CLOCK` is the time the limits run on; stopping it is the switch that keeps a limit from running
out before the statement is held (its admission and translation count against it, as in Druid).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import duckdb

from .dialect import from_duckdb
from .errors import SqlError

__all__ = [
    "LIMIT_CLOCK",
    "Deadline",
    "LimitClock",
    "StatementHolds",
    "cancelled",
    "engine_error",
    "install_hold_function",
    "timed_out",
]

log = logging.getLogger(__name__)


class LimitClock:
    """The time statements' limits run on: ``time.monotonic()`` less the time the clock stood stopped.

    Stopping it is a switch for tests: while it stands, no time limit runs, so a statement can be admitted
    and reach its hold however slowly the machine works; restarted, every limit runs on from where it stood.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped_at: float | None = None
        self._lost = 0.0  # seconds the clock stood stopped

    def now(self) -> float:
        with self._lock:
            real = time.monotonic() if self._stopped_at is None else self._stopped_at
            return real - self._lost

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """No time limit runs within this block (not re-entrant)."""
        with self._lock:
            if self._stopped_at is not None:
                raise RuntimeError("the limit clock is already stopped")
            self._stopped_at = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._lost += time.monotonic() - self._stopped_at
                self._stopped_at = None
            # the watchdog needs no wake-up: a stopped clock only makes deadlines come later


#: the one clock of every statement's time limit (the watchdog serves them all)
LIMIT_CLOCK = LimitClock()


class Deadline:
    """A running statement's cursor, time limit and cancel flag: it tells which of them interrupted DuckDB.

    The time limit runs from *since* (default: now; :data:`LIMIT_CLOCK` time); :meth:`close` ends it and
    closes the cursor, and lets go of it (the watchdog may hold a closed one until its time comes).
    """

    def __init__(
        self, cursor: duckdb.DuckDBPyConnection, timeout: float, sql: str, *, since: float | None = None
    ) -> None:
        self._cursor: duckdb.DuckDBPyConnection | None = cursor
        self.timeout = timeout
        self.sql = sql
        self.timed_out = False
        self.cancelled = False
        self._wake = threading.Event()  # ends a hold: set when interrupted, released or closed
        _WATCHDOG.watch(self, (LIMIT_CLOCK.now() if since is None else since) + timeout)

    @property
    def closed(self) -> bool:
        return self._cursor is None

    @property
    def cursor(self) -> duckdb.DuckDBPyConnection:
        if self._cursor is None:
            raise SqlError("The statement is closed.", "internal")
        return self._cursor

    def _interrupt(self) -> None:
        cursor = self._cursor
        if cursor is not None:
            with contextlib.suppress(duckdb.Error):  # closed meanwhile: nothing left to stop
                cursor.interrupt()
        self._wake.set()  # after the interrupt: a held statement then ends with DuckDB's InterruptException

    def expire(self) -> None:
        """The time limit is reached (called by the watchdog)."""
        if not self.closed:
            self.timed_out = True
            self._interrupt()

    def cancel(self) -> None:
        """Interrupt the statement on the caller's request (from any thread)."""
        self.cancelled = True
        self._interrupt()

    def hold(self) -> None:
        """Wait, inside DuckDB, until the statement is interrupted (then raise its error) or released.

        The wait is a DuckDB statement on this cursor calling a Python function that blocks on an event, so
        the time limit and a cancel interrupt it exactly as they interrupt a long query.

        :raises SqlError: timed out or cancelled.
        """
        token = next(_HOLD_TOKENS)
        _HELD[token] = self._wake
        try:
            self.cursor.execute(f"SELECT {_HOLD_FUNCTION}(?)", [token]).fetchall()
        except duckdb.Error as e:
            raise self.error(e) from None
        finally:
            _HELD.pop(token, None)
        if self.timed_out or self.cancelled:  # interrupted before DuckDB started the wait
            raise timed_out(self.timeout) if self.timed_out else cancelled()

    def pause(self) -> None:
        """Wait between two batches of a streamed result until it is interrupted (then raise its error) or
        released; DuckDB is idle meanwhile, so no DuckDB call is needed to wait.

        :raises SqlError: timed out or cancelled.
        """
        self._wake.wait()
        if self.timed_out or self.cancelled:
            raise timed_out(self.timeout) if self.timed_out else cancelled()

    def release(self) -> None:
        """End a hold: the statement goes on and runs normally."""
        self._wake.set()

    def error(self, e: duckdb.Error) -> SqlError:
        """The error to report for DuckDB error *e*: the time limit, the cancel, or the query's own."""
        if self.timed_out:
            return timed_out(self.timeout)
        if self.cancelled:
            return cancelled()
        return engine_error(e, self.sql)

    def close(self) -> None:
        cursor, self._cursor = self._cursor, None
        self._wake.set()
        if cursor is not None:
            cursor.close()


#: the DuckDB function a held statement waits in (registered in each workgroup's database)
_HOLD_FUNCTION = "pm_sandbox_hold"
_HOLD_TOKENS = itertools.count(1)
_HELD: dict[int, threading.Event] = {}  # token -> the wake event of the statement waiting under it


def _wait_held(token: int) -> bool:
    """The body of the hold function: block until the statement's event is set (unknown token: at once)."""
    wake = _HELD.get(token)
    if wake is not None:
        wake.wait()
    return True


def install_hold_function(db: duckdb.DuckDBPyConnection) -> None:
    """Register the hold function in *db* (once; every engine over the same store shares it)."""
    cur = db.cursor()
    try:
        known = cur.execute(
            "SELECT 1 FROM duckdb_functions() WHERE function_name = ?", [_HOLD_FUNCTION]
        ).fetchall()
        if not known:
            with contextlib.suppress(duckdb.CatalogException):  # another engine registered it meanwhile
                cur.create_function(_HOLD_FUNCTION, _wait_held, ["BIGINT"], "BOOLEAN", side_effects=True)
    finally:
        cur.close()


@dataclass
class _Hold:
    sql_contains: str | None
    client_id: str | None
    times: int | None  # None: every matching statement until released
    after_rows: int = 0  # 0: hold before the query runs; else once a streamed result has produced this many


def _matches(hold: _Hold, sql: str, client_id: str) -> bool:
    return (hold.sql_contains is None or hold.sql_contains in sql) and hold.client_id in (None, client_id)


class StatementHolds:
    """The hold switch: the next *times* statements whose Druid SQL contains a text, or of one workgroup (or
    both), wait until interrupted; with ``times=None``, every matching statement until :meth:`release`.

    A held statement has been admitted (translated, a query slot taken, registered for cancelling, its
    time limit running) and then waits, inside DuckDB and without using CPU, until its time limit or a
    cancel (Druid ``DELETE``, Avatica ``closeStatement``/``closeConnection``) interrupts it — it then fails
    exactly as an interrupted long query does — or until :meth:`release`, after which it runs normally.
    Thread-safe; the counters tell tests *when* something happened instead of how long it took.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[_Hold] = []
        self._held: list[Deadline] = []
        self._by_workgroup: Counter[str] = Counter()
        self._ended: Counter[str] = Counter()

    def arm(
        self,
        sql_contains: str | None = None,
        times: int | None = 1,
        *,
        client_id: str | None = None,
        after_rows: int = 0,
    ) -> None:
        """Hold the next *times* statements whose SQL text contains *sql_contains* (case-sensitive) and/or
        that workgroup *client_id* sends; ``times=None`` holds every one of them until :meth:`release`.

        With *after_rows*, a statement whose result streams (the Druid SQL API; an Avatica result larger
        than one block) is held mid-result instead: once it has produced at least that many rows (whole
        batches, so a few more may have gone), between two batches, so the client has a partial result.
        A statement whose result is read whole at once is not held by it.
        """
        if isinstance(after_rows, bool) or not isinstance(after_rows, int) or after_rows < 0:
            raise ValueError(f"after_rows must be an integer of at least 0 (got {after_rows!r})")
        for name, value in (("sql_contains", sql_contains), ("client_id", client_id)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be a non-empty string (got {value!r})")
        if sql_contains is None and client_id is None:
            raise ValueError("a hold needs sql_contains, client_id or both")
        if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
            raise ValueError(f"times must be an integer of at least 1, or null (got {times!r})")
        with self._lock:
            self._armed.append(_Hold(sql_contains, client_id, times, after_rows))

    def _take(self, sql: str, client_id: str, mid_result: bool) -> _Hold | None:
        """The first armed hold of the kind asked for matching *sql* and *client_id* (one ``times`` used)."""
        if not self._armed:  # the usual case: nothing armed, no lock taken
            return None
        with self._lock:
            hold = next(
                (h for h in self._armed if (h.after_rows > 0) == mid_result and _matches(h, sql, client_id)),
                None,
            )
            if hold is not None and hold.times is not None:
                hold.times -= 1
                if hold.times <= 0:
                    self._armed.remove(hold)
            return hold

    def apply(self, sql: str, running: Deadline, client_id: str) -> None:
        """Hold *running* if an armed hold matches *sql* and *client_id* (consuming one of its ``times``).

        :raises SqlError: the held statement was timed out or cancelled.
        """
        if self._take(sql, client_id, mid_result=False) is not None:
            self._wait(running, client_id, running.hold)

    def after_rows(self, sql: str, client_id: str) -> int:
        """The row count after which a streamed result of *sql* is to be held (0: not held); one ``times``
        of the matching hold is used. The stream then calls :meth:`hold_mid_result` at that point."""
        hold = self._take(sql, client_id, mid_result=True)
        return hold.after_rows if hold is not None else 0

    def hold_mid_result(self, running: Deadline, client_id: str) -> None:
        """Hold a streamed result between two batches (see :meth:`after_rows`).

        :raises SqlError: the held statement was timed out or cancelled.
        """
        self._wait(running, client_id, running.pause)

    def _wait(self, running: Deadline, client_id: str, wait: Callable[[], None]) -> None:
        with self._lock:
            self._held.append(running)
            self._by_workgroup[client_id] += 1
        outcome = "failed"
        try:
            wait()
            outcome = "released"
        except SqlError as exc:
            outcome = (
                "cancelled" if exc.kind == "cancelled" else "timed_out" if exc.kind == "timeout" else "failed"
            )
            raise
        finally:
            with self._lock:
                self._held.remove(running)
                self._by_workgroup[client_id] -= 1
                self._ended[outcome] += 1

    def release(self) -> int:
        """Let every held statement go on normally, and disarm the holds without a count (``times=None``);
        returns how many statements were held."""
        with self._lock:
            self._armed = [h for h in self._armed if h.times is not None]
            held = list(self._held)
        for running in held:
            running.release()
        return len(held)

    def clear(self) -> None:
        """Disarm every hold, release the held statements and zero the ``ended`` counts."""
        with self._lock:
            self._armed.clear()
        self.release()
        with self._lock:
            self._ended.clear()

    def state(self) -> dict[str, Any]:
        """``{"armed": [{"sql_contains", "client_id", "times"[, "after_rows"]}], "held": n,
        "by_workgroup": {client_id: n}, "ended": {outcome: n}}``.

        An outcome is ``cancelled``, ``timed_out``, ``released`` or ``failed``.
        """
        with self._lock:
            return {
                # after_rows only when set, so the state of a plain hold reads as before it existed
                "armed": [
                    {k: v for k, v in asdict(h).items() if k != "after_rows" or v} for h in self._armed
                ],
                "held": len(self._held),
                "by_workgroup": {k: v for k, v in self._by_workgroup.items() if v},
                "ended": dict(self._ended),
            }


class _Watchdog:
    """Fires the statements' time limits from one daemon thread.

    One thread serves every statement, so a query starts no thread of its own (see ``bench/README.md``).
    Closed deadlines leave the heap when their deadline comes up, or when the heap is compacted.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._compact_at = 1024
        self._thread: threading.Thread | None = None

    def watch(self, running: Deadline, deadline: float) -> None:
        """Expire *running* at *deadline* (:data:`LIMIT_CLOCK` seconds) unless it is closed by then."""
        with self._cond:
            if len(self._heap) >= self._compact_at:
                self._heap = [entry for entry in self._heap if not entry[2].closed]
                heapq.heapify(self._heap)
                self._compact_at = max(1024, 2 * len(self._heap))
            heapq.heappush(self._heap, (deadline, next(self._order), running))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pm-sql-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0][2] is running:  # the earliest deadline now: the watchdog must wake sooner
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].closed:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - LIMIT_CLOCK.now()
                    if wait <= 0:
                        running = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(wait)
            try:
                running.expire()
            except Exception:  # the watchdog must outlive any one statement
                log.exception("interrupting a statement at its time limit failed")


_WATCHDOG = _Watchdog()


def timed_out(seconds: float) -> SqlError:
    message = f"Query timeout: the statement ran longer than {seconds:g} s and was cancelled."
    return SqlError(message, "timeout")


def cancelled() -> SqlError:
    return SqlError("Query cancelled by its client.", "cancelled")


def engine_error(e: duckdb.Error, sql: str) -> SqlError:
    if isinstance(e, duckdb.InterruptException):
        return SqlError("Query cancelled.", "timeout")
    if isinstance(e, duckdb.PermissionException):
        return SqlError("Query refused: it reaches outside the workgroup's tables.", "refused")
    if isinstance(e, duckdb.OutOfMemoryException):
        return SqlError(
            "Resource limit exceeded: the query needs more memory than the sandbox allows.", "capacity"
        )
    return from_duckdb(type(e).__name__, str(e), sql)
