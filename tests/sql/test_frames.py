"""The declared-type table of pm_notebook.frames, with plain wire values (no server)."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

from pm_notebook import frames
from pm_notebook.errors import QueryError
from pm_notebook.sql import Batch, ColumnSpec

COLUMNS = (
    ColumnSpec("__time", "TIMESTAMP"),
    ColumnSpec("n", "BIGINT"),
    ColumnSpec("x", "DOUBLE"),
    ColumnSpec("s", "VARCHAR"),
    ColumnSpec("b", "BOOLEAN"),
    ColumnSpec("tags", "ARRAY", "VARCHAR"),
)
EXPECTED_DTYPES = {
    "__time": pd.DatetimeTZDtype("ms", "UTC"),
    "n": pd.Int64Dtype(),
    "x": "float64",
    "s": pd.StringDtype("pyarrow"),
    "b": pd.BooleanDtype(),
    "tags": "object",
}


def check_dtypes(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == list(EXPECTED_DTYPES)
    for name, dtype in EXPECTED_DTYPES.items():
        assert frame[name].dtype == dtype, name


def wire_batch() -> Batch:
    data = (
        [1442016000000, None, 0],
        [1, None, 2**62],
        [0.5, None, 3],
        ["a", None, ""],
        [True, None, False],
        [["x", None], None, []],
    )
    return Batch(COLUMNS, data, 3)


def test_wire_values_become_typed_columns_with_nulls_kept() -> None:
    frame = frames.to_pandas(frames.batches_to_table(COLUMNS, [wire_batch()]))
    check_dtypes(frame)
    assert frame["__time"][0] == pd.Timestamp("2015-09-12", tz="UTC")
    assert frame["__time"].isna().tolist() == [False, True, False]
    assert frame["n"].tolist() == [1, pd.NA, 2**62]
    assert pd.isna(frame["x"][1]) and frame["x"][2] == 3.0
    assert frame["s"].tolist() == ["a", pd.NA, ""]
    assert frame["b"].tolist() == [True, pd.NA, False]
    assert frame["tags"].tolist() == [["x", None], None, []]
    assert isinstance(frame["tags"][0], list)


def test_json_lines_and_arrow_inputs_give_the_same_frame() -> None:
    expected = frames.to_pandas(frames.batches_to_table(COLUMNS, [wire_batch()]))
    lines = (
        b'{"__time":"2015-09-12T00:00:00.000Z","n":1,"x":0.5,"s":"a","b":true,"tags":["x",null]}\n'
        b'{"__time":null,"n":null,"x":null,"s":null,"b":null,"tags":null}\n'
        b'{"__time":"1970-01-01T00:00:00.000Z","n":4611686018427387904,"x":3,"s":"","b":false,"tags":[]}\n'
    )
    from_json = frames.to_pandas(frames.batches_to_table(COLUMNS, [Batch(COLUMNS, (), 3, json_lines=lines)]))
    pd.testing.assert_frame_equal(from_json, expected)
    arrow = (
        pa.array([1442016000000, None, 0], pa.int64()),
        pa.array([1, None, 2**62]),
        pa.array([0.5, None, 3.0]),
        pa.array(["a", None, ""]),
        pa.array([True, None, False]),
        pa.array([["x", None], None, []]),
    )
    from_arrow = frames.to_pandas(frames.batches_to_table(COLUMNS, [Batch(COLUMNS, arrow, 3)]))
    pd.testing.assert_frame_equal(from_arrow, expected)


def test_empty_result_keeps_columns_and_dtypes() -> None:
    frame = frames.to_pandas(frames.batches_to_table(COLUMNS, []))
    assert len(frame) == 0
    check_dtypes(frame)


def test_iso_timestamps_without_zone_are_utc_wall_clock() -> None:
    spec = (ColumnSpec("t", "TIMESTAMP"),)
    frame = frames.to_pandas(frames.batches_to_table(spec, [Batch(spec, (["2015-09-12 01:02:03"],), 1)]))
    assert frame["t"][0] == pd.Timestamp(dt.datetime(2015, 9, 12, 1, 2, 3), tz="UTC")


def test_rechunk_bounds_chunk_sizes() -> None:
    batches = [wire_batch(), wire_batch(), wire_batch()]  # 9 rows
    sizes = [t.num_rows for t in frames.rechunk(COLUMNS, batches, 4)]
    assert sizes == [4, 4, 1]
    assert [t.num_rows for t in frames.rechunk(COLUMNS, [], 4)] == [0]
    with pytest.raises(ValueError, match="positive"):
        list(frames.rechunk(COLUMNS, [], 0))


def test_values_that_do_not_fit_their_type_name_the_column() -> None:
    spec = (ColumnSpec("n", "BIGINT"),)
    with pytest.raises(QueryError, match="Column 'n'"):
        frames.batches_to_table(spec, [Batch(spec, (["not a number"],), 1)])


def test_parquet_streaming_round_trip(tmp_path) -> None:
    path = tmp_path / "out.parquet"
    rows = frames.write_parquet(COLUMNS, [wire_batch(), wire_batch()], path, chunk_rows=2)
    assert rows == 6
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    assert table.schema == frames.arrow_schema(COLUMNS)
    assert table.num_rows == 6
