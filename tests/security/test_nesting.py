"""Resource exhaustion through deep nesting: a Druid-shaped 4xx, never a RecursionError or a 500.

Depends on the dialect branch's depth limit (``sandbox/pm_sandbox/sql/dialect*``): until it is merged
these fail with Druid's "internal" 500.
"""

from __future__ import annotations

import pytest

from .conftest import AVATICA, DRUID, Avatica

CLASS = "deep nesting"

NESTED = {
    "parentheses": "SELECT " + "(" * 1500 + "1" + ")" * 1500 + " AS x",
    "subqueries": "SELECT * FROM " + "(SELECT * FROM " * 3000 + "(SELECT 1 AS x)" + ") AS t" * 3000 + " AS t",
    "case": "SELECT " + "CASE WHEN 1 = 1 THEN " * 5000 + "1" + " END" * 5000 + " AS x",
    "function calls": "SELECT " + "ABS(" * 3000 + "1" + ")" * 3000 + " AS x",
    "unary minus": "SELECT " + "- " * 5000 + "1 AS x",
}


@pytest.mark.parametrize("sql", list(NESTED.values()), ids=list(NESTED))
def test_deep_nesting_is_a_druid_4xx(sandbox, tally, sql):
    demo = sandbox.workgroups["demo"]
    r = tally.send(
        CLASS, "POST", sandbox.sql_url + DRUID, json={"query": sql}, auth=(demo.client_id, demo.client_secret)
    )
    assert r is not None and 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    body = r.json()
    assert body["error"] == "druidException" and body["errorMessage"], body


def test_deep_nesting_over_avatica_is_an_error_response(sandbox, tally):
    demo = sandbox.workgroups["demo"]
    conn = Avatica(sandbox.sql_url + AVATICA, demo.client_id, demo.client_secret)
    try:
        body = conn.query(NESTED["parentheses"])
        tally.record(
            CLASS,
            "refused"
            if body["response"] == "error" and not (body["errorMessage"] or "").startswith("Internal")
            else "5xx",
        )
        assert body["response"] == "error" and not (body["errorMessage"] or "").startswith("Internal"), body
    finally:
        conn.call("closeConnection")
