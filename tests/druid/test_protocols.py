"""The protocols themselves, on a real Druid 33 and on the stand-in: for each Avatica request and each Druid
SQL API request the client makes, the stand-in's answer has the keys, JSON types and error shape of Druid's.

The requests are built with the client's own sans-IO modules (:mod:`pm_notebook.sql.avatica_protocol`,
:mod:`pm_notebook.sql.druid_protocol`), so they are byte for byte what the ``avatica`` and ``druid``
transports send; the metadata calls (which only the JDBC driver sends) follow the driver's recorded
traffic. Where the two servers still differ, a ``known_`` test pins the difference (docs/druid-dialect.md,
"Known differences": when one of them fails, the difference is gone and the note goes too).

Druid allows 4 open statements per Avatica connection and 25 connections: every test closes what it opens.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import requests

from pm_notebook.sql import avatica_protocol as proto
from pm_notebook.sql import druid_protocol

AVATICA = "/druid/v2/sql/avatica/"
SQL = "/druid/v2/sql/"


# an IN (subquery) of more rows than maxSubqueryRows=5 allows
SUBQUERY = 'SELECT COUNT(*) FROM "{pid}" WHERE caseid IN (SELECT caseid FROM "{pid}_vertex" GROUP BY caseid)'


def shape(value: Any) -> Any:
    """The keys and JSON types of *value* (a list: the distinct shapes of its elements)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return sorted({orjson.dumps(shape(v), option=orjson.OPT_SORT_KEYS).decode() for v in value})
    return type(value).__name__


class Endpoint:
    """One server's Avatica endpoint with one open connection (credentials only for the stand-in)."""

    def __init__(self, base: str, user: str | None = None, password: str | None = None) -> None:
        self.base = base
        self.session = requests.Session()
        self.info = {"user": user, "password": password} if user else {}
        self.cid = str(uuid.uuid4())

    def call(self, message: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = self.session.post(self.base + AVATICA, data=proto.encode(message))
        return response.status_code, response.json()

    def open(self) -> None:
        assert self.call(proto.open_connection(self.cid, self.info))[0] == 200
        assert self.call(proto.connection_sync(self.cid))[0] == 200

    def statement(self) -> int:
        status, answer = self.call(proto.create_statement(self.cid))
        assert status == 200, answer
        return int(answer["statementId"])

    def close(self) -> None:
        self.call(proto.close_connection(self.cid))
        self.session.close()


@pytest.fixture(scope="module")
def pid(sandbox) -> str:
    return sandbox.workgroups["demo"].project_ids[0]


@pytest.fixture
def pair(druid_cluster, druid_published, sandbox) -> Iterator[tuple[Endpoint, Endpoint]]:
    """An open Avatica connection on Druid and one on the stand-in's demo workgroup."""
    wg = sandbox.workgroups["demo"]
    druid, standin = Endpoint(druid_cluster.broker), Endpoint(sandbox.sql_url, wg.client_id, wg.client_secret)
    druid.open()
    standin.open()
    yield druid, standin
    druid.close()
    standin.close()


def both(pair, build) -> tuple[tuple[int, dict[str, Any]], tuple[int, dict[str, Any]]]:
    """``build(endpoint)`` → the message; the two answers, after checking they have one status and shape."""
    druid, standin = pair
    theirs, ours = druid.call(build(druid)), standin.call(build(standin))
    assert ours[0] == theirs[0], (ours, theirs)
    assert shape(ours[1]) == shape(theirs[1])
    return theirs, ours


def result_set(answer: dict[str, Any]) -> dict[str, Any]:
    (one,) = answer["results"]
    return one


# ---------------------------------------------------------------------------------------------- Avatica


def test_open_sync_create_close_have_druids_shape(druid_cluster, druid_published, sandbox) -> None:
    wg = sandbox.workgroups["demo"]
    druid, standin = Endpoint(druid_cluster.broker), Endpoint(sandbox.sql_url, wg.client_id, wg.client_secret)
    pair = (druid, standin)
    try:
        (_, opened), _ = both(pair, lambda e: proto.open_connection(e.cid, e.info))
        assert opened["rpcMetadata"]["response"] == "rpcMetadata"
        (_, synced), (_, ours) = both(pair, lambda e: proto.connection_sync(e.cid))
        assert ours["connProps"] == synced["connProps"]  # the client's properties, echoed
        (_, created), (_, ours) = both(pair, lambda e: proto.create_statement(e.cid))
        assert ours["statementId"] == created["statementId"] == 1  # per-connection ids from 1
        both(pair, lambda e: proto.close_statement(e.cid, 1))
        both(pair, lambda e: proto.close_statement(e.cid, 99))  # an unknown statement: success
        both(pair, lambda e: proto.close_connection(e.cid))
        both(pair, lambda e: proto.close_connection(e.cid))  # twice: success
        # a call on a closed connection: error code 1, no message, NoSuchConnectionException
        (status, theirs), (_, ours) = both(pair, lambda e: proto.create_statement(e.cid))
        assert status == 500
        for answer in (theirs, ours):
            assert answer["errorCode"] == 1 and answer["errorMessage"] is None
            assert answer["severity"] == "ERROR" and answer["sqlState"] == "00000"
            assert answer["exceptions"][0].startswith("org.apache.calcite.avatica.NoSuchConnectionException")
    finally:
        for endpoint in pair:
            endpoint.session.close()


# a flag (BIGINT 1/0, as Druid ingests a boolean) and a comparison (BOOLEAN) among them
COLUMNS = "__time, caseid, duration, enddate, concurrency, distinct_vertices, is_predicted, duration > 0 AS d"


def test_prepare_and_execute_answers_results_with_druids_signature(pair, pid) -> None:
    sql = f'SELECT {COLUMNS} FROM "{pid}" ORDER BY __time LIMIT 3'
    (_, theirs), (_, ours) = both(
        pair, lambda e: proto.prepare_and_execute(e.cid, e.statement(), sql, max_rows_in_first_frame=5000)
    )
    assert "resultSets" not in theirs  # the key Avatica's JSON page shows, not the one servers send
    ours_rs, theirs_rs = result_set(ours), result_set(theirs)
    # every column field, the type (id, name, rep, array component), precision and scale included
    assert ours_rs["signature"] == theirs_rs["signature"]
    assert ours_rs["firstFrame"] == theirs_rs["firstFrame"]
    assert (
        (ours_rs["updateCount"], ours_rs["ownStatement"]) == (theirs_rs["updateCount"], False) == (-1, False)
    )


def test_a_result_read_in_frames(pair, pid) -> None:
    """A 250-row answer asked for in 100-row frames: the same frames (Druid's minRowsPerFrame is 100)."""
    sql = f'SELECT __time, caseid, vertex_name FROM "{pid}_vertex" ORDER BY __time LIMIT 250'
    statements = {}

    def first(e: Endpoint) -> dict[str, Any]:
        statements[e] = e.statement()
        return proto.prepare_and_execute(e.cid, statements[e], sql, max_rows_in_first_frame=100)

    (_, theirs), (_, ours) = both(pair, first)
    frames = [(result_set(theirs)["firstFrame"], result_set(ours)["firstFrame"])]
    while not frames[-1][0]["done"]:
        offset = sum(len(f[0]["rows"]) for f in frames)
        (_, theirs), (_, ours) = both(pair, lambda e, o=offset: proto.fetch(e.cid, statements[e], o, 100))
        assert ours["missingStatement"] is theirs["missingStatement"] is False
        frames.append((theirs["frame"], ours["frame"]))
    assert [len(t["rows"]) for t, _ in frames] == [len(o["rows"]) for _, o in frames] == [100, 100, 50]
    assert [o for _, o in frames] == [t for t, _ in frames]  # offsets, done flags and rows
    both(pair, lambda e: proto.close_statement(e.cid, statements[e]))


def test_prepare_then_execute_with_typed_parameters(pair, pid) -> None:
    import pandas as pd

    druid, _ = pair
    first = f'SELECT caseid FROM "{pid}" ORDER BY __time LIMIT 1'
    (excluded,) = result_set(druid.call(proto.prepare_and_execute(druid.cid, druid.statement(), first))[1])[
        "firstFrame"
    ]["rows"][0]
    sql = (
        f'SELECT caseid, duration FROM "{pid}" WHERE duration > ? AND caseid <> ? AND __time >= ? '
        "AND concurrency >= ? ORDER BY __time LIMIT 3"
    )
    values = proto.parameter_values([5, excluded, pd.Timestamp("2000-01-01"), 0.0])
    (_, theirs), (_, ours) = both(pair, lambda e: proto.prepare(e.cid, sql))
    assert ours["statement"]["signature"] == {**theirs["statement"]["signature"], "cursorFactory": ANY_STYLE}
    handles = {e: a["statement"] for e, a in zip(pair, (theirs, ours), strict=True)}
    (_, theirs), (_, ours) = both(pair, lambda e: proto.execute(handles[e], values, first_frame_rows=100))
    assert result_set(ours)["firstFrame"] == result_set(theirs)["firstFrame"]
    rows = result_set(ours)["firstFrame"]["rows"]
    assert len(rows) == 3 and excluded not in [r[0] for r in rows] and all(r[1] > 5 for r in rows)
    both(pair, lambda e: proto.close_statement(e.cid, handles[e]["id"]))


class _AnyStyle:
    """Druid's ``prepare`` answer names the cursor style ARRAY, its ``execute`` answer LIST; the driver
    reads both (avatica-json.md): the stand-in says LIST in both."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and other.get("style") in ("ARRAY", "LIST")


ANY_STYLE = _AnyStyle()


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ('SELECT nope FROM "{pid}"', "Column 'nope' not found in any table (line [1], column [8])"),
        (
            SUBQUERY,
            "Cannot issue the query, subqueries generated results beyond maximum[5] rows.",
        ),
    ],
    ids=["validation", "resource-limit"],
)
def test_a_refused_statement_has_druids_error_object(
    druid_cluster, druid_published, sandbox, pid, sql, message
):
    wg = sandbox.workgroups["demo"]
    pair = (Endpoint(druid_cluster.broker), Endpoint(sandbox.sql_url, wg.client_id, wg.client_secret))
    for endpoint in pair:
        endpoint.info = {**endpoint.info, "maxSubqueryRows": "5"}
        endpoint.open()
    try:
        statement = sql.format(pid=pid)
        (status, theirs), (_, ours) = both(
            pair, lambda e: proto.prepare_and_execute(e.cid, e.statement(), statement)
        )
        assert status == 500
        for answer in (theirs, ours):
            assert (answer["errorCode"], answer["sqlState"], answer["severity"]) == (-1, "00000", "UNKNOWN")
        # the exception class heading the first stack trace, and the chain of errorMessage
        assert ours["exceptions"][0].split("{", 1)[0] == theirs["exceptions"][0].split("{", 1)[0]
        assert ours["errorMessage"].split(": ", 1)[0] == theirs["errorMessage"].split(": ", 1)[0]
        assert [p.split(": ", 1)[0] for p in ours["errorMessage"].split(" -> ")] == [
            p.split(": ", 1)[0] for p in theirs["errorMessage"].split(" -> ")
        ][:2]
        assert message in ours["errorMessage"] and message in theirs["errorMessage"]
    finally:
        for endpoint in pair:
            endpoint.close()


METADATA = [
    {"request": "databaseProperties"},
    {"request": "getCatalogs"},
    {"request": "getSchemas", "catalog": None, "schemaPattern": "%o%"},  # sys and view: a known difference
    {"request": "getTableTypes"},
    {"request": "getTables", "catalog": None, "schemaPattern": "druid", "tableNamePattern": "{pid}%"},
    {
        "request": "getColumns",
        "catalog": None,
        "schemaPattern": "druid",
        "tableNamePattern": "{pid}_edge",
        "columnNamePattern": None,
    },
    {"request": "commit"},
    {"request": "rollback"},
]


@pytest.mark.parametrize("request_", METADATA, ids=[m["request"] for m in METADATA])
def test_metadata_calls_have_druids_shape_and_rows(pair, pid, request_) -> None:
    message = {k: v.format(pid=pid) if isinstance(v, str) else v for k, v in request_.items()}
    if request_["request"] == "getTables":
        message["typeList"] = None
    (_, theirs), (_, ours) = both(pair, lambda e: {**message, "connectionId": e.cid})
    if theirs["response"] == "resultSet":
        assert ours["ownStatement"] is theirs["ownStatement"] is False  # Druid closes them itself
        assert [c["label"] for c in ours["signature"]["columns"]] == [
            c["label"] for c in theirs["signature"]["columns"]
        ]
        assert ours["firstFrame"]["rows"] == theirs["firstFrame"]["rows"]


def test_batches_are_refused_as_druid_refuses_them(pair) -> None:
    (status, theirs), (_, ours) = both(
        pair,
        lambda e: {
            "request": "prepareAndExecuteBatch",
            "connectionId": e.cid,
            "statementId": 1,
            "sqlCommands": ["SELECT 1"],
        },
    )
    assert status == 500
    assert "Batch statements not supported" in theirs["errorMessage"]
    assert "Batch statements not supported" in ours["errorMessage"]


# -------------------------------------------------------------------------------- known differences


def test_known_fetch_after_the_last_frame(pair, pid) -> None:
    """Druid closes a result once its last frame is sent, and a later fetch is an error; the stand-in
    answers ``missingResults``. The client never fetches past ``done``."""
    druid, standin = pair
    sql = f'SELECT caseid FROM "{pid}" ORDER BY __time LIMIT 2'
    answers = []
    for e in pair:
        sid = e.statement()
        assert result_set(e.call(proto.prepare_and_execute(e.cid, sid, sql))[1])["firstFrame"]["done"]
        answers.append(e.call(proto.fetch(e.cid, sid, 2, 100)))
    (status, theirs), (ours_status, ours) = answers
    assert (status, theirs["errorMessage"]) == (500, "ISE: No result set open for statement [1]")
    assert (ours_status, ours["missingResults"], ours["frame"]) == (200, True, None)


def test_known_unknown_statement_ids(pair) -> None:
    """Druid refuses a fetch or prepareAndExecute naming a statement it does not know
    (NoSuchStatementException); the stand-in answers ``missingStatement`` to a fetch and runs the
    prepareAndExecute (so the driver's transparent reconnection can repeat it with its old id)."""
    druid, standin = pair
    status, theirs = druid.call(proto.fetch(druid.cid, 77, 0, 100))
    assert status == 500 and "NoSuchStatementException" in theirs["errorMessage"]
    status, ours = standin.call(proto.fetch(standin.cid, 77, 0, 100))
    assert status == 200 and ours["missingStatement"] is True
    status, theirs = druid.call(proto.prepare_and_execute(druid.cid, 78, "SELECT 1"))
    assert status == 500 and "NoSuchStatementException" in theirs["errorMessage"]
    status, ours = standin.call(proto.prepare_and_execute(standin.cid, 78, "SELECT 1"))
    assert status == 200 and result_set(ours)["firstFrame"]["rows"] == [[1]]
    standin.call(proto.close_statement(standin.cid, 78))


def test_known_schemas_sys_and_view(pair) -> None:
    """Druid lists the ``sys`` and ``view`` schemas too; the stand-in serves neither and lists neither."""
    (_, theirs), (_, ours) = both(
        pair,
        lambda e: {"request": "getSchemas", "connectionId": e.cid, "catalog": None, "schemaPattern": None},
    )
    druid_schemas = [row[0] for row in theirs["firstFrame"]["rows"]]
    ours_schemas = [row[0] for row in ours["firstFrame"]["rows"]]
    assert [s for s in druid_schemas if s not in ("sys", "view")] == ours_schemas
    assert {"sys", "view"} <= set(druid_schemas)


def test_known_get_type_info(pair) -> None:
    """Druid 33 fails ``getTypeInfo`` (a NullPointerException inside the broker); the stand-in lists its
    types."""
    druid, standin = pair
    status, theirs = druid.call({"request": "getTypeInfo", "connectionId": druid.cid})
    assert status == 500 and theirs["errorMessage"].startswith("NullPointerException")
    status, ours = standin.call({"request": "getTypeInfo", "connectionId": standin.cid})
    assert status == 200 and "BIGINT" in [row[0] for row in ours["firstFrame"]["rows"]]


def test_a_flag_and_a_comparison_have_druids_types(pair, pid) -> None:
    """Druid types a flag ingested from a boolean BIGINT (1/0) and a comparison BOOLEAN (true/false); so does
    the stand-in (was a known difference: the stand-in typed ``is_predicted`` BOOLEAN)."""
    sql = f'SELECT is_predicted, duration > 0 AS d FROM "{pid}" ORDER BY __time LIMIT 1'
    druid, standin = pair
    theirs = result_set(druid.call(proto.prepare_and_execute(druid.cid, druid.statement(), sql))[1])
    ours = result_set(standin.call(proto.prepare_and_execute(standin.cid, standin.statement(), sql))[1])
    assert ours["signature"] == theirs["signature"]
    assert [c["type"]["name"] for c in theirs["signature"]["columns"]] == ["BIGINT", "BOOLEAN"]
    assert ours["firstFrame"]["rows"] == theirs["firstFrame"]["rows"] == [[0, True]]


# ----------------------------------------------------------------------------------- Druid SQL API


@pytest.fixture
def sql_pair(druid_cluster, druid_published, sandbox):
    """``post(body)`` on both: the two responses (the stand-in's with the demo workgroup's credentials)."""
    wg = sandbox.workgroups["demo"]
    with requests.Session() as druid, requests.Session() as standin:
        standin.auth = (wg.client_id, wg.client_secret)

        def post(body: bytes) -> tuple[requests.Response, requests.Response]:
            return (
                druid.post(
                    druid_cluster.broker + SQL, data=body, headers={"Content-Type": "application/json"}
                ),
                standin.post(sandbox.sql_url + SQL, data=body, headers={"Content-Type": "application/json"}),
            )

        def delete(query_id: str) -> tuple[requests.Response, requests.Response]:
            return druid.delete(druid_cluster.broker + SQL + query_id), standin.delete(
                sandbox.sql_url + SQL + query_id
            )

        yield post, delete


def _headers(response: requests.Response) -> dict[str, str]:
    keep = ("content-type", "x-druid-sql-query-id", "x-druid-query-id", "x-druid-sql-header-included")
    return {k: response.headers[k] for k in keep if k in response.headers}


def test_sql_api_answer_has_druids_lines_and_headers(sql_pair, pid) -> None:
    post, _ = sql_pair
    query_id = str(uuid.uuid4())
    sql = f'SELECT {COLUMNS} FROM "{pid}" WHERE caseid = ? ORDER BY __time LIMIT 2'
    theirs, ours = post(druid_protocol.request_body(sql, ["SO-0002"], query_id))
    assert ours.status_code == theirs.status_code == 200
    assert (
        _headers(ours)
        == _headers(theirs)
        == {
            "content-type": "application/json",
            "x-druid-sql-query-id": query_id,
            "x-druid-query-id": query_id,
            "x-druid-sql-header-included": "yes",
        }
    )
    # names, native types, SQL types, the rows, and the empty line that marks the end
    assert ours.content.split(b"\n") == theirs.content.split(b"\n")


def test_sql_api_empty_answer(sql_pair, pid) -> None:
    post, _ = sql_pair
    body = druid_protocol.request_body(f"SELECT caseid FROM \"{pid}\" WHERE caseid = 'none'", [], "q-empty")
    theirs, ours = post(body)
    assert ours.content == theirs.content == b'["caseid"]\n["STRING"]\n["VARCHAR"]\n\n'


@pytest.mark.parametrize(
    ("sql", "context"),
    [
        ('SELECT nope FROM "{pid}"', {}),
        (
            SUBQUERY,
            {"maxSubqueryRows": 5},
        ),
    ],
    ids=["validation", "resource-limit"],
)
def test_sql_api_error_body_and_headers(sql_pair, pid, sql, context) -> None:
    post, _ = sql_pair
    query_id = str(uuid.uuid4())
    theirs, ours = post(druid_protocol.request_body(sql.format(pid=pid), [], query_id, context))
    assert ours.status_code == theirs.status_code == 400
    assert _headers(ours) == _headers(theirs)
    assert ours.json() == theirs.json()


def test_sql_api_cancel_of_an_unknown_query(sql_pair) -> None:
    _, delete = sql_pair
    theirs, ours = delete(str(uuid.uuid4()))
    assert ours.status_code == theirs.status_code == 404
    assert ours.content == theirs.content == b""


def test_known_bad_context_value(sql_pair) -> None:
    """A context value of the wrong type: Druid answers its legacy ``Query context parse failed``
    (BadQueryContextException, persona OPERATOR), the stand-in a ``druidException`` — the same status and
    message."""
    post, _ = sql_pair
    theirs, ours = post(druid_protocol.request_body("SELECT 1", [], "q-ctx", {"timeout": "abc"}))
    assert ours.status_code == theirs.status_code == 400
    assert ours.json()["errorMessage"] == theirs.json()["errorMessage"]
    assert theirs.json()["error"] == "Query context parse failed"
    assert ours.json()["error"] == "druidException"
