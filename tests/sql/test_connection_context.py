"""Druid's query context through the public API: ``conn.query(..., context=)`` and its siblings,
``connect(context=)``, ``PM_QUERY_CONTEXT`` (environment and ``.env``) and ``conn.dbapi(context=)``, on all
three transports against the sandbox, which acts on ``sqlTimeZone``, ``maxSubqueryRows`` and ``sqlQueryId``
as Druid 33 does (a window's input is inlined, so a lowered ``maxSubqueryRows`` refuses a ``LAG``; window
functions need no ``enableWindowing``). A bad context is refused before any request: the sandbox's request
counters show that no SQL request arrived.

Expected values come from pandas on the raw rows of the same tables, never from the feature under test.
"""

from __future__ import annotations

import json
import os
import threading

import pandas as pd
import pytest
import requests
from _sql_transports import TRANSPORTS

from pm_notebook import ConfigurationError, QueryCancelled, QueryError

#: a limit below the rows the LAG's window reads, and Druid's refusal of it
LOW = {"maxSubqueryRows": 5}
LIMIT_REFUSED = r"beyond maximum\[5\] rows"
ZONE = "America/New_York"


@pytest.fixture(params=TRANSPORTS)
def transport(request):
    return request.param


def lag_sql(tables) -> str:
    return (
        f"SELECT caseid, duration, LAG(duration) OVER (ORDER BY caseid) AS previous "
        f"FROM {tables['cases']} GROUP BY caseid, duration ORDER BY caseid LIMIT 20"
    )


def expected_lag(conn, tables) -> pd.DataFrame:
    """LAG computed by pandas on the plain rows (no window function, no context)."""
    raw = conn.query(
        f"SELECT caseid, duration FROM {tables['cases']} GROUP BY caseid, duration ORDER BY caseid LIMIT 20"
    )
    raw["previous"] = raw["duration"].shift(1)
    return raw


def days_sql(tables) -> str:
    return (
        f"SELECT TIME_FLOOR(__time, 'P1D') AS d, COUNT(*) AS c FROM {tables['cases']} GROUP BY 1 ORDER BY 1"
    )


def expected_days(conn, tables, zone: str) -> pd.Series:
    """Cases per local day of *zone*, each day as its UTC instant (what Druid returns), by pandas."""
    times = conn.query(f"SELECT __time FROM {tables['cases']}")["__time"]
    local = times.dt.tz_convert(zone).dt.floor("D", ambiguous=False, nonexistent="shift_forward")
    return local.dt.tz_convert("UTC").value_counts().sort_index()


def sql_requests(sb) -> dict[str, int]:
    """The SQL requests (Druid SQL API and Avatica) the sandbox counted since its last reset."""
    return {k: n for k, n in sb.stats()["requests"].items() if "/druid/v2/sql" in k and n}


# --- per call: conn.query and its siblings ------------------------------------------------------------------
def test_lag_needs_no_context_and_a_lowered_limit_refuses_it(conn, demo_tables, transport):
    sql = lag_sql(demo_tables)
    got = conn.query(sql, transport=transport)
    want = expected_lag(conn, demo_tables)
    assert got["caseid"].tolist() == want["caseid"].tolist()
    assert got["previous"].isna().tolist() == want["previous"].isna().tolist()
    assert got["previous"].dropna().tolist() == want["previous"].dropna().tolist()
    # enableWindowing is accepted and changes nothing (Druid 32 removed it)
    pd.testing.assert_frame_equal(
        conn.query(sql, transport=transport, context={"enableWindowing": True}), got
    )
    with pytest.raises(QueryError, match=LIMIT_REFUSED):
        conn.query(sql, transport=transport, context=LOW)


def test_sql_time_zone_applies_to_time_floor(conn, demo_tables, transport):
    if transport in ("avatica", "jdbc") and os.environ.get("PM_TEST_DRUID") == "1":
        pytest.skip(
            "stand-in only (PM_TEST_DRUID=1): Druid 33's Avatica endpoint does not apply sqlTimeZone "
            "from the connection properties to TIME_FLOOR (it answers the UTC floor): a difference "
            "of Druid's, not the client's"
        )
    got = conn.query(days_sql(demo_tables), transport=transport, context={"sqlTimeZone": ZONE})
    want = expected_days(conn, demo_tables, ZONE)
    assert got["d"].tolist() == want.index.tolist()
    assert got["c"].tolist() == want.tolist()
    utc = expected_days(conn, demo_tables, "UTC")
    assert got["d"].tolist() != utc.index.tolist()  # the zone made a difference on these data


def test_lowered_max_subquery_rows_refuses(conn, demo_tables, transport):
    cases = demo_tables["cases"]
    sql = f"SELECT COUNT(*) AS c FROM {cases} WHERE caseid IN (SELECT caseid FROM {cases})"
    n = len(conn.query(f"SELECT caseid FROM {cases}"))
    assert conn.query(sql, transport=transport)["c"].tolist() == [n]
    with pytest.raises(QueryError, match=r"beyond maximum\[5\] rows"):
        conn.query(sql, transport=transport, context={"maxSubqueryRows": 5})


def test_every_statement_method_sends_the_context(conn, demo_tables, transport, tmp_path):
    sql = lag_sql(demo_tables)
    want = conn.query(sql, transport=transport)
    got = conn.fetch(sql, transport=transport, limit=5)
    assert got.frame["previous"].tolist()[1:] == want["previous"].tolist()[1:5]
    table = conn.query_arrow(sql, transport=transport)
    assert table.column("previous").to_pylist()[1:] == want["previous"].tolist()[1:]
    chunks = list(conn.query_chunks(sql, transport=transport, chunk_rows=7))
    assert pd.concat(chunks)["previous"].tolist()[1:] == want["previous"].tolist()[1:]
    path = tmp_path / "lag.parquet"
    assert conn.to_parquet(sql, path, transport=transport) == len(want)
    assert pd.read_parquet(path)["previous"].tolist()[1:] == want["previous"].tolist()[1:]
    for refused in (
        lambda: conn.fetch(sql, transport=transport, context=LOW, limit=5),
        lambda: conn.query_arrow(sql, transport=transport, context=LOW),
        lambda: list(conn.query_chunks(sql, transport=transport, context=LOW)),
        lambda: conn.to_parquet(sql, tmp_path / "no.parquet", transport=transport, context=LOW),
    ):
        with pytest.raises(QueryError, match=LIMIT_REFUSED):
            refused()


def test_dbapi_sends_its_context(sandbox, connect_workgroup, demo_tables, transport):
    from pm_notebook.sql.dbapi import ProgrammingError

    with connect_workgroup(sandbox) as conn:
        with conn.dbapi(transport=transport) as db:
            cursor = db.cursor()
            cursor.execute(lag_sql(demo_tables))
            rows = cursor.fetchall()
        want = expected_lag(conn, demo_tables)
        with (
            conn.dbapi(transport=transport, context=LOW) as db,
            pytest.raises(ProgrammingError, match=LIMIT_REFUSED),
        ):
            db.cursor().execute(lag_sql(demo_tables))
    assert [r[0] for r in rows] == want["caseid"].tolist()
    assert [r[2] for r in rows][1:] == want["previous"].tolist()[1:]


def test_sql_query_id_names_the_query_on_the_broker(conn, sandbox):
    """The id given in the context is the one the broker knows: ``DELETE /druid/v2/sql/{id}`` cancels it."""
    outcome: dict = {}
    sandbox.hold_statements("AS named_by_context", times=1)

    def run() -> None:
        try:
            conn.query("SELECT 1 AS named_by_context", transport="druid", context={"sqlQueryId": "ctx-api-7"})
        except QueryCancelled as exc:
            outcome["cancelled"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    try:
        sandbox.wait_held()
        demo = sandbox.workgroups["demo"]
        r = requests.delete(
            sandbox.sql_url + "/druid/v2/sql/ctx-api-7", auth=(demo.client_id, demo.client_secret), timeout=60
        )
        assert r.status_code == 202, r.text
    finally:
        thread.join(90)
        sandbox.release()
    assert "cancelled" in outcome


# --- the connection's default: connect(context=), PM_QUERY_CONTEXT ------------------------------------------
def test_connect_context_is_every_query_default_and_a_call_overrides_it(
    sandbox, connect_workgroup, demo_tables, transport
):
    if transport in ("avatica", "jdbc") and os.environ.get("PM_TEST_DRUID") == "1":
        pytest.skip(
            "stand-in only (PM_TEST_DRUID=1): Druid 33's Avatica endpoint does not apply sqlTimeZone "
            "from the connection properties to TIME_FLOOR (it answers the UTC floor): a difference "
            "of Druid's, not the client's"
        )
    with connect_workgroup(sandbox, context={**LOW, "sqlTimeZone": ZONE}) as conn:
        assert conn.context == {**LOW, "sqlTimeZone": ZONE}
        with pytest.raises(QueryError, match=LIMIT_REFUSED):
            conn.query(lag_sql(demo_tables), transport=transport)
        days = conn.query(days_sql(demo_tables), transport=transport)
        assert days["d"].tolist() == expected_days(conn, demo_tables, ZONE).index.tolist()
        # per call wins, key by key: the limit raised again, the zone kept
        want = expected_lag(conn, demo_tables)
        got = conn.query(lag_sql(demo_tables), transport=transport, context={"maxSubqueryRows": 100_000})
        assert got["previous"].tolist()[1:] == want["previous"].tolist()[1:]
        utc = conn.query(days_sql(demo_tables), transport=transport, context={"sqlTimeZone": "UTC"})
        assert utc["d"].tolist() == expected_days(conn, demo_tables, "UTC").index.tolist()


def test_pm_query_context_from_the_environment(
    sandbox, connect_workgroup, demo_tables, monkeypatch, transport
):
    if transport in ("avatica", "jdbc") and os.environ.get("PM_TEST_DRUID") == "1":
        pytest.skip(
            "stand-in only (PM_TEST_DRUID=1): Druid 33's Avatica endpoint does not apply sqlTimeZone "
            "from the connection properties to TIME_FLOOR (it answers the UTC floor): a difference "
            "of Druid's, not the client's"
        )
    monkeypatch.setenv("PM_QUERY_CONTEXT", json.dumps({"sqlTimeZone": ZONE, "maxSubqueryRows": "5"}))
    with connect_workgroup(sandbox) as conn:
        assert conn.context == {"sqlTimeZone": ZONE, "maxSubqueryRows": 5}
        assert conn.settings.sources["context"] == "env"
        days = conn.query(days_sql(demo_tables), transport=transport)
        assert days["d"].tolist() == expected_days(conn, demo_tables, ZONE).index.tolist()
        with pytest.raises(QueryError, match=LIMIT_REFUSED):  # the limit lowered by the variable
            conn.query(lag_sql(demo_tables), transport=transport)
    # an argument wins over the variable, {} too
    with connect_workgroup(sandbox, context={}) as conn:
        assert conn.query(lag_sql(demo_tables), transport=transport)["previous"].notna().any()


def test_pm_query_context_from_a_dotenv_file(sandbox, connect_workgroup, demo_tables, tmp_path):
    env = tmp_path / ".env"
    env.write_text('PM_QUERY_CONTEXT={"maxSubqueryRows": 5}\n', encoding="utf-8")
    with connect_workgroup(sandbox, env_file=env) as conn:
        assert conn.settings.sources["context"] == f".env:{env}"
        with pytest.raises(QueryError, match=LIMIT_REFUSED):
            conn.query(lag_sql(demo_tables))


# --- refused before any request -----------------------------------------------------------------------------
BAD = [
    ({"timeout": "soon"}, "'timeout': 'soon' is not a whole number"),
    ({"enablewindowing": True}, "Did you mean 'enableWindowing'"),
    ({"sqlTimeZone": "Mars/Olympus"}, "not a time zone"),
    ({"password": "x"}, "'password' is not a query context key"),
    (["timeout", 1], "must be a dict"),
]


@pytest.mark.parametrize(("context", "needle"), BAD)
def test_bad_context_is_refused_before_any_sql_request(
    sandbox, connect_workgroup, demo_tables, tmp_path, context, needle
):
    sql = f"SELECT COUNT(*) FROM {demo_tables['cases']}"
    with connect_workgroup(sandbox) as conn:
        sandbox.reset_stats()
        calls = [
            lambda: conn.query(sql, context=context),
            lambda: conn.fetch(sql, context=context, transport="avatica"),
            lambda: conn.query_arrow(sql, context=context, transport="jdbc"),
            lambda: list(conn.query_chunks(sql, context=context)),
            lambda: conn.to_parquet(sql, tmp_path / "x.parquet", context=context),
            lambda: conn.dbapi(transport="druid", context=context),
        ]
        for call in calls:
            with pytest.raises(ConfigurationError) as refused:
                call()
            assert needle in str(refused.value) and refused.value.hint
        assert sql_requests(sandbox) == {}
        assert not (tmp_path / "x.parquet").exists()
        conn.query(sql)  # the counters do count SQL requests: the check above can fail
        assert sql_requests(sandbox)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("{not json", "PM_QUERY_CONTEXT (environment) is not valid JSON"),
        ('["timeout", 1]', "PM_QUERY_CONTEXT (environment) must be a JSON object"),
        ('{"timeout": "soon"}', "PM_QUERY_CONTEXT (environment): Query context key 'timeout'"),
        ('{"enablewindowing": true}', "Did you mean 'enableWindowing'"),
    ],
)
def test_bad_pm_query_context_names_the_variable(sandbox, connect_workgroup, monkeypatch, value, needle):
    monkeypatch.setenv("PM_QUERY_CONTEXT", value)
    sandbox.reset_stats()
    with pytest.raises(ConfigurationError) as refused:
        connect_workgroup(sandbox)
    assert needle in str(refused.value) and "PM_QUERY_CONTEXT" in str(refused.value)
    assert sql_requests(sandbox) == {}


def test_bad_context_argument_of_connect_names_it(sandbox, connect_workgroup):
    with pytest.raises(ConfigurationError, match=r"connect\(context=\.\.\.\): Query context key 'timeout'"):
        connect_workgroup(sandbox, context={"timeout": -5})
