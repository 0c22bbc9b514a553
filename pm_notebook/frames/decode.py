"""The response parser: a transport's batches become Arrow record batches typed by the declared columns.

Batches arrive as sequences of wire values (epoch ms or ISO text for timestamps, JSON scalars, lists or their
JSON text), as Arrow arrays, or as JSON-array lines (Druid's ``arrayLines``); all go through
:func:`batch_to_arrow` (:func:`record_batches` keeps a batch's parts apart), each column cast to the Arrow
type of :mod:`.types`.

JSON-array lines take a fast path: once the brackets around each line are turned into field separators,
``[1,"a,b",null]`` is a CSV row that pyarrow's multithreaded CSV reader parses straight into typed columns
(unquoted ``null`` is NULL, a quoted ``"null"`` stays text, escaped quotes and backslashes are decoded).
Lines the CSV reading cannot represent exactly (JSON escapes of control characters or by code point, nested
values) are parsed as JSON instead; both give the same table.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from .._workers import run_interruptible
from ..errors import QueryError
from ._pool import POOL
from .types import TIMESTAMP, arrow_schema

__all__ = ["batch_to_arrow", "record_batches"]


def _from_values(values: Sequence[Any], target: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(target):
        first = next((v for v in values if v is not None), None)
        if isinstance(first, str):
            # ISO text: with a zone suffix ("...Z") it casts directly; without one it is UTC wall clock.
            text = pa.array(values, pa.string())
            zoned = pc.any(pc.match_substring_regex(text, r"(Z|[+-]\d\d:?\d\d)$")).as_py()
            return text.cast(target) if zoned else text.cast(pa.timestamp("ms")).cast(target)
        return pa.array(values, pa.int64()).cast(target)
    if pa.types.is_date32(target):
        first = next((v for v in values if v is not None), None)
        if isinstance(first, str):  # "2015-09-12" or Druid's "2015-09-12T00:00:00.000Z"
            return _from_values(values, TIMESTAMP).cast(target)
        return pa.array(values, pa.int32()).cast(target)
    if pa.types.is_list(target):
        # Druid stringifies arrays by default: '["a","b"]' is the JSON text of a list.
        values = [orjson.loads(v) if isinstance(v, str) else v for v in values]
        return pa.array(values, target)
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        try:
            return pa.array(values, target)
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # OTHER/COMPLEX columns: JSON values shown as text
            return pa.array([v if v is None or isinstance(v, str) else str(v) for v in values], target)
    if pa.types.is_floating(target) and any(isinstance(v, str) for v in values):
        # JSON has no NaN or infinity: Druid writes them as the strings "NaN", "Infinity", "-Infinity"
        # (e.g. the quantile of an empty sketch)
        return pa.array([_FLOAT_WORDS.get(v, v) if isinstance(v, str) else v for v in values], target)
    return pa.array(values, target)


_FLOAT_WORDS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _convert(column: Any, target: pa.DataType, name: str) -> pa.Array | pa.ChunkedArray:
    """A column (Arrow array, chunked or not, or Python values) as *target*; chunks stay chunks (no copy)."""
    try:
        if isinstance(column, (pa.Array, pa.ChunkedArray)):
            if column.type.equals(target):
                return column
            if (
                pa.types.is_timestamp(target)
                and pa.types.is_timestamp(column.type)
                and column.type.tz is None
            ):
                column = pc.cast(column, pa.timestamp("ms"), memory_pool=POOL)
            elif pa.types.is_date32(target) and pa.types.is_integer(column.type):
                column = pc.cast(column, pa.int32(), memory_pool=POOL)  # epoch days
            return pc.cast(column, target, memory_pool=POOL)
        return _from_values(column, target)
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        pa.ArrowNotImplementedError,
        TypeError,
        ValueError,
        OverflowError,
    ) as exc:
        raise QueryError(
            f"Column {name!r}: the server's values do not fit its declared type {target}: {exc}",
            hint="Cast the column explicitly in SQL (CAST(x AS VARCHAR)).",
        ) from exc


def batch_to_arrow(batch: Any) -> pa.RecordBatch:
    """Turn one transport batch into an Arrow record batch typed by the declared columns."""
    parts = record_batches(batch)
    return parts[0] if len(parts) == 1 else pa.concat_batches(parts)


def record_batches(batch: Any) -> list[pa.RecordBatch]:
    """One transport batch as typed record batches (chunked columns give one per chunk, no copy)."""
    schema = arrow_schema(batch.columns)
    if batch.array_lines is not None:
        return _from_array_lines(batch.array_lines, schema, epoch_times=getattr(batch, "epoch_times", False))
    arrays = [_convert(data, field.type, field.name) for data, field in zip(batch.data, schema, strict=True)]
    return _as_batches(arrays, schema)


def _as_batches(arrays: list[Any], schema: pa.Schema) -> list[pa.RecordBatch]:
    """Record batches of typed columns; chunked columns give one batch per common chunk (slices, no copy)."""
    if any(isinstance(a, pa.ChunkedArray) for a in arrays):
        batches: list[pa.RecordBatch] = pa.Table.from_arrays(arrays, schema=schema).to_batches()
        if batches:
            return batches
        arrays = [pa.array([], f.type) for f in schema]
    return [pa.RecordBatch.from_arrays(arrays, schema=schema)]


_CSV_MIN_BYTES = 1 << 16
# A JSON escape the CSV reading would not decode: control characters and \uXXXX.
_JSON_ONLY_ESCAPE = re.compile(rb"\\[bfnrtu]")


def _from_array_lines(lines: bytes, schema: pa.Schema, *, epoch_times: bool = False) -> list[pa.RecordBatch]:
    """Newline-separated JSON arrays (one row each, in column order) → typed record batches.

    :param epoch_times: TIMESTAMP and DATE values are epoch ms and epoch days (Avatica), not ISO text.
    """
    if not lines:
        return [pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)]
    # Small slices: JSON decoding costs less than starting the CSV reader's threads.
    if len(lines) > _CSV_MIN_BYTES and len(schema) and lines[:1] == b"[" and lines[-1:] == b"]":
        escaped = b"\\" in lines
        if not (escaped and _JSON_ONLY_ESCAPE.search(lines)):
            try:
                table = _array_lines_as_csv(lines, schema, escaped=escaped, epoch_times=epoch_times)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, QueryError):
                table = None  # e.g. a nested array: read it as JSON below
            if table is not None:
                arrays = [_convert(table.column(i), f.type, f.name) for i, f in enumerate(schema)]
                return _as_batches(arrays, schema)
    try:
        values = orjson.loads(b"[" + lines.replace(b"\n", b",") + b"]")
    except orjson.JSONDecodeError as exc:
        raise QueryError(f"The server's rows are not valid JSON: {exc}") from None
    if any(not isinstance(row, list) or len(row) != len(schema) for row in values):
        raise QueryError(f"The server sent rows that do not have the {len(schema)} declared columns.")
    columns = list(zip(*values, strict=True)) if values else [() for _ in schema]
    arrays = [_convert(list(col), f.type, f.name) for col, f in zip(columns, schema, strict=True)]
    return [pa.RecordBatch.from_arrays(arrays, schema=schema)]


def _csv_type(target: pa.DataType, epoch_times: bool = False) -> pa.DataType:
    """What the CSV reader should parse a column as (then cast to *target* by :func:`_convert`)."""
    if epoch_times and (pa.types.is_timestamp(target) or pa.types.is_date(target)):
        return pa.int64()  # epoch ms or days: cast by _convert
    if pa.types.is_timestamp(target) or pa.types.is_date(target):
        return pa.timestamp("ms", tz="UTC")  # Druid sends DATE as an ISO timestamp at midnight
    if pa.types.is_list(target):
        return pa.string()  # the array's JSON text
    return target


def _is_text(target: pa.DataType) -> bool:
    return bool(pa.types.is_string(target) or pa.types.is_large_string(target) or pa.types.is_list(target))


_NO_BYTES = pa.scalar(None, pa.binary())


def _edge_values(text: Any, first: bool, last: bool, target: pa.DataType) -> Any:
    """The first/last field of each line without the line's bracket (and a time's quotes), as text.

    Byte slicing on a binary view: these values are ASCII (numbers, ``true``, ISO times, ``null``). The CSV
    reader already unquoted a last field (it starts with its quote), not a first one (it starts with '[').
    One slice and one comparison per value; NULLs are put back only when some value is ``null``.
    """
    pool = POOL
    raw = text.cast(pa.binary())  # a view: same buffers
    quoted = first and pa.types.is_timestamp(target)  # an ISO time still in its quotes
    cut = int(last) + int(quoted)  # bytes after the value: its line's ']', its closing quote
    data = pc.binary_slice(raw, int(first) + int(quoted), -cut if cut else 1 << 30, memory_pool=pool)
    null = pa.scalar((b"[" if first else b"") + b"null" + (b"]" if last else b""), pa.binary())
    is_null = pc.equal(raw, null, memory_pool=pool)
    if pc.any(is_null).as_py():
        data = pc.if_else(is_null, _NO_BYTES, data, memory_pool=pool)
    return data.cast(pa.string())


def _off_main_thread(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``, on a worker thread when called from the main thread.

    On the main thread, pyarrow's CSV reader installs a SIGINT handler of its own for the read: a Ctrl-C then
    becomes an ``ArrowCancelled`` error, and pyarrow sends the signal again so that a KeyboardInterrupt
    follows, an instant later, wherever the main thread happens to be (in the cleanup of a Parquet file being
    written, or after the query has already been reported cancelled). Off the main thread pyarrow leaves
    signals alone: the main thread waits here, and a Ctrl-C is one KeyboardInterrupt, raised here.
    """
    if threading.current_thread() is not threading.main_thread():
        return call(*args, **kwargs)
    return run_interruptible(lambda: call(*args, **kwargs))


def _array_lines_as_csv(
    lines: bytes, schema: pa.Schema, *, escaped: bool, epoch_times: bool = False
) -> pa.Table:
    n = len(schema)
    names = [f"c{i}" for i in range(n)]
    read_types = [_csv_type(f.type, epoch_times) for f in schema]
    types = dict(zip(names, read_types, strict=True))
    # The line's brackets: when the first and last values cannot hold a comma or quote (numbers, times,
    # booleans), '[' and ']' simply stay in the first and last fields and are trimmed below; otherwise
    # "[a,b]\n[c,d]" becomes ",a,b,\n,c,d,": each row gains an empty first and last field, not read.
    trim = not _is_text(schema[0].type) and not _is_text(schema[-1].type)
    if trim:
        data: Any = lines
        read, include = names, names
        types[names[0]] = types[names[-1]] = pa.string()
    else:
        data = bytearray(lines.replace(b"]\n[", b",\n,"))
        data[0] = data[-1] = ord(",")
        read, include = ["first", *names, "last"], names
    table = _off_main_thread(
        pa_csv.read_csv,
        pa.py_buffer(data),
        read_options=pa_csv.ReadOptions(column_names=read, block_size=1 << 20, use_threads=False),
        parse_options=pa_csv.ParseOptions(
            escape_char="\\" if escaped else False, double_quote=False, newlines_in_values=False
        ),
        convert_options=pa_csv.ConvertOptions(
            column_types=types,
            include_columns=include,
            null_values=["null"],
            true_values=["true"],
            false_values=["false"],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
        memory_pool=POOL,
    )
    if trim:
        for i in {0, n - 1}:
            text = _edge_values(table.column(i), i == 0, i == n - 1, read_types[i])
            table = table.set_column(i, names[i], _convert(text, read_types[i], schema[i].name))
    for i, field in enumerate(schema):
        if pa.types.is_list(field.type):
            texts = table.column(i).to_pylist()
            lists = pa.array([None if t is None else orjson.loads(t) for t in texts], field.type)
            table = table.set_column(i, names[i], lists)
    return table
