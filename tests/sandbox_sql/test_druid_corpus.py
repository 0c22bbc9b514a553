"""The strict dialect, end to end: Druid SQL runs on every transport, non-Druid SQL is refused on every
transport in Druid's words (corpora in :mod:`druid_corpus`)."""

from __future__ import annotations

import re

import pytest
from druid_corpus import REFUSED, VALID

from pm_notebook.errors import QueryError

TRANSPORTS = ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)]
DUCKDB_WORDING = re.compile(
    r"Binder Error|Catalog Error|Candidate bindings|Parser Error|Conversion Error|DuckDB|duckdb|"
    r"Invalid Input Error|Traceback|RecursionError"
)
DRUID_MESSAGE = re.compile(
    r"No match found for function signature|Received an unexpected token|Query could not be planned|"
    r"not found in any table|Object '.*' not found|The query contains window functions|Unknown identifier|"
    r"nested too deeply|statements are not allowed|Unexpected '.*' at the start|Cannot apply|"
    r"Incorrect syntax near the keyword|Lexical error at line|clause must be a condition"
)


@pytest.fixture(scope="module")
def conn(sandbox, connect_workgroup):
    with connect_workgroup(sandbox) as connection:
        yield connection


def test_the_corpora_are_large_enough():
    assert len(VALID) >= 60 and len(REFUSED) >= 60
    assert len({n for n, _ in VALID}) == len(VALID) and len({n for n, _ in REFUSED}) == len(REFUSED)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("sql", [q for _, q in VALID], ids=[n for n, _ in VALID])
def test_druid_sql_runs(conn, tables, transport, sql):
    frame = conn.query(tables.fmt(sql), transport=transport)
    assert len(frame) > 0


@pytest.mark.parametrize("sql", [q for _, q in REFUSED], ids=[n for n, _ in REFUSED])
def test_refusal_has_druids_error_body(druid, tables, sql):
    r = druid(tables.fmt(sql))
    assert r.status_code == 400, r.text
    body = r.json()
    assert set(body) == {"error", "errorCode", "persona", "category", "errorMessage", "context"}, body
    assert body["error"] == "druidException"
    assert body["persona"] in ("USER", "ADMIN") and body["category"] in ("INVALID_INPUT", "UNSUPPORTED")
    assert DRUID_MESSAGE.search(body["errorMessage"]), body["errorMessage"]
    assert not DUCKDB_WORDING.search(r.text), r.text


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("sql", [q for _, q in REFUSED], ids=[n for n, _ in REFUSED])
def test_refused_on_every_transport(conn, tables, transport, sql):
    with pytest.raises(QueryError) as info:
        conn.query(tables.fmt(sql), transport=transport)
    text = f"{info.value} {info.value.server_message}"
    assert DRUID_MESSAGE.search(text), text
    assert not DUCKDB_WORDING.search(text), text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_function_errors_carry_a_position(conn, tables, transport):
    with pytest.raises(QueryError) as info:
        conn.query(
            tables.fmt("SELECT caseid,\n  strftime(__time, '%Y') FROM {c} LIMIT 1"), transport=transport
        )
    assert "No match found for function signature strftime(<TIMESTAMP>, <CHARACTER>)" in str(info.value)
    assert info.value.position == (2, 3)


def test_window_functions_run_without_a_context_and_their_input_counts_as_a_subquery(druid, tables):
    sql = tables.fmt(
        "SELECT caseid, ROW_NUMBER() OVER (ORDER BY caseid) AS rn FROM {c} GROUP BY caseid "
        "ORDER BY caseid LIMIT 3"
    )
    answered = druid(sql)
    assert answered.status_code == 200, answered.text
    assert [row["rn"] for row in answered.json()] == [1, 2, 3]
    again = druid(sql, context={"enableWindowing": True})  # accepted, changes nothing (Druid 32 removed it)
    assert again.status_code == 200 and again.json() == answered.json()
    # Druid 33 materialises the window's input (the GROUP BY's rows, one per case) on the broker
    refused = druid(sql, context={"maxSubqueryRows": 5})
    body = refused.json()
    assert refused.status_code == 400, refused.text
    assert body["error"] == "Resource limit exceeded" and body["category"] == "INVALID_INPUT"
    assert body["errorClass"] == "org.apache.druid.query.ResourceLimitExceededException"
    assert body["errorMessage"].startswith(
        "Cannot issue the query, subqueries generated results beyond maximum[5] rows."
    )


def test_window_functions_and_the_avatica_connection_properties(sandbox, demo, tables):
    import requests

    url = sandbox.sql_url + "/druid/v2/sql/avatica/"
    sql = tables.fmt("SELECT caseid, RANK() OVER (ORDER BY caseid) AS r FROM {c} GROUP BY caseid LIMIT 2")

    def run(info: dict) -> dict:
        cid = f"corpus-{len(info)}"
        with requests.Session() as s:
            base = {"user": demo.client_id, "password": demo.client_secret}
            s.post(url, json={"request": "openConnection", "connectionId": cid, "info": {**base, **info}})
            try:
                return s.post(
                    url,
                    json={
                        "request": "prepareAndExecute",
                        "connectionId": cid,
                        "statementId": 1,
                        "sql": sql,
                        "maxRowsInFirstFrame": -1,
                    },
                ).json()
            finally:
                s.post(url, json={"request": "closeConnection", "connectionId": cid})

    refused = run({"maxSubqueryRows": "5"})  # the window reads one row per case: more than 5
    assert refused["response"] == "error" and "beyond maximum[5] rows" in refused["errorMessage"]
    answered = run({})
    assert answered["response"] == "executeResults", answered
    assert len(answered["results"][0]["firstFrame"]["rows"]) == 2
