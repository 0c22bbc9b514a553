"""One workgroup can neither lock another out of Avatica nor reach its connections.

* The connection cap (25, as Druid) counts per workgroup: ``second`` at its cap is refused while ``demo``
  still opens connections, and opening more never closes another workgroup's connection.
* ``openConnection`` with an id that is already open is refused (by its own or another workgroup) and
  leaves the open connection as it was.
* A request carrying another workgroup's HTTP Basic credentials gets exactly the answer an unknown id
  gets, and cannot close what it cannot see.
"""

from __future__ import annotations

import uuid

import pytest

from .conftest import AVATICA, Avatica

CLASS = "avatica isolation"
CAP = 25  # SqlOptions.max_connections, the sandbox's default


@pytest.fixture
def url(sandbox) -> str:
    return sandbox.sql_url + AVATICA


def _open(url: str, wg) -> Avatica:
    return Avatica(url, wg.client_id, wg.client_secret)


def _error(body: dict) -> str:
    assert body["response"] == "error", body
    assert not (body["errorMessage"] or "").startswith("Internal"), body
    return body["errorMessage"] or body["exceptions"][0]  # Druid sends no message for an unknown connection


def test_the_connection_cap_is_per_workgroup_and_never_evicts_another(sandbox, url, tally):
    demo, second = sandbox.workgroups["demo"], sandbox.workgroups["second"]
    mine = _open(url, demo)  # idle: the oldest idle connection of all
    busy = []
    try:
        for _ in range(CAP):
            c = _open(url, second)
            c.call("createStatement")  # not idle: nothing of second's may be closed to make room
            busy.append(c)
        extra = Avatica(url)
        body = extra.call("openConnection", info={"user": second.client_id, "password": second.client_secret})
        assert "Too many connections" in _error(body)
        tally.record(CLASS, "refused")
        assert mine.call("getCatalogs")["response"] == "resultSet"  # demo's idle connection survived
        for _ in range(3):  # and demo is not locked out
            other = _open(url, demo)
            assert other.query("SELECT 1 AS x")["response"] == "executeResults"
            other.call("closeConnection")
            tally.record(CLASS, "accepted")
    finally:
        for c in [mine, *busy]:
            c.call("closeConnection")


def test_an_open_connection_id_cannot_be_opened_again(sandbox, url, tally):
    demo, second = sandbox.workgroups["demo"], sandbox.workgroups["second"]
    owner = _open(url, demo)
    try:
        sid = owner.call("createStatement")["statementId"]
        for wg in (second, demo):
            body = owner.call("openConnection", info={"user": wg.client_id, "password": wg.client_secret})
            assert "already open" in _error(body)
            tally.record(CLASS, "refused")
        # still demo's, with its statement: demo's data, not second's
        rs = owner.call(
            "prepareAndExecute",
            statementId=sid,
            sql="SELECT COUNT(*) AS n FROM INFORMATION_SCHEMA.TABLES",
            maxRowsInFirstFrame=-1,
        )
        assert rs["response"] == "executeResults"
        tables = owner.query("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'druid'")
        names = {row[0] for row in tables["results"][0]["firstFrame"]["rows"]}
        assert demo.project_ids[0] in names and second.project_ids[0] not in names
    finally:
        owner.call("closeConnection")


CALLS = [
    ("connectionSync", {"connProps": {}}),
    ("createStatement", {}),
    ("prepareAndExecute", {"statementId": 1, "sql": "SELECT 1", "maxRowsInFirstFrame": -1}),
    ("prepare", {"sql": "SELECT 1"}),
    ("fetch", {"statementId": 1, "offset": 0, "fetchMaxRowCount": 100}),
    ("syncResults", {"statementId": 1, "state": {"sql": "SELECT 1"}, "offset": 0}),
    ("getTables", {}),
    ("getColumns", {}),
    ("getCatalogs", {}),
    ("databaseProperties", {}),
    ("commit", {}),
]


@pytest.mark.parametrize("request_name,fields", CALLS, ids=[c[0] for c in CALLS])
def test_another_workgroup_sees_a_known_id_as_unknown(sandbox, url, tally, request_name, fields):
    demo, second = sandbox.workgroups["demo"], sandbox.workgroups["second"]
    owner = _open(url, demo)
    try:
        owner.call("createStatement")
        intruder = (second.client_id, second.client_secret)
        taken = owner.call(request_name, auth=intruder, **fields)
        unknown_id = str(uuid.uuid4())
        unknown = owner.call(request_name, auth=intruder, connectionId=unknown_id, **fields)
        assert _error(taken).replace(owner.cid, "<id>") == _error(unknown).replace(unknown_id, "<id>")
        assert taken["errorCode"] == unknown["errorCode"] == 1
        tally.record(CLASS, "refused")
        # the owner, with or without its own credentials, still uses it
        assert owner.call("getCatalogs", auth=(demo.client_id, demo.client_secret))["response"] == "resultSet"
        assert owner.call("getCatalogs")["response"] == "resultSet"
    finally:
        owner.call("closeConnection")


def test_another_workgroup_cannot_close_a_connection_or_statement(sandbox, url, tally):
    demo, second = sandbox.workgroups["demo"], sandbox.workgroups["second"]
    owner = _open(url, demo)
    try:
        sid = owner.call("createStatement")["statementId"]
        intruder = (second.client_id, second.client_secret)
        assert owner.call("closeStatement", auth=intruder, statementId=sid)["response"] == "closeStatement"
        assert owner.call("closeConnection", auth=intruder)["response"] == "closeConnection"
        tally.record(CLASS, "refused")
        rs = owner.call("prepareAndExecute", statementId=sid, sql="SELECT 1 AS x", maxRowsInFirstFrame=-1)
        assert rs["results"][0]["statementId"] == sid  # the statement was not closed either
    finally:
        owner.call("closeConnection")
