"""The Avatica endpoint pages through a large result as frames are fetched, never holding it whole.

The encoding block is made small here (``_ENCODE_BLOCK``), so a few hundred rows of the fixture data behave
like a result of millions: only the first block is read at ``prepareAndExecute``, the rest while fetching.
"""

from __future__ import annotations

import orjson
import pytest

from pm_sandbox.sql import avatica_statements
from pm_sandbox.sql.avatica import AvaticaService
from pm_sandbox.sql.engine import SqlEngine, SqlOptions

BLOCK = 100  # rows per encoding block in these tests; frames are at least 100 rows (Druid's minimum)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(avatica_statements, "_ENCODE_BLOCK", BLOCK)


class Client:
    """Avatica JSON requests straight to an :class:`AvaticaService` (no HTTP: the service is under test)."""

    def __init__(self, service: AvaticaService, workgroup) -> None:
        self.service = service
        self.cid = "c-stream"
        self.call("openConnection", info={"user": workgroup.client_id, "password": workgroup.client_secret})
        self.sid = self.call("createStatement")["statementId"]

    def raw(self, request: str, **fields) -> tuple[int, dict]:
        status, body = self.service.handle(
            orjson.dumps({"request": request, "connectionId": self.cid, **fields})
        )
        return status, orjson.loads(body)

    def call(self, request: str, **fields) -> dict:
        status, answer = self.raw(request, **fields)
        assert status == 200, answer
        return answer

    def execute(self, sql: str, first_frame: int = BLOCK) -> dict:
        answer = self.call(
            "prepareAndExecute", statementId=self.sid, sql=sql, maxRowsInFirstFrame=first_frame
        )
        return answer["results"][0]["firstFrame"]

    def fetch(self, offset: int, rows: int = BLOCK) -> dict:
        return self.call("fetch", statementId=self.sid, offset=offset, fetchMaxRowCount=rows)["frame"]

    def all_rows(self, sql: str, frame_rows: int = BLOCK) -> tuple[list, int]:
        frame = self.execute(sql, frame_rows)
        rows, frames = list(frame["rows"]), 1
        while not frame["done"]:
            frame = self.fetch(len(rows), frame_rows)
            assert frame["offset"] == len(rows)
            rows += frame["rows"]
            frames += 1
        return rows, frames


@pytest.mark.parametrize("frame_rows", [100, 130, 250])
def test_a_streamed_result_is_complete_and_not_repeated(
    small_blocks, sandbox_store, demo, tables, frame_rows
):
    engine = SqlEngine(sandbox_store, SqlOptions())
    client = Client(AvaticaService(engine), demo)
    sql = tables.fmt("SELECT caseid, vertex_name, duration FROM {v}")
    want = [
        list(r)
        for r in sandbox_store.database(demo.client_id)
        .cursor()
        .sql(f"SELECT caseid, CAST(vertex_name AS VARCHAR), duration FROM druid.{tables.vertex}")
        .fetchall()
    ]
    assert len(want) > 5 * BLOCK  # several blocks, so the query streams
    rows, frames = client.all_rows(sql, frame_rows)
    assert sorted(rows) == sorted(want)  # every row once, none repeated at a block or frame boundary
    assert frames == -(-len(want) // frame_rows)  # the last frame says done: no empty frame after it


def test_rows_past_the_row_cap_fail_at_a_later_fetch_not_at_execute(
    small_blocks, sandbox_store, demo, tables
):
    # The execute answer comes before the query has produced the capped row: the result is not
    # computed whole first. The error arrives with the fetch that reaches it, as an ErrorResponse.
    engine = SqlEngine(sandbox_store, SqlOptions(max_rows=350))
    client = Client(AvaticaService(engine), demo)
    first = client.execute(tables.fmt("SELECT caseid FROM {v}"))
    assert len(first["rows"]) == BLOCK and not first["done"]
    offset, error = BLOCK, None
    while error is None:
        status, answer = client.raw("fetch", statementId=client.sid, offset=offset, fetchMaxRowCount=BLOCK)
        if status != 200:
            error = answer
        else:
            assert not answer["frame"]["done"]
            offset += len(answer["frame"]["rows"])
    assert "row cap" in error["errorMessage"]
    assert BLOCK <= offset <= 350


def test_closing_a_streaming_statement_frees_its_query_slot(small_blocks, sandbox_store, demo, tables):
    # One slot: if closeStatement left the stream open, the next query would wait for the slot and fail
    # after the time limit (a hang guard, not a measure).
    engine = SqlEngine(sandbox_store, SqlOptions(max_concurrent_queries=1, query_timeout=60))
    client = Client(AvaticaService(engine), demo)
    first = client.execute(tables.fmt("SELECT caseid FROM {v}"))
    assert not first["done"]
    client.call("closeStatement", statementId=client.sid)
    client.sid = client.call("createStatement")["statementId"]
    rows, _ = client.all_rows(tables.fmt("SELECT COUNT(*) AS n FROM {v}"))
    assert rows[0][0] > 5 * BLOCK


def test_a_result_read_to_its_end_frees_its_query_slot(small_blocks, sandbox_store, demo, tables):
    engine = SqlEngine(sandbox_store, SqlOptions(max_concurrent_queries=1, query_timeout=60))
    client = Client(AvaticaService(engine), demo)
    rows, _ = client.all_rows(tables.fmt("SELECT caseid FROM {v}"))
    again, _ = client.all_rows(tables.fmt("SELECT caseid FROM {v}"))
    assert again == rows and len(rows) > 5 * BLOCK


def test_max_row_count_stops_a_streaming_result(small_blocks, sandbox_store, demo, tables):
    engine = SqlEngine(sandbox_store, SqlOptions())
    client = Client(AvaticaService(engine), demo)
    answer = client.call(
        "prepareAndExecute",
        statementId=client.sid,
        sql=tables.fmt("SELECT caseid FROM {v}"),
        maxRowsInFirstFrame=BLOCK,
        maxRowCount=3 * BLOCK + 7,
    )
    frame = answer["results"][0]["firstFrame"]
    rows = list(frame["rows"])
    while not frame["done"]:
        frame = client.fetch(len(rows))
        rows += frame["rows"]
    assert len(rows) == 3 * BLOCK + 7
