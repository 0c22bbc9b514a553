"""Avatica frames across the sandbox's encoding blocks: every frame size gives the same rows and offsets.

The service reads and encodes rows in blocks, the next block ahead in a background thread while frames
of the current one are read (see ``avatica._AHEAD``). The block size is made small here so that a result
of ~1000 rows spans many blocks, and frame sizes that divide it, do not divide it, or exceed it are all
read through the same calls the app makes (the inline fetch first, then the full path), as a JDBC client
reads a result.
"""

from __future__ import annotations

import uuid

import orjson
import pyarrow as pa
import pytest

from pm_sandbox.sql import avatica_statements as avatica_module
from pm_sandbox.sql.avatica import AvaticaService
from pm_sandbox.sql.engine import SqlEngine, SqlOptions

BLOCK = 250


@pytest.fixture(scope="module")
def engine(small_store):
    return SqlEngine(small_store, SqlOptions(min_rows_per_frame=1))


@pytest.fixture
def service(engine, monkeypatch):
    monkeypatch.setattr(avatica_module, "_ENCODE_BLOCK", BLOCK)
    return AvaticaService(engine)


def _sql(small_store) -> str:
    pid = small_store.by_key("demo").projects[0].id
    return f'SELECT __time, caseid, vertex_name, duration, enddate FROM "{pid}_vertex" ORDER BY __time'


def _expected(engine: SqlEngine, client_id: str, sql: str) -> list[list]:
    table = engine.execute(client_id, sql).table
    table = table.set_column(0, "__time", table.column(0).cast(pa.int64()))  # Avatica sends epoch ms
    return [list(row.values()) for row in table.to_pylist()]


def _call(service: AvaticaService, message: dict) -> dict:
    body = orjson.dumps(message)
    status, answer = service.handle_inline(body) or service.handle(body)
    decoded = orjson.loads(answer)
    assert status == 200, decoded
    return decoded


def _open_statement(service: AvaticaService, wg) -> tuple[str, int]:
    """A new Avatica connection of workgroup *wg* and a statement on it: their ids."""
    cid = str(uuid.uuid4())
    _call(
        service,
        {"request": "openConnection", "connectionId": cid, "info": {"user": wg.id, "password": wg.secret}},
    )
    return cid, _call(service, {"request": "createStatement", "connectionId": cid})["statementId"]


@pytest.mark.parametrize("frame", [1, 100, BLOCK, 333, 4 * BLOCK + 1, 5000])
def test_frames_of_every_size_read_the_result_exactly(service, engine, small_store, frame) -> None:
    wg = small_store.by_key("demo")
    sql = _sql(small_store)
    expected = _expected(engine, wg.id, sql)
    assert len(expected) > 3 * BLOCK  # the result spans several encoding blocks
    cid, sid = _open_statement(service, wg)
    executed = _call(
        service,
        {
            "request": "prepareAndExecute",
            "connectionId": cid,
            "statementId": sid,
            "sql": sql,
            "maxRowsInFirstFrame": frame,
            "maxRowCount": -1,
        },
    )
    first = executed["results"][0]["firstFrame"]
    frames = [first]
    while not frames[-1]["done"]:
        offset = frames[-1]["offset"] + len(frames[-1]["rows"])
        fetched = _call(
            service,
            {
                "request": "fetch",
                "connectionId": cid,
                "statementId": sid,
                "offset": offset,
                "fetchMaxRowCount": frame,
            },
        )
        frames.append(fetched["frame"])
    rows = [row for f in frames for row in f["rows"]]
    assert len(rows) == len(expected)
    assert sorted(rows, key=orjson.dumps) == sorted(expected, key=orjson.dumps)  # ties in time: any order
    assert [f["offset"] for f in frames] == list(range(0, len(expected), frame))
    assert all(len(f["rows"]) == min(frame, len(expected) - f["offset"]) for f in frames)
    assert [f["done"] for f in frames] == [False] * (len(frames) - 1) + [True]
    # The result is closed with its last frame, like Druid's: nothing is left encoding or held.
    statement = service._connections[cid].statements[sid]
    assert statement.result is None and statement.encoded is None and statement.ahead is None


def test_a_failed_encoding_ahead_is_an_avatica_error(service, small_store, monkeypatch) -> None:
    read_block = avatica_module._read_block
    calls = []

    def failing_after_the_first(result, rows):
        calls.append(rows)
        if len(calls) > 1:
            raise RuntimeError("encoding failed")
        return read_block(result, rows)

    monkeypatch.setattr(avatica_module, "_read_block", failing_after_the_first)
    wg = small_store.by_key("demo")
    cid, sid = _open_statement(service, wg)
    message = {
        "request": "prepareAndExecute",
        "connectionId": cid,
        "statementId": sid,
        "sql": _sql(small_store),
    }
    first = _call(service, {**message, "maxRowsInFirstFrame": BLOCK, "maxRowCount": -1})
    assert len(first["results"][0]["firstFrame"]["rows"]) == BLOCK
    body = orjson.dumps(
        {
            "request": "fetch",
            "connectionId": cid,
            "statementId": sid,
            "offset": BLOCK,
            "fetchMaxRowCount": BLOCK,
        }
    )
    status, answer = service.handle_inline(body) or service.handle(body)
    error = orjson.loads(answer)
    assert status == 500 and error["response"] == "error"
    assert "encoding failed" in error["errorMessage"]
    assert len(calls) == 2  # the block after the first was encoded ahead (and failed there)


def test_rows_encoded_ahead_stay_within_two_blocks(service, engine, small_store) -> None:
    """However fast the background encoding is (here: every block read ahead is finished before the next
    fetch), the rows encoded but not yet sent stay under two blocks: the result never piles up."""
    wg = small_store.by_key("demo")
    sql = _sql(small_store)
    total = len(_expected(engine, wg.id, sql))
    cid, sid = _open_statement(service, wg)
    message = {"connectionId": cid, "statementId": sid}
    first = _call(
        service,
        {"request": "prepareAndExecute", **message, "sql": sql, "maxRowsInFirstFrame": 10, "maxRowCount": -1},
    )["results"][0]["firstFrame"]
    statement = service._connections[cid].statements[sid]
    offset, done, unsent, merged_ahead = len(first["rows"]), first["done"], [], 0
    while not done:
        if statement.ahead is not None:
            statement.ahead.result()  # the encoder is ahead of the reader
            merged_ahead += 1
        frame = _call(service, {"request": "fetch", **message, "offset": offset, "fetchMaxRowCount": 10})[
            "frame"
        ]
        offset, done = offset + len(frame["rows"]), frame["done"]
        if not done:
            unsent.append(statement.available() - statement.offset)
    assert offset == total > 3 * BLOCK and merged_ahead >= 3
    assert max(unsent) < 2 * BLOCK
