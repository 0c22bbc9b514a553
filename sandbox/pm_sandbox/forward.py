"""The stand-in in front of a real Apache Druid (``python -m pm_sandbox --druid <broker URL>``).

The stand-in keeps its identity provider, its ``/pub`` API and its project data; it publishes every project to
the Druid (:mod:`.druid_publish`: at start, unless Druid already counts the same rows, and after each ingested
upload, before the file reports DONE), and its SQL port forwards every SQL request to the broker **after** the
checks it makes today:

* the workgroup's credentials (HTTP Basic on the SQL API; ``user``/``password`` at Avatica's
  ``openConnection``, or the connection id it registered), checked by the SQL port as without Druid;
* the table rights: :func:`~.sql.dialect.check_access` parses the statement and refuses, in the stand-in's
  words, anything but a query, another workgroup's tables and lookups (as "not found"), the ``sys`` schema
  and the functions that reach files or the catalogue. The text goes to Druid unchanged, except that every
  ``INFORMATION_SCHEMA`` view is replaced by a subquery that keeps only the workgroup's own tables and lookups
  (and the schemas ``druid``, ``lookup``, ``INFORMATION_SCHEMA``), so a workgroup sees only its own on Druid
  too. Avatica's ``DatabaseMetaData`` calls (``getTables``, ``getColumns``, ...) are answered by the stand-in
  from the same catalogue, as without Druid.

Druid SQL API (``POST /druid/v2/sql``): the body goes to the broker as it came (result format, header, types
headers, parameters, query context), with ``context.sqlQueryId`` set when the client gave none, so that
``DELETE /druid/v2/sql/{id}`` can be forwarded for the workgroup's own running queries only (another id is
404, as without Druid). Druid's answer (status, headers, body: a refusal's JSON included) streams back
unchanged.
Avatica JSON: connection and statement calls go to the broker as they came (``openConnection`` without the
credentials), Druid's answers come back unchanged (its connection and statement ids, frames, errors).

Only the standard library talks to the broker (``http.client``, keep-alive connections in a small pool), in
the SQL port's worker threads, within each workgroup's thread budget.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from .sql.access import Catalog
from .sql.avatica import AvaticaService
from .sql.avatica_requests import _Caller, _obj_field, _str_field
from .sql.dialect import check_access
from .sql.errors import SqlError

if TYPE_CHECKING:
    from .data.store import ProjectRecord, Store
    from .druid_publish import Published
    from .sql.engine import SqlEngine

__all__ = ["Broker", "DruidForward", "ForwardedAvatica", "Prepared", "Publisher", "Upstream", "forward_sql"]

log = logging.getLogger(__name__)

#: headers of Druid's answers not passed on: hop-by-hop, and those the SQL port's server sets itself
_DROPPED = {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"}
#: Avatica calls the stand-in answers itself (from the workgroup's catalogue, as without Druid)
_LOCAL_CALLS = {"getCatalogs", "getSchemas", "getTables", "getColumns", "getTableTypes", "getTypeInfo"}
_META_SCHEMAS = ("druid", "lookup", "INFORMATION_SCHEMA")
_META_VIEWS = ("COLUMNS", "SCHEMATA", "TABLES")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in(column: str, values: Any) -> str:
    names = sorted(values)
    return f"{column} IN ({', '.join(_literal(n) for n in names)})" if names else "FALSE"


def _own_rows(catalog: Catalog, schema_column: str, name_column: str) -> str:
    """The condition that keeps the rows of the workgroup's own tables, lookups and views."""
    parts = [
        f"({schema_column} = 'druid' AND {_in(name_column, catalog.tables)})",
        f"({schema_column} = 'lookup' AND {_in(name_column, catalog.lookups)})",
        f"({schema_column} = 'INFORMATION_SCHEMA' AND {_in(name_column, _META_VIEWS)})",
    ]
    return " OR ".join(parts)


def _view(name: str, catalog: Catalog) -> str:
    if name == "SCHEMATA":
        where = _in("SCHEMA_NAME", _META_SCHEMAS)
    else:
        where = _own_rows(catalog, "TABLE_SCHEMA", "TABLE_NAME")
    return f'(SELECT * FROM INFORMATION_SCHEMA."{name}" WHERE {where})'


def forward_sql(sql: str, catalog: Catalog) -> str:
    """*sql* checked for the workgroup of *catalog* (:class:`SqlError` as without Druid), with every
    ``INFORMATION_SCHEMA`` view narrowed to the workgroup's own rows: the text sent to Druid."""
    checked = check_access(sql, catalog)
    for start, end, name, aliased in sorted(checked.meta, reverse=True):
        if name not in _META_VIEWS:  # check_access let it through: cannot happen, but never widen a view
            raise SqlError(f"Object '{name}' not found within 'INFORMATION_SCHEMA'")
        narrowed = _view(name, catalog) + ("" if aliased else f' AS "{name}"')
        sql = sql[:start] + narrowed + sql[end:]
    return sql


# --------------------------------------------------------------------------------------------------
# The broker
# --------------------------------------------------------------------------------------------------


class Broker:
    """HTTP to a Druid broker (``http://host:port``) over a small pool of keep-alive connections."""

    def __init__(self, url: str, *, timeout: float = 600.0) -> None:
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--druid {url!r}: give the broker's URL, e.g. http://127.0.0.1:8082")
        self.url = f"{parts.scheme}://{parts.netloc}"
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._timeout = timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self._timeout)

    def _release(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < 16:
                self._idle.append(conn)
                return
        conn.close()

    def open(self, method: str, path: str, body: bytes | None = None) -> Upstream:
        """Send one request; the answer's head is read, its body is left to :meth:`Upstream.chunks`."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()  # a pooled connection the broker had closed: once more on a fresh one
                if attempt:
                    raise
                continue
            except OSError as exc:
                conn.close()
                raise SqlError(
                    f"The Druid broker at {self.url} cannot be reached: {exc}", "capacity"
                ) from None
            return Upstream(self, conn, response)
        raise AssertionError("unreachable")

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes, dict[str, str]]:
        """One request, its whole answer: ``(status, body, headers)``."""
        upstream = self.open(method, path, body)
        try:
            return upstream.status, b"".join(upstream.chunks()), upstream.headers
        finally:
            upstream.close()


@dataclass
class Upstream:
    """Druid's answer to one forwarded request: status and headers read, body still to stream."""

    broker: Broker
    conn: http.client.HTTPConnection
    response: http.client.HTTPResponse
    headers: dict[str, str] = field(init=False)
    on_close: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        self.headers = {k: v for k, v in self.response.getheaders() if k.lower() not in _DROPPED}

    @property
    def status(self) -> int:
        return self.response.status

    def chunks(self, size: int = 1 << 16) -> Iterator[bytes]:
        while piece := self.response.read1(size):
            yield piece

    def close(self) -> None:
        """Give the connection back once the answer was read whole; otherwise drop it (Druid then stops)."""
        if self.on_close is not None:
            self.on_close()
            self.on_close = None
        if self.response.isclosed() and not self.response.will_close:
            self.broker._release(self.conn)
        else:
            self.conn.close()


# --------------------------------------------------------------------------------------------------
# Druid's SQL API
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """A SQL API request as :meth:`DruidForward.prepare` read it: *request* is ``None`` when the body goes as
    it came (Druid refuses it itself)."""

    body: bytes
    request: dict[str, Any] | None
    query_id: str | None
    header: bool


class DruidForward:
    """``POST /druid/v2/sql`` and ``DELETE /druid/v2/sql/{id}`` forwarded for a checked workgroup."""

    def __init__(self, engine: SqlEngine, broker: Broker) -> None:
        self.engine = engine
        self.broker = broker
        self._running: dict[str, str] = {}  # sqlQueryId → the workgroup whose query it is
        self._lock = threading.Lock()

    def prepare(self, body: bytes) -> Prepared:
        """The request as parsed on the event loop (cheap): its query id (``context.sqlQueryId``, or a fresh
        one) and whether a header was asked for. A body Druid must refuse itself (not JSON, no query text, a
        context that is not an object) is sent as it came."""
        try:
            req = orjson.loads(body)
        except orjson.JSONDecodeError:
            return Prepared(body, None, None, False)
        if not isinstance(req, dict):
            return Prepared(body, None, None, False)
        context = req.get("context") if req.get("context") is not None else {}
        given = context.get("sqlQueryId") if isinstance(context, dict) else None
        header = req.get("header") is True
        if not isinstance(req.get("query"), str) or not isinstance(context, dict):
            return Prepared(body, None, given if isinstance(given, str) else None, header)
        query_id = given if isinstance(given, str) and given else str(uuid.uuid4())
        return Prepared(body, {**req, "context": {**context, "sqlQueryId": query_id}}, query_id, header)

    def open(self, client_id: str, prepared: Prepared) -> Upstream:
        """Check the query for *client_id* (in a worker thread: it parses the SQL), send it, and count it as
        the workgroup's running query until its answer is closed.

        :raises SqlError: the stand-in's refusal (table rights, statement kind), as without Druid.
        """
        body, query_id = prepared.body, prepared.query_id
        if prepared.request is not None:
            assert query_id is not None
            sql = forward_sql(prepared.request["query"], self.engine.catalog(client_id))
            body = orjson.dumps({**prepared.request, "query": sql})
            with self._lock:
                owner = self._running.setdefault(query_id, client_id)
            if owner != client_id:
                raise SqlError(f"A query with sqlQueryId [{query_id}] is already running: choose another id.")
        else:
            query_id = None  # Druid refuses it: nothing will run under that id
        try:
            upstream = self.broker.open("POST", "/druid/v2/sql/", body)
        except BaseException:
            self._forget(query_id, client_id)
            raise
        upstream.on_close = lambda: self._forget(query_id, client_id)
        return upstream

    def _forget(self, query_id: str | None, client_id: str) -> None:
        with self._lock:
            if query_id is not None and self._running.get(query_id) == client_id:
                del self._running[query_id]

    def cancel(self, client_id: str, query_id: str) -> tuple[int, bytes, dict[str, str]] | None:
        """Druid's answer to cancelling the workgroup's own running query; ``None`` for any other id."""
        with self._lock:
            if self._running.get(query_id) != client_id:
                return None
        return self.broker.call("DELETE", "/druid/v2/sql/" + urllib.parse.quote(query_id, safe=""))


# --------------------------------------------------------------------------------------------------
# Avatica
# --------------------------------------------------------------------------------------------------


class ForwardedAvatica(AvaticaService):
    """The Avatica endpoint in front of Druid's: the stand-in keeps the connection registry (credentials,
    per-workgroup limits, which workgroup a connection id belongs to) and answers the ``DatabaseMetaData``
    calls; every other call goes to the broker once checked."""

    def __init__(self, engine: SqlEngine, broker: Broker) -> None:
        super().__init__(engine)
        self.broker = broker

    def handle_inline(self, body: bytes) -> tuple[int, bytes] | None:
        return None  # every fetch goes to Druid

    def answer(self, req: dict[str, Any], basic_auth: tuple[str, str] | None = None) -> tuple[int, bytes]:
        kind = req["request"]
        if kind in _LOCAL_CALLS or kind in ("prepareAndExecuteBatch", "executeBatch"):
            return super().answer(req, basic_auth)
        caller = _Caller(self.engine.store, basic_auth)
        try:
            if kind == "openConnection":
                return self._open(req, basic_auth)
            if kind == "closeConnection":
                cid = _str_field(req, "connectionId")
                mine = cid is not None and self._lookup(cid, caller) is not None
                status, body = super().answer(req, basic_auth)
                return self._forward(req) if mine and status == 200 else (status, body)
            handle = _obj_field(req, "statementHandle") if kind == "execute" else req
            conn = self._conn({**handle, "request": kind}, caller)
            catalog = self.engine.catalog(conn.client_id)
            if kind in ("prepare", "prepareAndExecute") and isinstance(req.get("sql"), str):
                req = {**req, "sql": forward_sql(req["sql"], catalog)}
            if kind == "syncResults":
                state = _obj_field(req, "state")
                if isinstance(state.get("sql"), str):
                    req = {**req, "state": {**state, "sql": forward_sql(state["sql"], catalog)}}
            return self._forward(req)
        except SqlError as e:
            return 500, orjson.dumps(e.avatica_body(self.rpc_metadata()))

    def _open(self, req: dict[str, Any], basic_auth: tuple[str, str] | None) -> tuple[int, bytes]:
        status, body = super().answer(req, basic_auth)  # credentials, limits, an id already open
        if status != 200:
            return status, body
        info = {k: v for k, v in (req.get("info") or {}).items() if k not in ("user", "password")}
        status, body = self._forward({**req, "info": info})
        if status != 200:
            with self._lock:
                self._connections.pop(req["connectionId"], None)
        return status, body

    def _forward(self, req: dict[str, Any]) -> tuple[int, bytes]:
        status, body, _ = self.broker.call("POST", "/druid/v2/sql/avatica/", orjson.dumps(req))
        return status, body


# --------------------------------------------------------------------------------------------------
# Publishing
# --------------------------------------------------------------------------------------------------


def coordinator_of(broker: Broker) -> str:
    """The URL of the cluster's coordinator (which runs the overlord here), from ``sys.servers``."""
    sql = "SELECT host, plaintext_port, tls_port FROM sys.servers WHERE server_type = 'coordinator'"
    status, body, _ = broker.call(
        "POST", "/druid/v2/sql/", orjson.dumps({"query": sql, "resultFormat": "array"})
    )
    rows = json.loads(body) if status == 200 else None
    if not rows:
        raise SqlError(
            f"The Druid at {broker.url} names no coordinator in sys.servers (HTTP {status}): give its URL "
            "with --druid-coordinator."
        )
    host, port, tls = rows[0]
    return f"http://{host}:{port}" if port and port > 0 else f"https://{host}:{tls}"


class Publisher:
    """Publishes the store's projects to the Druid behind the SQL port (:mod:`.druid_publish`)."""

    def __init__(self, store: Store, broker: Broker, coordinator: str, *, timeout: float = 600.0) -> None:
        self.store = store
        self.broker_url = broker.url
        self.coordinator = coordinator.rstrip("/")
        self.timeout = timeout

    def publish_all(self) -> Published | None:
        """Every project of every workgroup, unless Druid already counts their rows (``None`` then)."""
        from .druid_publish import publish_store, published_already

        if published_already(self.store, broker_url=self.broker_url):
            return None
        started = time.perf_counter()
        published = publish_store(
            self.store, coordinator_url=self.coordinator, broker_url=self.broker_url, timeout=self.timeout
        )
        log.warning(
            "published %d tables to Druid in %.1fs", len(published.tables), time.perf_counter() - started
        )
        return published

    def publish_project(self, client_id: str, project: ProjectRecord) -> None:
        """One project's tables and lookups as they are now in the store (after an ingestion's swap)."""
        from .druid_publish import publish_tables

        cur = self.store.database(client_id).cursor()  # this thread's own cursor, fully qualified names
        try:
            ((catalog,),) = cur.execute("SELECT current_database()").fetchall()
            where = f"{_quote(catalog)}."
            tables = {
                n: cur.sql(f"SELECT * FROM {where}druid.{_quote(n)}").to_arrow_table() for n in project.tables
            }
            lookups = {
                n: {
                    str(k): str(v)
                    for k, v in cur.execute(f"SELECT k, v FROM {where}lookup.{_quote(n)}").fetchall()
                }
                for n in project.lookups
            }
        finally:
            cur.close()
        if tables:
            publish_tables(
                tables,
                lookups,
                coordinator_url=self.coordinator,
                broker_url=self.broker_url,
                timeout=self.timeout,
            )
