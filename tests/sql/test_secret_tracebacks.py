"""A failing query's traceback, with the locals of every frame (``%xmode Verbose``, ``pytest --showlocals``,
``TracebackException(capture_locals=True)``), shows neither the client secret nor a token nor the Basic
credentials built from them, on every transport (issue 15, "Secrets").

The failures: the SQL endpoint down at the first statement (the frames that open the connection and carry
the password are in the traceback), a SQL error on an open connection, and a wrong secret.
"""

from __future__ import annotations

import base64
import traceback

import pytest
from _sql_transports import TRANSPORTS

import pm_notebook
from pm_notebook import PMError


def _verbose(exc: BaseException) -> str:
    """What a verbose traceback of *exc* prints: every frame of the chain with its locals."""
    return "".join(traceback.TracebackException.from_exception(exc, capture_locals=True).format())


def _forms(user: str, secret: str) -> list[str]:
    """The secret as it could leak: itself, and inside the HTTP Basic header value (latin-1/UTF-8 base64)."""
    basic = base64.b64encode(f"{user}:{secret}".encode()).decode()
    return [secret, basic, repr(secret.encode())[2:-1]]


def _failure(conn: pm_notebook.Connection, sql: str, transport: str) -> str:
    with pytest.raises(PMError) as raised:
        conn.query(sql, transport=transport)
    text = _verbose(raised.value)
    assert "Traceback" in text and " = " in text  # locals were captured
    return text


def _token(conn: pm_notebook.Connection) -> str:
    conn.workgroup()  # a REST call: a token now exists in this process
    token = conn.tokens.current
    assert token is not None
    return token.access_token.reveal()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_endpoint_down_at_the_first_statement(sandbox, connect_workgroup, transport) -> None:
    demo = sandbox.workgroups["demo"]
    with connect_workgroup(sandbox, retries=0) as conn:
        token = _token(conn)
        path = {"druid": "/druid/v2/sql", "avatica": "/druid/v2/sql/avatica", "jdbc": "/druid/v2/sql/avatica"}
        sandbox.fault(path[transport], status=500, times=50)  # the driver retries drops and 503s
        try:
            text = _failure(conn, 'SELECT 1 AS "one"', transport)
        finally:
            sandbox.clear_faults()
        for leak in [*_forms(demo.client_id, demo.client_secret), token]:
            assert leak not in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sql_error_on_an_open_connection(sandbox, connect_workgroup, transport) -> None:
    demo = sandbox.workgroups["demo"]
    with connect_workgroup(sandbox, retries=0) as conn:
        token = _token(conn)
        conn.query('SELECT 1 AS "one"', transport=transport)
        text = _failure(conn, "SELECT no_such_column FROM no_such_table", transport)
        for leak in [*_forms(demo.client_id, demo.client_secret), token]:
            assert leak not in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_wrong_secret(sandbox, connect_workgroup, transport) -> None:
    demo = sandbox.workgroups["demo"]
    wrong = "wrong-" + demo.client_secret[::-1]
    with connect_workgroup(sandbox, secret=wrong, retries=0) as conn:
        text = _failure(conn, 'SELECT 1 AS "one"', transport)
        for leak in _forms(demo.client_id, wrong):
            assert leak not in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_endpoint_unreachable(sandbox, transport) -> None:
    import socket

    with socket.socket() as closed:  # a port nobody listens on: bound, never listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        demo = sandbox.workgroups["demo"]
        conn = pm_notebook.connect(
            sandbox.base_url,
            sandbox.auth_url,
            demo.client_id,
            demo.client_secret,
            f"jdbc:avatica:remote:url=http://127.0.0.1:{port}/druid/v2/sql/avatica/",
            use_keyring=False,
            retries=0,
        )
        with conn:
            text = _failure(conn, 'SELECT 1 AS "one"', transport)
    for leak in _forms(demo.client_id, demo.client_secret):
        assert leak not in text
