"""The one place query results become Arrow tables and pandas DataFrames, driven by the declared SQL types.

One job per module, in the order a result takes them:

- :mod:`.types`: the type table (declared SQL type → Arrow type → pandas dtype, and polars'), the one
  place a column's type is decided;
- :mod:`.decode`: the response parser, a transport's batches (wire values, Arrow arrays, or Druid's
  JSON-array lines through pyarrow's CSV reader) as record batches of those types;
- :mod:`.rows`: a result as :class:`Rows`, read one batch ahead on the query's worker threads
  (:mod:`pm_notebook._workers`) with a row cap and progress, and regrouped as tables or chunks;
- :mod:`.outputs`: pandas, polars and Parquet outputs of a table or of rows.

The names below are the package's whole surface (the connection, the offline cache and the DB-API layer use
them); :mod:`._pool` is the Arrow memory pool results are parsed and converted in.
"""

from __future__ import annotations

from .decode import batch_to_arrow
from .outputs import (
    parquet_target,
    require_polars,
    to_pandas,
    to_polars,
    write_parquet,
    write_rows,
    write_table_parquet,
)
from .rows import Rows, batches_to_table, chunks, collect, parse, rechunk, to_table
from .types import ARROW_TYPES, arrow_schema, arrow_type

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
