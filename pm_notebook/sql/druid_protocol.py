"""Sans-IO Druid SQL HTTP API (``POST /druid/v2/sql/``, ``resultFormat=arrayLines``): no sockets, no threads.

- :func:`request_body` builds the bytes to POST (query, header flags, typed ``parameters``, context);
- :func:`error_from_answer` maps a non-200 answer body to the matching error;
- :class:`AnswerParser` is fed the answer body in chunks of any size and gives back the declared columns
  (the three header lines: names, Druid types, SQL types → :class:`~pm_notebook.sql.base.ColumnSpec`) and
  :class:`~pm_notebook.sql.base.Batch` objects of whole JSON-array lines; at the end of the body it checks the
  end-of-answer mark (Druid ends a complete answer with an empty line; a query that fails after rows were
  sent just stops) and an error object in place of a row (the error trailer).

:mod:`pm_notebook.sql.druid` does the I/O around it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..errors import PMError, QueryError
from ._errors import from_druid
from .base import Batch, ColumnSpec
from .params import Param, check_params

__all__ = ["SQL_PATH", "AnswerParser", "column_specs", "error_from_answer", "parameter", "request_body"]

SQL_PATH = "/druid/v2/sql/"
#: the druid transport's largest batch is ``batch_rows`` × this many bytes (``CHUNK_BYTES`` at least)
BYTES_PER_ROW = 128
#: the smallest batch (the reads themselves are ``_http.CHUNK_BYTES``, of the same size)
CHUNK_BYTES = 1 << 20


def parameter(param: Param) -> dict[str, Any]:
    """A classified parameter → Druid's ``{"type": <SQL type>, "value": ...}`` (NULL travels as VARCHAR)."""
    if param.type == "NULL":
        return {"type": "VARCHAR", "value": None}
    if param.type in ("TIMESTAMP", "DATE"):
        # Druid 33 (Calcite's TimestampString) refuses a fraction with trailing zeros — "… 00:00:00.000" is an
        # HTTP 500 ClassCastException — and takes "… 00:00:00" and "… 00:00:00.5": send the shortest form
        return {"type": param.type, "value": _shortest_fraction(param.iso())}
    return {"type": param.type, "value": param.value}


def _shortest_fraction(text: str | None) -> str | None:
    if text is None:
        return None
    head, dot, fraction = text.partition(".")
    fraction = fraction.rstrip("0")
    return f"{head}.{fraction}" if dot and fraction else head


def request_body(
    sql: str, params: Sequence[Any] | None, query_id: str, context: Mapping[str, Any] | None = None
) -> bytes:
    """The JSON body of one query: ``arrayLines`` with the three header lines, our query id, and the query
    *context* (already checked, see :mod:`pm_notebook.query_context`) over the default ``sqlTimeZone`` UTC."""
    return orjson.dumps(
        {
            "query": sql,
            "resultFormat": "arrayLines",
            "header": True,
            "typesHeader": True,
            "sqlTypesHeader": True,
            "parameters": [parameter(p) for p in check_params(list(params or []))],
            "context": {"sqlTimeZone": "Etc/UTC", **(context or {}), "sqlQueryId": query_id},
        }
    )


def error_from_answer(
    status: int, content: bytes, *, sql: str | None = None, url: str | None = None
) -> PMError:
    """The error for a non-200 answer (a Druid error object, or the first 1000 characters of other text)."""
    try:
        body: Any = orjson.loads(content)
    except orjson.JSONDecodeError:
        body = content[:1000].decode("utf-8", "replace")
    return from_druid(status, body, sql=sql, url=url)


#: Druid native element type of an ``ARRAY<...>`` → its SQL type name
_NATIVE_ELEMENTS = {"STRING": "VARCHAR", "LONG": "BIGINT", "DOUBLE": "DOUBLE", "FLOAT": "FLOAT"}


def column_specs(names: Any, native: Any, sql: Any) -> tuple[ColumnSpec, ...]:
    """Columns from the three header lines: names, Druid native types, SQL types (preferred)."""
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
        elif sql_type.startswith("ARRAY<") and sql_type.endswith(">"):
            sql_type, element = "ARRAY", sql_type[len("ARRAY<") : -1]
        elif sql_type == "ARRAY" and i < len(native):  # Druid 33: bare ARRAY, the element in ARRAY<STRING>
            kind = str(native[i] or "").upper()
            if kind.startswith("ARRAY<") and kind.endswith(">"):
                element = _NATIVE_ELEMENTS.get(kind[len("ARRAY<") : -1])
        columns.append(ColumnSpec(name=str(name), type_name=sql_type, element_type=element))
    return tuple(columns)


def _join_lines(parts: list[bytes]) -> bytes:
    """Chunks of whole lines as one bytes object without the line ends at its end (the cut, the
    end-of-answer empty line).

    Joining is the batch's one copy of its bytes: a trailing line end is cut from the last chunk (at most one
    chunk copied), never from the joined bytes.
    """
    while parts and not parts[-1].rstrip(b"\n"):
        parts.pop()
    if parts and parts[-1].endswith(b"\n"):
        parts[-1] = parts[-1].rstrip(b"\n")
    return parts[0] if len(parts) == 1 else b"".join(parts)


class AnswerParser:
    """The state of one ``arrayLines`` answer body being read.

    Call :meth:`feed` with each chunk as it arrives (any split, down to single bytes); :attr:`columns` is set
    once the three header lines are complete. :meth:`feed` returns the batches that are ready (cut at line
    ends); :meth:`end` (at the end of the body) returns the rest or raises.

    Batches start small and grow with the answer: a batch is cut once :attr:`batch_target` bytes are held,
    an eighth of the bytes received so far, at least ``min(batch_bytes, CHUNK_BYTES)`` and at most
    *batch_bytes*. The bytes held while a batch is parsed thus stay proportional to the answer: a small
    answer is not held in a few large batches, a large one is not cut into many small ones.

    :param sql: the statement, for error messages.
    :param batch_bytes: how many bytes of lines make a batch, at most.
    """

    def __init__(self, *, sql: str | None = None, batch_bytes: int = CHUNK_BYTES) -> None:
        self.sql = sql
        self.columns: tuple[ColumnSpec, ...] | None = None
        self._batch_bytes = max(1, batch_bytes)
        self._received = 0  # body bytes after the header
        self._header: list[bytes] = []
        self._parts: list[bytes] = []  # body bytes after the header not yet handed out
        self._size = 0
        self._tail = b""  # the last two bytes of the body: the end-of-answer mark
        self._ended = False

    def feed(self, chunk: bytes) -> list[Batch]:
        """Take the next chunk of the body; return the batches now complete."""
        if self._ended:
            raise RuntimeError("AnswerParser.feed after end()")
        if not chunk:
            return []
        self._tail = (self._tail + chunk[-2:])[-2:]
        if self.columns is None:
            chunk = self._take_header(chunk)
            if self.columns is None or not chunk:
                return []
        self._parts.append(chunk)
        self._size += len(chunk)
        self._received += len(chunk)
        if self._size < self.batch_target:
            return []
        batch = self._cut()
        return [batch] if batch is not None else []

    @property
    def batch_target(self) -> int:
        """The size of the next batch, in bytes (see the class docstring)."""
        floor = min(self._batch_bytes, CHUNK_BYTES)
        return min(self._batch_bytes, max(floor, self._received // 8))

    def _cut(self) -> Batch | None:
        """The held whole lines as one batch (one copy of the bytes); the partial last line stays held."""
        parts = self._parts
        for k in range(len(parts) - 1, -1, -1):
            end = parts[k].rfind(b"\n")
            if end >= 0:
                break
        else:
            return None  # no line end yet: one very long line
        rest = parts[k][end + 1 :]
        lines = _join_lines([*parts[:k], parts[k][:end]])
        self._parts, self._size = ([rest], len(rest)) if rest else ([], 0)
        del parts
        return self._batch(lines)

    def _take_header(self, chunk: bytes) -> bytes:
        """Collect header bytes until three lines are complete; return what follows them."""
        self._header.append(chunk)
        data = b"".join(self._header)
        ends: list[int] = []
        at = -1
        while len(ends) < 3:
            at = data.find(b"\n", at + 1)
            if at < 0:
                self._header = [data]
                return b""
            ends.append(at)
        lines = [data[: ends[0]], data[ends[0] + 1 : ends[1]], data[ends[1] + 1 : ends[2]]]
        self._header = []
        self._set_columns(lines)
        return data[ends[2] + 1 :]

    def _set_columns(self, lines: list[bytes]) -> None:
        try:
            decoded = [orjson.loads(line) if line else None for line in lines]
        except orjson.JSONDecodeError as exc:
            raise QueryError("The Druid SQL endpoint sent a header that is not JSON.", sql=self.sql) from exc
        if isinstance(decoded[0], dict):  # an error object where the header belongs
            raise self._trailer_error(decoded[0])
        self.columns = column_specs(*decoded)

    def end(self) -> list[Batch]:
        """The body is over: return the last batch, or raise if the answer is cut short or failed.

        :raises QueryError: no header, or no end-of-answer mark (the query failed after rows were sent), or
            an error object where rows belong.
        """
        self._ended = True
        if self.columns is None:
            if not b"".join(self._header).strip():
                raise QueryError("The Druid SQL endpoint sent an empty answer.", sql=self.sql)
            self._set_columns([*b"".join(self._header).split(b"\n"), b"", b""][:3])
            if self.columns is None:  # pragma: no cover - _set_columns raises or sets
                raise QueryError("The Druid SQL endpoint sent no type header lines.", sql=self.sql)
        parts, self._parts, self._size = self._parts, [], 0
        batch = self._batch(_join_lines(parts))  # an error trailer is reported before the missing end mark
        if self._tail != b"\n\n":
            raise QueryError(
                "The Druid SQL answer ended early: the query failed on the server after rows were sent.",
                sql=self.sql,
                hint="Run the query again; if it keeps failing, narrow it (LIMIT, WHERE).",
            )
        return [batch] if batch is not None else []

    def _batch(self, lines: bytes) -> Batch | None:
        """Whole lines (no line end at either edge) as a batch, after checking they are rows."""
        if not lines:
            return None
        # A line that is an object is an error trailer; '{' alone is a fast byte search, and only when some
        # string holds one is the slower two-byte search needed.
        if not lines.startswith(b"[") or (b"{" in lines and b"\n{" in lines):
            self._raise_bad_line(lines)
        assert self.columns is not None
        return Batch(self.columns, (), -1, array_lines=lines)

    def _raise_bad_line(self, lines: bytes) -> None:
        for line in lines.split(b"\n"):
            if line.startswith(b"["):
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                raise self._trailer_error(value)
            break
        raise QueryError("The Druid SQL endpoint sent rows that are not JSON arrays.", sql=self.sql)

    def _trailer_error(self, body: dict[str, Any]) -> PMError:
        """An error object sent in place of rows: the query failed after the answer began."""
        return from_druid(500, body, sql=self.sql)
