"""Malformed input on every route is a 4xx in the endpoint's own words: never a 500, a drop or a hang.

Shapes: Keycloak's ``{"error", "error_description"}`` (token endpoint), the public API's ``{"status",
"error", "message"}``, Druid's error object, and Avatica's ``ErrorResponse`` — which the protocol always
sends with HTTP 500 (the driver reads no message from other statuses); for Avatica "no server error" means
an ``ErrorResponse`` that names the problem, never the sandbox's "Internal error" fallback.
"""

from __future__ import annotations

import base64

import pytest
import requests

from .conftest import AVATICA, DRUID, TOKEN, Avatica

CLASS = "malformed input"
GARBLED = [
    b"Basic \xe9\xe9\xe9\xe9",
    b"Basic \xff",
    b"Basic %%%",
    b"Basic " + base64.b64encode(b"no-colon"),
]


def _druid_shaped(r: requests.Response, status: int) -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["error"] == "druidException" and body["errorCode"] != "internal", body
    return body


def _avatica_error(r: requests.Response, status: int = 500) -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["response"] == "error" and body["exceptions"], body
    assert not (body["errorMessage"] or "").startswith("Internal"), body
    return body


@pytest.mark.parametrize("header", GARBLED, ids=["latin1", "ff", "not-base64", "no-colon"])
def test_garbled_basic_credentials_are_a_401_on_every_endpoint(sandbox, tally, header):
    h = {"Authorization": header}
    r = tally.send(
        CLASS, "POST", sandbox.base_url + TOKEN, data={"grant_type": "client_credentials"}, headers=h
    )
    assert r is not None and r.status_code == 401 and r.json()["error"] == "invalid_client"
    assert set(r.json()) == {"error", "error_description"}
    r = tally.send(CLASS, "POST", sandbox.sql_url + DRUID, json={"query": "SELECT 1"}, headers=h)
    assert r is not None and _druid_shaped(r, 401)["errorCode"] == "unauthorized"
    r = tally.send(
        CLASS,
        "POST",
        sandbox.sql_url + AVATICA,
        json={"request": "openConnection", "connectionId": "c1", "info": {}},
        headers=h,
    )
    assert r is not None
    if header.endswith(base64.b64encode(b"no-colon")):
        assert _avatica_error(r, 401)["errorCode"] == 2
    else:
        assert _avatica_error(r, 401)["errorCode"] == 2


@pytest.mark.parametrize(
    "param",
    [
        {"type": "TIMESTAMP", "value": 1e20},
        {"type": "TIMESTAMP", "value": -(10**20)},
        {"type": "DATE", "value": 1e15},
        {"type": "TIMESTAMP", "value": "not a date"},
        {"type": "BIGINT", "value": "abc"},
        {"type": "BIGINT", "value": 1e300},
        {"type": "DOUBLE", "value": {"a": 1}},
        {"type": "ARRAY", "value": 5},
        {"type": "NOPE", "value": 1},
        {"value": 1},
        "x",
    ],
    ids=lambda p: str(p)[:40],
)
def test_druid_parameters_out_of_range_or_of_the_wrong_type_are_a_400(sandbox, tally, param):
    demo = sandbox.workgroups["demo"]
    r = tally.send(
        CLASS,
        "POST",
        sandbox.sql_url + DRUID,
        json={"query": "SELECT ? AS x", "parameters": [param]},
        auth=(demo.client_id, demo.client_secret),
    )
    assert r is not None
    assert "parameters[0]" in _druid_shaped(r, 400)["errorMessage"]


@pytest.mark.parametrize(
    "query_id", ["a\r\nX-Injected: 1", "line\nfeed", "tab\there", "é", "x" * 600, 5, ["a"]]
)
def test_a_query_id_that_cannot_be_a_header_is_a_400_and_the_connection_stays_usable(
    sandbox, tally, query_id
):
    demo = sandbox.workgroups["demo"]
    with requests.Session() as s:
        s.auth = (demo.client_id, demo.client_secret)
        body = {"query": "SELECT 1 AS x", "context": {"sqlQueryId": query_id}}
        try:
            r = s.post(sandbox.sql_url + DRUID, json=body, timeout=60)
        except requests.ConnectionError:
            tally.record(CLASS, "dropped")
            raise
        tally.record(CLASS, tally.classify(r))
        assert "sqlQueryId" in _druid_shaped(r, 400)["errorMessage"]
        assert "X-Injected" not in r.headers
        assert s.post(sandbox.sql_url + DRUID, json={"query": "SELECT 1 AS x"}, timeout=60).json() == [
            {"x": 1}
        ]


AVATICA_BAD = [
    b"[]",
    b'"fetch"',
    b"{}",
    b'{"request": 5}',
    b'{"request": "nope"}',
    b'{"request": "fetch"}',
    b'{"request": "fetch", "connectionId": "CID", "statementId": [1], "offset": 0}',
    b'{"request": "fetch", "connectionId": "CID", "statementId": "abc", "offset": 0}',
    b'{"request": "fetch", "connectionId": "CID", "statementId": 1, "offset": "x"}',
    b'{"request": "fetch", "connectionId": "CID", "statementId": 1, "offset": 0, "fetchMaxRowCount": 1e400}',
    b'{"request": "fetch", "connectionId": ["CID"], "statementId": 1}',
    b'{"request": "closeStatement", "connectionId": "CID", "statementId": {"a": 1}}',
    b'{"request": "prepareAndExecute", "connectionId": "CID", "statementId": "abc", "sql": "SELECT 1"}',
    b'{"request": "prepareAndExecute", "connectionId": "CID", "statementId": 99999999999, "sql": "SELECT 1"}',
    b'{"request": "prepareAndExecute", "connectionId": "CID", "sql": ["SELECT 1"]}',
    b'{"request": "prepareAndExecute", "connectionId": "CID", "sql": "SELECT 1", "maxRowCount": "all"}',
    b'{"request": "execute", "statementHandle": "x"}',
    b'{"request": "execute", "statementHandle": {"connectionId": "CID", "id": "abc"}}',
    b'{"request": "execute", "statementHandle": {"connectionId": "CID", "id": 1}, "parameterValues": {}}',
    b'{"request": "connectionSync", "connectionId": "CID", "connProps": []}',
    b'{"request": "openConnection", "connectionId": 7}',
    b'{"request": "openConnection", "connectionId": "x", "info": "user=a"}',
    b'{"request": "openConnection", "connectionId": "x", "info": {"user": {"a": 1}, "password": 5}}',
    b'{"request": "getTables", "connectionId": "CID", "typeList": "TABLE"}',
    b'{"request": "getTables", "connectionId": "CID", "typeList": [1, 2]}',
    b'{"request": "getColumns", "connectionId": "CID", "tableNamePattern": {"x": 1}}',
    b'{"request": "syncResults", "connectionId": "CID", "state": [], "statementId": 1}',
    b'{"request": "syncResults", "connectionId": "CID", "state": {"sql": 5}, "statementId": 1}',
    b"not json",
    b"",
]


@pytest.mark.parametrize("body", AVATICA_BAD, ids=[b[:60].decode() for b in AVATICA_BAD])
def test_malformed_avatica_requests_get_an_error_response_and_the_connection_still_works(
    sandbox, tally, body
):
    demo = sandbox.workgroups["demo"]
    conn = Avatica(sandbox.sql_url + AVATICA, demo.client_id, demo.client_secret)
    try:
        conn.call("createStatement")
        data = body.replace(b"CID", conn.cid.encode())
        r = tally.send(CLASS, "POST", conn.url, data=data, headers={"Content-Type": "application/json"})
        assert r is not None
        _avatica_error(r)
        assert conn.query("SELECT 1 AS x")["results"][0]["firstFrame"]["rows"] == [[1]]
    finally:
        conn.call("closeConnection")


@pytest.mark.parametrize(
    "value",
    [
        {"type": "JAVA_SQL_TIMESTAMP", "value": 10**20},
        {"type": "JAVA_SQL_DATE", "value": 10**15},
        {"type": "JAVA_SQL_TIMESTAMP", "value": 1.5e300},
        {"type": "JAVA_SQL_TIMESTAMP", "value": "soon"},
        {"type": "LONG", "value": 2**70},
        {"type": "BYTE_STRING", "value": "%%%"},
        {"type": "ARRAY", "value": 5},
        {"type": "STRING", "value": {"nested": True}},
        [1, 2],
    ],
    ids=lambda v: str(v)[:40],
)
def test_avatica_parameters_out_of_range_are_an_error_response(sandbox, tally, value):
    demo = sandbox.workgroups["demo"]
    conn = Avatica(sandbox.sql_url + AVATICA, demo.client_id, demo.client_secret)
    try:
        stmt = conn.call("prepare", sql="SELECT ? AS x")["statement"]
        r = tally.send(
            CLASS,
            "POST",
            conn.url,
            json={
                "request": "execute",
                "statementHandle": {"connectionId": conn.cid, "id": stmt["id"]},
                "parameterValues": [value],
                "maxRowCount": 100,
            },
        )
        assert r is not None and "parameterValues[0]" in _avatica_error(r)["errorMessage"]
    finally:
        conn.call("closeConnection")


BAD_FAULTS = [
    {"path_prefix": "/pub", "delay": "NaN"},
    {"path_prefix": "/pub", "delay": -1},
    {"path_prefix": "/pub", "delay": 1e308},
    {"path_prefix": "/pub", "delay": 601},
    {"path_prefix": "/pub", "delay": "5"},
    {"path_prefix": "/pub", "retry_after": 1e308},
    {"path_prefix": "/pub", "times": 0},
    {"path_prefix": "/pub", "times": "3"},
    {"path_prefix": "/pub", "times": 1.5},
    {"path_prefix": "/pub", "status": "abc"},
    {"path_prefix": "/pub", "status": 99},
    {"path_prefix": "/pub", "status": True},
    {"path_prefix": "/pub", "drop": "yes"},
    {"path_prefix": 5},
    {"path_prefix": "pub"},
    {"path_prefix": "/pub", "surprise": 1},
    [],
]


@pytest.mark.parametrize("spec", BAD_FAULTS, ids=lambda s: str(s)[:50])
def test_fault_switches_refuse_absurd_specs(sandbox, tally, spec):
    import json

    key = sandbox.admin_key
    text = json.dumps(spec).replace('"NaN"', "NaN")  # a bare NaN: what json.dumps(float("nan")) writes
    r = tally.send(
        CLASS,
        "POST",
        sandbox.base_url + "/_sandbox/faults",
        data=text,
        headers={"X-Sandbox-Admin": key, "Content-Type": "application/json"},
    )
    assert r is not None and r.status_code == 400 and r.json()["error"] == "bad_fault", r.text
    assert sandbox.stats()["faults"] == []


def test_token_endpoint_size_errors_answer_in_keycloaks_shape(sandbox, tally):
    url = sandbox.base_url + TOKEN
    r = tally.send(CLASS, "POST", url, data={"grant_type": "client_credentials", "pad": "x" * (2 << 20)})
    assert r is not None and r.status_code == 413
    assert set(r.json()) == {"error", "error_description"}
    files = {f"f{i}": (None, "v") for i in range(1100)}  # over the form parser's 1,000 fields
    r = tally.send(CLASS, "POST", url, files=files)
    assert r is not None and r.status_code == 400
    assert set(r.json()) == {"error", "error_description"} and r.json()["error"] == "invalid_request"


def test_bodies_over_the_limit_are_a_413_in_each_endpoints_shape(sandbox, tally):
    demo = sandbox.workgroups["demo"]
    big = "SELECT '" + "x" * (2 << 20) + "' AS x"
    auth = (demo.client_id, demo.client_secret)
    r = tally.send(CLASS, "POST", sandbox.sql_url + DRUID, json={"query": big}, auth=auth)
    assert r is not None and "larger than" in _druid_shaped(r, 413)["errorMessage"]
    chunked = iter([b'{"query": "', b"x" * (1 << 20), b"x" * (1 << 20), b'"}'])  # no Content-Length
    r = tally.send(CLASS, "POST", sandbox.sql_url + DRUID, data=chunked, auth=auth)
    assert r is not None and "larger than" in _druid_shaped(r, 413)["errorMessage"]
    r = tally.send(
        CLASS, "POST", sandbox.sql_url + AVATICA, json={"request": "prepareAndExecute", "sql": big}
    )
    assert r is not None and "larger than" in _avatica_error(r)["errorMessage"]
    key = sandbox.admin_key
    r = tally.send(
        CLASS, "POST", sandbox.base_url + "/_sandbox/faults", data=big, headers={"X-Sandbox-Admin": key}
    )
    assert r is not None and r.status_code == 413 and set(r.json()) == {"status", "error", "message"}


def test_request_heads_over_the_limit_are_a_431_in_each_endpoints_shape(sandbox, tally):
    demo = sandbox.workgroups["demo"]
    huge = {"X-Padding": "p" * (100 << 10)}
    r = tally.send(CLASS, "GET", sandbox.base_url + "/pub/projects", headers=huge)
    assert r is not None and r.status_code == 431 and set(r.json()) == {"status", "error", "message"}
    r = tally.send(
        CLASS, "POST", sandbox.base_url + TOKEN, headers=huge, data={"grant_type": "client_credentials"}
    )
    assert r is not None and r.status_code == 431 and set(r.json()) == {"error", "error_description"}
    r = tally.send(
        CLASS,
        "POST",
        sandbox.sql_url + DRUID,
        headers=huge,
        json={"query": "SELECT 1"},
        auth=(demo.client_id, demo.client_secret),
    )
    assert r is not None and _druid_shaped(r, 431)
    r = tally.send(CLASS, "POST", sandbox.sql_url + AVATICA, headers=huge, json={"request": "getCatalogs"})
    assert r is not None and _avatica_error(r)
    many = {f"X-H{i}": "v" * 100 for i in range(1000)}
    r = tally.send(CLASS, "GET", sandbox.base_url + "/pub/projects", headers=many)
    assert r is not None and r.status_code == 431


def test_a_huge_literal_within_the_body_limit_is_answered(sandbox, tally):
    demo = sandbox.workgroups["demo"]
    literal = "x" * (900 << 10)
    r = tally.send(
        CLASS,
        "POST",
        sandbox.sql_url + DRUID,
        json={"query": f"SELECT LENGTH('{literal}') AS n"},
        auth=(demo.client_id, demo.client_secret),
    )
    assert r is not None and r.status_code == 200 and r.json() == [{"n": len(literal)}]
