"""The declared-type table of pm_notebook.frames, with plain wire values (no server)."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

from pm_notebook import frames
from pm_notebook.errors import QueryError
from pm_notebook.frames import decode
from pm_notebook.frames import rows as frame_rows
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


@pytest.fixture(params=["csv", "json"])
def lines_path(request, monkeypatch) -> str:
    """Run a test with JSON-array lines read as CSV (whenever it can represent them) and as JSON."""
    monkeypatch.setattr(decode, "_CSV_MIN_BYTES", 0 if request.param == "csv" else 1 << 62)
    return request.param


def array_lines_batch(lines: bytes, columns=COLUMNS) -> Batch:
    return Batch(columns, (), lines.count(b"\n") + 1, array_lines=lines)


@pytest.mark.parametrize(
    "tags",
    [
        (b'"[\\"x\\",null]"', b"null", b'"[]"'),  # Druid's default: arrays as JSON text
        (b'["x",null]', b"null", b"[]"),  # sqlStringifyArrays=false: nested arrays
    ],
    ids=["stringified", "nested"],
)
def test_array_lines_and_arrow_inputs_give_the_same_frame(tags, lines_path) -> None:
    expected = frames.to_pandas(frames.batches_to_table(COLUMNS, [wire_batch()]))
    lines = (
        b'["2015-09-12T00:00:00.000Z",1,0.5,"a",true,' + tags[0] + b"]\n"
        b"[null,null,null,null,null," + tags[1] + b"]\n"
        b'["1970-01-01T00:00:00.000Z",4611686018427387904,3,"",false,' + tags[2] + b"]"
    )
    from_lines = frames.to_pandas(frames.batches_to_table(COLUMNS, [array_lines_batch(lines)]))
    pd.testing.assert_frame_equal(from_lines, expected)
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


def test_chunked_columns_stay_in_chunks() -> None:
    """A transport's chunked columns (the CSV reading of arrayLines gives them) become record batches that
    slice the chunks, not one concatenated copy; an empty chunked column still gives one empty batch."""
    spec = (ColumnSpec("n", "BIGINT"), ColumnSpec("s", "VARCHAR"))
    n = pa.chunked_array([pa.array([1, 2]), pa.array([3])])
    s = pa.chunked_array([pa.array(["a"]), pa.array(["b", None])])
    parts = decode.record_batches(Batch(spec, (n, s), 3))
    assert [p.num_rows for p in parts] == [1, 1, 1]  # the union of both columns' chunk boundaries
    assert parts[0].column(0).buffers()[1].address == n.chunk(0).buffers()[1].address
    assert frames.batches_to_table(spec, [Batch(spec, (n, s), 3)]).to_pydict() == {
        "n": [1, 2, 3],
        "s": ["a", "b", None],
    }
    empty = (pa.chunked_array([], pa.int64()), pa.chunked_array([], pa.string()))
    (only,) = decode.record_batches(Batch(spec, empty, 0))
    assert only.num_rows == 0 and only.schema == frames.arrow_schema(spec)


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


TEXT = (ColumnSpec("s", "VARCHAR"), ColumnSpec("n", "BIGINT"), ColumnSpec("d", "DATE"))
TRICKY = [
    "null",
    "",
    "a,b",
    'say "hi"',
    "back\\slash",
    "trailing\\",
    "été 東京",
    "line\nbreak",
    "tab\there",
    "\u0001ctl",
    "[1,2]",
    "]\n[",
]


@pytest.mark.parametrize("value", TRICKY)
def test_array_lines_keep_every_string_exactly(value: str, lines_path) -> None:
    """Whatever path a slice takes (CSV reading or JSON), strings, NULLs and "" come back exactly."""
    import orjson

    rows = [[value, 1, "2024-02-29T00:00:00.000Z"], [None, None, None], ["plain", -(2**63), None]]
    lines = b"\n".join(orjson.dumps(r) for r in rows)
    frame = frames.to_pandas(frames.batches_to_table(TEXT, [array_lines_batch(lines, TEXT)]))
    assert frame["s"].tolist() == [value, pd.NA, "plain"]
    assert frame["n"].tolist() == [1, pd.NA, -(2**63)]
    assert frame["d"].tolist()[0] == dt.date(2024, 2, 29)
    assert frame["d"].isna().tolist() == [False, True, True]
    if lines_path == "csv" and not any(ord(ch) < 32 for ch in value):
        # No JSON-only escape: the CSV reading itself must have produced this table.
        direct = decode._array_lines_as_csv(lines, frames.arrow_schema(TEXT), escaped=b"\\" in lines)
        assert direct.column(0).to_pylist() == [value, None, "plain"]


def test_array_lines_with_a_wrong_row_length_are_a_clear_error(lines_path) -> None:
    with pytest.raises(QueryError, match="3 declared columns"):
        frames.batches_to_table(TEXT, [array_lines_batch(b'["a",1]', TEXT)])


EDGE_CASES = [
    (
        (ColumnSpec("t", "TIMESTAMP"), ColumnSpec("s", "VARCHAR"), ColumnSpec("x", "DOUBLE")),
        [
            ["2024-01-02T03:04:05.006Z", 'a,"b"', 1.5],
            [None, None, None],
            ["1970-01-01T00:00:00.000Z", "", -2.0],
        ],
    ),
    ((ColumnSpec("n", "BIGINT"),), [[1], [None], [-(2**63)]]),
    ((ColumnSpec("t", "TIMESTAMP"),), [["2024-01-02T03:04:05.006Z"], [None], ["1970-01-01T00:00:00.000Z"]]),
    (
        (ColumnSpec("b", "BOOLEAN"), ColumnSpec("d", "DATE")),
        [[True, "2024-02-29T00:00:00.000Z"], [None, None], [False, "1969-12-31T00:00:00.000Z"]],
    ),
    (
        (ColumnSpec("x", "DOUBLE"), ColumnSpec("tags", "ARRAY", "VARCHAR"), ColumnSpec("n", "BIGINT")),
        [[0.25, '["a,b"]', 7], [None, None, None], [1e20, "[]", 0]],
    ),
]


@pytest.mark.parametrize(("columns", "rows"), EDGE_CASES, ids=["t-s-x", "n", "t", "b-d", "x-tags-n"])
def test_array_lines_read_as_csv_equal_the_json_reading(columns, rows, lines_path) -> None:
    """Lines whose first and last values are not text keep their brackets in the CSV fields (trimmed
    afterwards); the result must equal the same rows decoded as JSON values."""
    import orjson

    lines = b"\n".join(orjson.dumps(r) for r in rows)
    from_lines = frames.batches_to_table(columns, [array_lines_batch(lines, columns)])
    wire = Batch(columns, tuple(list(c) for c in zip(*rows, strict=True)), len(rows))
    assert from_lines.equals(frames.batches_to_table(columns, [wire]))
    assert from_lines.column(0).null_count == 1
    if lines_path == "csv":
        direct = decode._array_lines_as_csv(lines, frames.arrow_schema(columns), escaped=b"\\" in lines)
        assert direct.num_rows == len(rows)


def _counted(batches: list[Batch], pulled: list[int]):
    for batch in batches:
        pulled.append(batch.num_rows)
        yield batch


@pytest.mark.parametrize(
    ("limit", "rows", "cut", "progress", "pulled"),
    [
        (0, 9, False, [3, 6, 9], 3),  # no cap: everything
        (4, 4, True, [3, 4], 2),  # the cap falls inside a batch: the rest is never read
        (6, 6, True, [3, 6, 6], 3),  # the cap falls on a batch end: the next batch shows more rows exist
        (9, 9, False, [3, 6, 9], 3),  # exactly the cap, nothing more: not cut
        (20, 9, False, [3, 6, 9], 3),
    ],
)
def test_collect_caps_rows_and_reports_progress(limit, rows, cut, progress, pulled) -> None:
    seen: list[int] = []
    calls: list[int] = []
    batches = _counted([wire_batch(), wire_batch(), wire_batch()], seen)
    table, truncated = frames.collect(COLUMNS, batches, limit=limit, on_rows=calls.append)
    assert (table.num_rows, truncated, calls, len(seen)) == (rows, cut, progress, pulled)
    assert table.schema == frames.arrow_schema(COLUMNS)
    whole = frames.batches_to_table(COLUMNS, [wire_batch(), wire_batch(), wire_batch()])
    assert table.equals(whole.slice(0, rows))


def test_collect_of_nothing_keeps_the_declared_columns() -> None:
    table, truncated = frames.collect(COLUMNS, [], limit=5)
    assert (table.num_rows, truncated) == (0, False)
    check_dtypes(frames.to_pandas(table))
    with pytest.raises(ValueError, match="limit"):
        frames.collect(COLUMNS, [], limit=-1)


def test_to_pandas_records_the_transport_only_when_told() -> None:
    table = frames.batches_to_table(COLUMNS, [wire_batch()])
    assert frames.to_pandas(table).attrs == {}
    assert frames.to_pandas(table, transport="avatica").attrs == {"transport": "avatica"}


NUMBERED = (ColumnSpec("n", "BIGINT"), ColumnSpec("s", "VARCHAR"))


def _numbered(first: int, count: int) -> Batch:
    import orjson

    lines = b"\n".join(orjson.dumps([i, f"row {i}"]) for i in range(first, first + count))
    return array_lines_batch(lines, NUMBERED)


def test_text_columns_reach_pandas_without_a_copy(lines_path) -> None:
    """Text is parsed as large_string, the storage pandas keeps for pyarrow strings: the DataFrame's column
    holds the parsed offsets and bytes themselves (a 32-bit string column would get new offsets)."""
    assert frames.arrow_type(ColumnSpec("s", "VARCHAR")) == pa.large_string()
    assert frames.arrow_type(ColumnSpec("o", "OTHER")) == pa.large_string()
    lines = b"\n".join(b'[%d,"row %d"]' % (i, i) for i in range(2000))
    table = frames.batches_to_table(NUMBERED, [array_lines_batch(lines, NUMBERED)])
    parsed = table.column("s").chunk(0)
    assert parsed.type == pa.large_string()
    frame = frames.to_pandas(table)
    held = frame["s"].array.__arrow_array__().chunk(0)
    assert [b.address for b in held.buffers()[1:]] == [b.address for b in parsed.buffers()[1:]]
    assert frame["s"].dtype == pd.StringDtype("pyarrow") and frame["s"][1999] == "row 1999"


def test_batches_of_lines_are_parsed_one_ahead_and_handed_on_in_order(lines_path) -> None:
    """Each batch of lines is parsed on a worker while the next is taken from the transport: a batch is
    handed on at the latest once the next one is taken (never two ahead), and the order is kept."""
    pulled: list[int] = []
    batches = [_numbered(k * 50, 50) for k in range(5)]
    handed: list[tuple[int, int]] = []  # (first row of the handed batch, batches taken by then)
    for parts in frame_rows._parsed(_counted(batches, pulled)):
        handed.append((parts[0].column(0)[0].as_py(), len(pulled)))
    assert [first for first, _ in handed] == [0, 50, 100, 150, 200]
    assert all(taken <= k + 2 for k, (_, taken) in enumerate(handed))
    whole = frames.batches_to_table(NUMBERED, batches)
    assert whole.column("n").to_pylist() == list(range(250))
    assert whole.equals(pa.concat_tables(frames.batches_to_table(NUMBERED, [b]) for b in batches))


def test_a_row_cap_takes_no_batch_ahead(lines_path) -> None:
    pulled: list[int] = []
    batches = [_numbered(k * 10, 10) for k in range(4)]
    table, cut = frames.collect(NUMBERED, _counted(batches, pulled), limit=15)
    assert (table.num_rows, cut, len(pulled)) == (15, True, 2)


def test_a_batch_that_fails_to_parse_fails_in_its_turn(lines_path) -> None:
    """The error of a bad batch comes after the good batches before it, and stops the reading there."""
    pulled: list[int] = []
    batches = [
        _numbered(0, 20),
        array_lines_batch(b'[1,"a"]\n[2]', NUMBERED),
        _numbered(40, 20),
        _numbered(60, 20),
    ]
    handed = []
    with pytest.raises(QueryError, match="2 declared columns"):
        for parts in frame_rows._parsed(_counted(batches, pulled)):
            handed.append(sum(p.num_rows for p in parts))
    assert handed == [20] and len(pulled) <= 3
