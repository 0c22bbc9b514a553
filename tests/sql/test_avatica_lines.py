"""The Avatica frames read as lines (no Python object per cell): the cut of the ``rows`` text out of an
answer, its rewriting into one JSON array per line, and the same DataFrame as the druid path for a result
big enough to take pyarrow's CSV reading (epoch timestamps and days, NULLs, hostile strings)."""

from __future__ import annotations

import orjson
import pandas as pd
import pytest

from pm_notebook import frames
from pm_notebook.frames import decode
from pm_notebook.sql import Batch, ColumnSpec
from pm_notebook.sql import avatica_protocol as proto

HOSTILE = ["a],[b", 'q"],["x', "back\\\\", 'x\\"],[', "[[", "]]", "", "null", "plain"]


def fetch_body(rows: list) -> bytes:
    message = {"response": "fetch", "frame": {"done": False, "rows": rows}, "missingStatement": False}
    return orjson.dumps({**message, "missingResults": False})


def test_decode_frame_cuts_exactly_the_rows_array() -> None:
    rows = [[1, s, None] for s in HOSTILE] + [[2, '"rows":[', 3]]
    message, text = proto.decode_frame(fetch_body(rows), "fetch")
    assert message["frame"] == {"done": False, "rows": []}
    assert message["missingResults"] is False
    assert text is not None and orjson.loads(text) == rows


def test_decode_frame_of_an_answer_without_rows_is_plain_decode() -> None:
    body = b'{"response":"executeResults","missingStatement":false,"results":[{"firstFrame":null}]}'
    assert proto.decode_frame(body, "executeResults") == (orjson.loads(body), None)


@pytest.mark.parametrize("value", HOSTILE)
def test_row_lines_never_split_a_string(value: str) -> None:
    rows = [[1, "x", 0.5], [2, value, None], [3, value, 1.0]]
    got = proto.row_lines(orjson.dumps(rows))
    if got is None:  # a string holding "],[": the caller decodes this frame with orjson
        assert "],[" in value
        return
    lines, count = got
    assert count == 3
    assert [orjson.loads(line) for line in lines.split(b"\n")] == rows


def test_rows_as_lines_only_for_scalar_columns() -> None:
    scalar = (ColumnSpec("t", "TIMESTAMP"), ColumnSpec("s", "VARCHAR"), ColumnSpec("d", "DATE"))
    assert proto.rows_as_lines(scalar)
    assert not proto.rows_as_lines((*scalar, ColumnSpec("a", "ARRAY", "VARCHAR")))
    assert not proto.rows_as_lines((*scalar, ColumnSpec("o", "OTHER")))


def test_epoch_lines_take_the_csv_reading_and_keep_types_and_nulls() -> None:
    columns = (
        ColumnSpec("t", "TIMESTAMP"),
        ColumnSpec("d", "DATE"),
        ColumnSpec("n", "BIGINT"),
        ColumnSpec("s", "VARCHAR"),
        ColumnSpec("b", "BOOLEAN"),
        ColumnSpec("t2", "TIMESTAMP"),
    )
    rows = [
        [
            1442016000000 + i,
            16690 + i % 3,
            None if i % 7 == 0 else i,
            None if i % 5 == 0 else f'v{i},"x"',
            i % 2 == 0,
            None if i % 4 == 0 else -86400000 * i,
        ]
        for i in range(5000)
    ]
    lines, count = proto.row_lines(orjson.dumps(rows)) or (b"", 0)
    assert count == len(rows) and len(lines) > decode._CSV_MIN_BYTES
    schema = frames.arrow_schema(columns)
    direct = decode._array_lines_as_csv(lines, schema, escaped=False, epoch_times=True)
    assert direct.num_rows == len(rows)
    table = frames.batches_to_table(columns, [Batch(columns, (), count, array_lines=lines, epoch_times=True)])
    values = frames.batches_to_table(columns, [Batch(columns, tuple(zip(*rows, strict=True)), count)])
    assert table.equals(values)
    frame = frames.to_pandas(table)
    assert frame["t"].iloc[1] == pd.Timestamp(1442016000001, unit="ms", tz="UTC")
    assert str(frame["d"].iloc[1])[:10] == "2015-09-13"
    assert frame["n"].isna().sum() == sum(1 for r in rows if r[2] is None)
    assert frame["s"].iloc[1] == 'v1,"x"'


def test_big_result_is_the_same_on_avatica_as_on_druid(conn, demo_tables) -> None:
    sql = (
        "SELECT __time, CAST(__time AS DATE) AS d, enddate, duration, caseid, vertex_name, vertex_id "
        f"FROM {demo_tables['vertex']}"
    )

    def rows(transport: str) -> pd.DataFrame:  # the same rows, in one order whatever the server's
        frame = conn.query(sql, transport=transport)
        return frame.sort_values(list(frame.columns), ignore_index=True)

    avatica, druid = rows("avatica"), rows("druid")
    assert len(avatica) > 1000
    pd.testing.assert_frame_equal(avatica, druid, check_like=False, check_exact=True, check_flags=False)


def test_connect_pins_the_transport_and_refuses_an_unknown_one(sandbox) -> None:
    import pm_notebook
    from pm_notebook.errors import ConfigurationError

    demo = sandbox.workgroups["demo"]
    values = (sandbox.base_url, sandbox.auth_url, demo.client_id, demo.client_secret, sandbox.jdbc_url)
    with pm_notebook.connect(*values, use_keyring=False, transport="Avatica") as conn:
        assert conn.sql_transport == "avatica"
        assert conn.query('SELECT 1 AS "one"').attrs["transport"] == "avatica"
    with pytest.raises(ConfigurationError, match="Unknown SQL transport 'avatika'"):
        pm_notebook.connect(*values, use_keyring=False, transport="avatika")
