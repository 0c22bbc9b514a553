"""The one place query results become Arrow tables and pandas DataFrames, driven by the declared SQL types.

It is one concept, longer than most modules: the type table and every shape a result takes (Arrow batches,
a table, pandas, polars, bounded chunks, a Parquet file) read from it; split, the table would be scattered.

Whatever transport ran the query, a column's *declared* type (from the Avatica signature, Druid's type headers
or JDBC metadata) picks its Arrow type from :data:`ARROW_TYPES`, and its pandas dtype from the Arrow type:

============================  ===========================  =====================================
SQL type                      Arrow                        pandas
============================  ===========================  =====================================
TIMESTAMP                     timestamp[ms, tz=UTC]        datetime64[ms, UTC]
DATE                          date32                       datetime64[s] (pandas' own choice)
BIGINT/INTEGER/SMALLINT/...   int64                        Int64 (nullable)
DOUBLE/FLOAT/REAL/DECIMAL     float64                      float64 (NULL → NaN)
VARCHAR/CHAR/other            large_string                 string (pd.StringDtype, pyarrow)
BOOLEAN                       bool                         boolean (nullable)
ARRAY<x>                      list<x>                      object (Python lists, None for NULL)
============================  ===========================  =====================================

:func:`to_polars` makes a polars DataFrame of the same table (the ``polars`` extra), NULLs kept as nulls in
every column (floats too: no NaN):

============================  ===========================  =====================================
SQL type                      polars                       from the Arrow buffers
============================  ===========================  =====================================
TIMESTAMP                     Datetime("ms", "UTC")        zero-copy
DATE                          Date                         zero-copy
BIGINT/INTEGER/SMALLINT/...   Int64                        zero-copy
DOUBLE/FLOAT/REAL/DECIMAL     Float64 (NULL stays null)    zero-copy
BOOLEAN                       Boolean                      zero-copy (both are bit-packed)
VARCHAR/CHAR/other            String                       copied: polars keeps text as string views
ARRAY<x>                      List(x)                      offsets widened to 64 bits; numbers zero-copy
============================  ===========================  =====================================

Text is ``large_string`` (64-bit offsets) from the parse on, the storage pandas keeps for pyarrow-backed
strings: the DataFrame takes the columns as they are (32-bit ``string`` columns would each get a new offsets
buffer on the way, 24 MB for three text columns of a 1M-row result). Empty results keep their columns and
dtypes. Batches arrive as sequences of wire values (epoch ms or ISO text for timestamps, JSON scalars, lists
or their JSON text), as Arrow arrays, or as JSON-array lines (Druid's ``arrayLines``); all go through
:func:`batch_to_arrow`.

JSON-array lines take a fast path: once the brackets around each line are turned into field separators,
``[1,"a,b",null]`` is a CSV row that pyarrow's multithreaded CSV reader parses straight into typed columns
(unquoted ``null`` is NULL, a quoted ``"null"`` stays text, escaped quotes and backslashes are decoded).
Lines the CSV reading cannot represent exactly (JSON escapes of control characters or by code point, nested
values) are parsed as JSON instead; both give the same table.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from .errors import ConfigurationError, MissingDependency, QueryError

if TYPE_CHECKING:  # pragma: no cover - polars is an optional extra, imported when used
    import polars as pl

__all__ = [
    "ARROW_TYPES",
    "Rows",
    "arrow_schema",
    "arrow_type",
    "batch_to_arrow",
    "batches_to_table",
    "chunks",
    "collect",
    "parquet_target",
    "parse",
    "rechunk",
    "require_polars",
    "to_pandas",
    "to_polars",
    "to_table",
    "write_parquet",
    "write_rows",
    "write_table_parquet",
]

_TS = pa.timestamp("ms", tz="UTC")
_TEXT = pa.large_string()


def _result_pool() -> pa.MemoryPool:
    """The Arrow memory pool that results are parsed and converted in.

    jemalloc where this pyarrow has it, unless the user chose a pool (``ARROW_DEFAULT_MEMORY_POOL``):
    pyarrow's default, mimalloc, keeps free pages committed per thread, so a parse holds several times the
    memory of its Arrow data, where jemalloc returns it at the same speed (the figures are in
    bench/README.md). Only the buffers of query results come from it: the process's default pool is left
    alone.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return pa.default_memory_pool()
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return pa.default_memory_pool()


_POOL = _result_pool()

# Declared SQL type name -> Arrow type. Anything unlisted (OTHER, COMPLEX<...>, VARBINARY as base64) is
# text.
ARROW_TYPES: dict[str, pa.DataType] = {
    "TIMESTAMP": _TS,
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": _TS,
    "DATE": pa.date32(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int64(),
    "SMALLINT": pa.int64(),
    "TINYINT": pa.int64(),
    "LONG": pa.int64(),  # Druid native type names, as in typesHeader
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float64(),
    "REAL": pa.float64(),
    "DECIMAL": pa.float64(),
    "NUMERIC": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "VARCHAR": _TEXT,
    "CHAR": _TEXT,
    "STRING": _TEXT,
}


def _int64_array(column: pa.Array | pa.ChunkedArray) -> pd.arrays.IntegerArray:
    """An int64 Arrow column as pandas' ``Int64`` array, copied once.

    pandas' own conversion copies twice (the chunks combined, then the combined values copied again); here
    each chunk's values go straight into one NumPy array (a NULL's slot keeps whatever the Arrow buffer held:
    the mask hides it, as in pandas' conversion).
    """
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    data = np.empty(len(column), dtype=np.int64)
    mask = np.zeros(len(column), dtype=bool)
    at = 0
    for chunk in chunks:
        size = len(chunk)
        if size:
            values = chunk.buffers()[1]
            if values is not None:  # (None only when every value is NULL)
                data[at : at + size] = np.frombuffer(
                    values, dtype=np.int64, count=size, offset=chunk.offset * 8
                )
            if chunk.null_count:
                mask[at : at + size] = pc.is_null(chunk).to_numpy(zero_copy_only=False)
            at += size
    return pd.arrays.IntegerArray(data, mask, copy=False)


class _Int64FromArrow(pd.Int64Dtype):
    """``Int64`` for ``Table.to_pandas``' ``types_mapper``, converting with :func:`_int64_array` (the
    column is released right after when converting with ``self_destruct``); the arrays it makes have the
    plain ``Int64`` dtype."""

    def __from_arrow__(self, array: pa.Array | pa.ChunkedArray) -> pd.arrays.IntegerArray:
        return _int64_array(array)


_PANDAS_TYPES = {
    pa.int64(): _Int64FromArrow(),
    pa.bool_(): pd.BooleanDtype(),
    pa.string(): pd.StringDtype("pyarrow"),
    pa.large_string(): pd.StringDtype("pyarrow"),
}


def _base(type_name: str) -> str:
    # "VARCHAR(10)" / "DECIMAL(10, 2)" -> "VARCHAR" / "DECIMAL"
    return type_name.split("(", 1)[0].strip().upper()


def arrow_type(spec: Any) -> pa.DataType:
    """The Arrow type of a column spec (anything with ``type_name`` and ``element_type``)."""
    name = _base(spec.type_name)
    if name == "ARRAY" or name.endswith(" ARRAY"):
        element = spec.element_type or (name[: -len(" ARRAY")] if name.endswith(" ARRAY") else "VARCHAR")
        return pa.list_(ARROW_TYPES.get(_base(element), _TEXT))
    return ARROW_TYPES.get(name, _TEXT)


def arrow_schema(columns: Sequence[Any]) -> pa.Schema:
    """The Arrow schema of a result's declared columns (duplicate names are kept, as SQL allows them)."""
    return pa.schema([pa.field(c.name, arrow_type(c)) for c in columns])


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
            return _from_values(values, _TS).cast(target)
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
                column = pc.cast(column, pa.timestamp("ms"), memory_pool=_POOL)
            elif pa.types.is_date32(target) and pa.types.is_integer(column.type):
                column = pc.cast(column, pa.int32(), memory_pool=_POOL)  # epoch days
            return pc.cast(column, target, memory_pool=_POOL)
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
    parts = _record_batches(batch)
    return parts[0] if len(parts) == 1 else pa.concat_batches(parts)


def _record_batches(batch: Any) -> list[pa.RecordBatch]:
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
    pool = _POOL
    raw = text.cast(pa.binary())  # a view: same buffers
    quoted = first and pa.types.is_timestamp(target)  # an ISO time still in its quotes
    cut = int(last) + int(quoted)  # bytes after the value: its line's ']', its closing quote
    data = pc.binary_slice(raw, int(first) + int(quoted), -cut if cut else 1 << 30, memory_pool=pool)
    null = pa.scalar((b"[" if first else b"") + b"null" + (b"]" if last else b""), pa.binary())
    is_null = pc.equal(raw, null, memory_pool=pool)
    if pc.any(is_null).as_py():
        data = pc.if_else(is_null, _NO_BYTES, data, memory_pool=pool)
    return data.cast(pa.string())


_WORKERS: ThreadPoolExecutor | None = None
_WORKERS_LOCK = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _WORKERS
    with _WORKERS_LOCK:
        if _WORKERS is None:
            _WORKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pm-frames")
        return _WORKERS


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
    return _workers().submit(call, *args, **kwargs).result()


def _parsed(batches: Iterable[Any], *, ahead: int = 1) -> Generator[list[pa.RecordBatch], None, None]:
    """Each transport batch as record batches, in order, the next batch parsed while this one is handed on.

    A batch of JSON lines is parsed on a worker thread by a single-threaded CSV read, and the next batch is
    taken from the transport (and parsed on the other worker) before this one is waited for: both cores
    stay busy across batch boundaries, where parsing batch after batch with each read spread over both
    cores leaves one idle at every batch's start and end. One batch ahead, because a second is no faster
    (bench/README.md has the figures). Other shapes (Arrow arrays, decoded columns) are converted in place.

    The price: while the server is slow to send the next batch, the one before it waits with it (a batch
    is at most ``batch_rows`` rows). With *ahead* 0 nothing is taken ahead: a row cap then stops at the
    first batch past it. Leaving early (an error, a Ctrl-C, a consumer that stops) calls off a parse not
    yet started; one that is running ends on its worker and its result is dropped.
    """
    if ahead < 1:
        for batch in batches:
            yield _record_batches(batch)
        return
    pending: deque[Future[list[pa.RecordBatch]]] = deque()
    try:
        for batch in batches:
            if batch.array_lines is None:
                converted: Future[list[pa.RecordBatch]] = Future()
                converted.set_result(_record_batches(batch))
                pending.append(converted)
            else:
                pending.append(_workers().submit(_record_batches, batch))
            while pending and (len(pending) > ahead or pending[0].done()):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


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
        memory_pool=_POOL,
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


class Rows:
    """A result as Arrow record batches: its schema, the batches (read once, in order) and whether a row cap
    cut it, known once the batches are read. Live, stored or replayed, every result reaches the shapers
    (:func:`to_table`, :func:`chunks`, :func:`write_rows`) as one of these.
    """

    def __init__(self, schema: pa.Schema, batches: Iterable[pa.RecordBatch], *, truncated: bool = False):
        self.schema = schema
        self.truncated = truncated
        self._batches = iter(batches)

    @classmethod
    def of_table(cls, table: pa.Table, *, truncated: bool = False) -> Rows:
        """The rows of a whole table (a stored result)."""
        return cls(table.schema, table.to_batches(), truncated=truncated)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self._batches


def parse(
    columns: Sequence[Any],
    batches: Iterable[Any],
    *,
    limit: int = 0,
    on_rows: Callable[[int], None] | None = None,
) -> Rows:
    """Transport batches as :class:`Rows` typed by the declared *columns*, with a row cap and progress.

    :param limit: keep at most this many rows (0: all). Reading stops at the first batch that goes past
        the cap, so the caller can close the statement at once; to tell "exactly *limit* rows" from "more
        exist", ask the transport for batches of at most ``limit + 1`` rows.
    :param on_rows: called with the number of rows read so far after each transport batch.
    """
    if limit < 0:
        raise ValueError(f"limit must be 0 (no cap) or a positive number of rows, got {limit}")
    rows = Rows(arrow_schema(columns), ())

    def read() -> Iterator[pa.RecordBatch]:
        total = 0
        # a cap reads no batch ahead, so it stops at the first batch past it
        with contextlib.closing(_parsed(batches, ahead=0 if limit else 1)) as parsed:
            for parts in parsed:
                for part in parts:
                    if limit and total + part.num_rows > limit:
                        rows.truncated = True
                        part = part.slice(0, limit - total)
                    total += part.num_rows
                    yield part
                    if rows.truncated:
                        break
                if on_rows is not None:
                    on_rows(total)
                if rows.truncated:
                    return

    rows._batches = read()
    return rows


def to_table(rows: Rows) -> pa.Table:
    """All of *rows* as one Arrow table (none: an empty table of their schema)."""
    return pa.Table.from_batches(list(rows), schema=rows.schema)


def chunks(rows: Rows, size: int) -> Iterator[pa.Table]:
    """*rows* regrouped into Arrow tables of at most *size* rows (at least one, possibly empty)."""
    if size < 1:
        raise ValueError(f"chunk_rows must be a positive number of rows, got {size}")
    pending: list[pa.RecordBatch] = []
    held = 0
    emitted = False
    for record in rows:
        while record.num_rows:
            take = min(size - held, record.num_rows)
            pending.append(record.slice(0, take))
            record = record.slice(take)
            held += take
            if held == size:
                yield pa.Table.from_batches(pending, schema=rows.schema)
                emitted = True
                pending, held = [], 0
    if pending or not emitted:
        yield pa.Table.from_batches(pending, schema=rows.schema)


def batches_to_table(columns: Sequence[Any], batches: Iterable[Any]) -> pa.Table:
    """Collect transport batches into one Arrow table (no batches: an empty table of the declared types)."""
    return to_table(parse(columns, batches))


def collect(
    columns: Sequence[Any],
    batches: Iterable[Any],
    *,
    limit: int = 0,
    on_rows: Callable[[int], None] | None = None,
) -> tuple[pa.Table, bool]:
    """Collect transport batches into one Arrow table, with a row cap and a progress callback (see
    :func:`parse`); return the table (empty tables keep the declared types) and whether the cap cut it."""
    rows = parse(columns, batches, limit=limit, on_rows=on_rows)
    return to_table(rows), rows.truncated


def rechunk(columns: Sequence[Any], batches: Iterable[Any], rows: int) -> Iterator[pa.Table]:
    """Regroup transport batches into Arrow tables of at most *rows* rows (at least one, possibly empty)."""
    if rows < 1:
        raise ValueError(f"chunk_rows must be a positive number of rows, got {rows}")
    return chunks(parse(columns, batches), rows)


def to_pandas(table: pa.Table, *, consume: bool = False, transport: str | None = None) -> pd.DataFrame:
    """Arrow table → DataFrame with the dtypes of the module table (lists become Python lists).

    :param consume: free the table's buffers column by column while converting (lower peak memory); the
        table must not be used afterwards.
    :param transport: the name of the SQL transport that served the rows, kept in
        ``frame.attrs["transport"]`` (the one place a query's DataFrame records where it came from).
    """
    names = table.schema.names
    list_columns = [i for i, f in enumerate(table.schema) if pa.types.is_list(f.type)]
    lists = {i: table.column(i).to_pylist() for i in list_columns}
    for i in reversed(list_columns):
        table = table.remove_column(i)
    frame: pd.DataFrame = table.to_pandas(
        memory_pool=_POOL, types_mapper=_PANDAS_TYPES.get, split_blocks=True, self_destruct=consume
    )
    del table
    for i in list_columns:
        column = pd.Series(lists.pop(i), index=frame.index, dtype=object)
        frame.insert(i, names[i], column, allow_duplicates=True)
    if transport is not None:
        frame.attrs["transport"] = transport
    return frame


def require_polars() -> Any:
    """The polars module, checked before a query runs for polars output.

    :raises MissingDependency: polars is not installed; the message names the ``polars`` extra.
    """
    try:
        import polars
    except ImportError:  # also when sys.modules["polars"] is None (an import that is switched off)
        raise MissingDependency(
            "polars output needs polars, which is not installed.",
            hint="pip install 'pm-notebook[polars]' (or pip install polars), then restart the kernel.",
        ) from None
    return polars


def to_polars(table: pa.Table) -> pl.DataFrame:
    """Arrow table → polars DataFrame with the types of the module's polars table (zero-copy where it says).

    polars has no ``attrs``: the transport that served a query is :attr:`Connection.fetch`'s ``transport``.

    :raises MissingDependency: polars is not installed (the ``polars`` extra).
    :raises QueryError: two columns share a name (SQL allows it, a polars DataFrame does not).
    """
    polars = require_polars()
    names = table.schema.names
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise QueryError(
            f"The result has more than one column named {', '.join(map(repr, duplicates))}: "
            "a polars DataFrame needs unique column names.",
            hint="Give the columns distinct names in SQL (SELECT a, a AS a_2 ...), or use pandas output.",
        )
    # rechunk=False: a result of several batches keeps its chunks, as the pandas conversion does (polars
    # joins them when an operation needs it, not up front)
    frame: pl.DataFrame = polars.from_arrow(table, rechunk=False)  # a Table always gives a DataFrame
    return frame


def parquet_target(path: Any) -> Path:
    """*path* as a :class:`~pathlib.Path` that can become a Parquet file.

    :raises ConfigurationError: not a path, a directory, or in a folder that does not exist.
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ConfigurationError(
            f"A Parquet target must be a file path (str or pathlib.Path), got {type(path).__name__}.",
            hint="For example conn.to_parquet(sql, 'result.parquet').",
        )
    target = Path(path).expanduser()
    if target.is_dir():
        raise ConfigurationError(
            f"The Parquet target {str(target)!r} is a directory.",
            hint="Give a file name inside it, e.g. Path(folder) / 'result.parquet'.",
        )
    if not target.parent.is_dir():
        raise ConfigurationError(
            f"The folder of the Parquet target, {str(target.parent)!r}, does not exist.",
            hint="Create it first (Path(folder).mkdir(parents=True)) or choose another path.",
        )
    return target


def write_parquet(
    columns: Sequence[Any], batches: Iterable[Any], path: Any, *, chunk_rows: int = 65536
) -> int:
    """Stream transport batches into a Parquet file (one row group per chunk); return the row count.

    :raises ConfigurationError: *path* is not a usable file path (see :func:`parquet_target`).
    """
    return write_rows(parse(columns, batches), path, chunk_rows=chunk_rows)


def write_rows(rows: Rows, path: Any, *, chunk_rows: int = 65536) -> int:
    """Write *rows* into a Parquet file, one row group per chunk of *chunk_rows*; return the row count.

    Only one chunk is held at a time, so the result never sits in memory as a whole. The rows go to a
    temporary file in the target's folder that replaces *path* only once everything is written: an error or
    Ctrl-C midway leaves *path* as it was (absent, or the previous file) and removes the temporary file.

    :raises ConfigurationError: *path* is not a usable file path (see :func:`parquet_target`).
    """
    return _write_tables(rows.schema, chunks(rows, chunk_rows), path)


def write_table_parquet(table: pa.Table, path: Any) -> int:
    """Write a whole Arrow table to a Parquet file at *path*, all or nothing like :func:`write_rows`."""
    return _write_tables(table.schema, [table], path)


def _write_tables(schema: pa.Schema, tables: Iterable[pa.Table], path: Any) -> int:
    import pyarrow.parquet as pq

    target = parquet_target(path)
    rows = 0
    # Same folder, so the final rename is atomic on one file system (and never crosses devices).
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    os.close(fd)
    try:
        # A native file, not a Python one: the writer then never calls back into Python mid-write, where a
        # Ctrl-C would break off a row group and leave the writer unable to close (and to fail again, on a
        # closed file, when collected).
        with pa.OSFile(partial, "wb") as sink, pq.ParquetWriter(sink, schema) as writer:
            for table in tables:
                writer.write_table(table)
                rows += table.num_rows
        if target.exists():  # keep the mode of the file replaced (mkstemp makes it private, 0600)
            os.chmod(partial, target.stat().st_mode & 0o7777)
        os.replace(partial, target)
    except BaseException:  # KeyboardInterrupt included: never leave a partial file behind
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return rows
