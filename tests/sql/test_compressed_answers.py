"""Answers gzip-compressed on the wire, as Druid sends them by default to every client that accepts gzip.

The ``gzip_sandbox`` fixture (``--sql-compression-level -1``) compresses like Druid's broker; every transport
must give the same DataFrames from it as from the uncompressed fixture sandbox (same seed, same data).
"""

from __future__ import annotations

import pandas as pd
import pytest
import requests
from _sql_transports import TRANSPORTS


def test_answers_are_compressed_only_for_clients_that_accept_gzip(gzip_sandbox, demo_tables) -> None:
    demo = gzip_sandbox.workgroups["demo"]
    url = f"{gzip_sandbox.sql_url}/druid/v2/sql/"
    body = {"query": f"SELECT caseid FROM {demo_tables['vertex']} LIMIT 500", "resultFormat": "arrayLines"}
    auth = (demo.client_id, demo.client_secret)
    gzipped = requests.post(url, json=body, auth=auth, headers={"Accept-Encoding": "gzip"}, timeout=30)
    plain = requests.post(url, json=body, auth=auth, headers={"Accept-Encoding": "identity"}, timeout=30)
    assert gzipped.status_code == plain.status_code == 200
    assert gzipped.headers.get("Content-Encoding") == "gzip"
    assert "Content-Encoding" not in plain.headers
    assert gzipped.content == plain.content and plain.content.endswith(b"\n\n")
    avatica_url = f"{gzip_sandbox.sql_url}/druid/v2/sql/avatica/"
    info = {"user": demo.client_id, "password": demo.client_secret}
    opened = requests.post(
        avatica_url,
        json={"request": "openConnection", "connectionId": "gzip-check", "info": info},
        headers={"Accept-Encoding": "gzip"},
        timeout=30,
    )
    assert opened.json()["response"] == "openConnection"
    # Jetty's (and so Druid's) rule: bodies under 32 bytes go as they are.
    assert ("Content-Encoding" in opened.headers) == (len(opened.content) >= 32)
    synced = requests.post(
        avatica_url,
        json={"request": "connectionSync", "connectionId": "gzip-check", "connProps": {}},
        headers={"Accept-Encoding": "gzip"},
        timeout=30,
    )
    assert synced.headers.get("Content-Encoding") == "gzip"
    assert synced.json()["response"] == "connectionSync"
    closed = requests.post(
        avatica_url, json={"request": "closeConnection", "connectionId": "gzip-check"}, timeout=30
    )
    assert closed.json()["response"] == "closeConnection"
    # Our JVM-free transports ask for it, as the driver's HttpClient does (avatica-transcript.md).
    from pm_notebook import _http

    assert "gzip" in _http.sql_session().headers["Accept-Encoding"]


@pytest.mark.standin_only(
    "compares with the gzip sandbox, which runs on the stand-in's DuckDB (is_predicted is BOOLEAN "
    "there, a long on Druid)"
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_transport_reads_compressed_answers(conn, gzip_conn, demo_tables, transport) -> None:
    """Several Avatica frames and several druid batches of every declared type, NULLs included."""
    names = f"(SELECT DISTINCT vertex_name FROM {demo_tables['vertex']})"
    sql = (
        "SELECT __time, duration, concurrency, caseid, duration > 1728000000 AS slow, distinct_vertices, "
        "a.vertex_name AS a, "
        f"b.vertex_name AS b FROM {demo_tables['cases']} CROSS JOIN {names} a CROSS JOIN {names} b "
        "ORDER BY __time"
    )
    key = ["__time", "caseid", "a", "b"]  # rows of equal __time come in any order
    got = gzip_conn.query(sql, transport=transport).sort_values(key, ignore_index=True)
    expected = conn.query(sql, transport=transport).sort_values(key, ignore_index=True)
    assert len(got) > 20_000
    pd.testing.assert_frame_equal(got, expected)
