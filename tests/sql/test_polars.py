"""polars output: frames.to_polars and Connection.query_polars, type by type, against the pandas table.

Each SQL type is checked on its own: from wire values (its polars dtype, its NULL, whether the column is the
Arrow buffer itself), and through the sandbox on every transport (the same values and NULLs as
``conn.query``'s pandas frame)."""

from __future__ import annotations

import datetime as dt
import sys

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from _sql_transports import TRANSPORTS

from pm_notebook import frames
from pm_notebook.errors import ConfigurationError, MissingDependency, QueryError
from pm_notebook.sql import Batch, ColumnSpec

# SQL type -> (column spec, wire values with a NULL, polars dtype, values as polars gives them, zero-copy)
TYPES = {
    "TIMESTAMP": (
        ColumnSpec("t", "TIMESTAMP"),
        [1442016000000, None],
        pl.Datetime("ms", "UTC"),
        [dt.datetime(2015, 9, 12, tzinfo=dt.timezone.utc), None],
        True,
    ),
    "DATE": (ColumnSpec("d", "DATE"), [16690, None], pl.Date, [dt.date(2015, 9, 12), None], True),
    "BIGINT": (ColumnSpec("n", "BIGINT"), [2**62, None], pl.Int64, [2**62, None], True),
    "DOUBLE": (ColumnSpec("x", "DOUBLE"), [0.5, None], pl.Float64, [0.5, None], True),
    "BOOLEAN": (ColumnSpec("b", "BOOLEAN"), [True, None], pl.Boolean, [True, None], True),
    "VARCHAR": (ColumnSpec("s", "VARCHAR"), ["é€😀", None], pl.String, ["é€😀", None], False),
    "ARRAY": (
        ColumnSpec("tags", "ARRAY", "BIGINT"),
        [[1, None], None],
        pl.List(pl.Int64),
        [[1, None], None],
        False,  # the values are shared, the offsets widened to 64 bits
    ),
}


def _buffers(column: pa.Array) -> list[int | None]:
    return [b.address if b is not None else None for b in column.buffers()]


@pytest.mark.parametrize("sql_type", list(TYPES))
def test_each_type_becomes_its_polars_dtype_with_its_null(sql_type: str) -> None:
    spec, values, dtype, expected, zero_copy = TYPES[sql_type]
    table = frames.batches_to_table((spec,), [Batch((spec,), (values,), len(values))])
    frame = frames.to_polars(table)
    assert isinstance(frame, pl.DataFrame)
    assert frame.schema == pl.Schema({spec.name: dtype})
    assert frame[spec.name].to_list() == expected
    assert frame[spec.name].null_count() == 1  # NULL stays null (a float's too: no NaN)
    shared = _buffers(frame[spec.name].to_arrow()) == _buffers(table.column(0).chunk(0))
    assert shared is zero_copy


def test_list_values_are_shared_though_the_offsets_are_not() -> None:
    spec = TYPES["ARRAY"][0]
    table = frames.batches_to_table((spec,), [Batch((spec,), ([[1, 2], None, [3]],), 3)])
    held = frames.to_polars(table)["tags"].to_arrow()
    parsed = table.column(0).chunk(0)
    assert held.values.buffers()[1].address == parsed.values.buffers()[1].address


def test_empty_result_keeps_columns_and_dtypes() -> None:
    specs = tuple(t[0] for t in TYPES.values())
    frame = frames.to_polars(frames.batches_to_table(specs, []))
    assert frame.shape == (0, len(TYPES))
    assert frame.schema == pl.Schema({t[0].name: t[2] for t in TYPES.values()})


def test_batches_stay_chunks() -> None:
    spec = TYPES["BIGINT"][0]
    batches = [Batch((spec,), ([i, i + 1],), 2) for i in range(0, 6, 2)]
    table = frames.batches_to_table((spec,), batches)
    frame = frames.to_polars(table)
    assert frame["n"].n_chunks() == 3 and frame["n"].to_list() == list(range(6))


def test_duplicate_column_names_are_a_clear_error() -> None:
    specs = (ColumnSpec("a", "BIGINT"), ColumnSpec("a", "BIGINT"))
    table = frames.batches_to_table(specs, [Batch(specs, ([1], [2]), 1)])
    with pytest.raises(QueryError, match=r"more than one column named 'a'") as err:
        frames.to_polars(table)
    assert "AS" in (err.value.hint or "")


def test_missing_polars_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "polars", None)  # `import polars` now fails as if not installed
    table = frames.batches_to_table((TYPES["BIGINT"][0],), [])
    with pytest.raises(MissingDependency, match="polars") as err:
        frames.to_polars(table)
    assert "pm-notebook[polars]" in str(err.value)


# --- through the sandbox: the same values and NULLs as the pandas frame -----------------------------------
# SQL type -> an expression of that type on the cases table, NULL for some rows
EXPRESSIONS = {
    "TIMESTAMP": ("__time", pl.Datetime("ms", "UTC")),
    "DATE": ("CAST(__time AS DATE)", pl.Date),
    "BIGINT": ("duration", pl.Int64),
    "DOUBLE": ("concurrency", pl.Float64),
    "BOOLEAN": ("duration > 1728000000", pl.Boolean),  # a comparison (a flag column is a BIGINT 1/0)
    "VARCHAR": ("caseid", pl.String),
    "ARRAY": ("distinct_vertices", pl.List(pl.String)),
}


def _as_python(value: object) -> object:
    """A pandas cell as polars' to_list gives it: NA/NaN/NaT → None, Timestamp → datetime, arrays → lists."""
    if isinstance(value, list):
        return value
    if value is None or pd.isna(value):  # type: ignore[arg-type]
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    return value


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("sql_type", list(EXPRESSIONS))
def test_each_type_matches_the_pandas_frame(conn, demo_tables, transport, sql_type) -> None:
    expression, dtype = EXPRESSIONS[sql_type]
    sql = (
        f"SELECT caseid, CASE WHEN MOD(tasks_count, 3) = 0 THEN NULL ELSE {expression} END AS v "
        f"FROM {demo_tables['cases']} ORDER BY __time LIMIT 40"
    )
    polars_frame = conn.query_polars(sql, transport=transport)
    pandas_frame = conn.query(sql, transport=transport)
    assert polars_frame.schema == pl.Schema({"caseid": pl.String, "v": dtype})
    got = dict(zip(polars_frame["caseid"].to_list(), polars_frame["v"].to_list(), strict=True))
    values = [_as_python(v) for v in pandas_frame["v"]]
    if sql_type == "DATE":  # (a datetime at midnight, should pandas give one)
        values = [v.date() if isinstance(v, dt.datetime) else v for v in values]
    assert got == dict(zip(pandas_frame["caseid"], values, strict=True))  # rows by case: ties in __time
    assert 0 < polars_frame["v"].null_count() == int(pandas_frame["v"].isna().sum()) < len(got)


def test_fetch_says_which_transport_served_a_polars_frame(conn, demo_tables) -> None:
    got = conn.fetch(f"SELECT caseid FROM {demo_tables['cases']}", limit=3, output="polars")
    assert isinstance(got.frame, pl.DataFrame) and got.frame.height == 3
    assert got.truncated and got.transport in ("druid", "avatica", "jdbc")


def test_an_unknown_output_is_a_clear_error(conn) -> None:
    with pytest.raises(ConfigurationError, match=r"output must be one of 'pandas', 'polars', got 'arrow'"):
        conn.fetch("SELECT 1", output="arrow")  # type: ignore[arg-type]


def test_missing_polars_fails_before_the_query_runs(sandbox, connect_workgroup, monkeypatch) -> None:
    closed = connect_workgroup(sandbox)
    closed.close()  # a query would fail with ClosedError: the missing extra is reported first
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(MissingDependency, match=r"pm-notebook\[polars\]"):
        closed.query_polars("SELECT 1")
