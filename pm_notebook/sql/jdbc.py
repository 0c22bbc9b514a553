"""JDBC transport: the real Avatica driver in a JVM (JPype), read column-wise by our Java helper.

Per chunk of rows, ``pm_notebook.ColumnarReader`` (``java/ColumnarReader.java``) reads the ResultSet into
primitive arrays, UTF-8 bytes with offsets and null masks that it reuses from chunk to chunk, then writes each
column in Arrow's layout straight into memory Python allocated (through a direct ByteBuffer). Each chunk thus
becomes Arrow arrays with one copy and no Python object per cell, and neither Java arrays nor JNI copies are
held while the result accumulates: the peak memory of a query is the result in Arrow plus its pandas
conversion. The JDBC URL gets ``;fetch_size=5000`` (the only setting that reaches the wire: see
``docs``/reference) and ``;transparent_reconnection=true``.

Java calls run on a worker thread (reused, and attached to the JVM while it lives) while the calling thread
waits, so a KeyboardInterrupt is seen at once: the statement is cancelled and closed, the (possibly busy) Java
connection is dropped in the background (once no other result reads from it), and the next query opens a
fresh one. JPype is imported inside functions only.

Every statement has a result of its own, on a connection no other open result uses (see :mod:`._links`): an
unparameterised query reuses that connection's shared Statement, a parameterised one is prepared, so a new
statement never closes one still being read, nor waits for it. A result closed before its last row fails its
reader at once with a :class:`~pm_notebook.errors.ClosedError` that says what closed it.
"""

from __future__ import annotations

import logging
import mmap
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

from .._workers import Abandoned, at_worker_exit, run_in_worker, run_interruptible
from ..config import jdbc_url_with_options, mask_jdbc_url
from ..errors import ClosedError, ConfigurationError, DriverError, QueryError
from ..query_context import check_context, context_properties
from ._errors import from_java
from ._jvm import DRIVER_CLASS, HELPER_CLASS, clear_interrupt, ensure_jvm, helper_jar
from ._links import Links, Seat, Seats
from ._open import BY_OWNER, OpenResults, closed_error
from .base import Batch, ColumnSpec, Target
from .params import Param, check_params

__all__ = ["JdbcResult", "JdbcTransport", "open_transport", "run_java"]

log = logging.getLogger(__name__)

T = TypeVar("T")

FETCH_SIZE = 5000
# Rows per ColumnarReader chunk: the size of its reused Java buffers (the JVM heap is small, see _jvm) and of
# the Arrow chunks; bigger chunks were not faster at 1M rows and grew the heap.
READER_ROWS = 16384
# ColumnarReader kinds (Java constants).
_LONG, _DOUBLE, _BOOL, _STRING, _TIMESTAMP, _DATE, _ARRAY = range(7)
# Longs per column in ColumnarReader.layout() (its LAYOUT_SLOTS).
_SLOTS = 9
# Column parts at least this big get their own memory map (see _allocate).
MAP_MIN_BYTES = 64 * 1024
_MAP_PRIVATE = getattr(mmap, "MAP_PRIVATE", None)  # POSIX only
# Fixed-width kinds: the Arrow type Java writes and its bytes per value (0: a bitmap). TIMESTAMP is epoch ms,
# typed by frames from the declared type, as on the other transports.
_FIXED = {
    _LONG: (pa.int64(), 8),
    _TIMESTAMP: (pa.int64(), 8),
    _DOUBLE: (pa.float64(), 8),
    _DATE: (pa.date32(), 4),
    _BOOL: (pa.bool_(), 0),
}
_JDBC_TYPE_NAMES = {
    _LONG: "BIGINT",
    _DOUBLE: "DOUBLE",
    _BOOL: "BOOLEAN",
    _STRING: "VARCHAR",
    _TIMESTAMP: "TIMESTAMP",
    _DATE: "DATE",
    _ARRAY: "ARRAY",
}


def open_transport(target: Target) -> JdbcTransport:
    """The registry's factory (see :data:`pm_notebook.sql.REGISTRY`)."""
    return JdbcTransport(target)


def run_java(
    call: Callable[[], T],
    *,
    on_interrupt: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
) -> T:
    """Run a blocking Java call off the calling thread (Ctrl-C stays responsive; *stop*: see
    :meth:`pm_notebook._workers.Pending.result`).

    The worker threads stay attached to the JVM (as daemon threads) until they end.
    """

    def fresh() -> T:
        clear_interrupt()  # an interrupt left on this worker's Java side must not fail the next call
        return call()

    return run_interruptible(fresh, on_interrupt=on_interrupt, stop=stop)


def _detach_thread() -> None:
    jpype = sys.modules.get("jpype")
    if jpype is not None and jpype.isJVMStarted() and jpype.java.lang.Thread.isAttached():
        jpype.java.lang.Thread.detach()


at_worker_exit(_detach_thread)


@dataclass
class _Link:
    """One Java connection, opened with one query context's properties; ``seats.shared`` is its shared
    Statement (reused by unparameterised queries while no result reads it: one round trip each)."""

    jconn: Any
    seats: Seats = field(default_factory=Seats)


class JdbcTransport:
    """JDBC connections through the Avatica driver (opened lazily; replaced after a cancel).

    The query context travels as connection properties (the driver sends them in ``openConnection``'s
    ``info`` map, where Druid reads the context; keys written in the URL are not sent), so each distinct
    context gets a connection of its own: the last :data:`._links.MAX_CONTEXTS` idle ones are kept open. A
    statement that starts while a result of the same context is still being read gets another connection
    (see :mod:`._links`).

    :param target: the JDBC URL, login and password (client id and secret: the secret is revealed only into
        the driver's ``Properties``) and the driver jar (else ``PM_JDBC_DRIVER``, else the cached download).
    :param fetch_size: rows per Avatica frame (``;fetch_size=`` on the URL).
    """

    name = "jdbc"

    def __init__(self, target: Target, *, fetch_size: int = FETCH_SIZE) -> None:
        self.url = jdbc_url_with_options(
            target.jdbc_url, fetch_size=fetch_size, transparent_reconnection="true"
        )
        self._target = target
        self._links: Links[_Link] = Links(lambda link: _quiet_close(link.jconn))
        self._open = OpenResults()  # the results not yet closed, closed with the transport
        self._closed = False

    def __repr__(self) -> str:
        return f"JdbcTransport(url={mask_jdbc_url(self.url)!r}, user={self._target.user!r})"

    def _open_link(self, context: dict[str, Any]) -> _Link:
        ensure_jvm(self._target.driver)
        import jpype

        props = jpype.java.util.Properties()
        for name, value in context_properties(context).items():
            props.setProperty(name, value)
        props.setProperty("user", self._target.user)
        props.setProperty("password", self._target.password.reveal())  # straight into Java
        driver = jpype.JClass(DRIVER_CLASS)()
        try:
            jconn = run_java(lambda: driver.connect(self.url, props))
        except jpype.JException as exc:
            raise from_java(exc, url=mask_jdbc_url(self.url)) from None
        if jconn is None:
            raise ConfigurationError(
                f"The Avatica driver does not accept the URL {mask_jdbc_url(self.url)!r}."
            )
        log.debug("JDBC connection opened on %s", mask_jdbc_url(self.url))
        return _Link(jconn)

    def abandon_connection(self, link: _Link) -> None:
        """Forget a Java connection (after a cancel it may still be busy): no new statement goes to it, and
        it is closed in the background once no result reads from it."""
        if self._links.forget(link):
            _close_in_background(link.jconn)

    def give_back(self, link: _Link, seat: Seat, *, shared_lost: bool = False) -> None:
        """A result on *link* is closed: its seat is free; a forgotten link is closed after its last one."""
        if self._links.give_back(link, seat, shared_lost=shared_lost):
            _close_in_background(link.jconn)

    def execute(
        self,
        sql: str,
        params: Sequence[Any] | None = None,
        *,
        batch_rows: int = 65536,
        context: Mapping[str, Any] | None = None,
    ) -> JdbcResult:
        """Run *sql* (``?`` placeholders bound by the driver from *params*) on the connection whose
        properties are the query *context* (checked first), and return its open result."""
        if not isinstance(sql, str) or not sql.strip():
            raise ConfigurationError("The SQL text is empty.", hint="Pass a SELECT statement.")
        checked = check_context(context)
        values = check_params(list(params or []))
        import jpype

        if self._closed:
            raise ClosedError("This JDBC transport is closed.")
        link, seat, shared = self._links.take(checked, lambda: self._open_link(checked), reusable=not values)
        jconn = link.jconn
        result = JdbcResult(self, sql, batch_rows, link, seat)
        self._open.add(result)

        def start() -> Any:
            if values:
                statement = jconn.prepareStatement(sql)
                result.statement = statement
                expected = statement.getParameterMetaData().getParameterCount()
                if expected != len(values):
                    return ("count", int(expected))
                for i, value in enumerate(values, start=1):
                    _bind(statement, i, value)
                return statement.executeQuery()
            if seat == "shared":
                statement = shared
            else:
                statement = jconn.createStatement()
                if seat == "new-shared":
                    link.seats.shared = statement  # this result holds the shared seat
            result.statement = statement
            return statement.executeQuery(sql)

        def closing_on_error(call: Callable[[], T]) -> T:
            try:
                return call()
            except jpype.JException as exc:
                if result._closed:  # closed meanwhile (the connection was): its failure is our doing
                    raise closed_error("jdbc", result._closed_by) from None
                result.close()
                if values and result.statement is None:
                    # a refused prepare: Druid 33 keeps the statement it made for it, which the driver never
                    # learns of (four leak a connection full); closing the connection frees it
                    self.abandon_connection(link)
                raise from_java(exc, sql=sql, url=mask_jdbc_url(self.url)) from None
            except BaseException:
                result.close()
                raise

        def executing() -> Any:
            result._fetching = True
            try:
                return run_java(start, on_interrupt=result.cancel)
            finally:
                result._fetching = False

        rs = closing_on_error(executing)
        if isinstance(rs, tuple):
            result.close()
            raise QueryError(
                f"The statement has {rs[1]} ? placeholder(s) but {len(values)} parameter(s) were given.",
                sql=sql,
                hint="Pass exactly one value per ?.",
            )
        closing_on_error(lambda: result.start(rs))
        return result

    def close(self) -> None:
        """Close the results still open (their readers get a ClosedError) and the Java connections."""
        self._closed = True
        self._open.close_all()
        self._links.close_all()


def _quiet_close(obj: Any) -> None:
    try:
        obj.close()
    except Exception as exc:  # closing is best effort; the server forgets idle statements anyway
        log.debug("closing %s failed: %s", type(obj).__name__, exc)


def _close_in_background(obj: Any, *, cancel_first: bool = False) -> None:
    """Close a possibly busy Java object (a statement: cancel it first) on a worker, without waiting."""

    def close() -> None:
        if cancel_first:
            try:
                obj.cancel()
            except Exception as exc:  # the driver may not support cancel in every state
                log.debug("Statement.cancel failed: %s", exc)
        _quiet_close(obj)

    run_in_worker(close)


def _bind(statement: Any, index: int, param: Param) -> None:
    """Bind a classified parameter with the setter that sends the same Avatica TypedValue as the
    ``avatica`` transport (TIMESTAMP: wall-clock UTC ms; the JVM runs with ``user.timezone=UTC``)."""
    import jpype

    kind, value = param.type, param.value
    if kind == "NULL":
        statement.setNull(index, jpype.java.sql.Types.NULL)
    elif kind == "BOOLEAN":
        statement.setBoolean(index, value)
    elif kind == "BIGINT":
        statement.setLong(index, value)
    elif kind == "DOUBLE":
        statement.setDouble(index, value)
    elif kind == "VARCHAR":
        statement.setString(index, value)
    elif kind == "TIMESTAMP":
        statement.setTimestamp(index, jpype.java.sql.Timestamp(jpype.JLong(value)))
    elif kind == "DATE":
        # From the day count, not Date.valueOf(text): that reads dates before 1582-10-15 in the Julian
        # calendar and would shift them by days.
        statement.setDate(index, jpype.java.sql.Date(jpype.JLong(param.value * 86_400_000)))
    else:  # pragma: no cover - classify() gives only the kinds above
        raise AssertionError(f"unclassified parameter type {kind}")


class JdbcResult:
    """An executing JDBC statement read column-wise in chunks of ``batch_rows``."""

    def __init__(self, transport: JdbcTransport, sql: str, batch_rows: int, link: _Link, seat: Seat) -> None:
        self._transport = transport
        self._link = link
        self._seat = seat  # how its Statement sits on the connection (see _links.Seats)
        self.sql = sql
        self._batch_rows = max(1, batch_rows)
        self.statement: Any = None
        # False for the connection's shared Statement, which outlives this result
        self.owned = seat == "owned"
        self._rs: Any = None
        self.columns: tuple[ColumnSpec, ...] = ()
        self._reader: Any = None
        self._closed = False
        self._closed_by = BY_OWNER
        self._stop = threading.Event()  # set by close(): a reader waiting for Java gives up at once
        self._fetching = False  # a worker is inside the driver with it (closing then must not wait for it)
        self._done = False

    def start(self, rs: Any) -> None:
        """Wrap the ResultSet in the column reader and read the declared columns."""
        import jpype

        self._rs = rs
        reader_class = jpype.JClass(HELPER_CLASS)
        if getattr(reader_class, "LAYOUT_SLOTS", None) != _SLOTS:
            raise DriverError(
                f"The column-reader jar {helper_jar()} does not match this version of pm_notebook.",
                hint="Reinstall pm-notebook, or rebuild it with `make java-helper`.",
            )
        reader = reader_class(rs)
        self._reader = reader
        kinds = [int(k) for k in reader.kinds()]
        names = [str(n) for n in reader.names()]
        type_names = [str(t).upper() for t in reader.typeNames()]
        self._kinds = kinds
        self.columns = tuple(
            ColumnSpec(name=n, type_name=_declared(t, k), element_type=None)
            for n, t, k in zip(names, type_names, kinds, strict=True)
        )

    def batches(self) -> Iterator[Batch]:
        """Yield chunks of up to ``batch_rows`` rows as Arrow arrays."""
        import jpype

        reader = self._reader
        try:
            while not self._done:
                if self._closed:
                    raise closed_error("jdbc", self._closed_by)
                self._fetching = True
                try:
                    n = int(
                        run_java(
                            lambda: reader.fetch(min(self._batch_rows, READER_ROWS)),
                            on_interrupt=self.cancel,
                            stop=self._stop,
                        )
                    )
                except Abandoned:
                    raise closed_error("jdbc", self._closed_by) from None
                except jpype.JException as exc:
                    if self._closed:  # its failure is our close's doing, not the server's
                        raise closed_error("jdbc", self._closed_by) from None
                    raise from_java(exc, sql=self.sql, url=mask_jdbc_url(self._transport.url)) from None
                finally:
                    self._fetching = False
                if self._closed:
                    raise closed_error("jdbc", self._closed_by)
                if reader.isDone():
                    self._done = True
                if n:
                    layout = memoryview(reader.layout()).cast("B").cast("q").tolist()
                    data = tuple(_column(reader, i, kind, n, layout) for i, kind in enumerate(self._kinds))
                    yield Batch(self.columns, data, n)
        finally:
            if self._done:
                self.close()

    def cancel(self) -> None:
        """Cancel the statement and drop the Java connection (it may still be inside a call)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        transport = self._transport
        transport._open.discard(self)
        if self.statement is not None:
            # Not on this thread: the driver's Statement.cancel waits for the call the statement is in (the
            # very query being interrupted), so Ctrl-C would return only when the query ends.
            _close_in_background(self.statement, cancel_first=True)
        transport.abandon_connection(self._link)
        transport.give_back(self._link, self._seat, shared_lost=True)

    def close(self, *, by: str = BY_OWNER) -> None:
        """Close the statement (and with it the ResultSet): ``closeStatement`` on the server. The shared
        Statement stays open for the next query once its rows were all read; a reader, now or later, gets a
        ClosedError saying that *by* closed it."""
        if self._closed:
            return
        if self._fetching:
            # A worker is inside the driver with it (executing, fetching): the driver's close and cancel wait
            # for that call, the query's whole run. Cancel it as Ctrl-C does: closing its connection stops it.
            self._closed_by = by
            self.cancel()
            return
        self._closed, self._closed_by = True, by
        self._stop.set()
        transport = self._transport
        transport._open.discard(self)
        lost = False
        if (self.owned or not self._done) and self.statement is not None:
            _quiet_close(self.statement)
            lost = True
        elif self._rs is not None:
            _quiet_close(self._rs)  # the shared Statement stays open for the next query
        transport.give_back(self._link, self._seat, shared_lost=lost or self.statement is None)


def _declared(type_name: str, kind: int) -> str:
    base = type_name.split("(", 1)[0].strip()
    if kind == _ARRAY:
        return "ARRAY"
    return base if base else _JDBC_TYPE_NAMES[kind]


def _allocate(size: int) -> pa.Buffer:
    """Writable memory for one column part of a chunk.

    Parts of at least :data:`MAP_MIN_BYTES` get an anonymous memory map of their own: when ``to_pandas``
    frees a column, its pages go back to the OS at once. Pooled allocators keep freed blocks for reuse, and
    the pandas copies (numpy's malloc) cannot reuse them, so a pool would add most of the numeric columns'
    size to the peak again. Small parts (and any platform or moment where mapping fails) use Arrow's pool.
    """
    if size >= MAP_MIN_BYTES and _MAP_PRIVATE is not None:
        try:
            return pa.py_buffer(mmap.mmap(-1, size, flags=_MAP_PRIVATE))
        except OSError:  # e.g. the process's map count limit: the pool still works
            pass
    return pa.allocate_buffer(size)


def _column(reader: Any, c: int, kind: int, n: int, layout: Sequence[int]) -> pa.Array:
    """Column *c* of the reader's current chunk as an Arrow array in memory Python owns.

    Java writes the column's bitmaps, values and offsets (``ColumnarReader.layout``) into one buffer and its
    UTF-8 text into another, through direct ByteBuffer views; the Arrow array is built on slices of them, so
    no Java array, JNI copy or numpy intermediate outlives the call. Text has Java's 32-bit offsets here;
    :mod:`pm_notebook.frames` widens them to the ``large_string`` every transport returns.
    """
    import jpype.nio

    at = c * _SLOTS
    total, null_count, validity_at, values_at, data_len = layout[at : at + 5]
    main = _allocate(total)
    data = _allocate(max(1, data_len)) if data_len >= 0 else None
    reader.write(
        c,
        jpype.nio.convertToDirectBuffer(main),
        None if data is None else jpype.nio.convertToDirectBuffer(data),
    )
    validity = main.slice(validity_at, (n + 7) // 8) if validity_at >= 0 else None
    if data is not None:
        offsets = main.slice(values_at, 4 * (n + 1))
        text = data.slice(0, data_len)
        if kind != _ARRAY:
            return pa.StringArray.from_buffers(n, offsets, text, validity, null_count)
        count, child_nulls, child_validity_at, child_offsets_at = layout[at + 5 : at + 9]
        child_validity = main.slice(child_validity_at, (count + 7) // 8) if child_validity_at >= 0 else None
        child_offsets = main.slice(child_offsets_at, 4 * (count + 1))
        child = pa.StringArray.from_buffers(count, child_offsets, text, child_validity, child_nulls)
        return pa.Array.from_buffers(
            pa.list_(pa.string()), n, [validity, offsets], null_count, children=[child]
        )
    arrow_type, width = _FIXED[kind]
    values = main.slice(values_at, (n + 7) // 8 if width == 0 else width * n)
    return pa.Array.from_buffers(arrow_type, n, [validity, values], null_count)
