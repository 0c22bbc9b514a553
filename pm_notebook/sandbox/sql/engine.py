"""Runs translated Druid SQL on a workgroup's DuckDB and hands back Arrow results with Druid types.

:class:`SqlEngine` is shared by both protocols of the SQL port. For each statement it translates
(:mod:`dialect`, cached), runs the query on a fresh cursor of the caller's own database under a time
limit (one watchdog thread interrupts DuckDB at each statement's deadline), enforces the row cap while
reading Arrow batches, and normalises the columns to Druid's types (integers → BIGINT, decimals →
DOUBLE, timestamps → ms, ...).

Dictionary-encoded string columns (DuckDB ``ENUM``, see :mod:`pm_notebook.sandbox.data.store`) are an
implementation detail: anything typed ``ENUM`` — a column, ``MAX(col)``, ``CASE``... — is reported as
VARCHAR (result columns, INFORMATION_SCHEMA, the catalogue the dialect sees, error messages) and
returned as plain Arrow strings.

:class:`StatementHolds` is the sandbox's "slow statement" switch: a statement matching an armed hold waits
inside DuckDB (in a Python function that blocks without using CPU) until its time limit or a cancel
interrupts it, or the hold is released. Tests use it to make a statement run until it is interrupted by
construction, whatever the machine's speed.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, cast

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from .access import META_SCHEMA, Catalog
from .context import DEFAULT_MAX_SUBQUERY_ROWS, QueryContext
from .dialect import Translated, from_duckdb, translate
from .errors import SqlError, subquery_limit
from .types import TYPES, duckdb_to_druid, duckdb_to_druid_sql, jdbc_type_sql, native_type

if TYPE_CHECKING:
    from ..data.store import Store

__all__ = [
    "Column",
    "Deadline",
    "QueryResult",
    "ResultStream",
    "SqlEngine",
    "SqlOptions",
    "StatementHolds",
    "normalise",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SqlOptions:
    """Limits and defaults of the SQL port (all configurable; defaults follow Druid where it has one).

    :param query_timeout: seconds a statement may run before it is interrupted.
    :param max_rows: most rows one result may hold; larger results fail with a clear error.
    :param max_statements_per_connection: open Avatica statements per connection (Druid: 4).
    :param max_connections: open Avatica connections per workgroup (Druid: 25, for the whole broker).
    :param connection_idle_timeout: seconds of silence after which an Avatica connection is closed.
    :param statement_idle_timeout: seconds after which an untouched Avatica result is dropped.
    :param max_rows_per_frame: largest Avatica frame (Druid: 5000).
    :param min_rows_per_frame: smallest Avatica frame, whatever the client asks (Druid: 100).
    :param max_concurrent_queries: statements running at once per workgroup (others wait their turn).
    :param max_threads_per_workgroup: worker threads one workgroup's requests may hold at once; more of its
        requests wait without a thread (and fail after ``query_timeout``), so no workgroup starves another.
    :param max_request_bytes: largest request body (and, separately, request head) the SQL port reads.
    :param compression_level: gzip level of the answers to clients that accept gzip, as Druid's
        ``druid.server.http.compressionLevel``: -1 zlib's default (level 6, Druid's default), 1-9, 0 none.
        The sandbox's default is 0, unlike Druid's, so that its figures are the client's own
        (docs/transports.md).
    """

    query_timeout: float = 60.0
    max_rows: int = 5_000_000
    max_statements_per_connection: int = 4
    max_connections: int = 25
    connection_idle_timeout: float = 300.0
    statement_idle_timeout: float = 300.0
    max_rows_per_frame: int = 5000
    min_rows_per_frame: int = 100
    max_concurrent_queries: int = 8
    max_threads_per_workgroup: int = 16
    max_request_bytes: int = 1 << 20
    compression_level: int = 0


@dataclass(frozen=True)
class Column:
    """One result column: name, Druid SQL type, and the element type of an ARRAY."""

    name: str
    type: str  # TIMESTAMP, BIGINT, DOUBLE, FLOAT, VARCHAR, BOOLEAN, DATE, ARRAY, OTHER
    component: str | None = None
    nullable: bool = True

    @property
    def native_type(self) -> str:
        """Druid's native type name (``typesHeader``)."""
        return native_type(self.type, self.component)

    @property
    def sql_type(self) -> str:
        """Druid's SQL type name (``sqlTypesHeader``)."""
        return f"ARRAY<{self.component}>" if self.type == "ARRAY" else self.type


@dataclass
class QueryResult:
    """A finished query: its columns and all its rows as one normalised Arrow table."""

    columns: list[Column]
    table: pa.Table
    query_id: str = ""
    elapsed: float = 0.0


@dataclass
class _Workgroup:
    catalog: Catalog
    gate: threading.BoundedSemaphore
    #: (sql, windowing, time zone) -> translation
    translations: OrderedDict[tuple[str, bool, str | None], Translated] = field(default_factory=OrderedDict)
    #: (sql, parameter types) -> result shape
    shapes: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[Column], list[str]]] = field(
        default_factory=OrderedDict
    )
    lock: threading.Lock = field(default_factory=threading.Lock)


class SqlEngine:
    """Druid SQL over the store's per-workgroup DuckDB databases (thread-safe)."""

    def __init__(
        self, store: Store, options: SqlOptions | None = None, *, holds: StatementHolds | None = None
    ) -> None:
        self.store = store
        self.options = options or SqlOptions()
        #: the hold switch (see :class:`StatementHolds`): armed by tests, through the sandbox's admin API
        self.holds = holds if holds is not None else StatementHolds()
        self._workgroups: dict[str, _Workgroup] = {}
        self._lock = threading.Lock()
        store.subscribe(self.invalidate)  # projects created or reset at run time (data/ingest.py)

    def invalidate(self, client_id: str) -> None:
        """Re-read the workgroup's catalogue and drop its cached translations (its tables changed)."""
        wg = self._workgroups.get(client_id)
        if wg is None:
            return
        catalog = _read_catalog(self._database(client_id))
        with wg.lock:
            wg.catalog = catalog
            wg.translations.clear()
            wg.shapes.clear()

    # --- catalogue ----------------------------------------------------------------------------------
    def _database(self, client_id: str) -> duckdb.DuckDBPyConnection:
        try:
            return self.store.database(client_id)
        except KeyError:
            raise SqlError("Unauthorized: unknown workgroup.", "unauthorized") from None

    def _workgroup(self, client_id: str) -> _Workgroup:
        wg = self._workgroups.get(client_id)
        if wg is not None:
            return wg
        with self._lock:
            wg = self._workgroups.get(client_id)
            if wg is None:
                db = self._database(client_id)
                _install_metadata(db)
                _install_hold_function(db)
                wg = _Workgroup(
                    catalog=_read_catalog(db),
                    gate=threading.BoundedSemaphore(self.options.max_concurrent_queries),
                )
                self._workgroups[client_id] = wg
        return wg

    def catalog(self, client_id: str) -> Catalog:
        """The workgroup's tables and lookups."""
        return self._workgroup(client_id).catalog

    def translate(
        self, client_id: str, sql: str, context: Mapping[str, object] | QueryContext | None = None
    ) -> Translated:
        """Translate *sql* for the workgroup (cached per workgroup, LRU of 256 statements).

        :param context: the query context (Druid SQL API ``context``, Avatica connection properties):
            ``enableWindowing`` allows window functions, ``sqlTimeZone`` is the time functions' zone.
        """
        wg = self._workgroup(client_id)
        ctx = context if isinstance(context, QueryContext) else QueryContext.parse(context)
        key = (sql, ctx.windowing, ctx.time_zone)
        with wg.lock:
            hit = wg.translations.get(key)
            if hit is not None:
                wg.translations.move_to_end(key)
                return hit
        translated = translate(sql, wg.catalog, windowing=ctx.windowing, time_zone=ctx.time_zone)
        with wg.lock:
            wg.translations[key] = translated
            if len(wg.translations) > 256:
                wg.translations.popitem(last=False)
        return translated

    # --- running ------------------------------------------------------------------------------------
    def describe(
        self, client_id: str, sql: str, context: Mapping[str, object] | None = None
    ) -> tuple[Translated, list[Column]]:
        """The result columns of *sql* without running it (parameters bound to NULL, no rows read)."""
        translated, wg, _, _ = self._admit(client_id, sql, None, time.monotonic(), context)
        try:
            if translated.explain:
                return translated, _EXPLAIN_COLUMNS
            cur = self._database(client_id).cursor()
            try:
                rel = cur.sql(translated.sql, params=translated.bind([None] * translated.param_count))
                return translated, [_column(n, t) for n, t in zip(rel.columns, rel.types, strict=True)]
            except duckdb.Error as e:
                raise _engine_error(e, sql) from None
            finally:
                cur.close()
        finally:
            wg.gate.release()

    def execute(
        self,
        client_id: str,
        sql: str,
        params: list[Any] | None = None,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        on_open: Callable[[Callable[[], None]], None] | None = None,
        context: Mapping[str, object] | None = None,
    ) -> QueryResult:
        """Run *sql* with *params* (one value per ``?``) and return all rows.

        :param timeout: seconds (capped by ``options.query_timeout``); else the context's ``timeout``.
        :param max_rows: stop after this many rows (a client's ``maxRowCount``); the row cap still applies.
        :param on_open: called, before the query runs, with a function that cancels it from another thread.
        :param context: the query context (see :class:`~.context.QueryContext` for the keys honoured).
        :raises SqlError: refused, invalid, timed out, cancelled, over the row cap or over
            ``maxSubqueryRows``.
        """
        started = time.monotonic()
        translated, wg, limit, ctx = self._admit(client_id, sql, timeout, started, context)
        try:
            params = list(params or [])
            return self._run(
                client_id, sql, translated, params, limit, max_rows, started, on_open, ctx.max_subquery_rows
            )
        finally:
            wg.gate.release()

    def stream(
        self,
        client_id: str,
        sql: str,
        params: list[Any] | None,
        select: Callable[[list[Column], list[str], list[str]], list[str]],
        *,
        timeout: float | None = None,
        batch_rows: int = 50_000,
        on_open: Callable[[ResultStream], None] | None = None,
        context: Mapping[str, object] | None = None,
    ) -> ResultStream:
        """Run *sql* and stream its rows through a projection computed inside DuckDB.

        *select* receives the result columns, each column's SQL source (``c0``, ``c1``, ...) and its DuckDB
        type, and returns the SQL expressions to compute per row (e.g. the row's JSON text). Query and
        encoding then run in one DuckDB pipeline, batch by batch, while the caller sends earlier batches.
        The workgroup's query slot, the cursor and the timeout timer are held until the stream is closed.
        *on_open* is called with the stream as soon as it can be cancelled, before the query runs.

        :raises SqlError: refused or invalid before any row; while iterating: timed out, over the row cap.
        """
        started = time.monotonic()
        translated, wg, limit, ctx = self._admit(client_id, sql, timeout, started, context)
        return ResultStream(
            self,
            wg,
            client_id,
            sql,
            translated,
            list(params or []),
            select,
            limit,
            batch_rows,
            on_open,
            started,
            ctx.max_subquery_rows,
        )

    def _admit(
        self,
        client_id: str,
        sql: str,
        timeout: float | None,
        started: float,
        context: Mapping[str, object] | None = None,
    ) -> tuple[Translated, _Workgroup, float, QueryContext]:
        """Take one of the workgroup's query slots, then translate *sql* (the caller releases the slot).

        The time limit runs from *started*: waiting for the slot and translating count against it, so a
        huge statement costs its own workgroup's slot and time, and cannot run past its limit.

        :returns: the translation, the workgroup, the statement's time limit in seconds (*timeout*, else
            the context's ``timeout``, capped by ``options.query_timeout``) and the parsed context.
        """
        wg = self._workgroup(client_id)
        ctx = QueryContext.parse(context)
        if timeout is None:
            timeout = ctx.timeout
        limit = self.options.query_timeout if timeout is None else min(timeout, self.options.query_timeout)
        if not wg.gate.acquire(timeout=max(0.0, started + limit - time.monotonic())):
            raise SqlError("Too many queries are running for this workgroup; try again shortly.", "capacity")
        try:
            translated = self.translate(client_id, sql, ctx)
            if time.monotonic() - started >= limit:
                raise _timed_out(limit)
        except BaseException:
            wg.gate.release()
            raise
        return translated, wg, limit, ctx

    def _shape(
        self, wg: _Workgroup, cur: duckdb.DuckDBPyConnection, sql: str, bound: dict[str, Any]
    ) -> tuple[list[Column], list[str]]:
        """Result columns of *sql* and each one's DuckDB type name (an ENUM is named ``ENUM``).

        Cached per statement and parameter types (the data never changes), which spares a bind per query.
        """
        key = (sql, tuple(sorted((k, type(v).__name__) for k, v in bound.items())))
        with wg.lock:
            hit = wg.shapes.get(key)
        if hit is not None:
            return hit
        rel = cur.sql(sql, params=bound)
        columns = [_column(n, t) for n, t in zip(rel.columns, rel.types, strict=True)]
        duck_types = ["ENUM" if t.id == "enum" else _type_name(t) for t in rel.types]
        with wg.lock:
            wg.shapes[key] = (columns, duck_types)
            if len(wg.shapes) > 256:
                wg.shapes.popitem(last=False)
        return columns, duck_types

    def _run(
        self,
        client_id: str,
        sql: str,
        translated: Translated,
        params: list[Any],
        timeout: float,
        max_rows: int | None,
        started: float,
        on_open: Callable[[Callable[[], None]], None] | None = None,
        max_subquery_rows: int = DEFAULT_MAX_SUBQUERY_ROWS,
    ) -> QueryResult:
        running = Deadline(self._database(client_id).cursor(), timeout, sql, since=started)
        cur = running.cursor
        try:
            if on_open is not None:
                on_open(running.cancel)
            if running.cancelled:
                raise _cancelled()
            self.holds.apply(sql, running, client_id)
            bound = translated.bind(params)
            if translated.explain:
                return self._explain(cur, translated, bound)
            check_inlined(cur, translated, bound, max_subquery_rows)
            rel = cur.sql(translated.sql, params=bound)
            columns = [_column(n, t) for n, t in zip(rel.columns, rel.types, strict=True)]
            cap = self.options.max_rows
            want = cap + 1 if max_rows is None or max_rows < 0 else min(max_rows, cap + 1)
            batches, n = [], 0
            reader = rel.to_arrow_reader(batch_size=65536)
            for batch in reader:
                if n + batch.num_rows >= want:
                    batches.append(batch.slice(0, want - n))
                    n = want
                    break
                batches.append(batch)
                n += batch.num_rows
            reader.close()
            if n > cap:
                raise SqlError(
                    f"The result has more than {cap:,} rows, the row cap of this endpoint: aggregate, "
                    "filter or add a LIMIT.",
                    "capacity",
                )
            table = (
                pa.Table.from_batches(batches, schema=reader.schema)
                if batches
                else reader.schema.empty_table()
            )
            return QueryResult(columns, normalise(table, columns), elapsed=time.monotonic() - started)
        except duckdb.Error as e:
            raise running.error(e) from None
        finally:
            running.close()

    def _explain(
        self, cur: duckdb.DuckDBPyConnection, translated: Translated, bound: dict[str, Any]
    ) -> QueryResult:
        import orjson

        rows = cur.execute("EXPLAIN " + translated.sql, bound).fetchall()
        plan = "\n".join(str(r[-1]) for r in rows)
        resources = orjson.dumps([{"name": t, "type": "DATASOURCE"} for t in translated.tables]).decode()
        attributes = orjson.dumps({"statementType": "SELECT"}).decode()
        table = pa.table({"PLAN": [plan], "RESOURCES": [resources], "ATTRIBUTES": [attributes]})
        return QueryResult(list(_EXPLAIN_COLUMNS), table)


class ResultStream:
    """Batches of a running query, projected by SQL expressions (see :meth:`SqlEngine.stream`).

    Iterate for ``pyarrow.RecordBatch`` es; :meth:`close` (or the end of the rows, or ``with``) frees the
    cursor and the workgroup's query slot.
    """

    def __init__(
        self,
        engine: SqlEngine,
        wg: _Workgroup,
        client_id: str,
        sql: str,
        translated: Translated,
        params: list[Any],
        select: Callable[[list[Column], list[str], list[str]], list[str]],
        timeout: float,
        batch_rows: int,
        on_open: Callable[[ResultStream], None] | None = None,
        started: float | None = None,
        max_subquery_rows: int = DEFAULT_MAX_SUBQUERY_ROWS,
    ) -> None:
        self._gate: threading.BoundedSemaphore | None = wg.gate
        self._cap = engine.options.max_rows
        self._rows = 0
        self._holds, self._client_id = engine.holds, client_id
        self._hold_after = 0  # rows after which a mid-result hold stops the stream (0: none)
        #: called once when the stream is closed (e.g. to forget a running query's id)
        self.on_close: Callable[[], None] | None = None
        self._reader: pa.RecordBatchReader | None = None
        self._deadline: Deadline | None = None
        try:
            cursor = engine._database(client_id).cursor()
            self._deadline = running = Deadline(cursor, timeout, sql, since=started)
            if on_open is not None:
                on_open(self)
            engine.holds.apply(sql, running, client_id)
            self._hold_after = engine.holds.after_rows(sql, client_id)
            bound = translated.bind(params)
            if translated.explain:
                explained = engine._explain(running.cursor, translated, bound)
                inner = "SELECT " + ", ".join(
                    f'CAST($e{i} AS VARCHAR) AS "{c.name}"' for i, c in enumerate(explained.columns)
                )
                bound = {
                    f"e{i}": explained.table.column(i)[0].as_py() for i in range(explained.table.num_columns)
                }
            else:
                check_inlined(running.cursor, translated, bound, max_subquery_rows)
                inner = translated.sql
            self.columns, duck_types = engine._shape(wg, running.cursor, inner, bound)
            sources = [f"c{i}" for i in range(len(self.columns))]
            exprs = select(self.columns, sources, duck_types)
            if self.columns:
                alias = ", ".join(sources)
                wrapped = f"SELECT {', '.join(exprs)} FROM ({inner}) AS q({alias})"
            else:
                wrapped = f"SELECT {', '.join(exprs)} FROM ({inner}) AS q"
            self._reader = running.cursor.sql(wrapped, params=bound).to_arrow_reader(batch_size=batch_rows)
        except duckdb.Error as e:
            self.close()
            raise self._error(e) from None
        except BaseException:
            self.close()
            raise

    def _error(self, e: duckdb.Error) -> SqlError:
        assert self._deadline is not None  # a DuckDB error needs a cursor
        return self._deadline.error(e)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self._reader is None:
            return
        try:
            for batch in self._reader:
                self._rows += batch.num_rows
                if self._rows > self._cap:
                    raise SqlError(
                        f"The result has more than {self._cap:,} rows, the row cap of this endpoint: "
                        "aggregate, filter or add a LIMIT.",
                        "capacity",
                    )
                if batch.num_rows:
                    yield batch
                if self._hold_after and self._rows >= self._hold_after and self._deadline is not None:
                    self._hold_after = 0
                    self._holds.hold_mid_result(self._deadline, self._client_id)
        except duckdb.Error as e:
            raise self._error(e) from None
        finally:
            self.close()

    def cancel(self) -> None:
        """Interrupt the running query (the iterator then ends with an error)."""
        if self._deadline is not None:
            self._deadline.cancel()

    def close(self) -> None:
        """Free the cursor, the time limit and the query slot (idempotent)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._gate is not None:
            if self._deadline is not None:
                self._deadline.close()
            self._gate.release()
            self._gate = None
            if self.on_close is not None:
                self.on_close()

    def __enter__(self) -> ResultStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_EXPLAIN_COLUMNS = [
    Column("PLAN", "VARCHAR"),
    Column("RESOURCES", "VARCHAR"),
    Column("ATTRIBUTES", "VARCHAR"),
]


class Deadline:
    """A running statement's cursor, time limit and cancel flag: it tells which of them interrupted DuckDB.

    The time limit runs from *since* (default: now); :meth:`close` ends it and closes the cursor, and
    lets go of it (the watchdog may hold a closed one until its time comes).
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
        _WATCHDOG.watch(self, (time.monotonic() if since is None else since) + timeout)

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
            raise _timed_out(self.timeout) if self.timed_out else _cancelled()

    def pause(self) -> None:
        """Wait between two batches of a streamed result until it is interrupted (then raise its error) or
        released; DuckDB is idle meanwhile, so no DuckDB call is needed to wait.

        :raises SqlError: timed out or cancelled.
        """
        self._wake.wait()
        if self.timed_out or self.cancelled:
            raise _timed_out(self.timeout) if self.timed_out else _cancelled()

    def release(self) -> None:
        """End a hold: the statement goes on and runs normally."""
        self._wake.set()

    def error(self, e: duckdb.Error) -> SqlError:
        """The error to report for DuckDB error *e*: the time limit, the cancel, or the query's own."""
        if self.timed_out:
            return _timed_out(self.timeout)
        if self.cancelled:
            return _cancelled()
        return _engine_error(e, self.sql)

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


def _install_hold_function(db: duckdb.DuckDBPyConnection) -> None:
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

    A ``threading.Timer`` per statement costs a thread start (~0.4 ms on a 2-core machine) on every query.
    Closed deadlines leave the heap when their deadline comes up, or when the heap is compacted.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._compact_at = 1024
        self._thread: threading.Thread | None = None

    def watch(self, running: Deadline, deadline: float) -> None:
        """Expire *running* at *deadline* (``time.monotonic()`` seconds) unless it is closed by then."""
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
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        running = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(wait)
            try:
                running.expire()
            except Exception:  # the watchdog must outlive any one statement
                log.exception("interrupting a statement at its time limit failed")


_WATCHDOG = _Watchdog()


def _timed_out(seconds: float) -> SqlError:
    message = f"Query timeout: the statement ran longer than {seconds:g} s and was cancelled."
    return SqlError(message, "timeout")


def _cancelled() -> SqlError:
    return SqlError("Query cancelled by its client.", "cancelled")


def _column(name: str, duck_type: duckdb.sqltypes.DuckDBPyType | str) -> Column:
    druid = duckdb_to_druid(duck_type if isinstance(duck_type, str) else _type_name(duck_type))
    if druid.startswith("ARRAY<"):
        return Column(name, "ARRAY", druid[6:-1], nullable=True)
    return Column(name, druid, nullable=name != "__time")


def _type_name(duck_type: duckdb.sqltypes.DuckDBPyType) -> str:
    """DuckDB's name for *duck_type*, an ENUM (dictionary-encoded string) named VARCHAR."""
    if duck_type.id == "enum":
        return "VARCHAR"  # str() would spell out every value of the dictionary
    if duck_type.id == "list":
        return _type_name(cast("duckdb.sqltypes.DuckDBPyType", duck_type.children[0][1])) + "[]"
    return str(duck_type)


# SQL naming a duckdb_columns() row's type as _type_name does (what the catalogue and metadata show).
_COLUMN_TYPE_SQL = "CASE WHEN starts_with(data_type, 'ENUM(') THEN 'VARCHAR' ELSE data_type END"

_ARROW = {t.druid: t.arrow for t in TYPES if t.arrow is not None}


def normalise(table: pa.Table, columns: list[Column]) -> pa.Table:
    """Cast every column to the Arrow type of its Druid type (cheap when already right).

    ENUM values arrive as Arrow dictionaries; the cast decodes them to plain strings, also inside
    lists, structs and maps.
    """
    arrays = []
    for col, arr in zip(columns, table.columns, strict=True):
        if col.type == "ARRAY":
            target = pa.list_(_ARROW.get(col.component or "VARCHAR", pa.string()))
        else:
            target = _ARROW.get(col.type) or _decoded(arr.type)
        if arr.type == target:
            arrays.append(arr)
            continue
        try:
            if pa.types.is_timestamp(arr.type) and arr.type.tz is not None:
                arr = pc.cast(arr, pa.timestamp(arr.type.unit))
            arrays.append(pc.cast(arr, target, safe=False))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arrays.append(pa.array([None if v is None else str(v) for v in arr.to_pylist()], target))
    return pa.Table.from_arrays(arrays, names=[c.name for c in columns])


def _decoded(t: pa.DataType) -> pa.DataType:
    """*t* with every dictionary type replaced by its value type."""
    if pa.types.is_dictionary(t):
        return _decoded(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        field = t.value_field.with_type(_decoded(t.value_type))
        return pa.list_(field) if pa.types.is_list(t) else pa.large_list(field)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_decoded(t.key_type)), t.item_field.with_type(_decoded(t.item_type))
        )
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_decoded(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _engine_error(e: duckdb.Error, sql: str) -> SqlError:
    if isinstance(e, duckdb.InterruptException):
        return SqlError("Query cancelled.", "timeout")
    if isinstance(e, duckdb.PermissionException):
        return SqlError("Query refused: it reaches outside the workgroup's tables.", "refused")
    if isinstance(e, duckdb.OutOfMemoryException):
        return SqlError(
            "Resource limit exceeded: the query needs more memory than the sandbox allows.", "capacity"
        )
    return from_duckdb(type(e).__name__, str(e), sql)


def windowing_enabled(context: Mapping[str, object] | None) -> bool:
    """Whether a query context sets ``enableWindowing`` (a JSON boolean, or a property string ``"true"``)."""
    return QueryContext.parse(context).windowing


_PARAM_NAME = re.compile(r"\$(p\d+)\b")


def check_inlined(
    cur: duckdb.DuckDBPyConnection, translated: Translated, bound: dict[str, Any], limit: int
) -> None:
    """Refuse the statement, as Druid's broker does, when a subquery it would inline (``IN (subquery)``, the
    right-hand side of a join) produces more than *limit* rows (``maxSubqueryRows``).

    Each such subquery is counted on the statement's own cursor, so its time limit and cancel apply; the
    count stops at *limit* + 1 rows. ``IN`` counts distinct rows (Calcite plans it as a join on the
    subquery's distinct values).
    """
    for kind, sub in translated.inlined:
        names = set(_PARAM_NAME.findall(sub))
        params = {k: v for k, v in bound.items() if k in names}
        rows = "DISTINCT *" if kind == "in" else "1 AS one"
        count_sql = (
            f"SELECT count(*) FROM (SELECT {rows} FROM ({sub}) AS pm_inlined LIMIT {int(limit) + 1}) AS pm_n"
        )
        try:
            counted = cur.execute(count_sql, params).fetchall()  # fetchall: leaves no unfinished result
        except (duckdb.BinderException, duckdb.CatalogException):
            continue  # a correlated subquery: not a standalone result (the query itself reports it)
        if counted and counted[0][0] > limit:
            raise subquery_limit(limit)


def _read_catalog(db: duckdb.DuckDBPyConnection) -> Catalog:
    cur = db.cursor()
    try:
        rows = cur.execute(
            f"SELECT schema_name, table_name, column_name, {_COLUMN_TYPE_SQL} FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name IN ('druid', 'lookup') "
            "ORDER BY schema_name, table_name, column_index"
        ).fetchall()
    finally:
        cur.close()
    tables: dict[str, dict[str, str]] = {}
    lookups: set[str] = set()
    for schema, table, column, dtype in rows:
        if schema == "druid":
            tables.setdefault(table, {})[column] = dtype
        else:
            lookups.add(table)
    return Catalog(tables=tables, lookups=frozenset(lookups))


def _install_metadata(db: duckdb.DuckDBPyConnection) -> None:
    """Create Druid's INFORMATION_SCHEMA views (schema ``pm_meta``) in the workgroup's database."""
    cur = db.cursor()
    try:
        if cur.execute("SELECT 1 FROM duckdb_schemas() WHERE schema_name = ?", [META_SCHEMA]).fetchall():
            return
        m = META_SCHEMA
        cur.execute(f"CREATE SCHEMA {m}")
        cur.execute(f"""CREATE VIEW {m}."SCHEMATA" AS
        SELECT * FROM (VALUES ('druid','druid'), ('druid','lookup'), ('druid','INFORMATION_SCHEMA'))
              AS s("CATALOG_NAME", "SCHEMA_NAME")""")
        cur.execute(f"""CREATE VIEW {m}."TABLES" AS
        SELECT 'druid' AS "TABLE_CATALOG", schema_name AS "TABLE_SCHEMA", table_name AS "TABLE_NAME",
          'TABLE' AS "TABLE_TYPE", CASE WHEN schema_name = 'lookup' THEN 'YES' ELSE 'NO' END AS "IS_JOINABLE",
          CASE WHEN schema_name = 'lookup' THEN 'YES' ELSE 'NO' END AS "IS_BROADCAST"
        FROM duckdb_tables() WHERE database_name = current_database() AND schema_name IN ('druid', 'lookup')
        UNION ALL
        SELECT 'druid', 'INFORMATION_SCHEMA', t, 'SYSTEM_TABLE', 'NO', 'NO'
        FROM (VALUES ('COLUMNS'), ('SCHEMATA'), ('TABLES')) AS v(t)""")
        cur.execute(f"""CREATE VIEW {m}."COLUMNS" AS
        SELECT 'druid' AS "TABLE_CATALOG", schema_name AS "TABLE_SCHEMA", table_name AS "TABLE_NAME",
          column_name AS "COLUMN_NAME", CAST(column_index AS BIGINT) AS "ORDINAL_POSITION",
          CAST(NULL AS VARCHAR) AS "COLUMN_DEFAULT",
          CASE WHEN column_name = '__time' THEN 'NO' ELSE 'YES' END AS "IS_NULLABLE",
          {duckdb_to_druid_sql("column_type")} AS "DATA_TYPE",
          CAST(NULL AS BIGINT) AS "CHARACTER_MAXIMUM_LENGTH",
          CAST(NULL AS BIGINT) AS "CHARACTER_OCTET_LENGTH",
          CAST(NULL AS BIGINT) AS "NUMERIC_PRECISION", CAST(NULL AS BIGINT) AS "NUMERIC_PRECISION_RADIX",
          CAST(NULL AS BIGINT) AS "NUMERIC_SCALE", CAST(NULL AS BIGINT) AS "DATETIME_PRECISION",
          CASE WHEN column_type = 'VARCHAR' THEN 'UTF-16LE' END AS "CHARACTER_SET_NAME",
          CASE WHEN column_type = 'VARCHAR' THEN 'UTF-16LE$en_US$primary' END AS "COLLATION_NAME",
          {jdbc_type_sql(duckdb_to_druid_sql("column_type"))} AS "JDBC_TYPE"
        FROM (SELECT *, {_COLUMN_TYPE_SQL} AS column_type FROM duckdb_columns()
              WHERE database_name = current_database() AND schema_name IN ('druid', 'lookup'))""")
    finally:
        cur.close()
