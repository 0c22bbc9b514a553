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
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from .engine import Column, QueryResult, SqlEngine
from .errors import SqlError
from .rows import encode_rows, join_lines

__all__ = ["AvaticaService"]

log = logging.getLogger(__name__)

# Druid SQL type -> (java.sql.Types id, Avatica rep, Java class)
_TYPES: dict[str, tuple[int, str, str]] = {
    "TIMESTAMP": (93, "LONG", "java.sql.Timestamp"),
    "BIGINT": (-5, "NUMBER", "java.lang.Long"),
    "DOUBLE": (8, "DOUBLE", "java.lang.Double"),
    "FLOAT": (6, "FLOAT", "java.lang.Float"),
    "VARCHAR": (12, "STRING", "java.lang.String"),
    "BOOLEAN": (16, "BOOLEAN", "java.lang.Boolean"),
    "DATE": (91, "INTEGER", "java.sql.Date"),
    "OTHER": (1111, "OBJECT", "java.lang.Object"),
}
_EPOCH = dt.datetime(1970, 1, 1)


def _scalar(type_name: str) -> dict:
    tid, rep, _ = _TYPES.get(type_name, _TYPES["OTHER"])
    return {"type": "scalar", "id": tid, "name": type_name, "rep": rep}


def _column_meta(i: int, col: Column) -> dict:
    if col.type == "ARRAY":
        avatica_type = {
            "type": "array",
            "id": 2003,
            "name": "ARRAY",
            "rep": "ARRAY",
            "component": _scalar(col.component or "VARCHAR"),
        }
        cls = "java.sql.Array"
    else:
        avatica_type = _scalar(col.type)
        cls = _TYPES.get(col.type, _TYPES["OTHER"])[2]
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


def _signature(columns: list[Column], sql: str | None, param_types: tuple[str, ...] = ()) -> dict:
    params = []
    for i, t in enumerate(param_types):
        tid, _, cls = _TYPES.get(t, _TYPES["OTHER"])
        params.append(
            {
                "signed": t in ("BIGINT", "DOUBLE", "FLOAT"),
                "precision": 0,
                "scale": 0,
                "parameterType": tid,
                "typeName": t if t in _TYPES else "OTHER",
                "className": cls,
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


def _typed_value(tv: Any) -> Any:
    """Python value of an Avatica TypedValue (see the encodings table in avatica-json.md)."""
    if tv is None or not isinstance(tv, dict):
        return tv
    kind, value = tv.get("type"), tv.get("value")
    if value is None:
        return None
    if kind == "JAVA_SQL_TIMESTAMP" or kind == "JAVA_UTIL_DATE":
        return _EPOCH + dt.timedelta(milliseconds=int(value))
    if kind == "JAVA_SQL_DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
    if kind == "JAVA_SQL_TIME":
        return (_EPOCH + dt.timedelta(milliseconds=int(value))).time()
    if kind == "BYTE_STRING":
        return base64.b64decode(value)
    if kind == "ARRAY":
        return [_typed_value(v) if isinstance(v, dict) else v for v in value]
    if kind in ("DOUBLE", "FLOAT", "PRIMITIVE_DOUBLE", "PRIMITIVE_FLOAT"):
        return float(value)
    return value


@dataclass
class _Statement:
    id: int
    sql: str | None = None
    param_types: tuple[str, ...] = ()
    columns: list[Column] = field(default_factory=list)
    max_rows: int = -1
    result: QueryResult | None = None
    offset: int = 0
    encoded: pa.Array | None = None  # JSON text of rows [encoded_start, encoded_start + len(encoded))
    encoded_start: int = 0
    touched: float = field(default_factory=time.monotonic)
    cancel: Callable[[], None] | None = None  # set while the statement's query runs


@dataclass
class _Connection:
    id: str
    client_id: str
    info: dict
    props: dict = field(default_factory=dict)
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
    for name, (tid, _, _) in sorted(_TYPES.items())
    if name != "OTHER"
] + [("ARRAY", 2003, 0, None, None, None, 1, False, 3, False, False, False, "ARRAY", 0, 0, None, None, 10)]


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
        self._sweep()
        try:
            req = orjson.loads(body)
            if not isinstance(req, dict) or not isinstance(req.get("request"), str):
                raise SqlError('Not an Avatica JSON request: expected an object with a "request" field.')
            method = getattr(self, "_do_" + req["request"], None)
            if method is None:
                raise SqlError(f"Unsupported Avatica request '{req['request']}'.", "unsupported")
            answer = method(req, basic_auth)
            return 200, orjson.dumps(answer)
        except orjson.JSONDecodeError:
            return 500, orjson.dumps(SqlError("The request body is not valid JSON.").avatica_body())
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
        Anything that could wait (a busy connection, an encoding step, an error) returns ``None``.
        """
        if b'"fetch"' not in body[:40]:
            return None
        try:
            req = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        conn = self._connections.get(str(req.get("connectionId")))
        if req.get("request") != "fetch" or conn is None or not conn.lock.acquire(blocking=False):
            return None
        try:
            st = conn.statements.get(req.get("statementId"))
            if st is None or st.result is None or st.encoded is None or req.get("offset") != st.offset:
                return None
            size = self._frame_size(req.get("fetchMaxRowCount", -1))
            end = min(st.offset + size, st.result.table.num_rows)
            if end > st.encoded_start + len(st.encoded):
                return None
            conn.touched = time.monotonic()
            frame = self._next_frame(st, size)
        finally:
            conn.lock.release()
        answer = {"response": "fetch", "frame": frame, "missingStatement": False, "missingResults": False}
        return 200, orjson.dumps(answer)

    def connection_count(self) -> int:
        """Open connections (for tests and stats)."""
        return len(self._connections)

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
                    continue
                for st in list(conn.statements.values()):
                    if st.result is not None and now - st.touched > self.options.statement_idle_timeout:
                        st.result = st.encoded = None

    def _conn(self, connection_id: Any) -> _Connection:
        conn = self._connections.get(str(connection_id))
        if conn is None:
            raise SqlError(f"Connection not found: {connection_id}", "no_connection")
        conn.touched = time.monotonic()
        return conn

    def _do_openConnection(self, req: dict, basic: tuple[str, str] | None) -> dict:
        cid = str(req.get("connectionId") or "")
        if not cid:
            raise SqlError("openConnection needs a connectionId.")
        info = dict(req.get("info") or {})
        user, password = info.pop("user", None), info.pop("password", None)
        if user is None and basic:
            user, password = basic
        if not user:
            raise SqlError(
                "Unauthorized: no credentials. Pass user=<client id> and password=<client secret> as "
                "connection properties.",
                "unauthorized",
            )
        wg = self.engine.store.authenticate(str(user), str(password or ""))  # type: ignore[attr-defined]
        if wg is None:
            raise SqlError(
                f"Unauthorized: wrong user or password for the SQL endpoint (user '{user}'). Use the "
                "workgroup's client id as user and its client secret as password.",
                "unauthorized",
            )
        with self._lock:
            if cid not in self._connections and len(self._connections) >= self.options.max_connections:
                idle = [c for c in self._connections.values() if not c.statements]
                if not idle:
                    raise SqlError(
                        f"Too many connections, limit is [{self.options.max_connections}].", "capacity"
                    )
                del self._connections[min(idle, key=lambda c: c.touched).id]
            self._connections[cid] = _Connection(id=cid, client_id=wg.id, info=info)
        return {"response": "openConnection"}

    def _do_connectionSync(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        props = {k: v for k, v in (req.get("connProps") or {}).items() if v is not None}
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

    def _do_databaseProperties(self, req: dict, basic: Any) -> dict:
        self._conn(req.get("connectionId"))
        return {"response": "databaseProperties", "map": {}}

    def _do_closeConnection(self, req: dict, basic: Any) -> dict:
        with self._lock:
            conn = self._connections.pop(str(req.get("connectionId")), None)
        for st in list(conn.statements.values()) if conn is not None else ():
            _cancel_running(st)
        return {"response": "closeConnection"}

    def _do_commit(self, req: dict, basic: Any) -> dict:
        self._conn(req.get("connectionId"))
        return {"response": "commit"}

    def _do_rollback(self, req: dict, basic: Any) -> dict:
        self._conn(req.get("connectionId"))
        return {"response": "rollback"}

    def _do_createStatement(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
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

    def _do_closeStatement(self, req: dict, basic: Any) -> dict:
        conn = self._connections.get(str(req.get("connectionId")))
        if conn is not None:
            # Like Druid, closing a statement stops its running query: the query holds the connection's
            # lock, so it is interrupted first (a client's Ctrl-C sends this on another HTTP connection).
            _cancel_running(conn.statements.get(req.get("statementId")))
            with conn.lock:
                conn.statements.pop(req.get("statementId"), None)
        return {"response": "closeStatement"}

    # --- queries ------------------------------------------------------------------------------------
    def _frame_size(self, asked: Any) -> int:
        asked = int(asked) if isinstance(asked, int) else -1
        size = self.options.max_rows_per_frame if asked < 0 else min(asked, self.options.max_rows_per_frame)
        return max(size, self.options.min_rows_per_frame)

    def _run(self, conn: _Connection, st: _Statement, params: list, max_total: int) -> None:
        def running(cancel: Callable[[], None]) -> None:
            st.cancel = cancel

        try:
            result = self.engine.execute(
                conn.client_id,
                st.sql or "",
                params,
                max_rows=max_total if max_total > 0 else None,
                on_open=running,
                context=conn.info,  # Druid reads the query context from the connection properties
            )
        finally:
            st.cancel = None
        st.result, st.offset, st.columns, st.touched = result, 0, result.columns, time.monotonic()
        st.encoded = None

    def _result_set(self, conn: _Connection, st: _Statement, first_frame: Any) -> dict:
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

    def _next_frame(self, st: _Statement, size: int) -> dict:
        assert st.result is not None
        table = st.result.table
        start = st.offset
        end = min(start + size, table.num_rows)
        if st.encoded is None or start < st.encoded_start or end > st.encoded_start + len(st.encoded):
            block = table.slice(start, max(_ENCODE_BLOCK, size))
            st.encoded, st.encoded_start = encode_rows(block, st.result.columns, mode="avatica"), start
        lines = st.encoded.slice(start - st.encoded_start, end - start)
        rows = orjson.Fragment(b"[" + join_lines(lines, b",") + b"]")
        st.offset = end
        st.touched = time.monotonic()
        done = end >= table.num_rows
        if done:
            st.result = st.encoded = None  # like Druid: the result is closed once its last frame is sent
        return {"offset": start, "done": done, "rows": rows}

    def _do_prepareAndExecute(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        with conn.lock:
            st = self._add_statement(conn, int(req.get("statementId") or conn.new_id()))
            st.sql, st.param_types, st.result = str(req.get("sql") or ""), (), None
            total = req.get("maxRowCount", req.get("maxRowsTotal", -1))
            self._run(conn, st, [], int(total) if isinstance(total, int) else -1)
            rs = self._result_set(conn, st, req.get("maxRowsInFirstFrame", -1))
        return {"response": "executeResults", "missingStatement": False, "resultSets": [rs]}

    def _do_prepare(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        sql = str(req.get("sql") or "")
        translated, columns = self.engine.describe(conn.client_id, sql, conn.info)
        with conn.lock:
            st = self._add_statement(conn, conn.new_id())
            st.sql, st.columns, st.param_types, st.result = sql, columns, translated.param_types, None
            total = req.get("maxRowCount", req.get("maxRowsTotal", -1))
            st.max_rows = int(total) if isinstance(total, int) else -1
        return {
            "response": "prepare",
            "statement": {
                "connectionId": conn.id,
                "id": st.id,
                "signature": _signature(columns, sql, translated.param_types),
            },
        }

    def _do_execute(self, req: dict, basic: Any) -> dict:
        handle = req.get("statementHandle") or {}
        conn = self._conn(handle.get("connectionId"))
        with conn.lock:
            st = conn.statements.get(handle.get("id"))
            if st is None or st.sql is None:
                return {"response": "executeResults", "missingStatement": True, "resultSets": []}
            params = [_typed_value(v) for v in (req.get("parameterValues") or [])]
            self._run(conn, st, params, st.max_rows)
            rs = self._result_set(conn, st, req.get("maxRowCount", -1))
        return {"response": "executeResults", "missingStatement": False, "resultSets": [rs]}

    def _do_fetch(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        with conn.lock:
            st = conn.statements.get(req.get("statementId"))
            if st is None:
                return {"response": "fetch", "frame": None, "missingStatement": True, "missingResults": False}
            if st.result is None:
                return {"response": "fetch", "frame": None, "missingStatement": False, "missingResults": True}
            offset = req.get("offset")
            if isinstance(offset, int) and offset != st.offset:
                raise SqlError(
                    f"Cannot fetch at offset {offset}: results are read forward only and the statement "
                    f"is at offset {st.offset}."
                )
            frame = self._next_frame(st, self._frame_size(req.get("fetchMaxRowCount", -1)))
        return {"response": "fetch", "frame": frame, "missingStatement": False, "missingResults": False}

    def _do_syncResults(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        state = req.get("state") or {}
        with conn.lock:
            st = self._add_statement(conn, int(req.get("statementId") or conn.new_id()))
            if state.get("sql"):
                st.sql = str(state["sql"])
            if st.sql is None:
                return {"response": "syncResults", "moreResults": False, "missingStatement": True}
            self._run(conn, st, [], st.max_rows)
            offset = int(req.get("offset") or 0)
            assert st.result is not None
            more = offset < st.result.table.num_rows
            st.offset = min(offset, st.result.table.num_rows)
        return {"response": "syncResults", "moreResults": more, "missingStatement": False}

    def _do_prepareAndExecuteBatch(self, req: dict, basic: Any) -> dict:
        self._conn(req.get("connectionId"))
        raise SqlError(
            "Batch statements not supported: the SQL endpoint is read-only.",
            "refused",
            java_class="java.lang.UnsupportedOperationException",
        )

    _do_executeBatch = _do_prepareAndExecuteBatch

    # --- DatabaseMetaData ---------------------------------------------------------------------------
    def _meta(self, conn: _Connection, call: str, rows: list[tuple]) -> dict:
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

    def _query(self, conn: _Connection, sql: str, params: list) -> list[tuple]:
        result = self.engine.execute(conn.client_id, sql, params)
        return [tuple(r.values()) for r in result.table.to_pylist()]

    @staticmethod
    def _like(clauses: list[str], params: list, column: str, pattern: Any) -> None:
        if pattern is not None:
            clauses.append(f"{column} LIKE ? ESCAPE '\\'")
            params.append(str(pattern))

    def _do_getCatalogs(self, req: dict, basic: Any) -> dict:
        return self._meta(self._conn(req.get("connectionId")), "getCatalogs", [("druid",)])

    def _do_getSchemas(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        catalog, pattern = req.get("catalog"), req.get("schemaPattern")
        rows = [(s, "druid") for s in _SCHEMAS if catalog in (None, "druid") and _like_match(s, pattern)]
        return self._meta(conn, "getSchemas", rows)

    def _do_getTableTypes(self, req: dict, basic: Any) -> dict:
        return self._meta(
            self._conn(req.get("connectionId")), "getTableTypes", [("SYSTEM_TABLE",), ("TABLE",)]
        )

    def _do_getTypeInfo(self, req: dict, basic: Any) -> dict:
        return self._meta(self._conn(req.get("connectionId")), "getTypeInfo", list(_TYPE_INFO))

    def _do_getTables(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        if req.get("catalog") not in (None, "druid"):
            return self._meta(conn, "getTables", [])
        clauses, params = ["1 = 1"], []
        self._like(clauses, params, "TABLE_SCHEMA", req.get("schemaPattern"))
        self._like(clauses, params, "TABLE_NAME", req.get("tableNamePattern"))
        types = req.get("typeList")
        if types is not None:
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

    def _do_getColumns(self, req: dict, basic: Any) -> dict:
        conn = self._conn(req.get("connectionId"))
        if req.get("catalog") not in (None, "druid"):
            return self._meta(conn, "getColumns", [])
        clauses, params = ["1 = 1"], []
        self._like(clauses, params, "TABLE_SCHEMA", req.get("schemaPattern"))
        self._like(clauses, params, "TABLE_NAME", req.get("tableNamePattern"))
        self._like(clauses, params, "COLUMN_NAME", req.get("columnNamePattern"))
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
