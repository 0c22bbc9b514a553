"""The type table: a column's declared SQL type picks its Arrow type, and the Arrow type its pandas dtype.

Whatever transport ran the query, a column's *declared* type (from the Avatica signature, Druid's type headers
or JDBC metadata) picks its Arrow type from :data:`ARROW_TYPES`, and its pandas dtype from the Arrow type
(:data:`PANDAS_TYPES`):

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

:func:`pm_notebook.frames.outputs.to_polars` makes a polars DataFrame of the same table (the ``polars``
extra), NULLs kept as nulls in every column (floats too: no NaN):

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
dtypes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["ARROW_TYPES", "PANDAS_TYPES", "TEXT", "TIMESTAMP", "arrow_schema", "arrow_type"]

TIMESTAMP = pa.timestamp("ms", tz="UTC")
TEXT = pa.large_string()

# Declared SQL type name -> Arrow type. Anything unlisted (OTHER, COMPLEX<...>, VARBINARY as base64) is
# text.
ARROW_TYPES: dict[str, pa.DataType] = {
    "TIMESTAMP": TIMESTAMP,
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": TIMESTAMP,
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
    "VARCHAR": TEXT,
    "CHAR": TEXT,
    "STRING": TEXT,
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


#: an Arrow type -> the pandas dtype its column becomes (others: pandas' own choice)
PANDAS_TYPES = {
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
        return pa.list_(ARROW_TYPES.get(_base(element), TEXT))
    return ARROW_TYPES.get(name, TEXT)


def arrow_schema(columns: Sequence[Any]) -> pa.Schema:
    """The Arrow schema of a result's declared columns (duplicate names are kept, as SQL allows them)."""
    return pa.schema([pa.field(c.name, arrow_type(c)) for c in columns])
