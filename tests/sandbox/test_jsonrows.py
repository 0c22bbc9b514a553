"""Row encoding of Avatica frames: small tables written by orjson equal DuckDB's encoding, value for value."""

from __future__ import annotations

import datetime as dt
import math

import orjson
import pyarrow as pa
import pytest

from pm_sandbox.sql import rows as jsonrows
from pm_sandbox.sql.engine import Column

COLUMNS = [
    Column("n", "BIGINT"),
    Column("x", "DOUBLE"),
    Column("s", "VARCHAR"),
    Column("b", "BOOLEAN"),
    Column("t", "TIMESTAMP"),
    Column("d", "DATE"),
]
TABLE = pa.table(
    {
        "n": pa.array([2**62, -(2**62), 0, None, 7, 1], pa.int64()),
        "x": pa.array([0.1, math.nan, math.inf, -math.inf, None, 1e300], pa.float64()),
        "s": pa.array(["", 'q"uote', "back\\slash", "\n\t\x01", "é漢🙂", None], pa.string()),
        "b": pa.array([True, False, None, True, False, None], pa.bool_()),
        "t": pa.array(
            [
                dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
                None,
                dt.datetime(2025, 1, 6, 8, 0, 16, 617000),
                dt.datetime(1970, 1, 1),
                dt.datetime(2262, 1, 1),
                dt.datetime(1900, 3, 1, 12),
            ],
            pa.timestamp("ms"),
        ),
        "d": pa.array(
            [
                dt.date(1969, 12, 31),
                None,
                dt.date(2025, 1, 6),
                dt.date(1970, 1, 1),
                dt.date(1, 1, 1),
                dt.date(9999, 12, 31),
            ],
            pa.date32(),
        ),
    }
)


def decoded(lines: pa.Array) -> list:
    return [orjson.loads(line) for line in lines.to_pylist()]


def test_small_tables_are_written_without_duckdb_and_equal_its_encoding(monkeypatch) -> None:
    # The DuckDB encoding of the same rows: a table too big for the small path, first rows kept.
    big = pa.concat_tables([TABLE] * (jsonrows._SMALL_CELLS // TABLE.num_columns // TABLE.num_rows + 1))
    assert big.num_rows * big.num_columns > jsonrows._SMALL_CELLS
    expected = decoded(jsonrows.encode_rows(big, COLUMNS, mode="avatica"))[: TABLE.num_rows]
    assert expected[1][1] is None and expected[0][4] == -1 and expected[0][5] == -1  # NaN, epoch ms, days

    def no_duckdb():
        raise AssertionError("a small table needs no DuckDB query")

    monkeypatch.setattr(jsonrows, "_cursor", no_duckdb)
    small = jsonrows.encode_rows(TABLE, COLUMNS, mode="avatica")
    assert small.type == pa.string() and len(small) == TABLE.num_rows
    assert decoded(small) == expected


@pytest.mark.parametrize(
    ("column", "values"),
    [
        (Column("f", "FLOAT"), pa.array([0.1, None], pa.float32())),
        (Column("a", "ARRAY", "VARCHAR"), pa.array([["a", None], None], pa.list_(pa.string()))),
    ],
)
def test_other_types_are_left_to_duckdb(column, values, monkeypatch) -> None:
    calls = []
    cursor = jsonrows._cursor

    def counting():
        calls.append(1)
        return cursor()

    monkeypatch.setattr(jsonrows, "_cursor", counting)
    lines = jsonrows.encode_rows(pa.table({"c": values}), [column], mode="avatica")
    assert calls and len(lines) == 2 and decoded(lines)[1] == [None]
