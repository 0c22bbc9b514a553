"""JVM-free transport: Druid's SQL HTTP API (``POST /druid/v2/sql/``), the path pydruid-based SDKs used.

The query goes out with ``resultFormat=arrayLines`` and the three header flags, so the first three lines
declare each column's name, Druid type and SQL type (typed even when no row comes back). The rows stream in
as one JSON array per line (the most compact of Druid's lossless formats: no key repeated per row, NULL kept
apart from ``""``); a reader thread takes them off the socket while the previous slice is parsed, and
:mod:`pm_notebook.frames` turns each slice of lines into Arrow columns without a Python object per cell.
Credentials: HTTP Basic (client id : client secret).
Parameters travel in the request's ``parameters`` list; cancellation is ``DELETE /druid/v2/sql/{sqlQueryId}``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
import queue
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson
import requests

from .. import _http
from .._secret import Secret
from ..errors import ConfigurationError, PMError, QueryError
from . import Batch, ColumnSpec, run_in_worker
from ._errors import from_druid

__all__ = ["DruidResult", "DruidTransport", "druid_parameter"]

log = logging.getLogger(__name__)

_SQL_PATH = "/druid/v2/sql/"
_CHUNK_BYTES = 1 << 20
_BYTES_PER_ROW = 128  # to size batches of lines without counting them


def druid_parameter(value: Any) -> dict[str, Any]:
    """A Python value → Druid SQL ``{"type": <SQL type>, "value": ...}`` parameter.

    :raises TypeError: for values SQL parameters cannot carry.
    """
    if value is None:
        return {"type": "VARCHAR", "value": None}
    if isinstance(value, bool):
        return {"type": "BOOLEAN", "value": value}
    if isinstance(value, int):
        return {"type": "BIGINT", "value": value}
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeError("NaN and infinite floats cannot be sent as SQL parameters")
        return {"type": "DOUBLE", "value": value}
    if isinstance(value, decimal.Decimal):
        return {"type": "DOUBLE", "value": float(value)}
    if isinstance(value, str):
        return {"type": "VARCHAR", "value": value}
    if hasattr(value, "to_pydatetime"):  # pandas.Timestamp
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return {"type": "TIMESTAMP", "value": value.isoformat(sep=" ", timespec="milliseconds")}
    if isinstance(value, dt.date):
        return {"type": "DATE", "value": value.isoformat()}
    raise TypeError(
        f"a {type(value).__name__} cannot be sent as a SQL parameter "
        "(use str, int, float, bool, None, datetime or date)"
    )


def _column_specs(names: Any, native: Any, sql: Any) -> tuple[ColumnSpec, ...]:
    """Columns from the three arrayLines header lines: names, Druid native types, SQL types."""
    if not (isinstance(names, list) and isinstance(native, list) and isinstance(sql, list)):
        raise QueryError(
            "The Druid SQL endpoint sent no type header lines.",
            hint="Is the SQL URL pointing at a Druid broker (port 8082)?",
        )
    columns = []
    for i, name in enumerate(names):
        declared = sql[i] if i < len(sql) and sql[i] else native[i] if i < len(native) else None
        sql_type = str(declared or "VARCHAR").upper()
        element = None
        if sql_type.endswith(" ARRAY"):
            sql_type, element = "ARRAY", sql_type[: -len(" ARRAY")]
        elif sql_type.startswith("ARRAY<"):
            sql_type, element = "ARRAY", sql_type[len("ARRAY<") : -1]
        columns.append(ColumnSpec(name=str(name), type_name=sql_type, element_type=element))
    return tuple(columns)


class _Exchange:
    """One request/answer on a worker thread: it sends the query, then receives the body in chunks.

    Receiving thus overlaps parsing; at most *depth* chunks wait in the queue. The caller waits in short
    slices (:meth:`response`, :meth:`next`), so a Ctrl-C delivered to another thread (the JVM's) is seen.
    """

    _END = object()

    def __init__(self, send: Callable[[], requests.Response], depth: int = 64) -> None:
        self._send = send
        self._response: requests.Response | None = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        run_in_worker(self._run)

    def _run(self) -> None:
        try:
            response = self._response = self._send()
            if self._stop.is_set():
                response.close()
                return
            self._put(response)
            if response.status_code != 200:
                return  # the caller reads the error body
            for chunk in response.iter_content(chunk_size=_CHUNK_BYTES):
                if not self._put(chunk):
                    return
            self._put(self._END)
        except BaseException as exc:  # handed to the waiting thread
            self._put(exc)

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _get(self) -> Any:
        while True:
            try:
                item = self._queue.get(timeout=0.05)
                break
            except queue.Empty:
                continue
        if isinstance(item, BaseException):
            raise item
        return item

    def response(self) -> requests.Response:
        """The answer's status and headers (the body follows through :meth:`next`)."""
        return self._get()

    def next(self) -> bytes | None:
        """The next chunk, or ``None`` at the end of the body."""
        item = self._get()
        if item is self._END:
            self._queue.put(item)  # later calls see the end too
            return None
        return item

    def close(self) -> None:
        """Stop receiving and release the connection."""
        self._stop.set()
        if self._response is not None:
            self._response.close()


class DruidTransport:
    """Druid SQL HTTP API client for one broker.

    :param url: ``http://<host>:8082`` (the SQL path is added), or the full ``.../druid/v2/sql/`` URL.
    :param user: HTTP Basic user (the workgroup's client id).
    :param password: HTTP Basic password (the client secret); kept out of every repr and message.
    :param timeout: read timeout between two chunks of the answer, in seconds.
    :param session: a ``requests.Session`` to use (not closed by :meth:`close`); a private one otherwise.
    """

    name = "druid"

    def __init__(
        self,
        url: str,
        user: str,
        password: Secret | str,
        *,
        timeout: float = 300.0,
        session: requests.Session | None = None,
    ) -> None:
        url = url.rstrip("/")
        self.url = url + "/" if url.endswith(_SQL_PATH.rstrip("/")) else url + _SQL_PATH
        self._user = user
        self._password = Secret(password)
        self._timeout = (10.0, float(timeout))
        self._own_session = session is None
        self._session = session or requests.Session()
        self._lock = threading.Lock()
        self._active: DruidResult | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"DruidTransport(url={self.url!r}, user={self._user!r})"

    def execute(
        self, sql: str, params: Sequence[Any] | None = None, *, batch_rows: int = 65536
    ) -> DruidResult:
        """Send *sql* (``?`` placeholders bound from *params*) and return the streaming result."""
        if self._closed:
            from ..errors import ClosedError

            raise ClosedError("This Druid SQL transport is closed.")
        if not isinstance(sql, str) or not sql.strip():
            raise ConfigurationError("The SQL text is empty.", hint="Pass a SELECT statement.")
        query_id = f"pm-{uuid.uuid4()}"
        body = {
            "query": sql,
            "resultFormat": "arrayLines",
            "header": True,
            "typesHeader": True,
            "sqlTypesHeader": True,
            "parameters": [druid_parameter(v) for v in (params or [])],
            "context": {"sqlQueryId": query_id, "sqlTimeZone": "Etc/UTC"},
        }
        with self._lock:
            if self._active is not None:
                self._active.close()
            result = DruidResult(self, sql, query_id, batch_rows)
            data = orjson.dumps(body)
            exchange = _Exchange(
                lambda: _http.send(
                    self._session,
                    "POST",
                    self.url,
                    timeout=self._timeout,
                    what="Druid SQL query",
                    data=data,
                    auth=(self._user, self._password.reveal()),
                    stream=True,
                    headers={"Content-Type": "application/json"},
                )
            )
            result.start(exchange)
            self._active = result
            return result

    def cancel_query(self, query_id: str) -> None:
        """``DELETE /druid/v2/sql/{id}`` on a fresh HTTP connection (best effort: the query may have
        ended)."""
        with requests.Session() as side:
            try:
                response = _http.send(
                    side,
                    "DELETE",
                    self.url + query_id,
                    timeout=(5.0, 10.0),
                    what="Druid SQL cancel",
                    auth=(self._user, self._password.reveal()),
                )
                log.debug("Druid cancel of %s answered %s", query_id, response.status_code)
            except PMError as exc:
                log.debug("Druid cancel of %s failed: %s", query_id, exc)

    def close(self) -> None:
        """Drop any open result and the private HTTP session."""
        with self._lock:
            if self._active is not None:
                self._active.close()
                self._active = None
            self._closed = True
            if self._own_session:
                self._session.close()


class DruidResult:
    """A streaming Druid SQL answer: three header lines give :attr:`columns`, then batches of JSON arrays."""

    def __init__(self, transport: DruidTransport, sql: str, query_id: str, batch_rows: int) -> None:
        self._transport = transport
        self.sql = sql
        self.query_id = query_id
        self._batch_rows = max(1, batch_rows)
        self.columns: tuple[ColumnSpec, ...] = ()
        self._response: requests.Response | None = None
        self._reader: _Exchange | None = None
        self._rest = b""
        self._tail = b""
        self._done = False
        self._closed = False

    def start(self, exchange: _Exchange) -> None:
        """Wait for the answer, check its status and read the header lines (the declared column types)."""
        self._reader = exchange
        try:
            response = exchange.response()
        except KeyboardInterrupt:
            self.cancel()
            raise
        except BaseException:
            self._closed = True
            exchange.close()
            raise
        self._response = response
        if response.status_code != 200:
            try:
                text = response.content
                body: Any = orjson.loads(text)
            except (orjson.JSONDecodeError, requests.RequestException):
                body = response.text[:1000]
            finally:
                response.close()
            self._closed = True
            raise from_druid(response.status_code, body, sql=self.sql, url=self._transport.url)
        try:
            header = [self._read_line() for _ in range(3)]
            if header[0] is None:
                raise QueryError("The Druid SQL endpoint sent an empty answer.", sql=self.sql)
            try:
                self.columns = _column_specs(*(orjson.loads(line or b"null") for line in header))
            except orjson.JSONDecodeError as exc:
                raise QueryError(
                    "The Druid SQL endpoint sent a header that is not JSON.", sql=self.sql
                ) from exc
        except BaseException:
            self.close()
            raise

    def _next_chunk(self) -> bytes | None:
        assert self._reader is not None
        chunk = self._reader.next()
        if chunk is not None:
            self._tail = (self._tail + chunk[-2:])[-2:]
        return chunk

    def _read_line(self) -> bytes | None:
        while b"\n" not in self._rest:
            chunk = self._next_chunk()
            if chunk is None:
                line, self._rest = self._rest, b""
                return line or None
            self._rest += chunk
        line, _, self._rest = self._rest.partition(b"\n")
        return line

    def batches(self) -> Iterator[Batch]:
        """Yield batches of whole JSON lines, about ``batch_rows`` rows each (sized in bytes, not counted)."""
        pending: list[bytes] = [self._rest]
        self._rest = b""
        size = len(pending[0])
        limit = max(_CHUNK_BYTES, self._batch_rows * _BYTES_PER_ROW)
        try:
            while (chunk := self._next_chunk()) is not None:
                pending.append(chunk)
                size += len(chunk)
                if size >= limit:
                    data = b"".join(pending)
                    cut = data.rfind(b"\n") + 1
                    pending, size = [data[cut:]], len(data) - cut
                    batch = self._batch(data[: cut - 1] if cut else b"")
                    if batch is not None:
                        yield batch
            self._done = True
            if self._tail != b"\n\n":  # Druid ends a complete answer with an empty line
                raise QueryError(
                    "The Druid SQL answer ended early: the query failed on the server after rows were sent.",
                    sql=self.sql,
                    hint="Run the query again; if it keeps failing, narrow it (LIMIT, WHERE).",
                )
            batch = self._batch(b"".join(pending))
            if batch is not None:
                yield batch
        except KeyboardInterrupt:
            self.cancel()
            raise
        except requests.RequestException as exc:
            self.close()
            raise QueryError(
                f"The Druid SQL answer broke off while streaming: {type(exc).__name__}.",
                sql=self.sql,
                hint="Run the query again.",
            ) from exc
        finally:
            if self._done:
                self.close()

    def _batch(self, lines: bytes) -> Batch | None:
        if lines.endswith(b"\n") or lines.startswith(b"\n"):  # the end-of-results blank line
            lines = lines.strip(b"\n")
        if not lines:
            return None
        if not lines.startswith(b"["):
            raise QueryError("The Druid SQL endpoint sent rows that are not JSON arrays.", sql=self.sql)
        return Batch(self.columns, (), -1, array_lines=lines)

    def cancel(self) -> None:
        """Cancel the query on the server and drop the HTTP stream."""
        if self._closed:
            return
        self._transport.cancel_query(self.query_id)
        self._done = True  # cancelled: close() must not cancel again
        self.close()

    def close(self) -> None:
        """Release the HTTP stream; an unfinished query is cancelled on the server."""
        if self._closed:
            return
        self._closed = True
        if not self._done:
            self._transport.cancel_query(self.query_id)
        if self._reader is not None:
            self._reader.close()
        if self._transport._active is self:
            self._transport._active = None
