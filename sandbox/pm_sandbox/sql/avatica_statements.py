"""Avatica statements and their results: the result signature, the rows read forward in blocks, and the
statement calls (``createStatement`` … ``fetch``) of the JSON endpoint.

A result is read forward in blocks of :data:`_ENCODE_BLOCK` rows that DuckDB encodes as Avatica JSON; the
next block is read ahead while the client parses the frames of the current one. :class:`Connections`, the
base of :class:`~.avatica.AvaticaService`, keeps the open connections and their statements (per-workgroup
visibility, expiry); :class:`StatementCalls` adds the calls that run and page through statements.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from .avatica_requests import (
    _INT32,
    _Caller,
    _int_field,
    _list_field,
    _obj_field,
    _params,
    _str_field,
)
from .engine import ResultStream, SqlEngine
from .errors import SqlError
from .rows import encode_rows, frame_rows
from .types import ARRAY, Column, by_druid, normalise

__all__ = ["Connections", "StatementCalls"]

log = logging.getLogger(__name__)


def _scalar(type_name: str) -> dict[str, Any]:
    t = by_druid(type_name)
    return {"type": "scalar", "id": t.jdbc, "name": type_name, "rep": t.rep}


def _column_meta(i: int, col: Column) -> dict[str, Any]:
    if col.type == "ARRAY":
        avatica_type = {
            "type": "array",
            "id": ARRAY.jdbc,
            "name": ARRAY.druid,
            "rep": ARRAY.rep,
            "component": _scalar(col.component or "VARCHAR"),
        }
        cls = ARRAY.java_class
    else:
        avatica_type = _scalar(col.type)
        cls = by_druid(col.type).java_class
    row = ARRAY if col.type == "ARRAY" else by_druid(col.type)
    return {
        "ordinal": i,
        "autoIncrement": False,
        "caseSensitive": True,
        "searchable": False,
        "currency": False,
        "nullable": 1 if col.nullable else 0,
        "signed": True,
        "displaySize": row.precision,
        "label": col.name,
        "columnName": col.name,
        "schemaName": None,
        "precision": row.precision,
        "scale": row.scale,
        "tableName": None,
        "catalogName": None,
        "type": avatica_type,
        "readOnly": True,
        "writable": False,
        "definitelyWritable": False,
        "columnClassName": cls,
    }


def _signature(columns: list[Column], sql: str | None, param_types: tuple[str, ...] = ()) -> dict[str, Any]:
    params = []
    for i, t in enumerate(param_types):
        row = by_druid(t)
        params.append(
            {
                "signed": False,  # Druid 33 calls no parameter signed
                "precision": row.precision,
                "scale": row.scale,
                "parameterType": row.jdbc,
                "typeName": row.druid,
                "className": row.java_class,
                "name": f"?{i}",
            }
        )
    return {
        "columns": [_column_meta(i, c) for i, c in enumerate(columns)],
        "sql": sql,
        "parameters": params,
        "cursorFactory": {"style": "LIST", "clazz": None, "fieldNames": None},
        "statementType": "SELECT",
    }


# Rows are JSON-encoded by DuckDB in blocks this large: an encoding query has a fixed cost, so it runs per
# block, never per frame (the cost: bench/README.md).
_ENCODE_BLOCK = 50_000


# The next block is read and encoded ahead, in one of these threads, while the client reads the frames of
# the current one: DuckDB runs outside the GIL, so the work overlaps the client's parsing instead of adding
# to every 10th fetch (like Druid, whose results are produced while earlier frames are being read). Shared
# by all workgroups and never waited for unless already running: a fetch whose block is still queued
# cancels it and reads the block itself, so a busy pool only costs the speed-up.
_AHEAD = ThreadPoolExecutor(max_workers=2, thread_name_prefix="avatica-encode-ahead")


class _Rows:
    """A statement's result rows, read forward in blocks.

    The rows of a small result are all read when the statement executes (so its errors, the row cap
    included, come with the execute answer), and its query is finished at once. A larger result keeps its
    query running as a stream (holding one of the workgroup's query slots, like a running query) and reads
    the next rows only when a fetch needs them: the sandbox never holds a big result whole, just one encoding
    block at a time, as Druid's broker pages through a result set. :meth:`close` ends the query early.

    :param limit: most rows to hand out (the client's ``maxRowCount``); ``None``: all of them.
    """

    def __init__(
        self,
        columns: list[Column],
        *,
        stream: ResultStream | None = None,
        table: pa.Table | None = None,
        limit: int | None = None,
    ) -> None:
        self.columns = columns
        self._stream = stream
        self._batches = iter(stream) if stream is not None else None
        self._held: list[pa.Table] = [table] if table is not None and table.num_rows else []
        self._held_rows = sum(t.num_rows for t in self._held)
        self._left = limit  # rows the limit still allows to read from the stream
        self.position = 0  # rows handed out by read()

    @property
    def streaming(self) -> bool:
        """Whether the query still runs (rows are left to read from it)."""
        return self._batches is not None

    def at_end(self) -> bool:
        """Whether every row was handed out (exact once :meth:`read` has looked one row ahead)."""
        return self._batches is None and not self._held_rows

    def fill(self, rows: int) -> None:
        """Hold at least *rows* rows (fewer only at the end of the result)."""
        while self._held_rows < rows and self._batches is not None:
            if self._left is not None and self._left <= 0:
                self.close()
                break
            try:
                batch = next(self._batches)
            except StopIteration:  # the stream has closed itself: its query slot is free
                self._batches = self._stream = None
                break
            except BaseException:
                self.close()
                raise
            if self._left is not None:
                batch = batch.slice(0, self._left)
                self._left -= batch.num_rows
            table = normalise(pa.Table.from_batches([batch]), self.columns)
            self._held.append(table)
            self._held_rows += table.num_rows

    def read(self, rows: int) -> pa.Table | None:
        """The next *rows* rows (fewer at the end; ``None`` when none are left), looking one row ahead."""
        self.fill(rows + 1)
        if not self._held_rows:
            return None
        table = pa.concat_tables(self._held) if len(self._held) > 1 else self._held[0]
        taken, rest = table.slice(0, rows), table.slice(rows)
        self._held, self._held_rows = ([rest] if rest.num_rows else []), rest.num_rows
        self.position += taken.num_rows
        return taken

    def skip(self, rows: int) -> int:
        """Pass over up to *rows* rows (a ``syncResults`` offset); return how many were skipped."""
        skipped = 0
        while skipped < rows:
            taken = self.read(min(rows - skipped, _ENCODE_BLOCK))
            if taken is None:
                break
            skipped += taken.num_rows
        return skipped

    def cancel(self) -> None:
        """Interrupt the running query from another thread (the reader then ends with an error)."""
        stream = self._stream
        if stream is not None:
            stream.cancel()

    def close(self) -> None:
        """End the query (if it still runs) and free its slot; the rows already held stay readable."""
        stream, self._stream, self._batches = self._stream, None, None
        if stream is not None:
            stream.close()


def _plain_columns(columns: list[Column], sources: list[str], duck_types: list[str]) -> list[str]:
    """The stream's projection: the result columns themselves (Avatica frames are encoded per block)."""
    return sources


@dataclass
class _Statement:
    id: int
    sql: str | None = None
    param_types: tuple[str, ...] = ()
    columns: list[Column] = field(default_factory=list)
    max_rows: int = -1
    result: _Rows | None = None
    offset: int = 0
    encoded: pa.Array | None = None  # JSON text of rows [encoded_start, encoded_start + len(encoded))
    encoded_start: int = 0
    #: the block after ``encoded``, being read and encoded in the background (``None``: at the end)
    ahead: Future[pa.Array | None] | None = None
    touched: float = field(default_factory=time.monotonic)
    cancel: Callable[[], None] | None = None  # set while the statement's query runs

    # The methods below are called with the connection's lock held. While ``ahead`` is pending, only its
    # thread touches ``result``.
    def available(self) -> int:
        """The end of the rows encoded so far (rows ``[offset, available())`` can be sent now)."""
        return self.encoded_start + len(self.encoded) if self.encoded is not None else self.offset

    def take_ahead(self, *, wait: bool) -> bool:
        """Append the block read ahead to ``encoded`` once it is there; ``True`` when nothing is pending.

        Without *wait*, a pending or failed block is left as it is (``False``). With *wait*, a block still
        queued is called off (reading it here is sooner than waiting for a thread), a running one is waited
        for, and a failure (row cap, time limit) drops the result and is raised.
        """
        future = self.ahead
        if future is None:
            return True
        if not future.done() or future.exception() is not None:
            if not wait:
                return False
            if future.cancel():
                self.ahead = None
                return True
        self.ahead = None
        try:
            fresh = future.result()
        except SqlError:
            self.drop_result()
            raise
        self.append_encoded(fresh)
        return True

    def append_encoded(self, fresh: pa.Array | None) -> None:
        """Add the encoded rows that follow ``encoded``; the rows before ``offset`` (sent) are let go."""
        if fresh is None or not len(fresh):
            return
        kept = self.encoded.slice(self.offset - self.encoded_start) if self.encoded is not None else None
        self.encoded = pa.concat_arrays([kept, fresh]) if kept is not None and len(kept) else fresh
        self.encoded_start = self.offset

    def read_ahead(self) -> None:
        """Start reading and encoding the next block in the background, unless the result is all read or a
        block's worth of encoded rows is still unsent.

        The second condition bounds memory: reading ahead after every frame would grow the unsent rows by a
        block less a frame per fetch, piling the whole result up in memory and copying it on every merge.
        """
        result = self.result
        if result is None or self.ahead is not None or result.at_end():
            return
        if self.available() - self.offset >= _ENCODE_BLOCK:
            return
        self.ahead = _AHEAD.submit(_read_block, result, _ENCODE_BLOCK)

    def drop_result(self) -> None:
        """Forget the result, ending its query if it still streams (closed statement, new execution)."""
        result, self.result, self.encoded = self.result, None, None
        future, self.ahead = self.ahead, None
        self.cancel = None
        if result is None:
            return
        if future is not None and not future.cancel():  # its thread is reading: stop it, close after it
            result.cancel()
            future.add_done_callback(lambda _: result.close())
            return
        result.close()


def _read_block(result: _Rows, rows: int) -> pa.Array | None:
    """The next *rows* rows of *result* as Avatica JSON texts, each followed by a frame's comma."""
    block = result.read(rows)
    return None if block is None else encode_rows(block, result.columns, mode="avatica", terminator=",")


def _cancel_running(st: _Statement | None) -> None:
    cancel = st.cancel if st is not None else None
    if cancel is not None:
        cancel()


@dataclass
class _Connection:
    id: str
    client_id: str
    info: dict[str, Any]
    props: dict[str, Any] = field(default_factory=dict)
    statements: dict[int, _Statement] = field(default_factory=dict)
    next_id: int = 1
    touched: float = field(default_factory=time.monotonic)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def new_id(self) -> int:
        sid = self.next_id
        self.next_id += 1
        return sid


class Connections:
    """The open Avatica connections of every workgroup (thread-safe); what every call looks up first."""

    def __init__(self, engine: SqlEngine) -> None:
        self.engine = engine
        self.options = engine.options
        self._connections: dict[str, _Connection] = {}
        self._lock = threading.Lock()
        self._last_sweep = 0.0
        self.server_address = "localhost:0"  # host:port of rpcMetadata (the app sets the port it serves on)

    def rpc_metadata(self) -> dict[str, Any]:
        """The ``rpcMetadata`` Druid puts on every answer (and on each result set): the server's address."""
        return {"response": "rpcMetadata", "serverAddress": self.server_address}

    def _sweep(self) -> None:
        now = time.monotonic()
        if now - self._last_sweep < 1.0:
            return
        self._last_sweep = now
        with self._lock:
            for cid, conn in list(self._connections.items()):
                if now - conn.touched > self.options.connection_idle_timeout:
                    log.info("avatica connection %s expired after %.0fs idle", cid, now - conn.touched)
                    del self._connections[cid]
                    for st in list(conn.statements.values()):
                        st.drop_result()
                    continue
                for st in list(conn.statements.values()):
                    if st.result is not None and now - st.touched > self.options.statement_idle_timeout:
                        st.drop_result()

    def _lookup(self, connection_id: str, caller: _Caller) -> _Connection | None:
        """The open connection *connection_id* if *caller* may use it (another workgroup's is unknown)."""
        conn = self._connections.get(connection_id)
        if conn is None or not caller.may_use(conn.client_id):
            return None
        return conn

    def _conn(self, req: dict[str, Any], caller: _Caller, field_name: str = "connectionId") -> _Connection:
        cid = _str_field(req, field_name)
        assert cid is not None
        conn = self._lookup(cid, caller)
        if conn is None:
            raise SqlError(f"Connection not found: {cid}", "no_connection")
        conn.touched = time.monotonic()
        return conn


class StatementCalls(Connections):
    """The statement calls: create, prepare, execute, fetch, close (one result per statement)."""

    def _do_createStatement(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        with conn.lock:
            st = self._add_statement(conn, conn.new_id())
        return {"response": "createStatement", "connectionId": conn.id, "statementId": st.id}

    def _add_statement(self, conn: _Connection, sid: int) -> _Statement:
        if sid not in conn.statements and len(conn.statements) >= self.options.max_statements_per_connection:
            raise SqlError(
                f"Too many open statements, limit is [{self.options.max_statements_per_connection}]: "
                "close the statements (or result sets) you no longer use.",
                "capacity",
            )
        st = conn.statements.get(sid) or _Statement(id=sid)
        conn.statements[sid] = st
        conn.next_id = max(conn.next_id, sid + 1)
        return st

    def _do_closeStatement(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._lookup(str(_str_field(req, "connectionId")), caller)
        sid = _int_field(req, "statementId", -1, _INT32)
        if conn is not None:
            # Like Druid, closing a statement stops its running query: the query holds the connection's
            # lock, so it is interrupted first (a client's Ctrl-C sends this on another HTTP connection).
            _cancel_running(conn.statements.get(sid))
            with conn.lock:
                st = conn.statements.pop(sid, None)
                if st is not None:
                    st.drop_result()
        return {"response": "closeStatement"}

    def _frame_size(self, asked: Any) -> int:
        asked = int(asked) if isinstance(asked, int) else -1
        size = self.options.max_rows_per_frame if asked < 0 else min(asked, self.options.max_rows_per_frame)
        return max(size, self.options.min_rows_per_frame)

    def _run(self, conn: _Connection, st: _Statement, params: list[Any], max_total: int) -> None:
        """Execute the statement's SQL: its first block of rows is read now, the rest as frames are fetched
        (see :class:`_Rows`); a row cap of a block or less (``maxRowCount``) reads them all at once."""
        st.drop_result()

        def running(cancel: Callable[[], None]) -> None:
            st.cancel = cancel

        rows: _Rows
        try:
            if 0 < max_total <= _ENCODE_BLOCK:
                result = self.engine.execute(
                    conn.client_id,
                    st.sql or "",
                    params,
                    max_rows=max_total,
                    on_open=running,
                    context=conn.info,  # Druid reads the query context from the connection properties
                )
                rows = _Rows(result.columns, table=result.table)
            else:
                stream = self.engine.stream(
                    conn.client_id,
                    st.sql or "",
                    params,
                    _plain_columns,
                    batch_rows=_ENCODE_BLOCK,
                    on_open=lambda running_stream: running(running_stream.cancel),
                    context=conn.info,
                )
                rows = _Rows(stream.columns, stream=stream, limit=max_total if max_total > 0 else None)
                rows.fill(_ENCODE_BLOCK + 1)  # a small result ends here, its errors in the execute answer
        finally:
            st.cancel = None
        if rows.streaming:
            st.cancel = rows.cancel  # closeStatement interrupts a fetch reading the stream
        st.result, st.offset, st.columns, st.touched = rows, 0, rows.columns, time.monotonic()

    def _result_set(self, conn: _Connection, st: _Statement, first_frame: Any) -> dict[str, Any]:
        frame = self._next_frame(st, self._frame_size(first_frame))
        return {
            "response": "resultSet",
            "connectionId": conn.id,
            "statementId": st.id,
            "ownStatement": False,
            "signature": _signature(st.columns, st.sql, st.param_types),
            "firstFrame": frame,
            "updateCount": -1,
            "rpcMetadata": self.rpc_metadata(),
        }

    def _next_frame(self, st: _Statement, size: int, *, blocking: bool = True) -> dict[str, Any]:
        """The next frame of *size* rows. Not *blocking* (on the event loop), the caller has checked that
        its rows are encoded and, if a block is being read ahead, that this is not the last frame."""
        result = st.result
        assert result is not None
        start = st.offset
        if st.encoded is None:
            st.encoded, st.encoded_start = pa.array([], pa.string()), start
        if blocking:
            st.take_ahead(wait=True)  # raises (and drops the result) if reading ahead met an error
        available = st.available()  # rows read and encoded so far
        if available < start + size and not result.at_end():
            try:
                fresh = _read_block(result, max(_ENCODE_BLOCK, size))
            except SqlError:
                st.drop_result()  # e.g. the row cap or the time limit, met while streaming
                raise
            st.append_encoded(fresh)
            available = st.available()
        end = min(start + size, available)
        lines = st.encoded.slice(start - st.encoded_start, end - start)
        rows = orjson.Fragment(frame_rows(lines))
        st.offset = end
        st.touched = time.monotonic()
        done = end >= available and result.at_end()
        if done:
            st.drop_result()  # like Druid: the result is closed once its last frame is sent
        else:
            st.read_ahead()
        return {"offset": start, "done": done, "rows": rows}

    def _do_prepareAndExecute(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        with conn.lock:
            sql = _str_field(req, "sql", required=False) or ""
            total = _int_field(req, "maxRowCount", _int_field(req, "maxRowsTotal", -1))
            first = _int_field(req, "maxRowsInFirstFrame", -1)
            st = self._add_statement(conn, _int_field(req, "statementId", 0, _INT32) or conn.new_id())
            st.sql, st.param_types = sql, ()
            self._run(conn, st, [], total)  # (drops the statement's previous result first)
            rs = self._result_set(conn, st, first)
        return {"response": "executeResults", "missingStatement": False, "results": [rs]}

    def _do_prepare(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        sql = _str_field(req, "sql", required=False) or ""
        total = _int_field(req, "maxRowCount", _int_field(req, "maxRowsTotal", -1))
        translated, columns = self.engine.describe(conn.client_id, sql, conn.info)
        with conn.lock:
            st = self._add_statement(conn, conn.new_id())
            st.sql, st.columns, st.param_types = sql, columns, translated.param_types
            st.max_rows = total
        return {
            "response": "prepare",
            "statement": {
                "connectionId": conn.id,
                "id": st.id,
                "signature": _signature(columns, sql, translated.param_types),
            },
        }

    def _do_execute(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        handle = _obj_field(req, "statementHandle")
        conn = self._conn({**handle, "request": "execute"}, caller)
        sid = _int_field({**handle, "request": "execute"}, "id", -1, _INT32)
        params = _params(_list_field(req, "parameterValues") or [])
        first = _int_field(req, "maxRowCount", -1)
        with conn.lock:
            st = conn.statements.get(sid)
            if st is None or st.sql is None:
                return {"response": "executeResults", "missingStatement": True, "results": []}
            self._run(conn, st, params, st.max_rows)
            rs = self._result_set(conn, st, first)
        return {"response": "executeResults", "missingStatement": False, "results": [rs]}

    def _do_fetch(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        sid = _int_field(req, "statementId", -1, _INT32)
        offset = _int_field(req, "offset", -1)
        size = self._frame_size(_int_field(req, "fetchMaxRowCount", -1))
        with conn.lock:
            st = conn.statements.get(sid)
            if st is None:
                return {"response": "fetch", "frame": None, "missingStatement": True, "missingResults": False}
            if st.result is None:
                return {"response": "fetch", "frame": None, "missingStatement": False, "missingResults": True}
            if offset >= 0 and offset != st.offset:
                raise SqlError(
                    f"Cannot fetch at offset {offset}: results are read forward only and the statement "
                    f"is at offset {st.offset}."
                )
            frame = self._next_frame(st, size)
        return {"response": "fetch", "frame": frame, "missingStatement": False, "missingResults": False}

    def _do_syncResults(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        state = _obj_field(req, "state")
        sql = _str_field({"request": "syncResults", **state}, "sql", required=False)
        offset = max(_int_field(req, "offset", 0), 0)
        with conn.lock:
            st = self._add_statement(conn, _int_field(req, "statementId", 0, _INT32) or conn.new_id())
            if sql:
                st.sql = sql
            if st.sql is None:
                return {"response": "syncResults", "moreResults": False, "missingStatement": True}
            self._run(conn, st, [], st.max_rows)
            assert st.result is not None
            st.offset = st.result.skip(offset)
            more = not st.result.at_end()
        return {"response": "syncResults", "moreResults": more, "missingStatement": False}

    def _do_prepareAndExecuteBatch(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        self._conn(req, caller)
        raise SqlError(
            "Batch statements not supported: the SQL endpoint is read-only.",
            "refused",
            java_class="java.lang.UnsupportedOperationException",
        )

    _do_executeBatch = _do_prepareAndExecuteBatch
