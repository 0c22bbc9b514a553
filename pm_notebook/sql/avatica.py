"""JVM-free transport: the Avatica JSON protocol spoken from Python to the JDBC URL's endpoint.

The broker sees exactly what the JDBC driver would send (``openConnection`` with ``user``/``password`` in
``info``, ``prepareAndExecute`` or ``prepare``/``execute``, ``fetch``, ``closeStatement``), so it needs no JVM
and works wherever the JDBC URL works. Frames are asked for at 5000 rows (Druid's ``maxRowsPerFrame``).
A frame of scalar columns is not decoded cell by cell: its ``rows`` text is cut out of the answer and
rewritten as one JSON array per line (:func:`._protocol.row_lines`), the shape of Druid's ``arrayLines``, so
:mod:`pm_notebook.frames` parses it column-wise with pyarrow's CSV reader, as on the druid path. Frames with
ARRAY or OTHER columns (or a string holding ``],[``) are decoded with orjson and handed on column-wise.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import requests

from .. import _http
from ..errors import ConfigurationError, PMError, QueryError
from . import _protocol as proto
from ._errors import from_http_status
from ._links import Links
from ._workers import Pending
from .base import Batch, ColumnSpec, Target
from .context import check_context, context_properties
from .params import check_params

__all__ = ["AvaticaResult", "AvaticaTransport", "open_transport"]

log = logging.getLogger(__name__)

_NO_SUCH_CONNECTION = 1
FRAME_ROWS = 5000


def open_transport(target: Target) -> AvaticaTransport:
    """The registry's factory (see :data:`pm_notebook.sql.REGISTRY`)."""
    return AvaticaTransport(target)


@dataclass
class _Link:
    """One server-side Avatica connection, opened with one query context's properties."""

    connection_id: str
    statement_id: int | None = None  # reused for every unparameterised query


class AvaticaTransport:
    """Avatica connections (opened lazily, reopened if the server forgot them) over one HTTP session.

    Druid reads the query context from the properties of ``openConnection``, so each distinct context gets
    a connection of its own: the last :data:`._links.MAX_CONTEXTS` are kept open (the oldest is closed past
    that).

    :param target: the Avatica endpoint (``avatica_url``), the JDBC login and password (client id and
        secret: the secret stays a ``Secret`` inside the ``openConnection`` message until it is encoded, and
        the encoded body hides its repr) and the read timeout of one call.
    :param session: a ``requests.Session`` to use (not closed by :meth:`close`); a private one otherwise.
    :param frame_rows: rows per Avatica frame.
    """

    name = "avatica"

    def __init__(
        self, target: Target, *, session: requests.Session | None = None, frame_rows: int = FRAME_ROWS
    ) -> None:
        self.url = target.avatica_url
        self._target = target
        self._timeout = (10.0, float(target.timeout))
        self._own_session = session is None
        self._session = session or _http.sql_session()
        self._frame_rows = frame_rows
        self._lock = threading.RLock()
        self._links: Links[_Link] = Links(self._close_link)
        self._active: AvaticaResult | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"AvaticaTransport(url={self.url!r}, user={self._target.user!r})"

    # -- calls
    def call(self, message: dict[str, Any], expected: str, **options: Any) -> dict[str, Any]:
        """POST one Avatica message and decode the answer (*options* as :meth:`start_call`)."""
        answer: dict[str, Any] = self.start_call(message, expected, **options).result()
        return answer

    def call_frame(
        self, message: dict[str, Any], expected: str, **options: Any
    ) -> tuple[dict[str, Any], bytes | None]:
        """:meth:`call` for an answer with a frame: the message (rows emptied) and the rows' JSON text
        (``None`` when the answer has no rows array; see :func:`._protocol.decode_frame`)."""
        answer: tuple[dict[str, Any], bytes | None] = self.start_call(
            message, expected, frame=True, **options
        ).result()
        return answer

    def start_call(
        self,
        message: dict[str, Any],
        expected: str,
        *,
        sql: str | None = None,
        session: requests.Session | None = None,
        frame: bool = False,
        then: Callable[[Any], Any] | None = None,
    ) -> Pending[Any]:
        """Start :meth:`call` on a worker thread; ``.result()`` gives the decoded answer (with *frame*, as
        :meth:`call_frame`), or what *then* makes of it on the same worker thread.

        A ``Secret`` in *message* (the password of ``openConnection``) is revealed only by the encoder.
        """

        def post() -> Any:
            response, body = _http.send_read(
                session or self._session,
                "POST",
                self.url,
                timeout=self._timeout,
                what=f"Avatica {message['request']}",
                data=proto.encode(message),
                headers={"Content-Type": "application/json"},
            )
            if response.status_code not in (200, 500):
                text = body[:500].decode(response.encoding or "utf-8", "replace")
                raise from_http_status(response.status_code, text, url=self.url)
            if frame:
                answer: Any = proto.decode_frame(body, expected, sql=sql, url=self.url)
            else:
                answer = proto.decode(body, expected, sql=sql, url=self.url)
            return answer if then is None else then(answer)

        return Pending(post)

    def _connection(self, context: dict[str, Any]) -> _Link:
        """The connection opened with *context* as its properties (opened now if there is none)."""
        if self._closed:
            from ..errors import ClosedError

            raise ClosedError("This Avatica transport is closed.")
        return self._links.get(context, lambda: self._open_link(context))

    def _open_link(self, context: dict[str, Any]) -> _Link:
        connection_id = str(uuid.uuid4())
        # The context first: check_context refuses "user"/"password" keys, so the credentials always win.
        info: dict[str, Any] = {
            **context_properties(context),
            "user": self._target.user,
            "password": self._target.password,
        }
        self.call(proto.open_connection(connection_id, info), "openConnection")
        self.call(proto.connection_sync(connection_id), "connectionSync")
        log.debug("Avatica connection %s opened on %s", connection_id, self.url)
        return _Link(connection_id)

    def _close_link(self, link: _Link) -> None:
        try:
            self.call(proto.close_connection(link.connection_id), "closeConnection")
        except PMError as exc:
            log.debug("closeConnection failed: %s", exc)

    def _statement(self, link: _Link) -> int:
        if link.statement_id is None:
            answer = self.call(proto.create_statement(link.connection_id), "createStatement")
            link.statement_id = int(answer["statementId"])
        return link.statement_id

    # -- statements
    def execute(
        self,
        sql: str,
        params: Sequence[Any] | None = None,
        *,
        batch_rows: int = 65536,
        context: Mapping[str, Any] | None = None,
    ) -> AvaticaResult:
        """Run *sql* (``?`` placeholders bound from *params*) on the connection whose properties are the
        query *context* (checked first), and return its open result."""
        if not isinstance(sql, str) or not sql.strip():
            raise ConfigurationError("The SQL text is empty.", hint="Pass a SELECT statement.")
        checked = check_context(context)
        values = proto.parameter_values(check_params(list(params or [])))
        with self._lock:
            if self._active is not None:  # one open result per connection: the old one is finished or dropped
                self._active.close()
            for attempt in (1, 2):
                link = self._connection(checked)
                try:
                    result = self._start(link, sql, values, batch_rows)
                    break
                except QueryError as exc:
                    if exc.error_code != _NO_SUCH_CONNECTION or attempt == 2:
                        raise
                    log.debug("Avatica connection lost on the server; reconnecting")
                    self._links.forget(link)
            self._active = result
            return result

    def _start(self, link: _Link, sql: str, values: list[dict[str, Any]], batch_rows: int) -> AvaticaResult:
        connection_id = link.connection_id
        if values:
            prepared = self.call(proto.prepare(connection_id, sql), "prepare", sql=sql)["statement"]
            declared = len((prepared.get("signature") or {}).get("parameters") or [])
            if declared != len(values):
                self.call(proto.close_statement(connection_id, prepared["id"]), "closeStatement")
                raise QueryError(
                    f"The statement has {declared} ? placeholder(s) but {len(values)} parameter(s) "
                    "were given.",
                    sql=sql,
                    hint="Pass exactly one value per ?.",
                )
            statement_id, owned = int(prepared["id"]), True
            result = AvaticaResult(self, sql, link, statement_id, owned, batch_rows)
            message = proto.execute(prepared, values, first_frame_rows=self._frame_rows)
            try:
                answer, rows = self._interruptible(
                    result, lambda: self.call_frame(message, "executeResults", sql=sql)
                )
            except PMError:
                result.close()  # a failed prepared statement still counts against the server's limit
                raise
        else:
            statement_id, owned = self._statement(link), False
            result = AvaticaResult(self, sql, link, statement_id, owned, batch_rows)
            answer, rows = self._interruptible(
                result,
                lambda: self.call_frame(
                    proto.prepare_and_execute(
                        connection_id, statement_id, sql, max_rows_in_first_frame=self._frame_rows
                    ),
                    "executeResults",
                    sql=sql,
                ),
            )
            if answer.get("missingStatement"):
                link.statement_id = None
                result.statement_id = statement_id = self._statement(link)
                answer, rows = self.call_frame(
                    proto.prepare_and_execute(
                        connection_id, statement_id, sql, max_rows_in_first_frame=self._frame_rows
                    ),
                    "executeResults",
                    sql=sql,
                )
        sets = answer.get("results") or []
        if not sets or sets[0].get("updateCount", -1) != -1:
            result.close()
            raise QueryError(
                "The statement returned no result set.", sql=sql, hint="Only SELECT queries return rows."
            )
        result.start(sets[0], rows)
        return result

    @staticmethod
    def _interruptible(result: AvaticaResult, call: Any) -> Any:
        try:
            return call()
        except KeyboardInterrupt:
            result.cancel()
            raise

    def close(self) -> None:
        """Close the server connection (best effort) and the private HTTP session."""
        with self._lock:
            if self._closed:
                return
            if self._active is not None:
                self._active.close()
            self._links.close_all()
            self._closed = True
            if self._own_session:
                self._session.close()


class AvaticaResult:
    """An executing Avatica statement: declared columns, then :class:`Batch` objects of about
    ``batch_rows``."""

    def __init__(
        self,
        transport: AvaticaTransport,
        sql: str,
        link: _Link,
        statement_id: int,
        owned: bool,
        batch_rows: int,
    ) -> None:
        self._transport = transport
        self.sql = sql
        self._link = link
        self.connection_id = link.connection_id
        self.statement_id = statement_id
        self._owned = owned
        self._batch_rows = max(1, batch_rows)
        self.columns: tuple[ColumnSpec, ...] = ()
        self._first: dict[str, Any] | None = None
        self._first_rows: bytes | None = None
        self._lines = False
        self._offset = 0
        self._done = False
        self._closed = False

    def start(self, result_set: dict[str, Any], rows: bytes | None = None) -> None:
        """Take the ``executeResults`` result set: its signature and first frame (its rows as JSON text
        *rows* when :func:`._protocol.decode_frame` cut them out)."""
        self.columns = proto.signature_columns(result_set.get("signature"))
        self._lines = proto.rows_as_lines(self.columns)
        self._first = result_set.get("firstFrame")
        self._first_rows = rows

    def _frames(self) -> Iterator[tuple[bytes | list[Sequence[Any]], int]]:
        """Each frame's rows as lines (bytes) or as columns of values, with their count.

        The next frame is asked for as soon as one arrives; each fetched frame is cut into lines (or
        decoded) on the worker thread that fetched it, so the chain of fetches waits for nothing else.
        """
        frame = self._first
        shaped = None if frame is None else self._rows(frame, self._first_rows)
        self._first = self._first_rows = None
        pending: Pending[Any] | None = None
        while True:
            if frame is not None and shaped is not None:
                part, count = shaped
                self._offset += count
                done = bool(frame.get("done"))
                pending = None if done else self._fetch(self._offset)
                if count:
                    yield part, count
                if done:
                    self._done = True
                    return
            answer, shaped = (pending or self._fetch(self._offset)).result()
            pending = None
            if answer.get("missingStatement") or answer.get("missingResults"):
                raise QueryError(
                    "The server lost the statement while its rows were being read.",
                    sql=self.sql,
                    hint="Run the query again.",
                )
            frame = answer.get("frame") or {"rows": [], "done": False}

    def _rows(self, frame: dict[str, Any], rows: bytes | None) -> tuple[bytes | list[Sequence[Any]], int]:
        """A frame's rows as lines when they can be cut without parsing, else as decoded columns."""
        if rows is not None and self._lines:
            lines = proto.row_lines(rows)
            if lines is not None:
                return lines
        if rows is not None:
            frame = {**frame, "rows": proto.decode_rows(rows, sql=self.sql)}
        columns, count, _ = proto.frame_columns(frame, len(self.columns))
        return columns, count

    def _shaped(self, got: tuple[dict[str, Any], bytes | None]) -> tuple[dict[str, Any], Any]:
        """A fetch answer and its frame's rows as :meth:`_rows` gives them (on the fetching thread)."""
        answer, rows = got
        if answer.get("missingStatement") or answer.get("missingResults"):
            return answer, None
        return answer, self._rows(answer.get("frame") or {"rows": [], "done": False}, rows)

    def _fetch(self, offset: int) -> Pending[Any]:
        message = proto.fetch(self.connection_id, self.statement_id, offset, self._transport._frame_rows)
        return self._transport.start_call(message, "fetch", sql=self.sql, frame=True, then=self._shaped)

    def batches(self) -> Iterator[Batch]:
        """Yield the rows as batches of whole frames, about ``batch_rows`` rows each at most.

        Consecutive frames of one shape (lines or columns) are merged; a change of shape ends a batch. A
        batch ends once it holds :meth:`_target` rows, which grows with the answer as in the druid
        transport: an eighth of the rows received so far, at least a frame, at most ``batch_rows``. The rows
        held while batches are parsed (one batch ahead, see ``frames._parsed``) then stay proportional to
        the answer: a 100,000-row answer is not held in two large batches.
        """
        pending: list[Any] = []
        held = 0
        try:
            for part, count in self._frames():
                if pending and isinstance(part, bytes) != isinstance(pending[0], bytes):
                    yield self._merge(pending, held)
                    pending, held = [], 0
                pending.append(part)
                held += count
                if held >= self._target():
                    yield self._merge(pending, held)
                    pending, held = [], 0
            if held:
                yield self._merge(pending, held)
        except KeyboardInterrupt:
            self.cancel()
            raise
        finally:
            if self._done:
                self.close()

    def _target(self) -> int:
        """The rows of the next batch (see :meth:`batches`)."""
        return min(self._batch_rows, max(self._transport._frame_rows, self._offset // 8))

    def _merge(self, parts: list[Any], rows: int) -> Batch:
        if isinstance(parts[0], bytes):
            return Batch(self.columns, (), rows, array_lines=b"\n".join(parts), epoch_times=True)
        if len(parts) == 1:
            data = tuple(parts[0])
        else:
            data = tuple(
                list(chain.from_iterable(part[i] for part in parts)) for i in range(len(self.columns))
            )
        return Batch(self.columns, data, rows)

    def cancel(self) -> None:
        """Ask the server to stop: ``closeStatement`` on a fresh HTTP connection (the main one may be
        mid-read)."""
        if self._closed:
            return
        self._closed = True
        transport = self._transport
        with requests.Session() as side:
            try:
                transport.call(
                    proto.close_statement(self.connection_id, self.statement_id),
                    "closeStatement",
                    session=side,
                )
            except PMError as exc:
                log.debug("closeStatement while cancelling failed: %s", exc)
        if not self._owned and self._link.statement_id == self.statement_id:
            self._link.statement_id = None  # the server closed it: the next query creates a new one
        if transport._active is self:
            transport._active = None

    def close(self) -> None:
        """Release the statement: closed on the server if we own it or its rows were not all read."""
        if self._closed:
            return
        if not self._owned and self._done:
            self._closed = True
            if self._transport._active is self:
                self._transport._active = None
            return
        self.cancel()
