"""The real Avatica JDBC driver (1.26.0, through JPype/jaydebeapi) against the sandbox's SQL port.

The JVM is started only through ``pm_notebook.sql._jvm.ensure_jvm()`` (once per process).
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.jdbc

DRIVER = "org.apache.calcite.avatica.remote.Driver"


@pytest.fixture(scope="module")
def jvm():
    from pm_notebook.sql._jvm import ensure_jvm

    ensure_jvm()
    import jpype

    return jpype


def _connect(url: str, user: str, password: str):
    import jaydebeapi

    return jaydebeapi.connect(DRIVER, url, {"user": user, "password": password})


@pytest.fixture
def conn(jvm, sandbox, demo):
    c = _connect(sandbox.jdbc_url, demo.client_id, demo.client_secret)
    yield c
    c.close()


def _rows(rs, *names) -> list[tuple]:
    out = []
    while rs.next():
        out.append(tuple(str(rs.getString(n)) if rs.getString(n) is not None else None for n in names))
    rs.close()
    return out


def test_metadata(conn, demo, tables, sandbox_store):
    md = conn.jconn.getMetaData()
    assert _rows(md.getCatalogs(), "TABLE_CAT") == [("druid",)]
    schemas = {r[0] for r in _rows(md.getSchemas(), "TABLE_SCHEM")}
    assert {"druid", "lookup", "INFORMATION_SCHEMA"} <= schemas
    assert {r[0] for r in _rows(md.getTableTypes(), "TABLE_TYPE")} == {"TABLE", "SYSTEM_TABLE"}
    own = sorted(t for p in sandbox_store.workgroup(demo.client_id).projects for t in p.tables)
    got = _rows(
        md.getTables(None, "druid", "%", None), "TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE"
    )
    assert got == [("druid", "druid", t, "TABLE") for t in own]
    only_vertex = _rows(md.getTables(None, "druid", "%\\_vertex", ["TABLE"]), "TABLE_NAME")
    assert [r[0] for r in only_vertex] == [t for t in own if t.endswith("_vertex")]
    want = (
        sandbox_store.database(demo.client_id)
        .execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = 'druid' AND "
            "table_name = ? "
            "ORDER BY column_index",
            [tables.pid],
        )
        .fetchall()
    )
    rs = md.getColumns(None, "druid", tables.pid, "%")
    cols = []
    while rs.next():
        cols.append(
            (
                rs.getString("COLUMN_NAME"),
                rs.getInt("DATA_TYPE"),
                rs.getString("TYPE_NAME"),
                rs.getInt("ORDINAL_POSITION"),
            )
        )
    rs.close()
    assert [c[0] for c in cols] == [w[0] for w in want]
    assert [c[3] for c in cols] == list(range(1, len(want) + 1))
    by_name = {c[0]: c for c in cols}
    assert by_name["__time"][1:3] == (93, "TIMESTAMP")
    assert by_name["duration"][1:3] == (-5, "BIGINT")
    assert by_name["concurrency"][1:3] == (8, "DOUBLE")
    assert by_name["caseid"][1:3] == (12, "VARCHAR")
    assert by_name["distinct_vertices"][1:3] == (2003, "ARRAY<VARCHAR>")
    assert _rows(md.getTypeInfo(), "TYPE_NAME")


def test_multi_frame_query_matches_reference(conn, tables, reference):
    want = reference.execute(
        tables.fmt(
            "SELECT caseid, vertex_name, duration, epoch_ms(__time) FROM druid.{v} ORDER BY caseid, "
            "__time, vertex_name"
        )
    ).fetchall()
    assert len(want) > 1000  # several 100-row frames
    st = conn.jconn.createStatement()
    st.setFetchSize(250)
    rs = st.executeQuery(
        tables.fmt(
            "SELECT caseid, vertex_name, duration, __time FROM {v} GROUP BY 1, 2, 3, 4 "
            "ORDER BY caseid, __time, vertex_name"
        )
    )
    got = []
    while rs.next():
        got.append(
            (
                str(rs.getString(1)),
                str(rs.getString("vertex_name")),
                int(rs.getLong(3)),
                int(rs.getTimestamp(4).getTime()),
            )
        )
    rs.close()
    st.close()
    assert got == [tuple(r) for r in want]


@pytest.mark.standin_only("Druid 33's Avatica endpoint does not cap a result at the statement's maxRowCount")
def test_set_max_rows_is_enforced_by_the_server(conn, tables):
    st = conn.jconn.createStatement()
    st.setMaxRows(7)
    rs = st.executeQuery(tables.fmt("SELECT caseid FROM {v}"))
    n = 0
    while rs.next():
        n += 1
    st.close()
    assert n == 7


def test_prepared_statement_with_typed_parameters(jvm, conn, tables, reference):
    java_sql = jvm.JPackage("java").sql
    ref_sql = tables.fmt(
        "SELECT COUNT(*), SUM(duration) FROM druid.{v} WHERE vertex_name = ? AND duration > ? AND __time "
        ">= ? "
        "AND (concurrent_vertices IS NOT NULL) = ? AND duration * 1.0 > ?"
    )
    want = reference.execute(ref_sql, ["Receive Goods", 1000, "2025-02-01 00:00:00", True, 1.5]).fetchone()
    want2 = reference.execute(ref_sql, ["Pay Invoice", 1000, "2025-02-01 00:00:00", True, 1.5]).fetchone()
    assert want[0] > 0
    ps = conn.jconn.prepareStatement(
        tables.fmt(
            "SELECT COUNT(*) AS n, SUM(duration) AS s FROM {v} WHERE vertex_name = ? AND duration > ? "
            "AND __time >= ? "
            "AND (concurrent_vertices IS NOT NULL) = ? AND duration * 1.0 > ?"
        )
    )
    assert ps.getParameterMetaData().getParameterCount() == 5
    ps.setString(1, "Receive Goods")
    ps.setInt(2, 1000)
    ps.setTimestamp(3, java_sql.Timestamp.valueOf("2025-02-01 00:00:00"))
    ps.setBoolean(4, True)
    ps.setDouble(5, 1.5)
    rs = ps.executeQuery()
    assert rs.next()
    assert (int(rs.getLong("n")), int(rs.getLong("s"))) == tuple(want)
    rs.close()
    ps.setString(1, "Pay Invoice")  # the same prepared statement runs again with new values
    rs = ps.executeQuery()
    assert rs.next() and rs.getLong(1) == want2[0]
    ps.close()


def test_jaydebeapi_cursor_with_parameters(conn, tables, reference):
    want = reference.execute(
        tables.fmt(
            "SELECT caseid, duration FROM druid.{c} WHERE duration > ? ORDER BY duration DESC, caseid LIMIT 5"
        ),
        [86_400_000],
    ).fetchall()
    cur = conn.cursor()
    cur.execute(
        tables.fmt(
            "SELECT caseid, duration FROM {c} WHERE duration > ? GROUP BY 1, 2 "
            "ORDER BY duration DESC, caseid LIMIT 5"
        ),
        [86_400_000],
    )
    assert [(str(a), int(b)) for a, b in cur.fetchall()] == [tuple(r) for r in want]
    cur.close()


def test_writes_are_refused(jvm, conn, tables, druid):
    st = conn.jconn.createStatement()
    with pytest.raises(jvm.JException) as info:
        st.executeUpdate(tables.fmt("DELETE FROM {c}"))
    assert "read-only" in str(info.value)
    with pytest.raises(jvm.JException) as info:
        st.executeUpdate(tables.fmt("INSERT INTO {c} (caseid) VALUES ('x')"))
    assert "INSERT statements are not allowed" in str(info.value)
    st.addBatch("SELECT 1")
    with pytest.raises(jvm.JException) as info:
        st.executeBatch()
    assert "Batch statements not supported" in str(info.value)
    st.close()
    assert druid(tables.fmt("SELECT COUNT(*) AS n FROM {c}")).json()[0]["n"] > 0


def test_bad_sql_reaches_the_user_with_the_server_message(jvm, conn, tables):
    st = conn.jconn.createStatement()
    with pytest.raises(jvm.JException) as info:
        st.executeQuery(tables.fmt("SELECT no_such_column FROM {c}"))
    text = str(info.value)
    assert "no_such_column" in text and "Error -1 (00000)" in text
    rs = st.executeQuery("SELECT 1 + 1")  # the statement is usable after an error
    assert rs.next() and rs.getInt(1) == 2
    st.close()


def test_wrong_password_fails_the_connect(jvm, sandbox, demo):
    with pytest.raises(jvm.JException) as info:
        _connect(sandbox.jdbc_url, demo.client_id, "not-the-secret")
    text = str(info.value)
    assert "Unauthorized" in text and "00002" in text
    assert "not-the-secret" not in text and demo.client_secret not in text


def test_connection_sync_echoes_the_properties_as_druid_does(jvm, sql_server, monkeypatch):
    """Druid answers connectionSync with the client's own properties ("dirty": true included), so the real
    driver syncs before every statement: two round trips per query, here as against the service."""
    server = sql_server()
    service = server.app.state.avatica
    seen: list[str] = []
    answer = service.answer

    def recording(req: dict, *args):
        seen.append(req["request"])
        return answer(req, *args)

    monkeypatch.setattr(service, "answer", recording)
    store_wg = server.store.by_key("demo")
    c = _connect(server.jdbc_url, store_wg.id, store_wg.secret)
    try:
        statement = c.jconn.createStatement()
        for _ in range(3):
            rs = statement.executeQuery("SELECT 1")
            assert rs.next() and rs.getInt(1) == 1
            rs.close()
        statement.close()
    finally:
        c.close()
    queries = [i for i, name in enumerate(seen) if name == "prepareAndExecute"]
    assert len(queries) == 3 and all(seen[i - 1] == "connectionSync" for i in queries)


def test_close_releases_statements(jvm, sandbox, demo, sql_server):
    server = sql_server(max_statements_per_connection=2)
    store_wg = server.store.by_key("demo")
    c = _connect(server.jdbc_url, store_wg.id, store_wg.secret)
    try:
        s1, s2 = c.jconn.createStatement(), c.jconn.createStatement()
        with pytest.raises(jvm.JException) as info:
            c.jconn.createStatement()
        assert "Too many open statements, limit is [2]" in str(info.value)
        s1.close()
        s3 = c.jconn.createStatement()  # a closed statement frees its slot
        assert s3.executeQuery("SELECT 1").next()
        s2.close()
        s3.close()
    finally:
        c.close()
    assert server.app.state.avatica.connection_count() == 0


def test_transparent_reconnection_after_expiry(jvm, sql_server):
    server = sql_server(connection_idle_timeout=0.5)
    wg = server.store.by_key("demo")
    c = _connect(server.jdbc_url + ";transparent_reconnection=true", wg.id, wg.secret)
    try:
        st = c.jconn.createStatement()
        assert st.executeQuery("SELECT 1").next()
        time.sleep(1.6)  # the server sweeps at most once a second
        assert server.app.state.avatica.handle(b'{"request":"getCatalogs","connectionId":"x"}')[0] == 500
        assert server.app.state.avatica.connection_count() == 0
        rs = st.executeQuery("SELECT 41 + 1")
        assert rs.next() and rs.getInt(1) == 42
    finally:
        c.close()


def test_expired_connection_without_reconnection_reports_error_1(jvm, sql_server):
    server = sql_server(connection_idle_timeout=0.5)
    wg = server.store.by_key("demo")
    c = _connect(server.jdbc_url, wg.id, wg.secret)
    try:
        st = c.jconn.createStatement()
        time.sleep(1.6)
        server.app.state.avatica.handle(b'{"request":"getCatalogs","connectionId":"x"}')  # triggers the sweep
        with pytest.raises(jvm.JException) as info:
            st.executeQuery("SELECT 1")
        # Druid 33 answers an unknown connection with error code 1 and a null message, and so does the
        # stand-in (tests/druid/test_protocols.py compares the two)
        assert "Error 1 (00000)" in str(info.value) and "Remote driver error: null" in str(info.value)
    finally:
        c.close()


def test_query_timeout_and_row_cap(jvm, sql_server):
    server = sql_server(query_timeout=0.3, max_rows=50)
    server.app.state.sql_engine.holds.arm("AS held")  # runs until the time limit interrupts it
    wg = server.store.by_key("demo")
    pid = wg.projects[0].id
    c = _connect(server.jdbc_url, wg.id, wg.secret)
    try:
        st = c.jconn.createStatement()
        with pytest.raises(jvm.JException) as info:
            st.executeQuery(f'SELECT COUNT(*) AS held FROM "{pid}_vertex"')
        assert "Query timeout" in str(info.value)
        with pytest.raises(jvm.JException) as info:
            st.executeQuery(f'SELECT caseid FROM "{pid}_vertex"')
        assert "row cap" in str(info.value)
        rs = st.executeQuery(f'SELECT caseid FROM "{pid}_vertex" LIMIT 50')
        n = 0
        while rs.next():
            n += 1
        assert n == 50
    finally:
        c.close()
