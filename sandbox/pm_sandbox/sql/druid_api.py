"""Druid's SQL HTTP API (``POST /druid/v2/sql/``): request parsing and result encoding.

Request: ``{"query", "resultFormat", "header", "typesHeader", "sqlTypesHeader", "parameters", "context"}``
with HTTP Basic ``client_id:client_secret``. Rows are encoded inside DuckDB as the query produces them
(one pipeline: query → JSON/CSV text per row) and streamed in the five formats Druid has:

* ``object`` (default) / ``array``: one JSON array of row objects / row arrays;
* ``objectLines`` / ``arrayLines``: one JSON value per line, then an empty line marking the end;
* ``csv``: comma-separated (written by ``pyarrow.csv``), then an empty line.

With ``header`` the first row holds the column names (object formats: ``{"col": null}``, or
``{"col": {"type": ..., "sqlType": ...}}`` with the type flags; array and csv formats: extra rows of
names, native types, SQL types). TIMESTAMP and DATE values are ISO-8601 strings in UTC
(``2025-01-06T08:38:03.516Z``), whatever ``sqlTimeZone`` (Druid writes the same instant with the zone's
offset); arrays are JSON-stringified unless ``context.sqlStringifyArrays`` is false. The query context goes
to the engine (:class:`~.query_context.QueryContext`: ``timeout``, ``sqlTimeZone``, ``enableWindowing``,
``maxSubqueryRows``); ``sqlQueryId`` names the query and comes back in the ``X-Druid-SQL-Query-Id`` header.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import queue
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow.csv as pacsv

from .engine import ResultStream, SqlEngine
from .errors import SqlError
from .query_context import QueryContext
from .rows import csv_sql, row_json_sql, text_buffer
from .types import Column

log = logging.getLogger(__name__)

__all__ = ["Answer", "DruidRequest", "Running", "answer", "parse_request"]

FORMATS = ("object", "array", "objectLines", "arrayLines", "csv")
_PREFETCH = 1 << 20  # bytes encoded before answering
# Druid 33 labels every answer application/json, csv and the line formats included
# (tests/druid/test_protocols.py)
_MEDIA = dict.fromkeys(FORMATS, "application/json")


@dataclass(frozen=True)
class DruidRequest:
    """A validated SQL API request."""

    query: str
    result_format: str
    header: bool
    types_header: bool
    sql_types_header: bool
    parameters: list[Any]
    context: dict[str, Any]
    query_id: str

    @property
    def media_type(self) -> str:
        return _MEDIA[self.result_format]


def _param_value(p: Any, i: int) -> Any:
    if not isinstance(p, dict) or "type" not in p:
        raise SqlError(f'parameters[{i}] must be an object like {{"type": "VARCHAR", "value": "x"}}.')
    kind, value = str(p["type"]).upper(), p.get("value")
    if value is None:
        return None
    try:
        if kind in ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "LONG"):
            number = int(value)
            if not -(2**63) <= number < 2**63:
                raise OverflowError
            return number
        if kind in ("DOUBLE", "FLOAT", "REAL", "DECIMAL"):
            return float(value)
        if kind == "BOOLEAN":
            return value if isinstance(value, bool) else str(value).lower() == "true"
        if kind in ("TIMESTAMP", "DATE"):
            if isinstance(value, int | float):
                ts = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=value)
            else:
                ts = dt.datetime.fromisoformat(str(value).replace("Z", "").replace(" ", "T"))
            return ts.date() if kind == "DATE" else ts
        if kind in ("VARCHAR", "CHAR", "STRING"):
            return str(value)
        if kind.startswith("ARRAY"):
            return list(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a date beyond year 9999
        raise SqlError(f"parameters[{i}]: value {_short(value)} is not a valid {kind}.") from None
    raise SqlError(
        f"parameters[{i}]: unknown type '{p['type']}' (use VARCHAR, BIGINT, DOUBLE, BOOLEAN, TIMESTAMP, "
        "DATE or ARRAY)."
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _query_id(context: dict[str, Any]) -> str:
    """``context.sqlQueryId``, or a fresh one; it is echoed in a header, so it must be printable ASCII."""
    given = context.get("sqlQueryId")
    if given is None or given == "":
        return str(uuid.uuid4())
    if not isinstance(given, str) or len(given) > 512 or not all(" " <= ch <= "~" for ch in given):
        raise SqlError(
            "context.sqlQueryId must be a string of at most 512 printable ASCII characters "
            "(no control characters such as CR or LF)."
        )
    return given


def parse_request(body: bytes) -> DruidRequest:
    """Validate a request body; :class:`SqlError` names the bad field."""
    try:
        req = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise SqlError('The request body is not valid JSON: send {"query": "SELECT ..."}.') from None
    if not isinstance(req, dict):
        raise SqlError('The request body must be a JSON object: {"query": "SELECT ..."}.')
    query = req.get("query")
    if not isinstance(query, str) or not query.strip():
        raise SqlError('Missing "query": send {"query": "SELECT ..."}.')
    fmt = req.get("resultFormat") or "object"
    if fmt not in FORMATS:
        raise SqlError(f"Unknown resultFormat '{fmt}': use one of {', '.join(FORMATS)}.")
    header = bool(req.get("header", False))
    types, sql_types = bool(req.get("typesHeader", False)), bool(req.get("sqlTypesHeader", False))
    if (types or sql_types) and not header:
        raise SqlError("typesHeader and sqlTypesHeader can only be set when header is also true.")
    params = req.get("parameters") or []
    if not isinstance(params, list):
        raise SqlError('"parameters" must be a list of {"type", "value"} objects.')
    context = req.get("context") or {}
    if not isinstance(context, dict):
        raise SqlError('"context" must be a JSON object.')
    return DruidRequest(
        query=query,
        result_format=fmt,
        header=header,
        types_header=types,
        sql_types_header=sql_types,
        parameters=[_param_value(p, i) for i, p in enumerate(params)],
        context=context,
        query_id=_query_id(context),
    )


@dataclass
class Answer:
    """The response body of a query: whole (``body``) when it is small, else ``chunks`` to stream."""

    columns: list[Column]
    body: bytes | None
    chunks: Iterator[bytes | memoryview] | None = None

    def close(self) -> None:
        """Stop the query and free its slot when the answer will not be sent (client gone)."""
        if self.chunks is not None:
            self.chunks.close()  # type: ignore[attr-defined]


class Running:
    """The queries in progress by ``sqlQueryId``, so ``DELETE /druid/v2/sql/{id}`` can cancel them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queries: dict[str, tuple[str, ResultStream]] = {}

    def track(self, query_id: str, client_id: str) -> Callable[[ResultStream], None]:
        """The ``on_open`` hook that registers a stream under *query_id* until it closes."""

        def add(stream: ResultStream) -> None:
            with self._lock:
                self._queries[query_id] = (client_id, stream)

            def forget() -> None:
                with self._lock:
                    if self._queries.get(query_id, (None, None))[1] is stream:
                        del self._queries[query_id]

            stream.on_close = forget

        return add

    def cancel(self, query_id: str, client_id: str) -> bool:
        """Interrupt the query if it runs for this workgroup; ``False`` if there is no such query."""
        with self._lock:
            entry = self._queries.get(query_id)
        if entry is None or entry[0] != client_id:
            return False  # another workgroup's query is as unknown as a finished one
        entry[1].cancel()
        return True


def answer(
    engine: SqlEngine,
    client_id: str,
    req: DruidRequest,
    *,
    prefetch: int = _PREFETCH,
    batch_rows: int = 50_000,
    running: Running | None = None,
) -> Answer:
    """Run the request's query and encode its rows while they are computed.

    Query and encoding run as one DuckDB pipeline (:meth:`SqlEngine.stream`); the first *prefetch* bytes are
    produced before answering, so errors of small results (row cap, timeout) still get a Druid error body,
    and a result that fits comes back whole. Larger results stream; a failure after the first bytes ends the
    stream early (without the final empty line of the ``*Lines`` formats), as Druid does.
    """
    fmt = req.result_format
    stringify = QueryContext.parse(req.context).stringify_arrays
    if fmt == "csv":
        select = csv_sql
    else:
        terminator = "\n" if fmt.endswith("Lines") else ","
        objects = fmt.startswith("object")

        def select(columns: list[Column], sources: list[str], duck_types: list[str]) -> list[str]:
            row = row_json_sql(
                columns,
                mode="druid",
                objects=objects,
                stringify=stringify,
                terminator=terminator,
                sources=sources,
                duck_types=duck_types,
            )
            return [row]

    stream = engine.stream(
        client_id,
        req.query,
        req.parameters,
        select,
        batch_rows=batch_rows,
        on_open=running.track(req.query_id, client_id) if running is not None else None,
        context=req.context,
    )
    chunks = _encode(req, stream)
    head: list[bytes | memoryview] = []
    size = 0
    try:
        for piece in chunks:
            head.append(piece)
            size += len(piece)
            if size >= prefetch:
                break
        else:
            return Answer(stream.columns, b"".join(head))
    except BaseException:
        stream.close()
        raise
    return Answer(stream.columns, None, _ahead(head, chunks, stream))


_END = object()


def _ahead(
    head: list[bytes | memoryview], rest: Iterator[bytes | memoryview], stream: ResultStream, depth: int = 4
) -> Iterator[bytes | memoryview]:
    """Yield *head*, then *rest* as a producer thread encodes it up to *depth* batches ahead.

    The producer keeps DuckDB computing the next batches while earlier ones are being sent, so query,
    encoding and the socket overlap instead of taking turns. Closing this generator stops the producer
    (the running query is interrupted) and frees the stream.
    """
    ready: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in rest:
                if not put(item):
                    return
        except SqlError as exc:  # after the first bytes there is no way to send an error body
            log.warning("Druid SQL stream ended early: %s", exc)
        except Exception:
            log.exception("Druid SQL stream failed")
        finally:
            rest.close()  # type: ignore[attr-defined]
            put(_END)

    producer = threading.Thread(target=produce, name="pm-druid-encode", daemon=True)
    try:
        yield from head
        head.clear()
        producer.start()
        while (item := ready.get()) is not _END:
            yield item
    finally:
        stop.set()
        if producer.is_alive():
            stream.cancel()
            producer.join(timeout=10)
        elif producer.ident is None:  # never started: the client left during the first bytes
            rest.close()  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------------


def _header_rows(req: DruidRequest, columns: list[Column]) -> tuple[Any, list[list[str]]]:
    names = [c.name for c in columns]
    if req.types_header or req.sql_types_header:
        obj: dict[str, Any] = {}
        for c in columns:
            info = {}
            if req.types_header:
                info["type"] = c.native_type
            if req.sql_types_header:
                info["sqlType"] = c.sql_type
            obj[c.name] = info
    else:
        obj = dict.fromkeys(names)
    rows = [names]
    if req.types_header:
        rows.append([c.native_type for c in columns])
    if req.sql_types_header:
        rows.append([c.sql_type for c in columns])
    return obj, rows


def _encode(req: DruidRequest, stream: ResultStream) -> Iterator[bytes | memoryview]:
    """The response body of *stream* in the request's format, a batch of rows at a time."""
    columns, fmt = stream.columns, req.result_format
    header_obj, header_rows = _header_rows(req, columns) if req.header else (None, [])
    with stream:
        if fmt == "csv":
            for row in header_rows:
                yield (",".join(_csv_cell(v) for v in row) + "\n").encode()
            for batch in stream:
                buf = io.BytesIO()
                pacsv.write_csv(batch, buf, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
                yield buf.getvalue()
            yield b"\n"
        elif fmt.endswith("Lines"):
            if req.header:
                head = (
                    [orjson.dumps(header_obj)]
                    if fmt == "objectLines"
                    else [orjson.dumps(r) for r in header_rows]
                )
                yield b"\n".join(head) + b"\n"
            for batch in stream:
                yield text_buffer(batch.column(0))  # every row ends with "\n"
            yield b"\n"
        else:
            items = [orjson.dumps(header_obj)] if fmt == "object" else [orjson.dumps(r) for r in header_rows]
            opened = b"[" + b",".join(items) if req.header else b"["
            wrote = req.header
            for batch in stream:
                rows = text_buffer(batch.column(0))[:-1]  # every row ends with ","; drop the last
                yield (opened + b"," if wrote else opened) + rows
                opened, wrote = b"", True
            yield opened + b"]"


def _csv_cell(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\n') else v
