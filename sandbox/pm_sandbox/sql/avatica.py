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
connection's gets the same answer as an unknown id (error code 1 with a null message, as Druid 33
answers). Every request field is checked for its JSON type and range first: a malformed request is an
``ErrorResponse`` naming the field, never an internal error.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from .avatica_metadata import MetadataCalls
from .avatica_requests import _INT64, _Caller, _obj_field, _str_field
from .avatica_statements import StatementCalls, _cancel_running, _Connection
from .errors import SqlError

__all__ = ["AvaticaService"]

log = logging.getLogger(__name__)


class AvaticaService(StatementCalls, MetadataCalls):
    """Connections, statements and the call dispatch of the Avatica JSON endpoint (thread-safe)."""

    def handle(self, body: bytes, basic_auth: tuple[str, str] | None = None) -> tuple[int, bytes]:
        """Answer one Avatica request body; *basic_auth* is the HTTP Basic pair, if the client sent one."""
        try:
            req = self.parse(body)
        except SqlError as e:
            return 500, orjson.dumps(e.avatica_body(self.rpc_metadata()))
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
            reply = method(req, _Caller(self.engine.store, basic_auth))
            if req["request"] not in ("commit", "rollback"):  # Druid 33 answers these two without it
                reply["rpcMetadata"] = self.rpc_metadata()
            return 200, orjson.dumps(reply)
        except SqlError as e:
            log.debug("avatica error (%s): %s", e.kind, e.message)
            return 500, orjson.dumps(e.avatica_body(self.rpc_metadata()))
        except Exception as e:  # a bug of ours must still reach the driver as an error, not a hang
            log.exception("avatica internal error")
            return 500, orjson.dumps(
                SqlError(f"Internal error: {type(e).__name__}: {e}", "internal").avatica_body(
                    self.rpc_metadata()
                )
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
        answer = {
            "response": "fetch",
            "frame": frame,
            "missingStatement": False,
            "missingResults": False,
            "rpcMetadata": self.rpc_metadata(),
        }
        return 200, orjson.dumps(answer)

    def connection_count(self, client_id: str | None = None) -> int:
        """Open connections, of one workgroup or of all (for tests and stats)."""
        conns = list(self._connections.values())
        return sum(1 for c in conns if client_id is None or c.client_id == client_id)

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
        # unset properties stay null, as Druid 33 echoes them (tests/druid/test_protocols.py)
        answer: dict[str, Any] = {
            "connProps": "connPropsImpl",
            "autoCommit": None,
            "readOnly": None,
            "transactionIsolation": None,
            "catalog": None,
            "schema": None,
            "dirty": True,
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
