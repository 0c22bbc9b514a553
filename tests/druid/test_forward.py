"""The stand-in in front of a real Druid (``--druid``): checks first, then Druid's own answers.

The oracle is the broker itself: the same request sent straight to it gives the same status and bytes. The
rights are checked against the stand-in's own listing of each workgroup's projects.
"""

from __future__ import annotations

import os
import threading
import uuid

import pandas as pd
import pytest
import requests

pytestmark = pytest.mark.slow

CASES = 300  # tests/conftest.py's SANDBOX_CASES: the same data as the session's sandbox (published once)


@pytest.fixture(scope="module")
def forwarding(request, druid_cluster, tmp_path_factory):
    """A sandbox in front of the test Druid: the session's own with PM_TEST_DRUID=1, else one of its own."""
    if os.environ.get("PM_TEST_DRUID") == "1":
        yield request.getfixturevalue("sandbox")
        return
    from pm_sandbox import start

    sb = start(
        cases=CASES,
        druid=druid_cluster.broker,
        extra_args=["--druid-coordinator", druid_cluster.coordinator],
        log_path=tmp_path_factory.mktemp("forward") / "sandbox.log",
        timeout=3600,
    )
    yield sb
    sb.stop()


def _auth(sb, key: str) -> tuple[str, str]:
    wg = sb.workgroups[key]
    return wg.client_id, wg.client_secret


def _sql(sb, key: str, body: dict, **kw) -> requests.Response:
    return requests.post(f"{sb.sql_url}/druid/v2/sql", json=body, auth=_auth(sb, key), timeout=120, **kw)


def _own_tables(sb, key: str) -> set[str]:
    return {f"{pid}{suffix}" for pid in sb.workgroups[key].project_ids for suffix in ("", "_vertex", "_edge")}


@pytest.mark.parametrize("fmt", ["object", "array", "arrayLines", "csv"])
def test_answers_are_the_brokers_bytes(forwarding, druid_cluster, fmt):
    pid = forwarding.workgroups["demo"].project_ids[0]
    body = {
        "query": f'SELECT vertex_name, COUNT(*) AS n FROM "{pid}_vertex" WHERE vertex_name <> ? '
        "GROUP BY 1 ORDER BY 2, 1",
        "parameters": [{"type": "VARCHAR", "value": "none"}],
        "resultFormat": fmt,
        "header": True,
        "typesHeader": True,
        "sqlTypesHeader": True,
        "context": {"sqlQueryId": f"fwd-{uuid.uuid4()}", "sqlTimeZone": "Europe/Paris"},
    }
    ours = _sql(forwarding, "demo", body)
    theirs = requests.post(f"{druid_cluster.broker}/druid/v2/sql", json=body, timeout=120)
    assert ours.status_code == theirs.status_code == 200
    assert ours.content == theirs.content
    assert ours.headers["X-Druid-SQL-Query-Id"] == body["context"]["sqlQueryId"]
    assert ours.headers["X-Druid-SQL-Header-Included"] == "yes"


def test_a_refusal_of_druid_reaches_the_user_unchanged(forwarding, druid_cluster):
    pid = forwarding.workgroups["demo"].project_ids[0]
    body = {"query": f'SELECT no_such_column FROM "{pid}"', "context": {"sqlQueryId": "fwd-refused"}}
    ours = _sql(forwarding, "demo", body)
    theirs = requests.post(f"{druid_cluster.broker}/druid/v2/sql", json=body, timeout=120)
    assert ours.status_code == theirs.status_code == 400
    assert ours.json() == theirs.json()
    assert "no_such_column" in ours.json()["errorMessage"]


@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_a_workgroup_sees_only_its_own_tables_on_druid(forwarding, connect_workgroup, transport):
    for key, other in (("demo", "second"), ("second", "demo")):
        conn = connect_workgroup(forwarding, key)
        try:
            conn.sql_transport = transport
            listed = conn.query("SELECT TABLE_SCHEMA, TABLE_NAME FROM INFORMATION_SCHEMA.TABLES t")
            druid_tables = set(listed.loc[listed["TABLE_SCHEMA"] == "druid", "TABLE_NAME"])
            assert druid_tables == _own_tables(forwarding, key)
            assert set(listed["TABLE_SCHEMA"]) == {"druid", "lookup", "INFORMATION_SCHEMA"}
            lookups = set(listed.loc[listed["TABLE_SCHEMA"] == "lookup", "TABLE_NAME"])
            own = tuple(forwarding.workgroups[key].project_ids)
            assert lookups and all(name.startswith(own) for name in lookups)
            columns = conn.query("SELECT DISTINCT TABLE_NAME FROM INFORMATION_SCHEMA.COLUMNS")
            assert set(columns["TABLE_NAME"]) <= druid_tables | lookups | {"COLUMNS", "SCHEMATA", "TABLES"}
            assert _own_tables(forwarding, key) <= set(columns["TABLE_NAME"])
            foreign = forwarding.workgroups[other].project_ids[0]
            with pytest.raises(Exception, match=f"Object '{foreign}' not found"):
                conn.query(f'SELECT COUNT(*) FROM "{foreign}"')
            with pytest.raises(Exception, match="sys"):
                conn.query("SELECT COUNT(*) FROM sys.segments")
        finally:
            conn.close()


def test_another_workgroups_query_cannot_be_cancelled(forwarding):
    pid = forwarding.workgroups["demo"].project_ids[0]
    # more bytes than the sockets hold: the answer is still streaming while it is not read
    query = f'SELECT a.* FROM "{pid}_vertex" a CROSS JOIN (SELECT __time FROM "{pid}" LIMIT 100) b'
    query_id = f"fwd-cancel-{uuid.uuid4()}"
    body = {"query": query, "resultFormat": "arrayLines", "context": {"sqlQueryId": query_id}}
    url = f"{forwarding.sql_url}/druid/v2/sql/{query_id}"
    with _sql(forwarding, "demo", body, stream=True) as answer:
        assert answer.status_code == 200
        pieces = answer.iter_content(1 << 16)  # one iterator: a second one would start a new read
        head = next(pieces)
        # the query counts as demo's while its answer streams: another workgroup's cancel is "not found"
        assert requests.delete(url, auth=_auth(forwarding, "second"), timeout=60).status_code == 404
        lines = head.count(b"\n") + sum(piece.count(b"\n") for piece in pieces)
    count = {"query": f'SELECT COUNT(*) FROM "{pid}_vertex"', "resultFormat": "array"}
    rows = _sql(forwarding, "demo", count).json()[0][0]
    assert lines == 100 * rows + 1  # every row, then arrayLines' empty end line: it was not cancelled
    # finished: no longer the workgroup's running query
    assert requests.delete(url, auth=_auth(forwarding, "demo"), timeout=60).status_code == 404


def test_the_workgroups_credentials_are_checked_before_forwarding(forwarding):
    pid = forwarding.workgroups["demo"].project_ids[0]
    answer = requests.post(
        f"{forwarding.sql_url}/druid/v2/sql",
        json={"query": f'SELECT COUNT(*) FROM "{pid}"'},
        auth=(forwarding.workgroups["demo"].client_id, "wrong"),
        timeout=60,
    )
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="druid"'


def test_fault_switches_apply_in_front_of_druid(forwarding):
    forwarding.fault("/druid/v2/sql", status=503, times=1)
    pid = forwarding.workgroups["demo"].project_ids[0]
    body = {"query": f'SELECT COUNT(*) AS n FROM "{pid}"', "resultFormat": "array"}
    assert _sql(forwarding, "demo", body).status_code == 503
    again = _sql(forwarding, "demo", body)
    assert again.status_code == 200 and again.json() == [[CASES]]
    forwarding.clear_faults()


def test_an_upload_is_on_druid_when_it_reports_done(forwarding, connect_workgroup, druid_cluster):
    conn = connect_workgroup(forwarding, "second")
    try:
        frame = pd.DataFrame(
            {
                "case_id": ["c1", "c1", "c2", "c2", "c2"],
                "activity": ["Open", "Close", "Open", "Check", "Close"],
                "timestamp": pd.to_datetime(
                    [
                        "2024-01-01 08:00",
                        "2024-01-02 09:00",
                        "2024-01-03 10:00",
                        "2024-01-03 11:00",
                        "2024-01-04 00:00",
                    ]
                ),
            }
        )
        project = conn.create_project(f"forwarded upload {uuid.uuid4()}")
        conn.upload(project, frame, progress=False)
        tables = {t.kind: t for t in conn.tables(project)}
        # straight from the broker: the rows are on Druid the moment the upload reports DONE
        direct = requests.post(
            f"{druid_cluster.broker}/druid/v2/sql",
            json={"query": f"SELECT COUNT(*) FROM {tables['vertex'].sql_name}", "resultFormat": "array"},
            timeout=60,
        )
        assert direct.json() == [[len(frame)]]
        counted = conn.query(
            f"SELECT vertex_name AS activity, COUNT(*) AS n FROM {tables['vertex'].sql_name} GROUP BY 1"
        )
        expected = frame.groupby("activity").size()
        assert dict(zip(counted["activity"], counted["n"], strict=True)) == expected.to_dict()
        # and only there for its own workgroup
        other = connect_workgroup(forwarding, "demo")
        try:
            with pytest.raises(Exception, match="not found"):
                other.query(f"SELECT COUNT(*) FROM {tables['vertex'].sql_name}")
        finally:
            other.close()
    finally:
        conn.close()


def test_concurrent_queries_of_two_workgroups_each_get_their_own_answer(forwarding, druid_cluster):
    answers: dict[str, requests.Response] = {}

    def ask(key: str) -> None:
        pid = forwarding.workgroups[key].project_ids[0]
        answers[key] = _sql(
            forwarding, key, {"query": f'SELECT COUNT(*) FROM "{pid}"', "resultFormat": "array"}
        )

    threads = [threading.Thread(target=ask, args=(k,)) for k in ("demo", "second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key, answer in answers.items():
        pid = forwarding.workgroups[key].project_ids[0]
        direct = requests.post(
            f"{druid_cluster.broker}/druid/v2/sql",
            json={"query": f'SELECT COUNT(*) FROM "{pid}"', "resultFormat": "array"},
            timeout=60,
        )
        assert answer.json() == direct.json()


@pytest.mark.parametrize(
    ("written", "narrowed"),
    [
        ("SELECT * FROM INFORMATION_SCHEMA.TABLES", 'SELECT * FROM {TABLES} AS "TABLES"'),
        ('SELECT t.TABLE_NAME FROM "INFORMATION_SCHEMA"."COLUMNS" t', "SELECT t.TABLE_NAME FROM {COLUMNS} t"),
        ("SELECT c.x FROM druid.INFORMATION_SCHEMA.COLUMNS AS c", "SELECT c.x FROM {COLUMNS} AS c"),
        ("SELECT * FROM information_schema.schemata", 'SELECT * FROM {SCHEMATA} AS "SCHEMATA"'),
    ],
)
def test_information_schema_views_are_narrowed_to_the_workgroups_own_rows(written, narrowed):
    from pm_sandbox.forward import forward_sql
    from pm_sandbox.sql.access import Catalog

    catalog = Catalog(
        tables={"p1": {"__time": "TIMESTAMP"}, "p1_vertex": {}}, lookups=frozenset({"p1_variants"})
    )
    own = (
        "(TABLE_SCHEMA = 'druid' AND TABLE_NAME IN ('p1', 'p1_vertex')) OR (TABLE_SCHEMA = 'lookup' AND "
        "TABLE_NAME IN ('p1_variants')) OR (TABLE_SCHEMA = 'INFORMATION_SCHEMA' AND TABLE_NAME IN "
        "('COLUMNS', 'SCHEMATA', 'TABLES'))"
    )
    views = {
        name: f'(SELECT * FROM INFORMATION_SCHEMA."{name}" WHERE {own})' for name in ("TABLES", "COLUMNS")
    }
    views["SCHEMATA"] = (
        "(SELECT * FROM INFORMATION_SCHEMA.\"SCHEMATA\" WHERE SCHEMA_NAME IN ('INFORMATION_SCHEMA', 'druid', "
        "'lookup'))"
    )
    assert forward_sql(written, catalog) == narrowed.format(**views)


def test_a_view_column_qualified_by_the_views_full_name_is_refused():
    from pm_sandbox.forward import forward_sql
    from pm_sandbox.sql.access import Catalog
    from pm_sandbox.sql.errors import SqlError

    with pytest.raises(SqlError, match="qualify the columns of INFORMATION_SCHEMA views"):
        forward_sql(
            "SELECT INFORMATION_SCHEMA.TABLES.TABLE_NAME FROM INFORMATION_SCHEMA.TABLES", Catalog(tables={})
        )
    with pytest.raises(SqlError, match="Object 'other' not found"):
        forward_sql('SELECT * FROM "other"', Catalog(tables={"mine": {}}))


def test_the_lookup_function_reaches_only_the_workgroups_own_lookups():
    from pm_sandbox.forward import forward_sql
    from pm_sandbox.sql.access import Catalog
    from pm_sandbox.sql.errors import SqlError

    catalog = Catalog(tables={"p1": {"k": "VARCHAR"}}, lookups=frozenset({"p1_variants"}))
    own = "SELECT LOOKUP(k, 'p1_variants') FROM \"p1\""
    assert forward_sql(own, catalog) == own
    for sql in ("SELECT LOOKUP(k, 'p2_variants') FROM \"p1\"", 'SELECT LOOKUP(k, k) FROM "p1"'):
        with pytest.raises(SqlError, match="Lookup|LOOKUP needs"):
            forward_sql(sql, catalog)
