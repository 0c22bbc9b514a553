"""JVM-free transport: the Avatica JSON protocol spoken from Python to the JDBC URL's endpoint.

The broker sees exactly what the JDBC driver would send (``openConnection`` with ``user``/``password`` in
``info``, ``prepareAndExecute`` or ``prepare``/``execute``, ``fetch``, ``closeStatement``), so it needs no JVM
and works wherever the JDBC URL works. Frames are asked for at 5000 rows (Druid's ``maxRowsPerFrame``).
A frame of scalar columns is not decoded cell by cell: its ``rows`` text is cut out of the answer and
rewritten as one JSON array per line (:func:`.avatica_protocol.row_lines`), the shape of Druid's
``arrayLines``, so :mod:`pm_notebook.frames` parses it column-wise with pyarrow's CSV reader, as on the druid
path. Frames with ARRAY or OTHER columns (or a string holding ``],[``) are decoded with orjson and handed on
column-wise.

Every statement has a result of its own, on a connection no other open result uses (see :mod:`._links`): an
unparameterised query reuses that connection's shared statement, a parameterised one is prepared, so a new
statement never closes one still being read, nor waits for it. A result closed before its last row fails its
reader at once with a :class:`~pm_notebook.errors.ClosedError` that says what closed it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import requests

from .. import _http
from .._workers import Abandoned, Pending
from ..errors import ClosedError, ConfigurationError, PMError, QueryError
from ..query_context import check_context, context_properties
from . import avatica_protocol as proto
from ._errors import from_http_status
from ._links import Links, Seat, Seats
from ._open import BY_OWNER, OpenResults, closed_error
from .base import Batch, ColumnSpec, Target
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
    """One server-side Avatica connection, opened with one query context's properties; ``seats.shared`` is
    the id of its shared statement (reused by unparameterised queries while no result reads it)."""

    connection_id: str
    seats: Seats = field(default_factory=Seats)


class AvaticaTransport:
    """Avatica connections (opened lazily, reopened if the server forgot them) over one HTTP session.

    Druid reads the query context from the properties of ``openConnection``, so each distinct context gets
    a connection of its own: the last :data:`._links.MAX_CONTEXTS` idle ones are kept open (the oldest idle
    one is closed past that). A statement that starts while a result of the same context is still being read
    gets another connection (see :mod:`._links`).

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
        self._links: Links[_Link] = Links(self._close_link)
        self._open = OpenResults()  # the results not yet closed, closed with the transport
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
        (``None`` when the answer has no rows array; see :func:`.avatica_protocol.decode_frame`)."""
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

    def _create_statement(self, link: _Link) -> int:
        answer = self.call(proto.create_statement(link.connection_id), "createStatement")
        return int(answer["statementId"])

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
        for attempt in (1, 2):
            if self._closed:
                raise ClosedError("This Avatica transport is closed.")
            link, seat, shared = self._links.take(
                checked, lambda: self._open_link(checked), reusable=not values
            )
            result = AvaticaResult(self, sql, link, seat, batch_rows)
            self._open.add(result)
            try:
                self._start(result, shared, values)
                return result
            except PMError as exc:
                if result._closed:  # closed meanwhile (the connection was): its failure is our doing
                    raise closed_error("avatica", result._closed_by) from None
                result.close()  # gives its seat back (and closes a statement it owns)
                if values and result.statement_id is None and self._links.forget(link):
                    # a refused prepare: Druid 33 keeps the statement it made for it, whose id it never
                    # names (four leak a connection full); closing the connection frees it
                    self._close_link(link)
                if not isinstance(exc, QueryError) or exc.error_code != _NO_SUCH_CONNECTION or attempt == 2:
                    raise
                log.debug("Avatica connection lost on the server; reconnecting")
                if self._links.forget(link):
                    self._close_link(link)
            except BaseException:
                result.close()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _start(self, result: AvaticaResult, shared: Any, values: list[dict[str, Any]]) -> None:
        """Place *result*'s statement on its connection (prepared, or the shared one: *shared*, made now if
        ``None``), execute it and take its first frame."""
        link, seat, sql = result.link, result.seat, result.sql
        connection_id = link.connection_id
        if values:
            prepared = self.call(proto.prepare(connection_id, sql), "prepare", sql=sql)["statement"]
            result.statement_id = int(prepared["id"])
            declared = len((prepared.get("signature") or {}).get("parameters") or [])
            if declared != len(values):
                raise QueryError(
                    f"The statement has {declared} ? placeholder(s) but {len(values)} parameter(s) "
                    "were given.",
                    sql=sql,
                    hint="Pass exactly one value per ?.",
                )
            message = proto.execute(prepared, values, first_frame_rows=self._frame_rows)
            answer, rows = self._interruptible(
                result, lambda: self.call_frame(message, "executeResults", sql=sql)
            )
        else:
            if seat == "shared":
                result.statement_id = int(shared)
            else:
                result.statement_id = self._create_statement(link)
                if seat == "new-shared":
                    link.seats.shared = result.statement_id  # this result holds the shared seat

            def run() -> tuple[dict[str, Any], bytes | None]:
                assert result.statement_id is not None
                message = proto.prepare_and_execute(
                    connection_id, result.statement_id, sql, max_rows_in_first_frame=self._frame_rows
                )
                return self.call_frame(message, "executeResults", sql=sql)

            answer, rows = self._interruptible(result, run)
            if answer.get("missingStatement") and seat == "shared":  # it expired on the server: a new one
                result.statement_id = link.seats.shared = self._create_statement(link)
                answer, rows = self._interruptible(result, run)
        sets = answer.get("results") or []
        if not sets or sets[0].get("updateCount", -1) != -1:
            raise QueryError(
                "The statement returned no result set.", sql=sql, hint="Only SELECT queries return rows."
            )
        result.start(sets[0], rows)

    def _close_statement(self, connection_id: str, statement_id: int, *, side: bool = False) -> None:
        """``closeStatement`` (best effort), on a fresh HTTP connection with *side* (the main one may be
        mid-read: a cancel)."""
        message = proto.close_statement(connection_id, statement_id)
        try:
            if side:
                with requests.Session() as session:
                    self.call(message, "closeStatement", session=session)
            else:
                self.call(message, "closeStatement")
        except PMError as exc:
            log.debug("closeStatement failed: %s", exc)

    @staticmethod
    def _interruptible(result: AvaticaResult, call: Any) -> Any:
        try:
            return call()
        except KeyboardInterrupt:
            result.cancel()
            raise

    def close(self) -> None:
        """Close the results still open (their readers get a ClosedError), the server connections (best
        effort) and the private HTTP session."""
        if self._closed:
            return
        self._closed = True
        self._open.close_all()
        self._links.close_all()
        if self._own_session:
            self._session.close()


class AvaticaResult:
    """An executing Avatica statement: declared columns, then :class:`Batch` objects of about
    ``batch_rows``."""

    def __init__(
        self, transport: AvaticaTransport, sql: str, link: _Link, seat: Seat, batch_rows: int
    ) -> None:
        self._transport = transport
        self.sql = sql
        self.link = link
        self.seat = seat  # how its statement sits on the connection (see _links.Seats)
        self.connection_id = link.connection_id
        self.statement_id: int | None = None  # set once the statement is placed
        self._owned = seat == "owned"
        self._batch_rows = max(1, batch_rows)
        self.columns: tuple[ColumnSpec, ...] = ()
        self._first: dict[str, Any] | None = None
        self._first_rows: bytes | None = None
        self._lines = False
        self._offset = 0
        self._done = False
        self._closed = False
        self._closed_by = BY_OWNER
        self._stop = threading.Event()  # set by close(): a reader waiting for a fetch gives up at once

    def start(self, result_set: dict[str, Any], rows: bytes | None = None) -> None:
        """Take the ``executeResults`` result set: its signature and first frame (its rows as JSON text
        *rows* when :func:`.avatica_protocol.decode_frame` cut them out)."""
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
            if self._closed:
                raise closed_error("avatica", self._closed_by)
            try:
                answer, shaped = (pending or self._fetch(self._offset)).result(stop=self._stop)
            except Abandoned:
                raise closed_error("avatica", self._closed_by) from None
            except PMError:
                if self._closed:  # its failure is our close's doing, not the server's
                    raise closed_error("avatica", self._closed_by) from None
                raise
            pending = None
            if self._closed:
                raise closed_error("avatica", self._closed_by)
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
        assert self.statement_id is not None
        message = proto.fetch(self.connection_id, self.statement_id, offset, self._transport._frame_rows)
        return self._transport.start_call(message, "fetch", sql=self.sql, frame=True, then=self._shaped)

    def batches(self) -> Iterator[Batch]:
        """Yield the rows as batches of whole frames, about ``batch_rows`` rows each at most.

        Consecutive frames of one shape (lines or columns) are merged; a change of shape ends a batch. A
        batch ends once it holds :meth:`_target` rows, which grows with the answer as in the druid
        transport: an eighth of the rows received so far, at least a frame, at most ``batch_rows``. The rows
        held while batches are parsed (one batch ahead, see ``frames.rows._parsed``) then stay proportional to
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
        self._finish(close_statement=True)

    def close(self, *, by: str = BY_OWNER) -> None:
        """Release the statement: closed on the server if the result owns it or its rows were not all read
        (a reader, now or later, then gets a ClosedError saying that *by* closed it)."""
        if not self._closed:
            self._closed_by = by
        self._finish(close_statement=self._owned or not self._done)

    def _finish(self, *, close_statement: bool) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        transport = self._transport
        transport._open.discard(self)
        statement_id = self.statement_id
        if close_statement and statement_id is not None:
            transport._close_statement(self.connection_id, statement_id, side=True)
        # A shared statement closed on the server (or never made) is gone: the next query creates one.
        lost = not self._owned and (statement_id is None or close_statement)
        if transport._links.give_back(self.link, self.seat, shared_lost=lost):
            transport._close_link(self.link)  # forgotten earlier, and this was its last result
