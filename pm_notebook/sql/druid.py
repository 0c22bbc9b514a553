"""JVM-free transport: Druid's SQL HTTP API (``POST /druid/v2/sql/``), the path pydruid-based SDKs used.

The query goes out with ``resultFormat=arrayLines`` and the three header flags, so the first three lines
declare each column's name, Druid type and SQL type (typed even when no row comes back). The rows stream in
as one JSON array per line (the most compact of Druid's lossless formats: no key repeated per row, NULL kept
apart from ``""``); a reader thread takes them off the socket while the previous slice is parsed, and
:mod:`pm_notebook.frames` turns each slice of lines into Arrow columns without a Python object per cell.
Credentials: HTTP Basic (client id : client secret).
Parameters travel in the request's ``parameters`` list; cancellation is ``DELETE /druid/v2/sql/{sqlQueryId}``.

Every statement is one HTTP answer of its own (as pydruid and httpx clients do): a new statement never closes
one still being read, on this thread or another. A result closed before its last row (by its owner, by the
transport's close, or dropped as garbage) cancels its query, ends its reader thread, and fails its reader at
once with a :class:`~pm_notebook.errors.ClosedError`.
"""

from __future__ import annotations

import collections
import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import requests

from .. import _http
from .._workers import run_in_worker
from ..errors import ClosedError, ConfigurationError, PMError, QueryError
from ..query_context import check_context
from . import druid_protocol as wire
from ._open import BY_OWNER, OpenResults, closed_error
from .base import Batch, ColumnSpec, Target

__all__ = ["DruidResult", "DruidTransport", "open_transport"]

log = logging.getLogger(__name__)


def open_transport(target: Target) -> DruidTransport:
    """The registry's factory (see :data:`pm_notebook.sql.REGISTRY`)."""
    return DruidTransport(target)


class _Exchange:
    """One request/answer on a worker thread: it sends the query, then receives the body in chunks.

    Receiving thus overlaps parsing. The read-ahead is bounded in bytes, not chunks (chunk sizes follow the
    server's writes): at most ``ahead_bytes()`` wait to be parsed — the next batch's size, so it arrives
    while one is parsed, and a small answer's memory is not a fixed read-ahead's. The caller waits in short
    slices (:meth:`response`, :meth:`next`), so a Ctrl-C delivered to another thread (the JVM's) is seen.

    :meth:`close` is seen by both sides at once: the caller's next wait raises the error it was given, and
    the worker stops at its next chunk (the cancelled query's answer ends, the response is closed);
    :attr:`finished` is set when the worker is done with this exchange.
    """

    _END = object()

    def __init__(self, send: Callable[[], requests.Response], ahead_bytes: Callable[[], int]) -> None:
        self._send = send
        self._response: requests.Response | None = None
        self._ahead = ahead_bytes
        self._items: collections.deque[tuple[Any, int]] = collections.deque()
        self._held = 0  # bytes of body chunks waiting in _items
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._stopped: ClosedError | None = None  # what the caller's next wait raises after close()
        #: set once the worker thread is done with this exchange (answer read, failed, or stopped)
        self.finished = threading.Event()
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
            for chunk in response.iter_content(chunk_size=_http.CHUNK_BYTES):
                if not self._put(chunk, len(chunk)):
                    response.close()
                    return
            self._put(self._END)
        except BaseException as exc:  # handed to the waiting thread
            self._put(exc)
        finally:
            self.finished.set()

    def _put(self, item: Any, size: int = 0) -> bool:
        with self._changed:
            # Something always gets through when nothing waits, whatever its size.
            while self._held and self._held + size > self._ahead() and not self._stop.is_set():
                self._changed.wait(0.1)
            if self._stop.is_set():
                return False
            self._items.append((item, size))
            self._held += size
            self._changed.notify_all()
        return True

    def _get(self) -> Any:
        with self._changed:
            while not self._items or self._stop.is_set():
                if self._stop.is_set():
                    raise self._stopped or ClosedError("This Druid SQL answer was closed.")
                self._changed.wait(0.05)
            item, size = self._items.popleft()
            self._held -= size
            self._changed.notify_all()
        if isinstance(item, BaseException):
            raise item
        return item

    def response(self) -> requests.Response:
        """The answer's status and headers (the body follows through :meth:`next`)."""
        response: requests.Response = self._get()
        return response

    def next(self) -> bytes | None:
        """The next chunk, or ``None`` at the end of the body."""
        item = self._get()
        if item is self._END:
            with self._changed:
                self._items.appendleft((item, 0))  # later calls see the end too
            return None
        chunk: bytes = item
        return chunk

    def close(self, error: ClosedError | None = None) -> None:
        """Stop receiving and release the connection; a caller waiting now or later gets *error*."""
        with self._changed:
            if self._stopped is None:
                self._stopped = error
            self._stop.set()
            self._changed.notify_all()
        response = self._response
        if response is not None:
            response.close()


class DruidTransport:
    """Druid SQL HTTP API client for one broker.

    :param target: the broker's ``sql_http_url`` (``http://<host>:8082``, or the full ``.../druid/v2/sql/``
        URL), the HTTP Basic user and password (client id and secret, kept a ``Secret`` until the request is
        sent) and the read timeout between two chunks of the answer.
    :param session: a ``requests.Session`` to use (not closed by :meth:`close`); a private one otherwise.
    """

    name = "druid"

    def __init__(self, target: Target, *, session: requests.Session | None = None) -> None:
        url = target.sql_http_url.rstrip("/")
        self.url = url + "/" if url.endswith(wire.SQL_PATH.rstrip("/")) else url + wire.SQL_PATH
        self._target = target
        self._timeout = (10.0, float(target.timeout))
        self._own_session = session is None
        self._session = session or _http.sql_session()
        self._open = OpenResults()  # the results not yet closed, closed with the transport
        self._closed = False

    def __repr__(self) -> str:
        return f"DruidTransport(url={self.url!r}, user={self._target.user!r})"

    def execute(
        self,
        sql: str,
        params: Sequence[Any] | None = None,
        *,
        batch_rows: int = 65536,
        context: Mapping[str, Any] | None = None,
    ) -> DruidResult:
        """Send *sql* (``?`` placeholders bound from *params*) with the query *context* (the request's
        ``context`` object; its ``sqlQueryId``, if any, names the query) and return the streaming result."""
        if self._closed:
            from ..errors import ClosedError

            raise ClosedError("This Druid SQL transport is closed.")
        if not isinstance(sql, str) or not sql.strip():
            raise ConfigurationError("The SQL text is empty.", hint="Pass a SELECT statement.")
        checked = check_context(context)
        query_id = str(checked.get("sqlQueryId") or f"pm-{uuid.uuid4()}")
        data = wire.request_body(sql, params, query_id, checked)
        result = DruidResult(self, sql, query_id, batch_rows)
        parser = result.parser  # the exchange's worker must not keep the result alive (see DruidResult)
        exchange = _Exchange(
            lambda: _http.send(
                self._session,
                "POST",
                self.url,
                timeout=self._timeout,
                what="Druid SQL query",
                data=data,
                auth=_http.SecretBasicAuth(self._target.user, self._target.password),
                stream=True,
                headers={"Content-Type": "application/json"},
            ),
            ahead_bytes=lambda: parser.batch_target,
        )
        self._open.add(result)
        result.start(exchange)
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
                    auth=_http.SecretBasicAuth(self._target.user, self._target.password),
                )
                log.debug("Druid cancel of %s answered %s", query_id, response.status_code)
            except PMError as exc:
                log.debug("Druid cancel of %s failed: %s", query_id, exc)

    def close(self) -> None:
        """Close the results still open (their readers get a ClosedError) and the private HTTP session."""
        self._closed = True
        self._open.close_all()
        if self._own_session:
            self._session.close()


class DruidResult:
    """A streaming Druid SQL answer: the header lines give :attr:`columns`, then batches of JSON arrays.

    A result dropped before it was read to the end or closed (garbage) is closed as :meth:`close` would: its
    query cancelled (on a worker thread), its reader thread stopped. Nothing the reader thread holds refers
    back to the result, so dropping it is enough.
    """

    def __init__(self, transport: DruidTransport, sql: str, query_id: str, batch_rows: int) -> None:
        self._transport = transport
        self.sql = sql
        self.query_id = query_id
        self.parser = self._parser = wire.AnswerParser(
            sql=sql, batch_bytes=max(wire.CHUNK_BYTES, max(1, batch_rows) * wire.BYTES_PER_ROW)
        )
        self.columns: tuple[ColumnSpec, ...] = ()
        self._reader: _Exchange | None = None
        self._ready: list[Batch] = []  # batches parsed while the header was read
        self._done = False
        self._closed = False
        self._closed_by = BY_OWNER
        self._cancelled = False

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
        if response.status_code != 200:
            try:
                content = response.content
            except requests.RequestException:
                content = b""
            finally:
                response.close()
            self._closed = True
            raise wire.error_from_answer(response.status_code, content, sql=self.sql, url=self._transport.url)
        self._dropped = weakref.finalize(self, _dropped, exchange, self._transport, self.query_id)
        try:
            while self._parser.columns is None:
                chunk = exchange.next()
                if chunk is None:
                    self._done = True
                    self._ready.extend(self._parser.end())
                    break
                self._ready.extend(self._parser.feed(chunk))
            self.columns = self._parser.columns or ()
        except BaseException:
            self.close()
            raise

    def batches(self) -> Iterator[Batch]:
        """Yield batches of whole JSON lines, about ``batch_rows`` rows each (sized in bytes, not counted)."""
        assert self._reader is not None
        try:
            ready, self._ready = self._ready, []
            for batch in ready:
                self._check_open()
                yield batch
            while not self._done:
                self._check_open()
                chunk = self._reader.next()
                if chunk is None:
                    self._done = True
                    yield from self._parser.end()
                else:
                    yield from self._parser.feed(chunk)
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

    def _check_open(self) -> None:
        if self._closed and not self._done:
            raise closed_error("druid", self._closed_by)

    def cancel(self) -> None:
        """Cancel the query on the server and drop the HTTP stream."""
        if self._closed:
            return
        self._transport.cancel_query(self.query_id)
        self._cancelled = True  # close() must not cancel again
        self.close()

    def close(self, *, by: str = BY_OWNER) -> None:
        """Release the HTTP stream; an unfinished query is cancelled on the server and its reader (now or
        later) gets a ClosedError saying that *by* closed it."""
        if self._closed:
            return
        self._closed, self._closed_by = True, by
        self._transport._open.discard(self)
        dropped = getattr(self, "_dropped", None)
        if dropped is not None:
            dropped.detach()
        if self._reader is not None:
            self._reader.close(closed_error("druid", by))
        if not self._done and not self._cancelled:
            self._transport.cancel_query(self.query_id)


def _dropped(exchange: _Exchange, transport: DruidTransport, query_id: str) -> None:
    """A result dropped unclosed (garbage): stop its reader thread now and cancel its query on a worker."""
    running = not exchange.finished.is_set()  # else the whole answer arrived: nothing to cancel
    exchange.close(closed_error("druid", BY_OWNER))
    if running:
        run_in_worker(lambda: transport.cancel_query(query_id))
