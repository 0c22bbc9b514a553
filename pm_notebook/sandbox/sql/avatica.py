"""Avatica JSON protocol server (what ``org.apache.calcite.avatica.remote.Driver`` 1.26 speaks).

Written from ``shared/reference/avatica-json.md`` and the recorded driver traffic, independently of
the client's ``pm_notebook.sql._protocol``. :meth:`AvaticaService.handle` takes one request body and
returns ``(status, body)``: 200 with the answer, or 500 with an Avatica ``ErrorResponse`` (the driver
decodes both; any other status would hide the message). Call names and fields are Avatica's own.

Behaviour follows Apache Druid's endpoint: credentials from ``info.user``/``info.password`` (checked at
``openConnection``, error code 2 / SQLSTATE 00002 when wrong), one catalog ``druid``, frames of at
least ``min_rows_per_frame`` and at most ``max_rows_per_frame`` rows, at most
``max_statements_per_connection`` open statements, idle connections and results expire (an expired
connection answers error code 1, which the driver's ``transparent_reconnection`` recovers from), and
only queries run (writes and batches are refused).

Workgroups are kept apart: at most ``max_connections`` open connections *per workgroup* (a full workgroup
may only make room among its own idle connections, never by closing another's); an ``openConnection``
naming an id that is already open is refused, like Druid ("Connection [id] already open"), so a known
id can never be taken over; and a request sending HTTP Basic credentials of another workgroup than the
connection's gets the same "Connection not found" as an unknown id. Every request field is checked for
its JSON type and range first: a malformed request is an ``ErrorResponse`` naming the field, never an
internal error.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from .engine import ResultStream, SqlEngine
from .errors import SqlError
from .rows import encode_rows, frame_rows
from .types import ARRAY, TYPES, Column, by_druid, normalise

if TYPE_CHECKING:
    from ..data.store import Store

__all__ = ["AvaticaService"]

log = logging.getLogger(__name__)

_EPOCH = dt.datetime(1970, 1, 1)


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
    return {
        "ordinal": i,
        "autoIncrement": False,
        "caseSensitive": True,
        "searchable": False,
        "currency": False,
        "nullable": 1 if col.nullable else 0,
        "signed": True,
        "displaySize": 10,
        "label": col.name,
        "columnName": col.name,
        "schemaName": None,
        "precision": 0,
        "scale": 0,
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
                "signed": row.signed,
                "precision": 0,
                "scale": 0,
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


# Rows are JSON-encoded by DuckDB in blocks this large (one encoding query costs ~15 ms, so never per frame).
_ENCODE_BLOCK = 50_000
# The next block is read and encoded ahead, in one of these threads, while the client reads the frames of
# the current one: DuckDB runs outside the GIL, so the work overlaps the client's parsing instead of adding
# to every 10th fetch (like Druid, whose results are produced while earlier frames are being read). Shared
# by all workgroups and never waited for unless already running: a fetch whose block is still queued
# cancels it and reads the block itself, so a busy pool only costs the speed-up.
_AHEAD = ThreadPoolExecutor(max_workers=2, thread_name_prefix="avatica-encode-ahead")


def _typed_value(tv: Any) -> Any:
    """Python value of an Avatica TypedValue (see the encodings table in avatica-json.md).

    :raises ValueError, TypeError, OverflowError: a value that does not fit its ``type`` (the caller names
        the parameter in a :class:`SqlError`).
    """
    if tv is None:
        return None
    if not isinstance(tv, dict):
        if isinstance(tv, list):
            raise TypeError("expected a TypedValue object, got a list")
        return tv
    kind, value = tv.get("type"), tv.get("value")
    if value is None:
        return None
    if kind == "ARRAY":
        if not isinstance(value, list):
            raise TypeError("an ARRAY value must be a list")
        return [_typed_value(v) for v in value]
    if isinstance(value, dict | list):
        raise TypeError(f"a {kind} value must be a JSON scalar")
    if kind == "JAVA_SQL_TIMESTAMP" or kind == "JAVA_UTIL_DATE":
        return _EPOCH + dt.timedelta(milliseconds=_whole(value))
    if kind == "JAVA_SQL_DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=_whole(value))
    if kind == "JAVA_SQL_TIME":
        return (_EPOCH + dt.timedelta(milliseconds=_whole(value))).time()
    if kind == "BYTE_STRING":
        return base64.b64decode(str(value), validate=True)
    if kind in ("DOUBLE", "FLOAT", "PRIMITIVE_DOUBLE", "PRIMITIVE_FLOAT"):
        return float(value)
    if kind in _INTEGRAL:
        # orjson reads an integer beyond 64 bits as a float: never round it silently
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"a {kind} value must be an integer")
        if not -(2**63) <= value < 2**63:
            raise OverflowError("integer out of the 64-bit range")
    return value


_INTEGRAL = frozenset(
    (
        "LONG",
        "INTEGER",
        "SHORT",
        "BYTE",
        "PRIMITIVE_LONG",
        "PRIMITIVE_INT",
        "PRIMITIVE_SHORT",
        "PRIMITIVE_BYTE",
    )
)


def _whole(value: Any) -> int:
    """An integral count (ms or days) of a TypedValue; bools and fractions are not counts."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError("expected an integer")
    return int(value)


_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _str_field(req: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    """A string field of *req*; a missing required one or a value of another type is a :class:`SqlError`."""
    value = req.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise SqlError(f'{req.get("request")}: "{name}" must be a non-empty string, got {_kind(value)}.')
    return value


def _int_field(req: dict[str, Any], name: str, default: int, bounds: tuple[int, int] = _INT64) -> int:
    """An integer field of *req* within *bounds* (*default* when absent or null)."""
    value = req.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SqlError(f'{req.get("request")}: "{name}" must be an integer, got {_kind(value)}.')
    if not bounds[0] <= value <= bounds[1]:
        raise SqlError(f'{req.get("request")}: "{name}" is out of range ({value}).')
    return value


def _obj_field(req: dict[str, Any], name: str) -> dict[str, Any]:
    """An object field of *req* (``{}`` when absent or null)."""
    value = req.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SqlError(f'{req.get("request")}: "{name}" must be an object, got {_kind(value)}.')
    return value


def _list_field(req: dict[str, Any], name: str) -> list[Any] | None:
    """A list field of *req* (``None`` when absent or null)."""
    value = req.get(name)
    if value is not None and not isinstance(value, list):
        raise SqlError(f'{req.get("request")}: "{name}" must be a list, got {_kind(value)}.')
    return value


def _pattern_field(req: dict[str, Any], name: str) -> str | None:
    """A LIKE pattern field (a string or null)."""
    return _str_field(req, name, required=False)


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

        Without that second condition a block was read ahead after every frame, and each fetch merged it: the
        unsent rows grew by a block less a frame per fetch, so the whole result piled up in memory and every
        merge copied it again (0.5 s of the event loop's time per 1M-row result, profiled with py-spy).
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


_META_COLUMNS = {
    "getCatalogs": [("TABLE_CAT", "VARCHAR")],
    "getSchemas": [("TABLE_SCHEM", "VARCHAR"), ("TABLE_CATALOG", "VARCHAR")],
    "getTableTypes": [("TABLE_TYPE", "VARCHAR")],
    "getTables": [
        ("TABLE_CAT", "VARCHAR"),
        ("TABLE_SCHEM", "VARCHAR"),
        ("TABLE_NAME", "VARCHAR"),
        ("TABLE_TYPE", "VARCHAR"),
        ("REMARKS", "VARCHAR"),
        ("TYPE_CAT", "VARCHAR"),
        ("TYPE_SCHEM", "VARCHAR"),
        ("TYPE_NAME", "VARCHAR"),
        ("SELF_REFERENCING_COL_NAME", "VARCHAR"),
        ("REF_GENERATION", "VARCHAR"),
    ],
    "getColumns": [
        ("TABLE_CAT", "VARCHAR"),
        ("TABLE_SCHEM", "VARCHAR"),
        ("TABLE_NAME", "VARCHAR"),
        ("COLUMN_NAME", "VARCHAR"),
        ("DATA_TYPE", "BIGINT"),
        ("TYPE_NAME", "VARCHAR"),
        ("COLUMN_SIZE", "BIGINT"),
        ("BUFFER_LENGTH", "BIGINT"),
        ("DECIMAL_DIGITS", "BIGINT"),
        ("NUM_PREC_RADIX", "BIGINT"),
        ("NULLABLE", "BIGINT"),
        ("REMARKS", "VARCHAR"),
        ("COLUMN_DEF", "VARCHAR"),
        ("SQL_DATA_TYPE", "BIGINT"),
        ("SQL_DATETIME_SUB", "BIGINT"),
        ("CHAR_OCTET_LENGTH", "BIGINT"),
        ("ORDINAL_POSITION", "BIGINT"),
        ("IS_NULLABLE", "VARCHAR"),
        ("SCOPE_CATALOG", "VARCHAR"),
        ("SCOPE_SCHEMA", "VARCHAR"),
        ("SCOPE_TABLE", "VARCHAR"),
        ("SOURCE_DATA_TYPE", "BIGINT"),
        ("IS_AUTOINCREMENT", "VARCHAR"),
        ("IS_GENERATEDCOLUMN", "VARCHAR"),
    ],
    "getTypeInfo": [
        ("TYPE_NAME", "VARCHAR"),
        ("DATA_TYPE", "BIGINT"),
        ("PRECISION", "BIGINT"),
        ("LITERAL_PREFIX", "VARCHAR"),
        ("LITERAL_SUFFIX", "VARCHAR"),
        ("CREATE_PARAMS", "VARCHAR"),
        ("NULLABLE", "BIGINT"),
        ("CASE_SENSITIVE", "BOOLEAN"),
        ("SEARCHABLE", "BIGINT"),
        ("UNSIGNED_ATTRIBUTE", "BOOLEAN"),
        ("FIXED_PREC_SCALE", "BOOLEAN"),
        ("AUTO_INCREMENT", "BOOLEAN"),
        ("LOCAL_TYPE_NAME", "VARCHAR"),
        ("MINIMUM_SCALE", "BIGINT"),
        ("MAXIMUM_SCALE", "BIGINT"),
        ("SQL_DATA_TYPE", "BIGINT"),
        ("SQL_DATETIME_SUB", "BIGINT"),
        ("NUM_PREC_RADIX", "BIGINT"),
    ],
}
_SCHEMAS = ("INFORMATION_SCHEMA", "druid", "lookup")
_TYPE_INFO = [
    (
        name,
        tid,
        0 if name != "VARCHAR" else 2147483647,
        "'" if name == "VARCHAR" else None,
        "'" if name == "VARCHAR" else None,
        None,
        1,
        name == "VARCHAR",
        3,
        False,
        False,
        False,
        name,
        0,
        0,
        None,
        None,
        10,
    )
    for name, tid in sorted((t.druid, t.jdbc) for t in TYPES)
    if name != "OTHER"
] + [
    (
        ARRAY.druid,
        ARRAY.jdbc,
        0,
        None,
        None,
        None,
        1,
        False,
        3,
        False,
        False,
        False,
        "ARRAY",
        0,
        0,
        None,
        None,
        10,
    )
]


class AvaticaService:
    """Connections, statements and the call dispatch of the Avatica JSON endpoint (thread-safe)."""

    def __init__(self, engine: SqlEngine) -> None:
        self.engine = engine
        self.options = engine.options
        self._connections: dict[str, _Connection] = {}
        self._lock = threading.Lock()
        self._last_sweep = 0.0

    # --- entry point --------------------------------------------------------------------------------
    def handle(self, body: bytes, basic_auth: tuple[str, str] | None = None) -> tuple[int, bytes]:
        """Answer one Avatica request body; *basic_auth* is the HTTP Basic pair, if the client sent one."""
        try:
            req = self.parse(body)
        except SqlError as e:
            return 500, orjson.dumps(e.avatica_body())
        return self.answer(req, basic_auth)

    @staticmethod
    def parse(body: bytes) -> dict[str, Any]:
        """The request object of *body*; :class:`SqlError` if it is not JSON or has no ``request`` name."""
        try:
            req = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise SqlError("The request body is not valid JSON.") from None
        if not isinstance(req, dict) or not isinstance(req.get("request"), str):
            raise SqlError('Not an Avatica JSON request: expected an object with a "request" field.')
        return req

    def owner(self, req: dict[str, Any]) -> str | None:
        """The workgroup (client id) *req* would run for, else ``None`` (it will be refused without work).

        Cheap and without side effects, so the app can pick the workgroup's thread budget before the call.
        """
        if req.get("request") == "openConnection":
            info = req.get("info")
            user = info.get("user") if isinstance(info, dict) else None
            password = info.get("password") if isinstance(info, dict) else None
            if not isinstance(user, str) or not isinstance(password, str):
                return None
            # authenticated, so naming another workgroup's id cannot draw on that workgroup's budget
            wg = self.engine.store.authenticate(user, password)
            return wg.id if wg is not None else None
        cid = req.get("connectionId")
        if req.get("request") == "execute":
            handle = req.get("statementHandle")
            cid = handle.get("connectionId") if isinstance(handle, dict) else None
        conn = self._connections.get(cid) if isinstance(cid, str) else None
        return conn.client_id if conn is not None else None

    def answer(self, req: dict[str, Any], basic_auth: tuple[str, str] | None = None) -> tuple[int, bytes]:
        """Answer one parsed request (see :meth:`parse`): ``(200, answer)`` or ``(500, ErrorResponse)``."""
        self._sweep()
        try:
            method = getattr(self, "_do_" + req["request"], None)
            if method is None:
                raise SqlError(f"Unsupported Avatica request '{req['request']}'.", "unsupported")
            return 200, orjson.dumps(method(req, _Caller(self.engine.store, basic_auth)))
        except SqlError as e:
            log.debug("avatica error (%s): %s", e.kind, e.message)
            return 500, orjson.dumps(e.avatica_body())
        except Exception as e:  # a bug of ours must still reach the driver as an error, not a hang
            log.exception("avatica internal error")
            return 500, orjson.dumps(
                SqlError(f"Internal error: {type(e).__name__}: {e}", "internal").avatica_body()
            )

    def handle_inline(self, body: bytes) -> tuple[int, bytes] | None:
        """Answer a ``fetch`` whose rows are already JSON-encoded without blocking, else ``None``.

        Lets the app serve most fetches on the event loop: a thread-pool hop costs more than the frame.
        Anything that could wait (a busy connection, an encoding step, an error) or is not a well-formed
        fetch returns ``None`` (the full path then answers it, errors included).
        """
        if b'"fetch"' not in body[:40]:
            return None
        try:
            req = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(req, dict) or req.get("request") != "fetch":
            return None
        cid, sid, offset = req.get("connectionId"), req.get("statementId"), req.get("offset")
        if not isinstance(cid, str) or type(sid) is not int or type(offset) is not int:
            return None
        size = req.get("fetchMaxRowCount", -1)
        if type(size) is not int or not _INT64[0] <= size <= _INT64[1]:
            return None
        conn = self._connections.get(cid)
        if conn is None or not conn.lock.acquire(blocking=False):
            return None
        try:
            st = conn.statements.get(sid)
            if st is None or st.result is None or st.encoded is None or offset != st.offset:
                return None
            size = self._frame_size(size)
            if not st.take_ahead(wait=False):  # the next block is still being read, or failed
                if st.offset + size >= st.available():
                    return None  # this frame needs it (or needs to know whether it is the last)
            elif st.offset + size > st.available() and not st.result.at_end():
                return None  # rows to read or encode first: not without blocking
            conn.touched = time.monotonic()
            frame = self._next_frame(st, size, blocking=False)
        finally:
            conn.lock.release()
        answer = {"response": "fetch", "frame": frame, "missingStatement": False, "missingResults": False}
        return 200, orjson.dumps(answer)

    def connection_count(self, client_id: str | None = None) -> int:
        """Open connections, of one workgroup or of all (for tests and stats)."""
        conns = list(self._connections.values())
        return sum(1 for c in conns if client_id is None or c.client_id == client_id)

    # --- lifecycle ----------------------------------------------------------------------------------
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

    def _do_openConnection(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        cid = _str_field(req, "connectionId")
        assert cid is not None
        if len(cid) > 256:
            raise SqlError("openConnection: the connectionId is longer than 256 characters.")
        info = dict(_obj_field(req, "info"))
        user, password = info.pop("user", None), info.pop("password", None)
        if user is None and caller.basic:
            user, password = caller.basic
        if not user:
            raise SqlError(
                "Unauthorized: no credentials. Pass user=<client id> and password=<client secret> as "
                "connection properties.",
                "unauthorized",
            )
        if not isinstance(user, str) or not isinstance(password, str | None):
            raise SqlError(
                "openConnection: the user and password properties must be strings.", "unauthorized"
            )
        wg = self.engine.store.authenticate(user, password or "")
        if wg is None:
            raise SqlError(
                f"Unauthorized: wrong user or password for the SQL endpoint (user '{user}'). Use the "
                "workgroup's client id as user and its client secret as password.",
                "unauthorized",
            )
        limit = self.options.max_connections
        with self._lock:
            if cid in self._connections:
                # Druid refuses too: replacing it would hand another client's connection to this one.
                raise SqlError(f"Connection [{cid}] already open.")
            own = [c for c in self._connections.values() if c.client_id == wg.id]
            if len(own) >= limit:
                idle = [c for c in own if not c.statements]
                if not idle:
                    raise SqlError(
                        f"Too many connections, limit is [{limit}] per workgroup: close the connections "
                        "you no longer use.",
                        "capacity",
                    )
                oldest = min(idle, key=lambda c: c.touched)
                log.info("avatica connection %s closed to make room (workgroup at its limit)", oldest.id)
                del self._connections[oldest.id]  # idle: it has no statement, hence no running result
            self._connections[cid] = _Connection(id=cid, client_id=wg.id, info=info)
        return {"response": "openConnection"}

    def _do_connectionSync(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        props = {k: v for k, v in _obj_field(req, "connProps").items() if v is not None}
        conn.props.update(props)
        answer = {
            "connProps": "connPropsImpl",
            "autoCommit": True,
            "readOnly": True,
            "transactionIsolation": 0,
            "catalog": "druid",
            "schema": "druid",
            "dirty": False,
        }
        # Druid's DruidMeta.connectionSync returns the client's properties as they came, "dirty": true
        # included; the 1.26 driver keeps them and, finding them dirty, syncs again before every statement.
        # Kept so: a JDBC query costs the same two round trips here as against the service.
        answer.update({k: v for k, v in conn.props.items() if k in answer})
        return {"response": "connectionSync", "connProps": answer}

    def _do_databaseProperties(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        self._conn(req, caller)
        return {"response": "databaseProperties", "map": {}}

    def _do_closeConnection(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        cid = _str_field(req, "connectionId")
        with self._lock:
            # Unknown ids succeed (Druid ignores them); another workgroup's connection is as unknown.
            conn = (
                self._connections.pop(cid)
                if cid is not None and self._lookup(cid, caller) is not None
                else None
            )
        if conn is not None:
            for st in list(conn.statements.values()):
                _cancel_running(st)
                with conn.lock:
                    st.drop_result()
        return {"response": "closeConnection"}

    def _do_commit(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        self._conn(req, caller)
        return {"response": "commit"}

    def _do_rollback(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        self._conn(req, caller)
        return {"response": "rollback"}

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

    # --- queries ------------------------------------------------------------------------------------
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
        return {"response": "executeResults", "missingStatement": False, "resultSets": [rs]}

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
                return {"response": "executeResults", "missingStatement": True, "resultSets": []}
            self._run(conn, st, params, st.max_rows)
            rs = self._result_set(conn, st, first)
        return {"response": "executeResults", "missingStatement": False, "resultSets": [rs]}

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

    # --- DatabaseMetaData ---------------------------------------------------------------------------
    def _meta(self, conn: _Connection, call: str, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
        columns = [Column(n, t) for n, t in _META_COLUMNS[call]]
        with conn.lock:
            sid = conn.new_id()  # fresh id; nothing is kept: every row is in the first frame
        return {
            "response": "resultSet",
            "connectionId": conn.id,
            "statementId": sid,
            "ownStatement": True,
            "signature": _signature(columns, None),
            "firstFrame": {"offset": 0, "done": True, "rows": rows},
            "updateCount": -1,
        }

    def _query(self, conn: _Connection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        result = self.engine.execute(conn.client_id, sql, params)
        return [tuple(r.values()) for r in result.table.to_pylist()]

    @staticmethod
    def _like(clauses: list[str], params: list[Any], column: str, pattern: Any) -> None:
        if pattern is not None:
            clauses.append(f"{column} LIKE ? ESCAPE '\\'")
            params.append(str(pattern))

    def _do_getCatalogs(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        return self._meta(self._conn(req, caller), "getCatalogs", [("druid",)])

    def _do_getSchemas(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        catalog, pattern = _str_field(req, "catalog", required=False), _pattern_field(req, "schemaPattern")
        rows = [(s, "druid") for s in _SCHEMAS if catalog in (None, "druid") and _like_match(s, pattern)]
        return self._meta(conn, "getSchemas", rows)

    def _do_getTableTypes(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        return self._meta(self._conn(req, caller), "getTableTypes", [("SYSTEM_TABLE",), ("TABLE",)])

    def _do_getTypeInfo(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        return self._meta(self._conn(req, caller), "getTypeInfo", list(_TYPE_INFO))

    def _do_getTables(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        if _str_field(req, "catalog", required=False) not in (None, "druid"):
            return self._meta(conn, "getTables", [])
        clauses, params = ["1 = 1"], list[Any]()
        self._like(clauses, params, "TABLE_SCHEMA", _pattern_field(req, "schemaPattern"))
        self._like(clauses, params, "TABLE_NAME", _pattern_field(req, "tableNamePattern"))
        types = _list_field(req, "typeList")
        if types is not None:
            if not all(isinstance(t, str) for t in types):
                raise SqlError('getTables: "typeList" must be a list of strings.')
            if not types:
                return self._meta(conn, "getTables", [])
            clauses.append("TABLE_TYPE IN (" + ", ".join("?" for _ in types) + ")")
            params.extend(str(t) for t in types)
        sql = (
            "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM INFORMATION_SCHEMA.TABLES WHERE "
            + " AND ".join(clauses)
            + " ORDER BY TABLE_TYPE, TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME"
        )
        rows = [r + (None,) * 6 for r in self._query(conn, sql, params)]
        return self._meta(conn, "getTables", rows)

    def _do_getColumns(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        if _str_field(req, "catalog", required=False) not in (None, "druid"):
            return self._meta(conn, "getColumns", [])
        clauses, params = ["1 = 1"], list[Any]()
        self._like(clauses, params, "TABLE_SCHEMA", _pattern_field(req, "schemaPattern"))
        self._like(clauses, params, "TABLE_NAME", _pattern_field(req, "tableNamePattern"))
        self._like(clauses, params, "COLUMN_NAME", _pattern_field(req, "columnNamePattern"))
        sql = (
            "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, JDBC_TYPE, DATA_TYPE, IS_NULLABLE, "
            "ORDINAL_POSITION FROM INFORMATION_SCHEMA.COLUMNS WHERE "
            + " AND ".join(clauses)
            + " ORDER BY TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"
        )
        rows = []
        for cat, schema, table, column, jdbc, dtype, is_nullable, ordinal in self._query(conn, sql, params):
            nullable = 1 if is_nullable == "YES" else 0
            rows.append(
                (
                    cat,
                    schema,
                    table,
                    column,
                    jdbc,
                    dtype,
                    -1,
                    -1,
                    -1,
                    -1,
                    nullable,
                    None,
                    None,
                    None,
                    None,
                    -1,
                    ordinal,
                    is_nullable,
                    None,
                    None,
                    None,
                    -1,
                    "NO",
                    "NO",
                )
            )
        return self._meta(conn, "getColumns", rows)


class _Caller:
    """Who sends a request: the HTTP Basic pair it carried, if any (checked only when it matters)."""

    def __init__(self, store: Store, basic: tuple[str, str] | None) -> None:
        self.store = store
        self.basic = basic

    def may_use(self, client_id: str) -> bool:
        """Whether a connection of workgroup *client_id* is visible to this caller.

        Without credentials the (client-generated, unguessable) connection id is the capability, as with
        Druid; with credentials, only the workgroup they authenticate sees its connections.
        """
        if self.basic is None:
            return True
        wg = self.store.authenticate(*self.basic)
        return wg is not None and wg.id == client_id


def _params(values: list[Any]) -> list[Any]:
    """Python values of ``execute``'s ``parameterValues``; a bad one is a :class:`SqlError` naming it."""
    out = []
    for i, tv in enumerate(values):
        try:
            out.append(_typed_value(tv))
        except (TypeError, ValueError, OverflowError) as e:  # binascii.Error is a ValueError
            kind = tv.get("type") if isinstance(tv, dict) else None
            raise SqlError(f"parameterValues[{i}]: not a valid {kind or 'TypedValue'} value ({e}).") from None
    return out


def _cancel_running(st: _Statement | None) -> None:
    cancel = st.cancel if st is not None else None
    if cancel is not None:
        cancel()


def _like_match(value: str, pattern: Any) -> bool:
    if pattern is None:
        return True
    import re

    regex, i, p = [], 0, str(pattern)
    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p):
            regex.append(re.escape(p[i + 1]))
            i += 2
            continue
        regex.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(regex), value, flags=re.DOTALL) is not None
