"""Druid's query context on every transport: checked before any request, sent as each protocol sends it on a
real broker (the SQL API's ``context``, Avatica/JDBC connection properties), and acted on by the sandbox:
``sqlTimeZone``, ``timeout`` (a :class:`QueryTimeout`), ``maxSubqueryRows`` and ``sqlQueryId``;
``enableWindowing`` is accepted and changes nothing, as on Druid 33.

The server is ``numbers_sql`` (tests/conftest.py): a SQL port whose ``numbers`` table holds 100,001 rows, one
more than Druid's default ``maxSubqueryRows``.
"""

from __future__ import annotations

import threading
from contextlib import closing

import pandas as pd
import pytest
import requests
from _sql_transports import TRANSPORTS

from pm_notebook import ConfigurationError, QueryCancelled, QueryError, QueryTimeout
from pm_notebook.frames import collect, to_pandas
from pm_notebook.query_context import check_context, context_properties, merge_contexts
from pm_notebook.sql import Target, make_transport

NUMBERS = '"numbers"'
IN_ALL = f"SELECT COUNT(*) AS c FROM {NUMBERS} WHERE n IN (SELECT n FROM {NUMBERS})"
JOIN_ALL = f"SELECT COUNT(*) AS c FROM {NUMBERS} a JOIN (SELECT n FROM {NUMBERS}) b ON a.n = b.n"
# a window operator query under a groupBy: the window's input (the inner GROUP BY's 100,001 rows) is inlined,
# and so is its result (Druid's groupBy engine runs only a groupBy subquery itself): 200,002 rows
WINDOW_ALL = (
    f"SELECT COUNT(*) AS c FROM (SELECT n, n - LAG(n) OVER (ORDER BY n) AS gap FROM {NUMBERS} GROUP BY n) "
    "WHERE gap IS NOT NULL OR n = 0"
)


def run(transport, sql, params=None, **context) -> pd.DataFrame:
    result = transport.execute(sql, params, context=context or None)
    try:
        table, _ = collect(result.columns, result.batches())
    finally:
        result.close()
    return to_pandas(table)


@pytest.fixture(params=TRANSPORTS)
def transport(request, numbers_sql):
    with closing(make_transport(request.param, numbers_sql.target())) as opened:
        yield opened


@pytest.fixture
def numbers_frame(numbers_sql):
    """The ``numbers`` table's times as the fixture builds them, for independent expected values."""
    start = pd.Timestamp("2024-03-30 22:00:00", tz="UTC")
    return pd.DataFrame({"__time": start + pd.to_timedelta(range(numbers_sql.rows), unit="s")})


def test_sql_time_zone_reaches_the_broker(transport, numbers_frame):
    sql = f"SELECT TIME_FLOOR(__time, 'P1D') AS d, COUNT(*) AS c FROM {NUMBERS} GROUP BY 1 ORDER BY 1"
    got = run(transport, sql, sqlTimeZone="Europe/Paris")
    local = numbers_frame["__time"].dt.tz_convert("Europe/Paris").dt.floor("D")  # 31 March has 23 hours
    want = local.dt.tz_convert("UTC").value_counts().sort_index()
    assert got["d"].tolist() == want.index.tolist()
    assert got["c"].tolist() == want.tolist()
    utc = run(transport, sql)  # no context: UTC days, as before
    assert utc["d"].tolist() == sorted(numbers_frame["__time"].dt.floor("D").unique().tolist())


def test_window_functions_need_no_context_and_enable_windowing_changes_nothing(transport):
    sql = f"SELECT n, LAG(n) OVER (ORDER BY n) AS p FROM {NUMBERS} WHERE n < 3 GROUP BY n"
    got = run(transport, sql)
    assert got["n"].tolist() == [0, 1, 2]
    assert got["p"].isna().tolist() == [True, False, False] and got["p"].tolist()[1:] == [0, 1]
    pd.testing.assert_frame_equal(run(transport, sql, enableWindowing=True), got)
    pd.testing.assert_frame_equal(run(transport, sql, enableWindowing=False), got)


@pytest.mark.parametrize(
    ("sql", "needed"),
    [(IN_ALL, 100_001), (JOIN_ALL, 100_001), (WINDOW_ALL, 200_002)],
    ids=["in-subquery", "join-subquery", "window-subquery"],
)
def test_max_subquery_rows_refused_then_raised(transport, sql, needed):
    with pytest.raises(QueryError) as refused:
        run(transport, sql)
    assert not isinstance(refused.value, QueryTimeout)
    assert "subqueries generated results beyond maximum[100000] rows" in str(refused.value)
    assert "context={'maxSubqueryRows': 200000}" in (refused.value.hint or "")
    with pytest.raises(QueryError, match=rf"beyond maximum\[{needed - 1}\]"):
        run(transport, sql, maxSubqueryRows=needed - 1)
    assert run(transport, sql, maxSubqueryRows=needed)["c"].tolist() == [100_001]


def test_a_window_at_the_top_inlines_its_input(transport):
    # Druid 33 never windows a table directly: the rows the window reads (here the GROUP BY's) are inlined
    sql = f"SELECT n, LAG(n) OVER (ORDER BY n) AS p FROM {NUMBERS} GROUP BY n"
    with pytest.raises(QueryError, match=r"beyond maximum\[100000\]"):
        run(transport, sql)
    assert len(run(transport, sql, maxSubqueryRows=100_001)) == 100_001
    scan = f"SELECT n, LAG(n) OVER (ORDER BY n) AS p FROM {NUMBERS} WHERE n < 100000"
    assert len(run(transport, scan)) == 100_000  # a window over a scan of exactly the limit runs


def test_a_subquery_of_exactly_the_limit_runs(transport):
    sql = f"SELECT COUNT(*) AS c FROM {NUMBERS} WHERE n IN (SELECT n FROM {NUMBERS} WHERE n < 100000)"
    assert run(transport, sql)["c"].tolist() == [100_000]
    with pytest.raises(QueryError, match=r"beyond maximum\[99999\]"):
        run(transport, sql, maxSubqueryRows="99999")  # text, as a connection property carries it


def test_a_timeout_is_a_query_timeout_on_every_transport(transport, numbers_sql):
    holds = numbers_sql.engine.holds
    marker = f"held_{transport.name}"
    holds.arm(f"AS {marker}", times=1)  # waits inside the engine until its time limit ends it
    try:
        with pytest.raises(QueryTimeout) as timed_out:
            run(transport, f"SELECT 1 AS {marker}", timeout=250)
    finally:
        holds.clear()
    err = timed_out.value
    assert isinstance(err, QueryError) and not isinstance(err, QueryCancelled)
    assert err.limit_ms == 250
    assert "timeout" in (err.hint or "") and "try again" not in str(err).lower()
    assert run(transport, "SELECT 1 AS after")["after"].tolist() == [1]  # the transport stays usable


def test_one_connection_per_distinct_context(numbers_sql):
    avatica = numbers_sql.avatica
    before = avatica.connection_count(numbers_sql.client_id)
    with closing(make_transport("avatica", numbers_sql.target())) as transport:
        for context in ({}, {"sqlTimeZone": "Europe/Paris"}, {}, {"sqlTimeZone": "Europe/Paris"}):
            assert run(transport, "SELECT 1 AS x", **context)["x"].tolist() == [1]
        assert avatica.connection_count(numbers_sql.client_id) == before + 2
    assert avatica.connection_count(numbers_sql.client_id) == before


def test_sql_query_id_names_the_query_on_the_broker(numbers_sql):
    """A query sent with ``sqlQueryId`` can be cancelled on the broker by that id (``DELETE``)."""
    holds = numbers_sql.engine.holds
    holds.arm("AS named", times=1)
    outcome: dict = {}
    with closing(make_transport("druid", numbers_sql.target())) as transport:

        def query() -> None:
            try:
                run(transport, "SELECT 1 AS named", sqlQueryId="ctx-test-42")
            except QueryCancelled as exc:
                outcome["cancelled"] = exc

        thread = threading.Thread(target=query)
        thread.start()
        try:
            wait_held(holds)
            r = requests.delete(
                numbers_sql.url + "/druid/v2/sql/ctx-test-42",
                auth=(numbers_sql.client_id, numbers_sql.client_secret),
                timeout=60,
            )
            assert r.status_code == 202, r.text
        finally:
            thread.join(90)
            holds.clear()
    assert "cancelled" in outcome


def wait_held(holds, timeout: float = 60.0) -> None:
    """Wait until the engine holds a statement (a hang guard, not a measure)."""
    event = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if holds.state()["held"]:
            return
        event.wait(0.01)
    raise AssertionError("no statement was held")


# -- checked before any request: a target where nothing listens shows that nothing was sent -----------------
NOWHERE = Target.from_jdbc_url(
    "jdbc:avatica:remote:url=http://127.0.0.1:9/druid/v2/sql/avatica/", "someone", "secret"
)


@pytest.mark.parametrize("name", TRANSPORTS)
@pytest.mark.parametrize(
    ("context", "needle"),
    [
        ({"timeout": "soon"}, "'timeout': 'soon' is not a whole number"),
        ({"timeout": -1}, "below its minimum 0"),
        ({"enableWindowing": "yes"}, "not a boolean"),
        ({"sqlTimeZone": "Mars/Olympus"}, "not a time zone"),
        ({"maxSubqueryRows": 0}, "below its minimum 1"),
        ({"enablewindowing": True}, "Did you mean 'enableWindowing'"),
        ({"password": "x"}, "'password' is not a query context key"),
        ({"fetch_size": 10}, "'fetch_size' is not a query context key"),
        ({"lane": ["a"]}, "not a string"),
        ({"custom": {"a": 1}}, "not a string, number or boolean"),
        ({"sqlQueryId": "a\r\nb"}, "printable ASCII"),
        (["timeout", 1], "must be a dict"),
    ],
)
def test_bad_context_is_refused_before_any_request(name, context, needle):
    with closing(make_transport(name, NOWHERE)) as transport, pytest.raises(ConfigurationError) as refused:
        transport.execute("SELECT 1", context=context)
    assert needle in str(refused.value)
    assert refused.value.hint


def test_check_context_gives_canonical_values():
    assert check_context(None) == {}
    assert check_context(
        {"enableWindowing": "TRUE", "timeout": "5000", "vectorize": "Force", "myExtensionKey": 3}
    ) == {"enableWindowing": True, "timeout": 5000, "vectorize": "force", "myExtensionKey": 3}
    assert context_properties({"enableWindowing": True, "timeout": 5000}) == {
        "enableWindowing": "true",
        "timeout": "5000",
    }


def test_merge_lays_the_query_context_over_the_default():
    default = {"sqlTimeZone": "Europe/Paris", "timeout": 60000}
    assert merge_contexts(default, {"timeout": 5000, "enableWindowing": True}) == {
        "sqlTimeZone": "Europe/Paris",
        "timeout": 5000,
        "enableWindowing": True,
    }
    assert merge_contexts(None, None) is None
    assert merge_contexts({}, {}) is None
    with pytest.raises(ConfigurationError, match="timeout"):
        merge_contexts(default, {"timeout": "never"})
    with pytest.raises(ConfigurationError, match="sqlTimeZone"):
        merge_contexts({"sqlTimeZone": "nowhere"}, None)


def test_dbapi_cursor_sends_the_connection_context(numbers_sql):
    from pm_notebook.frames import batch_to_arrow
    from pm_notebook.sql import dbapi

    def factory():
        return make_transport("avatica", numbers_sql.target())

    with pytest.raises(ConfigurationError, match="enableWindowing"):
        dbapi.Connection(factory, to_arrow=batch_to_arrow, context={"enableWindowing": "maybe"})
    window = f"SELECT n, LAG(n) OVER (ORDER BY n) AS p FROM {NUMBERS} WHERE n < 2 GROUP BY n"
    with dbapi.Connection(factory, to_arrow=batch_to_arrow) as connection:
        cursor = connection.cursor()
        cursor.execute(window)
        assert cursor.fetchall() == [(0, None), (1, 0)]
    # the window reads two rows: a limit of one, sent by the connection's context, refuses it
    with dbapi.Connection(factory, to_arrow=batch_to_arrow, context={"maxSubqueryRows": 1}) as connection:
        cursor = connection.cursor()
        with pytest.raises(dbapi.ProgrammingError, match=r"beyond maximum\[1\]"):
            cursor.execute(window)
