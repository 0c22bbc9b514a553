"""The one place query results become Arrow tables and pandas DataFrames, driven by the declared SQL types.

Whatever transport ran the query, a column's *declared* type (from the Avatica signature, Druid's type headers
or JDBC metadata) picks its Arrow type from :data:`ARROW_TYPES`, and its pandas dtype from the Arrow type:

============================  ===========================  =====================================
SQL type                      Arrow                        pandas
============================  ===========================  =====================================
TIMESTAMP                     timestamp[ms, tz=UTC]        datetime64[ms, UTC]
DATE                          date32                       datetime64[s] (pandas' own choice)
BIGINT/INTEGER/SMALLINT/...   int64                        Int64 (nullable)
DOUBLE/FLOAT/REAL/DECIMAL     float64                      float64 (NULL → NaN)
VARCHAR/CHAR/other            string                       string (pd.StringDtype, pyarrow)
BOOLEAN                       bool                         boolean (nullable)
ARRAY<x>                      list<x>                      object (Python lists, None for NULL)
============================  ===========================  =====================================

Empty results keep their columns and dtypes. Batches arrive either as sequences of wire values (epoch ms for
timestamps, JSON scalars, lists) or as Arrow arrays; both go through :func:`batch_to_arrow`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from .errors import QueryError

__all__ = [
    "ARROW_TYPES",
    "arrow_schema",
    "arrow_type",
    "batch_to_arrow",
    "batches_to_table",
    "rechunk",
    "to_pandas",
    "write_parquet",
]

_TS = pa.timestamp("ms", tz="UTC")

# Declared SQL type name -> Arrow type. Anything unlisted (OTHER, COMPLEX<...>, VARBINARY as base64) is a
# string.
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
    "VARCHAR": pa.string(),
    "CHAR": pa.string(),
    "STRING": pa.string(),
}

_PANDAS_TYPES = {
    pa.int64(): pd.Int64Dtype(),
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
        return pa.list_(ARROW_TYPES.get(_base(element), pa.string()))
    return ARROW_TYPES.get(name, pa.string())


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
        if isinstance(first, str):
            return pa.array(values, pa.string()).cast(pa.date32())
        return pa.array(values, pa.int32()).cast(target)
    if pa.types.is_string(target):
        try:
            return pa.array(values, target)
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # OTHER/COMPLEX columns: JSON values shown as text
            return pa.array([v if v is None or isinstance(v, str) else str(v) for v in values], target)
    return pa.array(values, target)


def _convert(column: Any, target: pa.DataType, name: str) -> pa.Array:
    try:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if isinstance(column, pa.Array):
            if column.type.equals(target):
                return column
            if (
                pa.types.is_timestamp(target)
                and pa.types.is_timestamp(column.type)
                and column.type.tz is None
            ):
                column = column.cast(pa.timestamp("ms"))
            return column.cast(target)
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
    if batch.json_lines is not None:
        return _from_json_lines(batch.json_lines, schema)
    arrays = [_convert(data, field.type, field.name) for data, field in zip(batch.data, schema, strict=True)]
    return [pa.RecordBatch.from_arrays(arrays, schema=schema)]


def _from_json_lines(lines: bytes, schema: pa.Schema) -> list[pa.RecordBatch]:
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        # 1 MiB blocks: pyarrow parses blocks on several threads.
        table = pa_json.read_json(
            pa.BufferReader(lines),
            parse_options=options,
            read_options=pa_json.ReadOptions(block_size=1 << 20),
        )
    except pa.ArrowInvalid as exc:
        raise QueryError(
            f"The server's rows do not fit their declared types: {exc}",
            hint="Cast the column explicitly in SQL (CAST(x AS VARCHAR)).",
        ) from exc
    if table.schema.names != schema.names:
        table = table.select(schema.names)
    return table.cast(schema).to_batches() or [pa.RecordBatch.from_pylist([], schema=schema)]


def batches_to_table(columns: Sequence[Any], batches: Iterable[Any]) -> pa.Table:
    """Collect transport batches into one Arrow table (no batches: an empty table of the declared types)."""
    schema = arrow_schema(columns)
    return pa.Table.from_batches([part for b in batches for part in _record_batches(b)], schema=schema)


def rechunk(columns: Sequence[Any], batches: Iterable[Any], rows: int) -> Iterator[pa.Table]:
    """Regroup transport batches into Arrow tables of at most *rows* rows (at least one, possibly empty)."""
    if rows < 1:
        raise ValueError(f"chunk_rows must be a positive number of rows, got {rows}")
    schema = arrow_schema(columns)
    pending: list[pa.RecordBatch] = []
    held = 0
    emitted = False
    for record in (part for batch in batches for part in _record_batches(batch)):
        while record.num_rows:
            take = min(rows - held, record.num_rows)
            pending.append(record.slice(0, take))
            record = record.slice(take)
            held += take
            if held == rows:
                yield pa.Table.from_batches(pending, schema=schema)
                emitted = True
                pending, held = [], 0
    if pending or not emitted:
        yield pa.Table.from_batches(pending, schema=schema)


def to_pandas(table: pa.Table, *, consume: bool = False) -> pd.DataFrame:
    """Arrow table → DataFrame with the dtypes of the module table (lists become Python lists).

    :param consume: free the table's buffers column by column while converting (lower peak memory); the
        table must not be used afterwards.
    """
    names = table.schema.names
    list_columns = [i for i, f in enumerate(table.schema) if pa.types.is_list(f.type)]
    lists = {i: table.column(i).to_pylist() for i in list_columns}
    for i in reversed(list_columns):
        table = table.remove_column(i)
    frame = table.to_pandas(types_mapper=_PANDAS_TYPES.get, split_blocks=True, self_destruct=consume)
    del table
    for i in list_columns:
        column = pd.Series(lists.pop(i), index=frame.index, dtype=object)
        frame.insert(i, names[i], column, allow_duplicates=True)
    return frame


def write_parquet(
    columns: Sequence[Any], batches: Iterable[Any], path: Any, *, chunk_rows: int = 65536
) -> int:
    """Stream transport batches into a Parquet file (one row group per chunk); return the row count.

    Only one chunk is held at a time, so the result never sits in memory as a whole.
    """
    import pyarrow.parquet as pq

    schema = arrow_schema(columns)
    rows = 0
    with pq.ParquetWriter(path, schema) as writer:
        for table in rechunk(columns, batches, chunk_rows):
            writer.write_table(table)
            rows += table.num_rows
    return rows
