"""A result's outputs: a pandas DataFrame with the dtypes of the type table (:mod:`.types`), a polars
DataFrame (the ``polars`` extra), a Parquet file written all or nothing."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from ..errors import ConfigurationError, MissingDependency, QueryError
from ._pool import POOL
from .rows import Rows, chunks, parse
from .types import PANDAS_TYPES

if TYPE_CHECKING:  # pragma: no cover - polars is an optional extra, imported when used
    import polars as pl

__all__ = [
    "parquet_target",
    "require_polars",
    "to_pandas",
    "to_polars",
    "write_parquet",
    "write_rows",
    "write_table_parquet",
]


def to_pandas(table: pa.Table, *, consume: bool = False, transport: str | None = None) -> pd.DataFrame:
    """Arrow table → DataFrame with the dtypes of the type table, :mod:`.types` (lists become Python lists).

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
        memory_pool=POOL, types_mapper=PANDAS_TYPES.get, split_blocks=True, self_destruct=consume
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
    """Arrow table → polars DataFrame with the types of :mod:`.types`' polars table (zero-copy where it says).

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
