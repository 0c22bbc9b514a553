"""The sans-IO Druid SQL API protocol, driven with hand-made byte chunks (no server, no socket).

Answers are written out byte for byte as a Druid broker sends ``resultFormat=arrayLines`` with the three
header flags: a line of names, one of Druid native types, one of SQL types, one JSON array per row, then
an empty line.
"""

from __future__ import annotations

import datetime as dt

import orjson
import pytest

from pm_notebook.errors import QueryError
from pm_notebook.sql import ColumnSpec, Param
from pm_notebook.sql import druid_protocol as wire

HEADER = b'["__time","caseid","n","x","ok","d","tags"]\n'
HEADER += b'["LONG","STRING","LONG","DOUBLE","LONG","LONG","ARRAY<STRING>"]\n'
HEADER += b'["TIMESTAMP","VARCHAR","BIGINT","DOUBLE","BOOLEAN","DATE","VARCHAR ARRAY"]\n'
ROWS = [
    b'["2024-01-02T03:04:05.006Z","c-1",1,1.5,true,"2024-01-02",["a","b"]]',
    b'["2024-01-03T00:00:00.000Z","c\\n2",null,null,false,null,null]',
    b'["2024-01-04T00:00:00.000Z","",-9223372036854775808,-0.0,null,"1970-01-01",[]]',
]
ANSWER = HEADER + b"".join(r + b"\n" for r in ROWS) + b"\n"


def read(chunks, *, batch_bytes: int = 1 << 20) -> tuple[tuple[ColumnSpec, ...] | None, list[bytes]]:
    """Feed *chunks* to a parser; return its columns and every row line of the batches it gave back."""
    parser = wire.AnswerParser(sql="SELECT x", batch_bytes=batch_bytes)
    batches = []
    for chunk in chunks:
        batches += parser.feed(chunk)
    batches += parser.end()
    lines = []
    for batch in batches:
        assert batch.num_rows == -1 and batch.data == ()
        assert batch.columns == parser.columns
        lines += batch.array_lines.split(b"\n")
    return parser.columns, lines


def test_a_whole_answer_gives_the_declared_columns_and_every_row() -> None:
    columns, lines = read([ANSWER])
    assert [(c.name, c.type_name, c.element_type) for c in columns] == [
        ("__time", "TIMESTAMP", None),
        ("caseid", "VARCHAR", None),
        ("n", "BIGINT", None),
        ("x", "DOUBLE", None),
        ("ok", "BOOLEAN", None),
        ("d", "DATE", None),
        ("tags", "ARRAY", "VARCHAR"),
    ]
    assert lines == ROWS


@pytest.mark.parametrize("batch_bytes", [1, 7, 64, 1 << 20])
def test_an_answer_split_at_every_byte_boundary_reads_the_same(batch_bytes: int) -> None:
    expected = read([ANSWER])
    for cut in range(len(ANSWER) + 1):
        assert read([ANSWER[:cut], ANSWER[cut:]], batch_bytes=batch_bytes) == expected, cut
    for cut in range(1, len(ANSWER)):
        second = min(len(ANSWER), cut + 11)
        chunks = [ANSWER[:cut], ANSWER[cut:second], ANSWER[second:]]
        assert read(chunks, batch_bytes=batch_bytes) == expected, cut


def test_one_byte_at_a_time_with_tiny_batches_reads_the_same() -> None:
    assert read([ANSWER[i : i + 1] for i in range(len(ANSWER))], batch_bytes=1) == read([ANSWER])


def test_an_empty_result_keeps_its_header() -> None:
    for cut in range(len(HEADER) + 2):
        body = HEADER + b"\n"
        columns, lines = read([body[:cut], body[cut:]])
        assert [c.name for c in columns] == ["__time", "caseid", "n", "x", "ok", "d", "tags"]
        assert lines == []


@pytest.mark.parametrize(
    "cut",
    [
        len(ANSWER) - 1,  # the end-of-answer empty line is missing
        len(HEADER) + len(ROWS[0]) + 1,  # after a whole row
        len(HEADER) + 10,  # inside a row
        len(HEADER),  # after the header, before any row
    ],
)
def test_a_truncated_answer_raises_and_never_returns_fewer_rows(cut: int) -> None:
    parser = wire.AnswerParser(sql="SELECT x", batch_bytes=1)
    given = []
    with pytest.raises(QueryError, match="ended early"):
        for i in range(cut):
            given += parser.feed(ANSWER[i : i + 1])
        parser.end()
    # what came out before the error is whole rows only, never the cut one
    assert all(line in ROWS for batch in given for line in batch.array_lines.split(b"\n"))


def test_every_truncation_point_raises() -> None:
    for cut in range(len(ANSWER)):
        with pytest.raises(QueryError):
            read([ANSWER[:cut]])


def test_an_empty_body_is_an_error() -> None:
    with pytest.raises(QueryError, match="empty answer"):
        read([])


def test_a_body_that_is_not_the_header_is_an_error() -> None:
    with pytest.raises(QueryError, match="header that is not JSON"):
        read([b"<html>gateway</html>\n\n\n\n"])
    with pytest.raises(QueryError, match="no type header lines"):
        read([b'["a"]\n\n\n\n'])  # names, but no type lines


def test_an_error_trailer_after_rows_raises_the_servers_message() -> None:
    trailer = b'{"error":"Unknown exception","errorMessage":"Query ran out of memory","errorClass":"x"}\n'
    body = HEADER + ROWS[0] + b"\n" + trailer
    for cut in range(len(body) + 1):
        with pytest.raises(QueryError, match="ran out of memory"):
            read([body[:cut], body[cut:]])
    with pytest.raises(QueryError, match="ran out of memory"):  # even with the end mark after it
        read([body + b"\n"])


def test_braces_inside_strings_are_rows_and_a_trailer_after_them_is_still_found() -> None:
    rows = [b'["2024-01-02T03:04:05.006Z","{x}\\n{",1,1.5,true,"2024-01-02",["{"]]'] * 3
    body = HEADER + b"".join(r + b"\n" for r in rows)
    assert read([body + b"\n"])[1] == rows
    trailer = b'{"error":"Unknown exception","errorMessage":"Query ran out of memory","errorClass":"x"}\n'
    with pytest.raises(QueryError, match="ran out of memory"):
        read([body + trailer])


def test_batches_grow_with_the_answer_up_to_batch_bytes() -> None:
    # ~24 MiB of rows in 64 KiB chunks: the first batches are about 1 MiB (CHUNK_BYTES), later ones an
    # eighth of what was received, never past batch_bytes (+ the chunk that crossed it).
    row = b'["2024-01-02T03:04:05.006Z","c-1",1,1.5,true,"2024-01-02",["a","b"]]\n'
    rows = row * ((24 << 20) // len(row))
    body = HEADER + rows + b"\n"
    chunk = 1 << 16
    limit = 2 << 20
    parser = wire.AnswerParser(batch_bytes=limit)
    sizes, received = [], 0
    for at in range(0, len(body), chunk):
        received += chunk
        for batch in parser.feed(body[at : at + chunk]):
            sizes.append(len(batch.array_lines))
            assert len(batch.array_lines) <= max(wire.CHUNK_BYTES, min(limit, received // 8)) + chunk
            assert batch.array_lines.startswith(b"[") and batch.array_lines.endswith(b"]")
    sizes += [len(b.array_lines) for b in parser.end()]
    assert sizes[0] < wire.CHUNK_BYTES + chunk
    assert max(sizes) > limit - len(row) and max(sizes) <= limit + chunk
    assert sum(sizes) + len(sizes) == len(rows)  # every row, each line end dropped once


def test_an_error_object_in_place_of_the_header_raises_the_servers_message() -> None:
    with pytest.raises(QueryError, match="not allowed"):
        read([b'{"error":"Plan validation failed","errorMessage":"not allowed"}\n\n\n\n'])


def test_rows_that_are_not_arrays_are_an_error() -> None:
    with pytest.raises(QueryError, match="not JSON arrays"):
        read([HEADER + b"oops\n\n"])


@pytest.mark.parametrize(
    ("native", "sql", "type_name", "element"),
    [
        ("LONG", "TIMESTAMP", "TIMESTAMP", None),
        ("LONG", "BIGINT", "BIGINT", None),
        ("LONG", "INTEGER", "INTEGER", None),
        ("LONG", "BOOLEAN", "BOOLEAN", None),
        ("LONG", "DATE", "DATE", None),
        ("DOUBLE", "DOUBLE", "DOUBLE", None),
        ("FLOAT", "FLOAT", "FLOAT", None),
        ("FLOAT", "REAL", "REAL", None),
        ("DOUBLE", "DECIMAL", "DECIMAL", None),
        ("STRING", "VARCHAR", "VARCHAR", None),
        ("STRING", "CHAR", "CHAR", None),
        ("COMPLEX<json>", "COMPLEX<json>", "COMPLEX<JSON>", None),
        ("COMPLEX<hyperUnique>", "OTHER", "OTHER", None),
        ("ARRAY<STRING>", "VARCHAR ARRAY", "ARRAY", "VARCHAR"),
        ("ARRAY<LONG>", "BIGINT ARRAY", "ARRAY", "BIGINT"),
        ("ARRAY<DOUBLE>", "DOUBLE ARRAY", "ARRAY", "DOUBLE"),
        ("ARRAY<STRING>", "ARRAY<VARCHAR>", "ARRAY", "VARCHAR"),
        # Druid 33's sqlTypesHeader says only ARRAY: the element comes from the native type
        ("ARRAY<STRING>", "ARRAY", "ARRAY", "VARCHAR"),
        ("ARRAY<LONG>", "ARRAY", "ARRAY", "BIGINT"),
        ("ARRAY<DOUBLE>", "ARRAY", "ARRAY", "DOUBLE"),
        ("LONG", "", "LONG", None),  # no SQL type: the native one
        ("LONG", None, "LONG", None),
        (None, None, "VARCHAR", None),  # nothing declared
    ],
)
def test_every_type_header(native, sql, type_name, element) -> None:
    lines = [orjson.dumps(["c"]), orjson.dumps([native]), orjson.dumps([sql])]
    columns, rows = read([b"\n".join(lines) + b"\n\n"])
    assert columns == (ColumnSpec(name="c", type_name=type_name, element_type=element),)
    assert rows == []


def test_the_request_body_asks_for_typed_array_lines_in_utc() -> None:
    body = orjson.loads(
        wire.request_body("SELECT ?, ?, ?, ?", [1, None, dt.datetime(2024, 1, 2, 3, 4, 5, 6789), "x"], "pm-1")
    )
    assert body == {
        "query": "SELECT ?, ?, ?, ?",
        "resultFormat": "arrayLines",
        "header": True,
        "typesHeader": True,
        "sqlTypesHeader": True,
        "parameters": [
            {"type": "BIGINT", "value": 1},
            {"type": "VARCHAR", "value": None},
            {"type": "TIMESTAMP", "value": "2024-01-02 03:04:05.006"},
            {"type": "VARCHAR", "value": "x"},
        ],
        "context": {"sqlQueryId": "pm-1", "sqlTimeZone": "Etc/UTC"},
    }


def test_parameters_render_each_classified_type() -> None:
    assert wire.parameter(Param("DATE", 19724)) == {"type": "DATE", "value": "2024-01-02"}
    assert wire.parameter(Param("DOUBLE", 1.5)) == {"type": "DOUBLE", "value": 1.5}
    assert wire.parameter(Param("BOOLEAN", False)) == {"type": "BOOLEAN", "value": False}


def test_error_answers_map_to_the_servers_message() -> None:
    error = wire.error_from_answer(400, b'{"error":"Plan validation failed","errorMessage":"Column x?"}')
    assert isinstance(error, QueryError) and "Column x?" in str(error)
    other = wire.error_from_answer(400, b"<html>bad gateway</html>")
    assert "bad gateway" in str(other)
