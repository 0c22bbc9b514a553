"""Timeouts are named as timeouts (a :class:`QueryTimeout` with the limit and a hint to raise it or narrow the
query, never "try again"), and every other status of the SQL endpoints keeps its own meaning.

The statement time limits themselves are exercised end to end in ``test_query_context.py``; here the error
mapping is checked on Druid's and Avatica's error bodies, and on a gateway's 504 injected by the sandbox's
fault switch on every transport.
"""

from __future__ import annotations

import pytest
from _sql_transports import TRANSPORTS

from pm_notebook import (
    AuthenticationError,
    QueryCancelled,
    QueryError,
    QueryTimeout,
    ServiceUnavailable,
)
from pm_notebook.sql._errors import from_avatica, from_druid, from_http_status, from_java

SANDBOX_TIMEOUT = "Query timeout: the statement ran longer than 60 s and was cancelled."
DRUID_TIMEOUT = {
    "error": "Query timeout",
    "errorCode": "legacyQueryException",
    "persona": "OPERATOR",
    "category": "TIMEOUT",
    "errorMessage": "Query [abc-123] timed out.",
    "errorClass": "org.apache.druid.query.QueryTimeoutException",
    "host": None,
    "context": {},
}


def _no_retry_advice(err: BaseException) -> None:
    assert "try again" not in str(err).lower() and "again in a moment" not in str(err).lower()


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        (
            {
                "error": "druidException",
                "errorCode": "timeout",
                "category": "TIMEOUT",
                "errorMessage": SANDBOX_TIMEOUT,
            },
            60_000,
        ),
        (DRUID_TIMEOUT, None),
    ],
)
def test_a_druid_504_timeout_is_a_query_timeout(body, limit):
    err = from_druid(504, body, sql="SELECT 1")
    assert isinstance(err, QueryTimeout) and isinstance(err, QueryError)
    assert err.limit_ms == limit and err.sql == "SELECT 1"
    assert "context={'timeout':" in (err.hint or "") and "narrow the query" in (err.hint or "")
    _no_retry_advice(err)


def test_a_gateway_504_is_a_query_timeout_without_retry_advice():
    for err in (from_druid(504, "<html>Gateway Timeout</html>"), from_http_status(504, "")):
        assert isinstance(err, QueryTimeout)
        assert "gateway" in err.message.lower() and "Narrow the query" in (err.hint or "")
        _no_retry_advice(err)


@pytest.mark.parametrize("status", [429, 502, 503])
def test_capacity_and_outages_stay_service_unavailable(status):
    err = from_druid(
        status, {"error": "druidException", "category": "CAPACITY_EXCEEDED", "errorMessage": "busy"}
    )
    assert isinstance(err, ServiceUnavailable) and err.status == status


def test_other_druid_answers_keep_their_meaning():
    assert isinstance(from_druid(401, {"errorMessage": "Unauthorized"}), AuthenticationError)
    cancelled = from_druid(500, {"category": "CANCELED", "errorMessage": "Query cancelled by its client."})
    assert isinstance(cancelled, QueryCancelled)
    plain = from_druid(
        400, {"category": "INVALID_INPUT", "errorMessage": "Column 'x' not found (line [1], column [8])"}
    )
    assert type(plain) is QueryError and plain.position == (1, 8)
    limit = from_druid(
        400,
        {
            "error": "Resource limit exceeded",
            "category": "INVALID_INPUT",
            "errorMessage": "subqueries generated results beyond maximum[100000] rows",
        },
    )
    assert type(limit) is QueryError and "context={'maxSubqueryRows': 200000}" in (limit.hint or "")


def test_avatica_timeouts_are_query_timeouts():
    by_class = from_avatica(
        {
            "response": "error",
            "exceptions": ["org.apache.druid.query.QueryTimeoutException: Query [q] timed out.\n\tat x"],
            "errorMessage": "Query [q] timed out.",
            "errorCode": -1,
            "sqlState": "00000",
        }
    )
    by_text = from_avatica({"response": "error", "exceptions": ["x"], "errorMessage": SANDBOX_TIMEOUT})
    for err in (by_class, by_text):
        assert isinstance(err, QueryTimeout)
        _no_retry_advice(err)
    assert by_text.limit_ms == 60_000


def test_a_jdbc_timeout_message_is_a_query_timeout():
    class SQLException(Exception):
        def getMessage(self):  # noqa: N802 - the Java method's name
            framing = 'Error -1 (00000) : Error while executing SQL "SELECT 1": Remote driver error: '
            return framing + SANDBOX_TIMEOUT

        def getErrorCode(self):  # noqa: N802
            return -1

        def getSQLState(self):  # noqa: N802
            return "00000"

        def getCause(self):  # noqa: N802
            return None

    err = from_java(SQLException(), sql="SELECT 1")
    assert isinstance(err, QueryTimeout) and err.limit_ms == 60_000 and err.server_message == SANDBOX_TIMEOUT


@pytest.mark.parametrize("name", TRANSPORTS)
def test_a_gateway_504_reaches_every_transport_as_a_query_timeout(sandbox, name):
    from contextlib import closing

    from pm_notebook.sql import Target, make_transport

    demo = sandbox.workgroups["demo"]
    target = Target.from_jdbc_url(sandbox.jdbc_url, demo.client_id, demo.client_secret)
    with closing(make_transport(name, target)) as transport:
        transport.execute("SELECT 1 AS warm").close()  # connected: the fault hits the query itself
        sandbox.fault("/druid/v2/sql/", status=504, times=1)
        with pytest.raises(QueryTimeout) as timed_out:
            transport.execute("SELECT 1 AS x").close()
        _no_retry_advice(timed_out.value)
        result = transport.execute("SELECT 2 AS y")
        assert [b.num_rows for b in result.batches()] != []
        result.close()
