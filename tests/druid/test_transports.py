"""Every transport pointed at a real Druid 33 broker and at the stand-in: the same frames, values and dtypes.

``druid`` (the SQL API), ``avatica`` (Avatica JSON from Python), ``jdbc`` (the real JVM and Avatica driver)
and ``auto`` run the same statements on ``druid_conn`` (the broker itself) and ``standin_conn`` (the
stand-in's demo workgroup, whose projects are published to that Druid with the same rows): every column type
of the demo tables, NULLs of each, an empty answer, ``?`` parameters of every kind, chunked reads and a
refused statement. Every frame is also compared with the ``druid`` transport's frame on the stand-in, so the
four transports agree with each other too. A flag (``is_predicted``) is a BIGINT 1/0 on both, as Druid
ingests a boolean; a comparison is a BOOLEAN on both.
"""

from __future__ import annotations

import pandas as pd
import pytest
from _compare import differences

from pm_notebook.errors import QueryError

TRANSPORTS = ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc), "auto"]


@pytest.fixture(scope="module")
def pid(sandbox) -> str:
    return sandbox.workgroups["demo"].project_ids[0]


def same(sql: str, standin: pd.DataFrame, druid: pd.DataFrame) -> None:
    assert differences(sql, standin, druid) == []


@pytest.fixture(scope="module")
def reference(standin_conn):
    """The ``druid`` transport's answer on the stand-in: the frame every other one must equal."""
    cache: dict[tuple[str, tuple], pd.DataFrame] = {}

    def answer(sql: str, params=()) -> pd.DataFrame:
        key = (sql, tuple(params))
        if key not in cache:
            cache[key] = standin_conn.query(sql, list(params) or None, transport="druid")
        return cache[key]

    return answer


def check(sql, params, transport, standin_conn, druid_conn, reference) -> pd.DataFrame:
    ours = standin_conn.query(sql, list(params) or None, transport=transport)
    theirs = druid_conn.query(sql, list(params) or None, transport=transport)
    same(sql, ours, theirs)
    same(sql, ours, reference(sql, params))
    return theirs


COLUMNS = "__time, caseid, duration, enddate, concurrency, distinct_vertices, rework, is_predicted"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_column_type(transport, standin_conn, druid_conn, reference, pid) -> None:
    sql = f'SELECT {COLUMNS} FROM "{pid}" ORDER BY __time LIMIT 40'
    frame = check(sql, (), transport, standin_conn, druid_conn, reference)
    assert len(frame) == 40
    assert str(frame["__time"].dtype).startswith("datetime64")
    assert str(frame["duration"].dtype).lower() == "int64"  # nullable Int64: a LONG column may hold NULL
    assert str(frame["concurrency"].dtype).lower() == "float64"
    assert all(isinstance(v, list | tuple) or hasattr(v, "__len__") for v in frame["distinct_vertices"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_nulls_of_every_type(transport, standin_conn, druid_conn, reference, pid) -> None:
    sql = (
        "SELECT caseid, "
        "CASE WHEN rework = 1 THEN duration END AS d, "
        "CASE WHEN rework = 1 THEN concurrency END AS c, "
        "CASE WHEN rework = 1 THEN caseid END AS s, "
        "CASE WHEN rework = 1 THEN __time END AS t "
        f'FROM "{pid}" ORDER BY __time LIMIT 60'
    )
    frame = check(sql, (), transport, standin_conn, druid_conn, reference)
    reworked = druid_conn.query(f'SELECT rework FROM "{pid}" ORDER BY __time LIMIT 60', transport="druid")
    nulls = (reworked["rework"] != 1).to_numpy()
    assert 0 < nulls.sum() < len(frame)  # both NULLs and values in every column
    for name in ("d", "c", "s", "t"):
        assert (frame[name].isna().to_numpy() == nulls).all(), name


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_empty_answer_keeps_its_types(transport, standin_conn, druid_conn, reference, pid) -> None:
    sql = f"SELECT {COLUMNS} FROM \"{pid}\" WHERE caseid = 'no such case' ORDER BY __time"
    frame = check(sql, (), transport, standin_conn, druid_conn, reference)
    assert frame.empty and list(frame.columns) == [c.strip() for c in COLUMNS.split(",")]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_parameters_of_every_kind(transport, standin_conn, druid_conn, reference, pid) -> None:
    first = druid_conn.query(f'SELECT caseid, __time FROM "{pid}" ORDER BY __time LIMIT 1', transport="druid")
    case, start = first["caseid"].iloc[0], first["__time"].iloc[0]
    sql = (
        f'SELECT caseid, duration, concurrency FROM "{pid}" '
        "WHERE caseid <> ? AND duration > ? AND concurrency >= ? AND __time > ? ORDER BY __time LIMIT 20"
    )
    params = (case, 1000, 0.0, start.to_pydatetime())
    frame = check(sql, params, transport, standin_conn, druid_conn, reference)
    assert len(frame) == 20 and case not in set(frame["caseid"]) and (frame["duration"] > 1000).all()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_chunked_reads(transport, standin_conn, druid_conn, reference, pid) -> None:
    sql = f'SELECT __time, caseid, vertex_name, duration FROM "{pid}_vertex" ORDER BY __time LIMIT 700'
    chunks = {
        name: list(conn.query_chunks(sql, chunk_rows=250, transport=transport))
        for name, conn in (("standin", standin_conn), ("druid", druid_conn))
    }
    assert [len(c) for c in chunks["druid"]] == [len(c) for c in chunks["standin"]] == [250, 250, 200]
    whole = reference(sql)
    for got in chunks.values():
        same(sql, pd.concat(got, ignore_index=True), whole)


REFUSED = [
    ('SELECT nope FROM "{pid}"', "Column 'nope' not found in any table (line [1], column [8])"),
    ('SELECT caseid FROM "{pid}" ORDER BY caseid', "SQL query requires ordering a table by non-time column"),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("sql", "phrase"), REFUSED, ids=["unknown-column", "order-by-non-time"])
def test_a_refused_statement(transport, standin_conn, druid_conn, pid, sql, phrase) -> None:
    statement = sql.format(pid=pid)
    with pytest.raises(QueryError) as theirs:
        druid_conn.query(statement, transport=transport)
    with pytest.raises(QueryError) as ours:
        standin_conn.query(statement, transport=transport)
    assert type(ours.value) is type(theirs.value)
    assert phrase in theirs.value.server_message and phrase in ours.value.server_message
    if "nope" in sql:  # the whole message (no exception chain, no Java framing) and its position
        assert ours.value.server_message == theirs.value.server_message == phrase
        assert ours.value.position == theirs.value.position == (1, 8)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_flag_is_a_bigint_and_a_comparison_a_boolean(
    transport, standin_conn, druid_conn, reference, pid
) -> None:
    """Druid ingests a boolean as a long 1/0 and types a comparison BOOLEAN; the stand-in's tables hold the
    flag as Druid does (was a known difference: the stand-in typed ``is_predicted`` BOOLEAN)."""
    sql = (
        "SELECT caseid, is_predicted, duration > 1728000000 AS slow, "
        "CASE WHEN rework = 1 THEN duration > 1728000000 END AS maybe "
        f'FROM "{pid}" ORDER BY __time'  # every case: a few are predicted
    )
    frame = check(sql, (), transport, standin_conn, druid_conn, reference)
    assert str(frame["is_predicted"].dtype) == "Int64" and set(frame["is_predicted"]) == {0, 1}
    assert str(frame["slow"].dtype) == str(frame["maybe"].dtype) == "boolean"
    plain = druid_conn.query(f'SELECT caseid, duration, rework FROM "{pid}"', transport="druid")
    by_case = plain.set_index("caseid").loc[frame["caseid"]]  # (rows of equal __time come in any order)
    assert frame["slow"].tolist() == (by_case["duration"] > 1728000000).tolist()
    assert frame["maybe"].isna().tolist() == (by_case["rework"] != 1).tolist()
    assert frame["slow"].nunique() == 2
