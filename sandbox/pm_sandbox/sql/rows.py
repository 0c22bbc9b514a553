"""Columnar JSON encoding of result rows for both SQL protocols (no Python object per cell).

Rows are turned into JSON text by DuckDB's vectorised ``json_array`` / ``json_object``: the SQL comes from
:func:`row_json_sql`. The Druid SQL API puts it in a projection over the query itself (one DuckDB
pipeline, each row's text ending with its separator, so a batch's string buffer *is* the response body:
:func:`text_buffer`); Avatica frames encode a slice of a finished result (:func:`encode_rows`, on a
private in-memory DuckDB), each row's text ending with a comma, so a frame's rows array is a slice of
the batch's string buffer (:func:`frame_rows`). A Python loop over cells
(``to_pylist`` + ``orjson`` per row) would cost several seconds per million rows; it is used only for
tables of a few thousand cells, where one DuckDB query would cost more than the loop.

Value conventions per Druid SQL type (``mode`` ``"avatica"`` / ``"druid"``):

=========  ==========================  =================================================
type       avatica                     druid
=========  ==========================  =================================================
TIMESTAMP  epoch milliseconds (LONG)   ISO-8601 UTC string ``2025-01-06T08:38:03.516Z``
DATE       days since 1970-01-01       ISO-8601 string at midnight UTC
DOUBLE     number, ``null`` for NaN/∞  same
ARRAY      JSON array                  JSON array, or its JSON text if ``stringify``
=========  ==========================  =================================================
"""

from __future__ import annotations

import math
import threading
from typing import Any

import duckdb
import numpy as np
import orjson
import pyarrow as pa

from .types import Column, by_druid

__all__ = ["csv_sql", "encode_rows", "frame_rows", "row_json_sql", "text_buffer"]

_local = threading.local()
_base: duckdb.DuckDBPyConnection | None = None
_base_lock = threading.Lock()


def _cursor() -> duckdb.DuckDBPyConnection:
    global _base
    cur = getattr(_local, "cursor", None)
    if cur is None:
        with _base_lock:
            if _base is None:
                _base = duckdb.connect(":memory:")
        cur = _base.cursor()
        _local.cursor = cur
    return cur


def _expr(c: str, col: Column, mode: str, stringify: bool, duck_type: str = "") -> str:
    """The SQL expression giving the JSON-ready value of column expression *c* of type *col*."""
    if col.type == "TIMESTAMP":
        if "TIME ZONE" in duck_type.upper():
            c = f"make_timestamp(epoch_us({c}))"  # the UTC wall clock, whatever the session zone
        if mode == "druid":
            return f"strftime({c}, '%Y-%m-%dT%H:%M:%S.%gZ')"
        # epoch_ms of the microsecond TIMESTAMP: DuckDB 2.0 cannot take epoch_ms of TIMESTAMP_MS (the
        # Arrow timestamp[ms] of a normalised result), nor of TIMESTAMP_S / TIMESTAMP_NS.
        return f"epoch_ms(CAST({c} AS TIMESTAMP))"
    if col.type == "DATE":
        if mode == "avatica":
            return f"CAST({c} - DATE '1970-01-01' AS INTEGER)"
        return f"strftime({c}, '%Y-%m-%dT00:00:00.000Z')"
    if col.type in ("DOUBLE", "FLOAT"):
        return f"CASE WHEN isfinite({c}) THEN CAST({c} AS {col.type}) END"
    if col.type == "ARRAY" and stringify and mode == "druid":
        return f"CAST(to_json({c}) AS VARCHAR)"
    if duck_type == "ENUM" and mode == "druid":
        return c  # JSON text of an ENUM value is its string: no cast needed
    cast = by_druid(col.type).json_cast
    if duck_type and cast is not None and duck_type.upper() != cast:
        return f"CAST({c} AS {cast})"  # HUGEINT, ENUM, ... → the Druid type's own
    return c


def row_json_sql(
    columns: list[Column],
    *,
    mode: str,
    objects: bool = False,
    stringify: bool = False,
    terminator: str = "",
    sources: list[str] | None = None,
    duck_types: list[str] | None = None,
) -> str:
    """A SQL expression giving each row as JSON text (array, or object by name) followed by *terminator*.

    :param sources: the SQL expression of each column (default ``c0``, ``c1``, ...).
    :param duck_types: each column's DuckDB type, when the values are not yet normalised.
    """
    sources = sources or [f"c{i}" for i in range(len(columns))]
    duck_types = duck_types or [""] * len(columns)
    exprs = [
        _expr(src, col, mode, stringify, dt)
        for src, col, dt in zip(sources, columns, duck_types, strict=True)
    ]
    if objects:
        args = ", ".join(
            "'" + col.name.replace("'", "''") + "', " + e for col, e in zip(columns, exprs, strict=True)
        )
        text = f"CAST(json_object({args}) AS VARCHAR)" if columns else "'{}'"
    else:
        text = f"CAST(json_array({', '.join(exprs)}) AS VARCHAR)" if columns else "'[]'"
    return f"{text} || {_sql_string(terminator)}" if terminator else text


def _sql_string(text: str) -> str:
    return " || ".join(f"chr({ord(ch)})" for ch in text) if text else "''"


def encode_rows(
    table: pa.Table,
    columns: list[Column],
    *,
    mode: str,
    objects: bool = False,
    stringify: bool = False,
    terminator: str = "",
) -> pa.StringArray:
    """One JSON text per row of *table*: an array (``[v1, v2]``) or, with *objects*, an object by name,
    each followed by *terminator*.

    A small Avatica table (up to ``_SMALL_CELLS`` cells of plain types) is written by orjson: a DuckDB
    encoding query has a fixed cost however few its rows, orjson a small one per cell (bench/README.md).
    Same values either way.
    """
    if table.num_rows == 0:
        return pa.array([], pa.string())
    if mode == "avatica" and not objects and 0 < table.num_rows * table.num_columns <= _SMALL_CELLS:
        values = [_avatica_values(column) for column in table.columns]
        if all(v is not None for v in values):
            rows = zip(*values, strict=True)
            return pa.array([orjson.dumps(list(row)).decode() + terminator for row in rows], pa.string())
    text = row_json_sql(columns, mode=mode, objects=objects, stringify=stringify, terminator=terminator)
    sql = f"SELECT {text} AS j FROM t"
    cur = _cursor()
    cur.register("t", table.rename_columns([f"c{i}" for i in range(table.num_columns)]))
    try:
        return cur.sql(sql).to_arrow_table()["j"].combine_chunks()
    finally:
        cur.unregister("t")


_SMALL_CELLS = 4096


def _avatica_values(column: pa.ChunkedArray) -> list[Any] | None:
    """The column's JSON-ready Python values in Avatica's conventions (see :func:`_expr`), or ``None`` for a
    type left to DuckDB (FLOAT, arrays, nested values)."""
    t = column.type
    values: list[Any]
    if pa.types.is_timestamp(t) and t.unit == "ms" and t.tz is None:
        values = column.cast(pa.int64()).to_pylist()  # epoch milliseconds
        return values
    if pa.types.is_date32(t):
        values = column.cast(pa.int32()).to_pylist()  # days since 1970-01-01
        return values
    if pa.types.is_float64(t):
        return [v if v is None or math.isfinite(v) else None for v in column.to_pylist()]
    if t in (pa.int64(), pa.string(), pa.bool_()):
        values = column.to_pylist()
        return values
    return None


def csv_sql(columns: list[Column], sources: list[str], duck_types: list[str]) -> list[str]:
    """Per column, the SQL expression of its CSV cell text source (ISO times, JSON text for arrays)."""
    exprs = []
    for src, col, dt in zip(sources, columns, duck_types, strict=True):
        if col.type in ("ARRAY", "OTHER"):
            exprs.append(f"CAST(to_json({src}) AS VARCHAR)")
        elif dt == "ENUM":
            exprs.append(f"CAST({src} AS VARCHAR)")
        else:
            exprs.append(_expr(src, col, "druid", False, dt))
    return exprs


def text_buffer(lines: pa.Array) -> memoryview:
    """The concatenated bytes of a string array's values, without a copy (nulls contribute nothing)."""
    if len(lines) == 0:
        return memoryview(b"")
    wide = pa.types.is_large_string(lines.type)
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
    first, last = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    return memoryview(lines.buffers()[2])[first:last]


def frame_rows(lines: pa.Array) -> bytes:
    """The JSON array of a frame's rows from their texts as :func:`encode_rows` gives them with
    ``terminator=","``: the string buffer's slice, its last comma turned into the closing bracket."""
    if len(lines) == 0:
        return b"[]"
    return b"[" + text_buffer(lines)[:-1] + b"]"
