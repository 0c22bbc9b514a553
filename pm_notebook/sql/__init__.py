"""SQL transports to the service's Druid broker, and the column-batch type they all produce.

Three transports speak to the same broker with the same credentials (login = client id, password = client
secret):

- ``"druid"``: Druid's SQL HTTP API (``POST /druid/v2/sql/``, ``arrayLines`` read by pyarrow's CSV reader,
  see :mod:`pm_notebook.frames`).
- ``"avatica"``: the Avatica JSON protocol spoken from Python (the JDBC URL's endpoint, no JVM).
- ``"jdbc"``: the real Avatica JDBC driver through JPype, read column-wise by our small Java helper.

``"auto"`` picks the first of :data:`AUTO_ORDER` that works (the order comes from
``bench/bench_client.py``: the JVM-free paths are faster than anything through the driver, and need no Java
start-up).

Every transport yields :class:`Batch` objects: column specs (the *declared* SQL types, known even for empty
results) plus one column of wire values per spec. :mod:`pm_notebook.frames` is the one place they become Arrow
and pandas, so the types are identical whichever transport ran the query.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .._secret import Secret
from ..errors import ConfigurationError

__all__ = [
    "AUTO_ORDER",
    "TRANSPORTS",
    "Batch",
    "ColumnSpec",
    "Pending",
    "Result",
    "Transport",
    "Transports",
    "at_worker_exit",
    "check_params",
    "make_transport",
    "run_in_worker",
    "run_interruptible",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

TRANSPORTS = ("auto", "jdbc", "avatica", "druid")
# Fastest first (bench/bench_client.py): Druid HTTP + pyarrow, then Avatica JSON + orjson, then the JVM.
AUTO_ORDER = ("druid", "avatica", "jdbc")


@dataclass(frozen=True)
class ColumnSpec:
    """One result column as the server declared it.

    :param name: the column label.
    :param type_name: the SQL type name, upper case (``TIMESTAMP``, ``BIGINT``, ``VARCHAR``, ``ARRAY``, ...).
    :param element_type: for ``ARRAY`` columns, the SQL type of the elements.
    :param nullable: whether the server says the column may hold NULLs.
    """

    name: str
    type_name: str
    element_type: str | None = None
    nullable: bool = True


@dataclass(frozen=True)
class Batch:
    """A slice of a result, in one of two wire shapes.

    - ``data[i]`` holds column ``columns[i]`` as a sequence of wire values or an Arrow array. Wire values are
      what the protocol carries: epoch ms or ISO text for ``TIMESTAMP``, epoch days for ``DATE``, JSON
      numbers, strings, booleans, lists, ``None`` for NULL.
    - or ``array_lines`` holds the rows as newline-delimited JSON arrays in column order (Druid's
      ``arrayLines``; ``data`` empty; ``num_rows`` is -1: the lines are not counted before parsing).
    """

    columns: tuple[ColumnSpec, ...]
    data: tuple[Any, ...]
    num_rows: int
    array_lines: bytes | None = None


class Result(Protocol):
    """An open statement's result: the declared columns, then batches until exhausted.

    ``close()`` releases the server-side statement; ``cancel()`` may be called while a batch is being fetched
    (from another thread, or after a KeyboardInterrupt) and asks the server to stop the query.
    """

    columns: tuple[ColumnSpec, ...]

    def batches(self) -> Iterator[Batch]: ...

    def cancel(self) -> None: ...

    def close(self) -> None: ...


class Transport(Protocol):
    """The whole transport contract: run one statement, get a :class:`Result`; close."""

    name: str

    def execute(
        self, sql: str, params: Sequence[Any] | None = None, *, batch_rows: int = 65536
    ) -> Result: ...

    def close(self) -> None: ...


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


class Pending:
    """A blocking call (a socket read, a Java call) running on a worker thread (see :func:`run_in_worker`).

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

    def result(self, *, on_interrupt: Callable[[], None] | None = None) -> Any:
        """Wait for the call; on KeyboardInterrupt run *on_interrupt* (to end the call) and re-raise."""
        try:
            while not self._done.wait(0.05):
                pass
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt()
            raise
        if "error" in self._box:
            raise self._box["error"]
        return self._box["value"]


def run_interruptible(call: Callable[[], T], *, on_interrupt: Callable[[], None] | None = None) -> T:
    """Run *call* on a worker thread and wait for it, staying responsive to Ctrl-C (see :class:`Pending`)."""
    return Pending(call).result(on_interrupt=on_interrupt)


_SCALARS = (type(None), bool, int, float, str, decimal.Decimal, dt.date)  # datetime is a date


def check_params(params: Any) -> list[Any]:
    """Validate the values for ``?`` placeholders: a list/tuple of scalars (``None`` means no parameters).

    numpy scalars become Python ones; pandas ``Timestamp`` is a ``datetime``.

    :raises ConfigurationError: for a non-sequence, or a value SQL parameters cannot carry.
    """
    if params is None:
        return []
    if isinstance(params, (str, bytes, dict)) or not isinstance(params, Sequence):
        raise ConfigurationError(
            f"params must be a list or tuple of values for the ? placeholders, got {type(params).__name__}.",
            hint="Write `WHERE caseid = ?` and pass params=['case-1'].",
        )
    values = []
    for i, value in enumerate(params, start=1):
        if type(value).__module__ == "numpy" and hasattr(value, "item"):
            value = value.item()
        if not isinstance(value, _SCALARS) or (isinstance(value, float) and not math.isfinite(value)):
            raise ConfigurationError(
                f"Parameter {i} ({type(value).__name__} {value!r:.40}) cannot be sent to SQL.",
                hint="Use str, int, finite float, bool, None, decimal, date or datetime values.",
            )
        values.append(value)
    return values


def make_transport(
    name: str,
    *,
    jdbc_url: str,
    sql_http_url: str,
    user: str,
    password: Secret | str,
    timeout: float = 300.0,
    driver: str | None = None,
) -> Transport:
    """Build one concrete transport (``"druid"``, ``"avatica"`` or ``"jdbc"``); nothing is sent yet."""
    if name == "druid":
        from .druid import DruidTransport

        return DruidTransport(sql_http_url, user, password, timeout=timeout)
    if name == "avatica":
        from .avatica import AvaticaTransport, avatica_http_url

        return AvaticaTransport(avatica_http_url(jdbc_url), user, password, timeout=timeout)
    if name == "jdbc":
        from .jdbc import JdbcTransport

        return JdbcTransport(jdbc_url, user, password, driver=driver)
    raise ConfigurationError(f"Unknown SQL transport {name!r}.", hint=f"Use one of {', '.join(TRANSPORTS)}.")


_PROBE_SQL = "SELECT 1 AS ok"


class Transports:
    """The transports of one connection, created on first use and closed together.

    ``get("auto")`` tries :data:`AUTO_ORDER` once, with a one-row probe, and keeps the first that answers; the
    choice is logged at DEBUG. Wrong credentials stop the search at once (every transport would fail alike).
    """

    def __init__(
        self,
        *,
        jdbc_url: str,
        sql_http_url: str,
        user: str,
        password: Secret | str,
        timeout: float = 300.0,
        driver: str | None = None,
    ) -> None:
        self._kwargs = {
            "jdbc_url": jdbc_url,
            "sql_http_url": sql_http_url,
            "user": user,
            "password": password,
            "timeout": timeout,
            "driver": driver,
        }
        self._made: dict[str, Transport] = {}
        self._auto: str | None = None
        self._lock = threading.Lock()

    def new(self, name: str) -> Transport:
        """A fresh, unshared transport (for DB-API connections that hold results open)."""
        name = self.resolve(name)
        return make_transport(name, **self._kwargs)

    def resolve(self, name: str | None) -> str:
        """The concrete transport name for *name* (``None``/``"auto"`` → the probed choice)."""
        name = (name or "auto").lower()
        if name not in TRANSPORTS:
            raise ConfigurationError(
                f"Unknown SQL transport {name!r}.", hint=f"Use one of {', '.join(TRANSPORTS)}."
            )
        if name != "auto":
            return name
        with self._lock:
            if self._auto is None:
                self._auto = self._probe()
            return self._auto

    def get(self, name: str | None = None) -> Transport:
        """The shared transport called *name* (created on first use)."""
        name = self.resolve(name)
        with self._lock:
            if name not in self._made:
                self._made[name] = make_transport(name, **self._kwargs)
            return self._made[name]

    def _probe(self) -> str:
        from ..errors import AuthenticationError, PMError

        failures = []
        for name in AUTO_ORDER:
            transport = make_transport(name, **self._kwargs)
            try:
                result = transport.execute(_PROBE_SQL)
                for _ in result.batches():
                    pass
            except AuthenticationError:
                transport.close()
                raise
            except PMError as exc:
                transport.close()
                failures.append(f"{name}: {exc.message}")
                log.debug("SQL transport %s does not work here: %s", name, exc.message)
                continue
            self._made[name] = transport
            log.debug("SQL transport 'auto' chose %r (order %s)", name, ", ".join(AUTO_ORDER))
            return name
        from ..errors import TransportError

        raise TransportError(
            "No SQL transport works: " + "; ".join(failures),
            hint="Check the JDBC URL (host, port 8082) and that the SQL endpoint is up.",
        )

    def close(self) -> None:
        """Close every transport made so far."""
        with self._lock:
            made, self._made = list(self._made.values()), {}
        for transport in made:
            transport.close()
