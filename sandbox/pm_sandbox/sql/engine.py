"""Runs translated Druid SQL on a workgroup's DuckDB and hands back Arrow results with Druid types.

:class:`SqlEngine` is shared by both protocols of the SQL port. For each statement it translates
(:mod:`dialect`, cached), runs the query on a fresh cursor of the caller's own database under a time
limit (one watchdog thread interrupts DuckDB at each statement's deadline), enforces the row cap while
reading Arrow batches, and normalises the columns to Druid's types (integers → BIGINT, decimals →
DOUBLE, timestamps → ms, ...).

Dictionary-encoded string columns (DuckDB ``ENUM``, see :mod:`pm_sandbox.data.store`) are an
implementation detail: anything typed ``ENUM`` — a column, ``MAX(col)``, ``CASE``... — is reported as
VARCHAR (result columns, INFORMATION_SCHEMA, the catalogue the dialect sees, error messages) and
returned as plain Arrow strings.

Time limits, cancels and the hold switch live in :mod:`.deadline`; the catalogue and ``INFORMATION_SCHEMA``
in :mod:`.catalog`; the type table in :mod:`.types`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from .access import Catalog
from .catalog import install_metadata, read_catalog, type_name
from .deadline import (
    LIMIT_CLOCK,
    Deadline,
    StatementHolds,
    cancelled,
    engine_error,
    install_hold_function,
    timed_out,
)
from .dialect import Translated, translate
from .errors import SqlError, subquery_bytes_limit, subquery_limit
from .query_context import DEFAULT_MAX_SUBQUERY_ROWS, QueryContext
from .types import Column, duckdb_to_druid, normalise

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
    #: (sql, time zone) -> translation
    translations: OrderedDict[tuple[str, str | None], Translated] = field(default_factory=OrderedDict)
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
        catalog = read_catalog(self._database(client_id))
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
                install_metadata(db)
                install_hold_function(db)
                wg = _Workgroup(
                    catalog=read_catalog(db),
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
            ``sqlTimeZone`` is the time functions' zone (``enableWindowing`` changes nothing, as on Druid 33).
        """
        wg = self._workgroup(client_id)
        ctx = context if isinstance(context, QueryContext) else QueryContext.parse(context)
        key = (sql, ctx.time_zone)
        with wg.lock:
            hit = wg.translations.get(key)
            if hit is not None:
                wg.translations.move_to_end(key)
                return hit
        translated = translate(sql, wg.catalog, time_zone=ctx.time_zone)
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
        translated, wg, _, _ = self._admit(client_id, sql, None, LIMIT_CLOCK.now(), context)
        try:
            if translated.explain:
                return translated, _EXPLAIN_COLUMNS
            cur = self._database(client_id).cursor()
            try:
                rel = cur.sql(translated.sql, params=translated.bind([None] * translated.param_count))
                return translated, [_column(n, t) for n, t in zip(rel.columns, rel.types, strict=True)]
            except duckdb.Error as e:
                raise engine_error(e, sql) from None
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
        :param context: the query context (see :class:`~.query_context.QueryContext` for the keys honoured).
        :raises SqlError: refused, invalid, timed out, cancelled, over the row cap or over
            ``maxSubqueryRows``.
        """
        started = LIMIT_CLOCK.now()
        translated, wg, limit, ctx = self._admit(client_id, sql, timeout, started, context)
        try:
            params = list(params or [])
            return self._run(
                client_id,
                sql,
                translated,
                params,
                limit,
                max_rows,
                started,
                on_open,
                ctx.max_subquery_rows,
                ctx.max_subquery_bytes,
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
        started = LIMIT_CLOCK.now()
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
            ctx.max_subquery_bytes,
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

        The time limit runs from *started* (:data:`~.deadline.LIMIT_CLOCK` time): waiting for the slot and
        translating count against it, so a huge statement costs its own workgroup's slot and time, and cannot
        run past its limit.

        :returns: the translation, the workgroup, the statement's time limit in seconds (*timeout*, else
            the context's ``timeout``, capped by ``options.query_timeout``) and the parsed context.
        """
        wg = self._workgroup(client_id)
        ctx = QueryContext.parse(context)
        if timeout is None:
            timeout = ctx.timeout
        limit = self.options.query_timeout if timeout is None else min(timeout, self.options.query_timeout)
        if not wg.gate.acquire(timeout=max(0.0, started + limit - LIMIT_CLOCK.now())):
            raise SqlError("Too many queries are running for this workgroup; try again shortly.", "capacity")
        try:
            translated = self.translate(client_id, sql, ctx)
            if LIMIT_CLOCK.now() - started >= limit:
                raise timed_out(limit)
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
        duck_types = ["ENUM" if t.id == "enum" else type_name(t) for t in rel.types]
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
        max_subquery_bytes: int | None = None,
    ) -> QueryResult:
        running = Deadline(self._database(client_id).cursor(), timeout, sql, since=started)
        cur = running.cursor
        try:
            if on_open is not None:
                on_open(running.cancel)
            if running.cancelled:
                raise cancelled()
            self.holds.apply(sql, running, client_id)
            bound = translated.bind(params)
            if translated.explain:
                return self._explain(cur, translated, bound)
            check_inlined(cur, translated, bound, max_subquery_rows, max_subquery_bytes)
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
            return QueryResult(columns, normalise(table, columns), elapsed=LIMIT_CLOCK.now() - started)
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
        max_subquery_bytes: int | None = None,
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
                check_inlined(running.cursor, translated, bound, max_subquery_rows, max_subquery_bytes)
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


def _column(name: str, duck_type: duckdb.sqltypes.DuckDBPyType | str) -> Column:
    druid = duckdb_to_druid(duck_type if isinstance(duck_type, str) else type_name(duck_type))
    if druid.startswith("ARRAY<"):
        return Column(name, "ARRAY", druid[6:-1], nullable=True)
    return Column(name, druid, nullable=name != "__time")


_PARAM_NAME = re.compile(r"\$(p\d+)\b")


def check_inlined(
    cur: duckdb.DuckDBPyConnection,
    translated: Translated,
    bound: dict[str, Any],
    limit: int,
    max_bytes: int | None = None,
) -> None:
    """Refuse the statement, as Druid's broker does, when the subqueries it would inline (``IN (subquery)``,
    a join's subquery inputs, the input of every window, a windowed subquery's result) produce more than
    *limit* rows together (``maxSubqueryRows``: the total buffered across all the subqueries of a query) — or,
    when *max_bytes* is set (``maxSubqueryBytes``), more than that many bytes together, and then the row
    limit does not apply (Druid 33: a byte limit replaces the row limit).

    Each such subquery is counted on the statement's own cursor, so its time limit and cancel apply; the
    count stops one row past what the limit leaves. ``IN`` counts distinct rows (Calcite plans it as a join
    on the subquery's distinct values). The same rows inlined twice (a window's input, then its result as
    an outer query's input) are counted once and added twice. Bytes are estimated as Druid 33 sizes the
    frames it inlines (measured on the broker: 29 bytes for a one-column frame and 10 more per column, then
    per row 9 bytes per number or timestamp and 4 plus the UTF-8 length per string); Druid sizes only the
    columns the outer query uses, the sandbox every column the subquery selects, so it refuses no later
    than Druid.
    """
    total = 0
    seen: dict[tuple[bool, str], int] = {}
    for kind, sub in translated.inlined:
        key = (kind == "in", sub)
        if key in seen:
            total += seen[key]
            if max_bytes is not None:
                if total > max_bytes:
                    raise subquery_bytes_limit(max_bytes)
            elif total > limit:
                raise subquery_limit(limit)
            continue
        names = set(_PARAM_NAME.findall(sub))
        params = {k: v for k, v in bound.items() if k in names}
        rows = "DISTINCT *" if kind == "in" else "*"
        try:
            if max_bytes is not None:
                seen[key] = _inlined_bytes(cur, f"SELECT {rows} FROM ({sub}) AS pm_inlined", params)
                total += seen[key]
                if total > max_bytes:
                    raise subquery_bytes_limit(max_bytes)
                continue
            left = int(limit) - total
            count_sql = (
                f"SELECT count(*) FROM (SELECT {rows} FROM ({sub}) AS pm_inlined LIMIT {left + 1}) AS pm_n"
            )
            counted = cur.execute(count_sql, params).fetchall()  # fetchall: leaves no unfinished result
        except (duckdb.BinderException, duckdb.CatalogException):
            continue  # a correlated subquery: not a standalone result (the query itself reports it)
        seen[key] = counted[0][0] if counted else 0
        total += seen[key]
        if total > limit:
            raise subquery_limit(limit)


def _inlined_bytes(cur: duckdb.DuckDBPyConnection, sub: str, params: dict[str, Any]) -> int:
    """The bytes Druid's broker would hold for the rows of *sub* (see :func:`check_inlined`)."""
    shape = cur.execute(f"SELECT * FROM ({sub}) AS pm_shape LIMIT 0", params)
    described = shape.description or []
    shape.fetchall()
    if not described:
        return 0
    terms = []
    for column in described:
        name = '"' + str(column[0]).replace('"', '""') + '"'
        text = str(column[1]).upper() in ("STRING", "VARCHAR")
        terms.append(f"4 + coalesce(strlen(CAST(pm_b.{name} AS VARCHAR)), 0)" if text else "9")
    per_row = " + ".join(terms)
    got = cur.execute(f"SELECT count(*), sum({per_row}) FROM ({sub}) AS pm_b", params).fetchall()
    n, size = got[0] if got else (0, 0)
    return 19 + 10 * len(described) + int(size or 0) if n else 0
