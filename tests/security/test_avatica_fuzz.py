"""A grammar-based fuzz of Avatica JSON requests: every request type, with wrong, missing and extreme fields.

Hypothesis builds request objects from the grammar of each call (``shared/reference/avatica-json.md`` §5):
each field is either well-formed, missing, null, of another JSON type, or extreme (huge or negative
integers, long or odd strings, deep objects). Connection ids are the open connection's, an unknown one,
or junk. Every answer must be the protocol's: 200 with a response object, or 500 with an
``ErrorResponse`` that is not the sandbox's "Internal error" fallback; and after each request the
connection is still answered.
"""

from __future__ import annotations

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import AVATICA, Avatica

CLASS = "avatica fuzz"

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
junk = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
ints = st.one_of(
    st.integers(min_value=-2, max_value=5), st.sampled_from([2**31, 2**63, -(2**63) - 1, 2**80]), junk
)
counts = st.one_of(st.sampled_from([-1, 0, 1, 100, 5000, 10**9]), ints)
sqls = st.one_of(
    st.sampled_from(
        ["SELECT 1 AS x", "SELECT ? AS x", "SELEC", "", "SELECT * FROM INFORMATION_SCHEMA.TABLES"]
    ),
    junk,
)
typed_values = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                [
                    "LONG",
                    "STRING",
                    "DOUBLE",
                    "BOOLEAN",
                    "JAVA_SQL_TIMESTAMP",
                    "JAVA_SQL_DATE",
                    "BYTE_STRING",
                    "ARRAY",
                    "NUMBER",
                    "NOPE",
                ]
            )
        },
        optional={"value": junk},
    ),
    junk,
)


def _field(value):
    """A field that is well-formed (*value*), missing, or junk."""
    return st.one_of(value, st.just(_MISSING), junk)


_MISSING = object()


def _request(name: str, **fields) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({k: _field(v) for k, v in fields.items()}).map(
        lambda d: {"request": name, **{k: v for k, v in d.items() if v is not _MISSING}}
    )


def requests_for(cid: st.SearchStrategy) -> st.SearchStrategy[dict]:
    handle = st.fixed_dictionaries({"connectionId": cid, "id": ints})
    info = st.one_of(st.fixed_dictionaries({"user": junk, "password": junk}), junk)
    return st.one_of(
        _request("openConnection", connectionId=cid, info=info),
        _request(
            "connectionSync",
            connectionId=cid,
            connProps=st.dictionaries(
                st.sampled_from(["autoCommit", "readOnly", "catalog", "schema", "dirty"]), junk
            ),
        ),
        _request("closeConnection", connectionId=cid),
        _request("createStatement", connectionId=cid),
        _request("closeStatement", connectionId=cid, statementId=ints),
        _request(
            "prepareAndExecute",
            connectionId=cid,
            statementId=ints,
            sql=sqls,
            maxRowCount=counts,
            maxRowsInFirstFrame=counts,
        ),
        _request("prepare", connectionId=cid, sql=sqls, maxRowsTotal=counts),
        _request(
            "execute",
            statementHandle=handle,
            parameterValues=st.lists(typed_values, max_size=3),
            maxRowCount=counts,
        ),
        _request("fetch", connectionId=cid, statementId=ints, offset=counts, fetchMaxRowCount=counts),
        _request(
            "syncResults",
            connectionId=cid,
            statementId=ints,
            state=st.fixed_dictionaries({"sql": sqls}),
            offset=counts,
        ),
        _request(
            "prepareAndExecuteBatch",
            connectionId=cid,
            statementId=ints,
            sqlCommands=st.lists(sqls, max_size=2),
        ),
        _request(
            "executeBatch",
            connectionId=cid,
            statementId=ints,
            parameterValues=st.lists(st.lists(typed_values)),
        ),
        _request(
            "getTables",
            connectionId=cid,
            catalog=junk,
            schemaPattern=junk,
            tableNamePattern=junk,
            typeList=st.lists(junk, max_size=3),
        ),
        _request(
            "getColumns",
            connectionId=cid,
            catalog=junk,
            schemaPattern=junk,
            tableNamePattern=junk,
            columnNamePattern=junk,
        ),
        _request("getSchemas", connectionId=cid, catalog=junk, schemaPattern=junk),
        _request("getCatalogs", connectionId=cid),
        _request("getTableTypes", connectionId=cid),
        _request("getTypeInfo", connectionId=cid),
        _request("databaseProperties", connectionId=cid),
        _request("commit", connectionId=cid),
        _request("rollback", connectionId=cid),
        st.dictionaries(st.text(max_size=10), junk, max_size=4),
        junk,
    )


@pytest.fixture(scope="module")
def conn(sandbox):
    demo = sandbox.workgroups["demo"]
    c = Avatica(sandbox.sql_url + AVATICA, demo.client_id, demo.client_secret)
    yield c
    c.call("closeConnection")


def test_fuzzed_avatica_requests_are_answered_in_the_protocol(sandbox, conn, tally):
    demo = sandbox.workgroups["demo"]
    http = requests.Session()
    problems: list[str] = []
    cids = st.sampled_from([conn.cid, "no-such-connection"]) | junk

    @given(req=requests_for(cids))
    @settings(
        max_examples=600,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(req) -> None:
        if isinstance(req, dict) and req.get("request") in ("closeConnection", "openConnection"):
            req = {**req, "connectionId": "fuzz-" + str(req.get("connectionId"))[:50]}  # keep conn open
        try:
            r = http.post(conn.url, json=req, timeout=60)
        except requests.RequestException as exc:
            tally.record(CLASS, "hang" if isinstance(exc, requests.Timeout) else "dropped")
            problems.append(f"{req!r}: {exc}")
            return
        outcome = tally.classify(r)
        tally.record(CLASS, outcome)
        body = r.json()
        if outcome == "5xx" or r.status_code not in (200, 500) or "response" not in body:
            problems.append(f"{str(req)[:300]} -> {r.status_code} {r.text[:300]}")
        # the connection still answers
        alive = http.post(conn.url, json={"request": "getCatalogs", "connectionId": conn.cid}, timeout=60)
        if alive.status_code != 200:
            problems.append(
                f"after {str(req)[:200]}: the connection answered {alive.status_code} {alive.text[:200]}"
            )

    run()
    assert problems == []
    fresh = Avatica(conn.url, demo.client_id, demo.client_secret)  # conn may be at its statement cap now
    assert fresh.query("SELECT 1 AS x")["results"][0]["firstFrame"]["rows"] == [[1]]
    fresh.call("closeConnection")
    assert demo.client_secret not in str(tally.counts)
