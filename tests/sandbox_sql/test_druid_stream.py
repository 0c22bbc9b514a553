"""The Druid SQL answer is computed and encoded in one DuckDB pipeline and streamed batch by batch."""

from __future__ import annotations

import orjson
import pytest

from pm_notebook.errors import QueryError
from pm_sandbox.sql import druid_api as druid_sql
from pm_sandbox.sql.engine import SqlEngine, SqlOptions

FORMATS = ("object", "array", "objectLines", "arrayLines", "csv")


@pytest.fixture(scope="module")
def engine(sandbox_store):
    return SqlEngine(sandbox_store, SqlOptions(max_rows=1000))


def request(sql: str, fmt: str) -> druid_sql.DruidRequest:
    body = {"query": sql, "resultFormat": fmt, "header": True, "typesHeader": True, "sqlTypesHeader": True}
    return druid_sql.parse_request(orjson.dumps(body))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_streamed_answer_equals_the_whole_answer(engine, demo, tables, fmt):
    sql = tables.fmt("SELECT __time, caseid, vertex_name, duration, order_amount_lpkr FROM {v} LIMIT 900")
    whole = druid_sql.answer(engine, demo.client_id, request(sql, fmt))
    assert whole.body is not None and whole.chunks is None
    streamed = druid_sql.answer(engine, demo.client_id, request(sql, fmt), prefetch=1, batch_rows=128)
    assert streamed.body is None
    chunks = [bytes(c) for c in streamed.chunks]
    assert len(chunks) > 5  # header, several batches of 128 rows, end
    assert b"".join(chunks) == whole.body
    if fmt.endswith("Lines"):
        assert whole.body.endswith(b"\n\n")


def test_the_query_slot_is_freed_when_an_answer_is_abandoned(sandbox_store, demo, tables):
    # A slot never freed makes the second answer fail after the time limit (a hang guard, not a measure).
    engine = SqlEngine(sandbox_store, SqlOptions(max_concurrent_queries=1, query_timeout=60))
    sql = tables.fmt("SELECT caseid FROM {v} LIMIT 900")
    first = druid_sql.answer(engine, demo.client_id, request(sql, "arrayLines"), prefetch=1, batch_rows=64)
    next(first.chunks)
    first.close()  # the client went away mid-answer
    again = druid_sql.answer(engine, demo.client_id, request(sql, "arrayLines"))
    assert again.body is not None and again.body.count(b"\n") == 900 + 3 + 1


def test_a_failure_after_the_first_bytes_ends_the_stream_without_the_end_marker(engine, demo, tables):
    sql = tables.fmt("SELECT caseid FROM {v}")  # more rows than the engine's cap of 1000
    answer = druid_sql.answer(engine, demo.client_id, request(sql, "arrayLines"), prefetch=1, batch_rows=100)
    body = b"".join(bytes(c) for c in answer.chunks)
    assert body.count(b"\n") == 3 + 1000  # header lines, then the rows up to the cap
    assert not body.endswith(b"\n\n")


def test_the_cap_within_the_first_bytes_is_a_druid_error(engine, demo, tables):
    from pm_sandbox.sql.errors import SqlError

    with pytest.raises(SqlError, match="1,000 rows"):
        druid_sql.answer(engine, demo.client_id, request(tables.fmt("SELECT caseid FROM {v}"), "arrayLines"))


def test_the_client_reports_an_answer_cut_short_by_the_server(sandbox_factory, connect_workgroup):
    sb = sandbox_factory(cases=300, extra_args=["--sql-max-rows", "60000"])
    demo = sb.workgroups["demo"]
    pid = demo.project_ids[0]
    conn = connect_workgroup(sb)
    # ~80k rows of ~50 bytes: the first batch (50k rows, over the first MB) is sent before the cap is hit.
    sql = (
        f'SELECT v.caseid, REPEAT(v.caseid, 5) AS wide FROM "{pid}_vertex" AS v '
        f'CROSS JOIN (SELECT caseid FROM "{pid}" LIMIT 30) AS c'
    )
    with conn:
        with pytest.raises(QueryError, match="ended early"):
            conn.query(sql, transport="druid")
        assert len(conn.query(sql + " LIMIT 2000", transport="druid")) == 2000
