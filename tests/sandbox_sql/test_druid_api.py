"""Druid SQL HTTP API of the sandbox: every resultFormat, the header flags, parameters, errors."""

from __future__ import annotations

import csv
import io

import orjson
import pytest

QUERY = (
    "SELECT __time, caseid, tasks_count, concurrency, tasks_count > 9 AS long_case, distinct_vertices "
    "FROM {c} "
    "WHERE caseid IN (SELECT caseid FROM {c} GROUP BY caseid ORDER BY caseid LIMIT 5) ORDER BY __time"
)
NAMES = ["__time", "caseid", "tasks_count", "concurrency", "long_case", "distinct_vertices"]
NATIVE = ["LONG", "STRING", "LONG", "DOUBLE", "LONG", "ARRAY<STRING>"]
# a comparison is BOOLEAN (native LONG) and answers true/false; bare ARRAY, as Druid 33
SQL_TYPES = ["TIMESTAMP", "VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN", "ARRAY"]


@pytest.fixture(scope="module")
def expected(reference, tables):
    rows = reference.execute(
        tables.fmt(
            "SELECT strftime(__time, '%Y-%m-%dT%H:%M:%S.%g') || 'Z', caseid, tasks_count, concurrency, "
            "tasks_count > 9, "
            "distinct_vertices FROM druid.{c} "
            "WHERE caseid IN (SELECT caseid FROM druid.{c} ORDER BY caseid LIMIT 5) "
            "ORDER BY __time, caseid"
        )
    ).fetchall()
    return [list(r) for r in rows]


def _stringified(row: list) -> list:
    return [*row[:5], orjson.dumps(row[5]).decode()]


def test_object_format_is_the_default(druid, tables, expected):
    r = druid(tables.fmt(QUERY))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers["X-Druid-SQL-Query-Id"]
    body = r.json()
    assert body == [dict(zip(NAMES, _stringified(row), strict=True)) for row in expected]


def test_array_format_with_all_headers(druid, tables, expected):
    r = druid(tables.fmt(QUERY), resultFormat="array", header=True, typesHeader=True, sqlTypesHeader=True)
    assert r.status_code == 200, r.text
    assert r.headers["X-Druid-SQL-Header-Included"] == "yes"
    body = r.json()
    assert body[:3] == [NAMES, NATIVE, SQL_TYPES]
    assert body[3:] == [_stringified(row) for row in expected]


def test_object_header_without_and_with_types(druid, tables):
    plain = druid(tables.fmt(QUERY), header=True).json()
    assert plain[0] == dict.fromkeys(NAMES)
    typed = druid(tables.fmt(QUERY), header=True, typesHeader=True, sqlTypesHeader=True).json()
    assert typed[0] == {
        n: {"type": t, "sqlType": s} for n, t, s in zip(NAMES, NATIVE, SQL_TYPES, strict=True)
    }
    assert len(typed) == 6


def test_object_lines_end_with_a_blank_line(druid, tables, expected):
    r = druid(tables.fmt(QUERY), resultFormat="objectLines", context={"sqlStringifyArrays": False})
    assert r.status_code == 200
    assert r.text.endswith("\n\n")
    lines = r.text.split("\n")
    assert lines[-2:] == ["", ""]
    assert [orjson.loads(x) for x in lines[:-2]] == [dict(zip(NAMES, row, strict=True)) for row in expected]


def test_array_lines_with_sql_types_header(druid, tables, expected):
    r = druid(
        tables.fmt(QUERY),
        resultFormat="arrayLines",
        header=True,
        sqlTypesHeader=True,
        context={"sqlStringifyArrays": False},
    )
    lines = r.text.split("\n")
    assert lines[-2:] == ["", ""]
    values = [orjson.loads(x) for x in lines[:-2]]
    assert values[0] == NAMES and values[1] == SQL_TYPES
    assert values[2:] == expected


def test_csv_with_header_and_types(druid, tables, expected):
    r = druid(tables.fmt(QUERY), resultFormat="csv", header=True, typesHeader=True, sqlTypesHeader=True)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")  # as Druid 33 labels csv
    assert r.text.endswith("\n\n")
    rows = list(csv.reader(io.StringIO(r.text.rstrip("\n"))))
    assert rows[:3] == [NAMES, NATIVE, SQL_TYPES]
    for got, want in zip(rows[3:], expected, strict=True):
        assert got[0] == want[0] and got[1] == want[1] and int(got[2]) == want[2]
        assert float(got[3]) == pytest.approx(want[3])
        assert got[4] == str(want[4]).lower()
        assert orjson.loads(got[5]) == want[5]


def test_csv_without_header(druid, tables, expected):
    r = druid(tables.fmt(QUERY), resultFormat="csv")
    rows = list(csv.reader(io.StringIO(r.text.rstrip("\n"))))
    assert [row[1] for row in rows] == [row[1] for row in expected]


def test_empty_result_keeps_the_header(druid, tables):
    body = druid(tables.fmt("SELECT caseid FROM {c} WHERE 1 = 0"), resultFormat="array", header=True).json()
    assert body == [["caseid"]]
    assert druid(tables.fmt("SELECT caseid FROM {c} WHERE 1 = 0")).json() == []


def test_typed_parameters(druid, tables, reference):
    want = reference.execute(
        tables.fmt("SELECT COUNT(*) FROM druid.{v} WHERE vertex_name = ? AND duration > ? AND __time >= ?"),
        ["Receive Goods", 1000, "2025-03-01 00:00:00"],
    ).fetchone()[0]
    r = druid(
        tables.fmt("SELECT COUNT(*) AS n FROM {v} WHERE vertex_name = ? AND duration > ? AND __time >= ?"),
        parameters=[
            {"type": "VARCHAR", "value": "Receive Goods"},
            {"type": "BIGINT", "value": 1000},
            {"type": "TIMESTAMP", "value": "2025-03-01 00:00:00"},
        ],
    )
    assert r.status_code == 200, r.text
    assert r.json() == [{"n": want}]
    assert want > 0


def test_query_id_from_context(druid, tables):
    r = druid(tables.fmt("SELECT 1 AS x"), context={"sqlQueryId": "my-query-42"})
    assert r.headers["X-Druid-SQL-Query-Id"] == "my-query-42"
    assert r.json() == [{"x": 1}]


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"query": "SELEC 1"}, 400, "SELEC"),
        ({"query": 'SELECT nope FROM "x"'}, 400, "Object 'x' not found"),
        ({"query": "SELECT 1", "resultFormat": "xml"}, 400, "Unknown resultFormat 'xml'"),
        ({"query": "SELECT 1", "typesHeader": True}, 400, "header is also true"),
        ({"query": ""}, 400, 'Missing "query"'),
        (
            {"query": "SELECT ?", "parameters": [{"type": "BIGINT", "value": "abc"}]},
            400,
            "not a valid BIGINT",
        ),
        ({"query": "SELECT ?", "parameters": []}, 400, "1 parameter(s)"),
        (
            {"query": "SELECT 1", "context": {"timeout": "soon"}},
            400,
            "Expected key [timeout] to be in long format, but got [soon]",
        ),
        (
            {"query": "SELECT 1", "context": {"timeout": -5}},
            400,
            "Timeout [timeout] must be a non negative value, but was -5",
        ),
    ],
)
def test_errors_are_druid_shaped(sandbox, demo, http, body, status, needle):
    r = http.post(sandbox.sql_url + "/druid/v2/sql", json=body, auth=(demo.client_id, demo.client_secret))
    assert r.status_code == status, r.text
    err = r.json()
    assert err["error"] == "druidException"
    assert needle in err["errorMessage"]
    assert set(err) == {"error", "errorCode", "persona", "category", "errorMessage", "context"}


def test_not_json_body(sandbox, demo, http):
    r = http.post(
        sandbox.sql_url + "/druid/v2/sql/", data=b"{not json", auth=(demo.client_id, demo.client_secret)
    )
    assert r.status_code == 400
    assert "not valid JSON" in r.json()["errorMessage"]


@pytest.mark.parametrize("auth", [None, ("nobody", "x"), "wrong-secret"])
def test_unauthorized(sandbox, demo, http, auth):
    if auth == "wrong-secret":
        auth = (demo.client_id, "not-the-secret")
    r = http.post(sandbox.sql_url + "/druid/v2/sql/", json={"query": "SELECT 1"}, auth=auth)
    assert r.status_code == 401
    err = r.json()
    assert err["errorCode"] == "unauthorized"
    assert demo.client_secret not in r.text
    assert r.headers["WWW-Authenticate"].startswith("Basic")


def test_query_timeout_from_context(sandbox, druid, tables):
    sandbox.hold_statements("AS held")  # runs until its time limit interrupts it, however fast the machine
    r = druid(tables.fmt("SELECT COUNT(*) AS held FROM {v}"), context={"timeout": 200})
    assert r.status_code == 504
    assert r.json()["category"] == "TIMEOUT"
    assert druid("SELECT 1 AS ok").json() == [{"ok": 1}]


def test_large_result_streams_in_slices(druid, tables, reference):
    want = reference.execute(tables.fmt("SELECT COUNT(*) FROM druid.{v}")).fetchone()[0]
    r = druid(tables.fmt("SELECT caseid, vertex_name, duration FROM {v}"), resultFormat="arrayLines")
    rows = [orjson.loads(x) for x in r.text.split("\n") if x]
    assert len(rows) == want
    assert (
        sum(row[2] for row in rows)
        == reference.execute(tables.fmt("SELECT SUM(duration) FROM druid.{v}")).fetchone()[0]
    )
