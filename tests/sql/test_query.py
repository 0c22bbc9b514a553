"""Connection.query and friends on every transport, against the sandbox over real HTTP / real JDBC.

Expected values come from the same deterministic data in an in-process DuckDB (``duck`` fixture)."""

from __future__ import annotations

import os
import threading

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _sql_transports import TRANSPORTS

from pm_notebook.errors import AuthenticationError, ConfigurationError, QueryCancelled, QueryError

DTYPES = {
    "__time": pd.DatetimeTZDtype("ms", "UTC"),
    "duration": pd.Int64Dtype(),
    "concurrency": "float64",
    "caseid": pd.StringDtype("pyarrow"),
    "is_predicted": pd.Int64Dtype(),  # a flag: Druid ingests a boolean as a long 1/0, so does the stand-in
    "slow": pd.BooleanDtype(),  # a comparison: BOOLEAN on Druid 33 (tests/druid/test_transports.py)
    "distinct_vertices": "object",
}
SLOW = "duration > 1728000000"  # over 20 days: about half the demo's cases
EXPRESSIONS = {"slow": SLOW}
TYPED_COLUMNS = ", ".join(f"{EXPRESSIONS[n]} AS {n}" if n in EXPRESSIONS else n for n in DTYPES)


def typed_sql(table: str, where: str = "") -> str:
    return f"SELECT {TYPED_COLUMNS} FROM {table} {where} ORDER BY __time LIMIT 60"


def check_dtypes(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == list(DTYPES)
    for name, dtype in DTYPES.items():
        assert frame[name].dtype == dtype, (name, frame[name].dtype)


def as_lists(series: pd.Series) -> list:
    return [None if v is None or (not hasattr(v, "__len__") and pd.isna(v)) else list(v) for v in series]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_types_and_values_match_the_data(conn, demo_tables, duck, transport) -> None:
    sql = typed_sql(demo_tables["cases"])
    frame = conn.query(sql, transport=transport)
    expected = duck(sql)
    check_dtypes(frame)
    assert len(frame) == len(expected) > 0
    assert frame["caseid"].tolist() == expected["caseid"].tolist()
    assert frame["duration"].tolist() == [int(v) for v in expected["duration"]]
    assert frame["concurrency"].tolist() == pytest.approx(expected["concurrency"].tolist())
    assert frame["is_predicted"].tolist() == [int(v) for v in expected["is_predicted"]]
    assert frame["slow"].tolist() == [int(v) > 1728000000 for v in expected["duration"]]
    assert set(frame["slow"]) == {True, False}
    times = pd.to_datetime(expected["__time"]).dt.tz_localize("UTC")
    assert (frame["__time"] == times.dt.as_unit("ms")).all()
    assert as_lists(frame["distinct_vertices"]) == as_lists(expected["distinct_vertices"])
    assert all(isinstance(v, list) for v in frame["distinct_vertices"] if v is not None)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_empty_result_keeps_columns_and_dtypes(conn, demo_tables, transport) -> None:
    frame = conn.query(typed_sql(demo_tables["cases"], "WHERE caseid = 'no such case'"), transport=transport)
    assert len(frame) == 0
    check_dtypes(frame)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_null_heavy_result_keeps_every_null(conn, demo_tables, duck, transport) -> None:
    sql = (
        "SELECT CASE WHEN MOD(rework, 3) <> 1 THEN NULL ELSE caseid END AS s, "
        "CASE WHEN MOD(tasks_count, 2) = 0 THEN NULL ELSE duration END AS n, "
        "CASE WHEN MOD(tasks_count, 3) = 0 THEN NULL ELSE concurrency END AS x, "
        f"CASE WHEN MOD(tasks_count, 2) = 1 THEN NULL ELSE {SLOW} END AS b, "
        "CASE WHEN MOD(rework, 2) = 0 THEN NULL ELSE __time END AS t "
        f"FROM {demo_tables['cases']} ORDER BY __time"
    )
    frame = conn.query(sql, transport=transport)
    expected = duck(sql)
    assert len(frame) == len(expected) > 0
    assert frame.isna().sum().tolist() == expected.isna().sum().tolist()
    assert frame["s"].dtype == pd.StringDtype("pyarrow") and frame["n"].dtype == pd.Int64Dtype()
    assert frame["b"].dtype == pd.BooleanDtype() and frame["t"].dtype == pd.DatetimeTZDtype("ms", "UTC")
    assert 0 < frame["s"].isna().sum() < len(frame)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_parameters_are_bound_not_pasted(conn, demo_tables, duck, transport) -> None:
    some = duck(f"SELECT caseid, duration FROM {demo_tables['cases']} ORDER BY caseid LIMIT 1 OFFSET 7")
    case, duration = some["caseid"][0], int(some["duration"][0])
    sql = f"SELECT caseid, duration FROM {demo_tables['cases']} WHERE caseid = ? AND duration >= ?"
    frame = conn.query(sql, [case, duration], transport=transport)
    assert frame["caseid"].tolist() == [case]
    # A value that would break pasted SQL is just a string that matches nothing.
    hostile = conn.query(sql, ["x' OR '1'='1", 0], transport=transport)
    assert len(hostile) == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_query_error_is_the_servers_message(conn, transport) -> None:
    with pytest.raises(QueryError) as info:
        conn.query("SELEC 1", transport=transport)
    text = str(info.value)
    assert info.value.server_message and info.value.server_message in text
    for framing in (
        "\tat ",
        "java.",
        "org.apache",
        "AvaticaSqlException",
        "Remote driver error",
        "Traceback",
    ):
        assert framing not in text
    # The connection stays usable after an error.
    assert conn.query('SELECT 1 AS "one"', transport=transport)["one"].tolist() == [1]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_wrong_parameter_count_is_a_clear_error(conn, demo_tables, transport) -> None:
    if transport == "druid" and os.environ.get("PM_TEST_DRUID") == "1":
        pytest.skip(
            "stand-in only (PM_TEST_DRUID=1): Druid's SQL API ignores parameters beyond the "
            "statement's ? (the stand-in refuses them)"
        )
    with pytest.raises((QueryError, ConfigurationError)) as info:
        conn.query(
            f"SELECT caseid FROM {demo_tables['cases']} WHERE caseid = ?", ["a", "b"], transport=transport
        )
    assert "parameter" in str(info.value).lower()


def test_params_must_be_a_sequence(conn) -> None:
    with pytest.raises(ConfigurationError, match="list or tuple"):
        conn.query("SELECT 1", "abc")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ctrl_c_cancels_and_the_connection_stays_usable(
    conn, sandbox, interrupt_when_held, transport
) -> None:
    conn.query("SELECT 1 AS warm", transport=transport)  # JVM/driver start-up is not what we interrupt
    sandbox.hold_statements("AS held")  # runs on the server until something interrupts it
    with interrupt_when_held(sandbox), pytest.raises(QueryCancelled):
        conn.query("SELECT 2 AS held", transport=transport)
    assert sandbox.wait_ended("cancelled")["ended"] == {"cancelled": 1}  # the cancel reached the server
    assert conn.query("SELECT 3 AS good", transport=transport)["good"].tolist() == [3]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ctrl_c_midway_through_to_parquet_leaves_no_file(
    conn, sandbox, interrupt_when_held, demo_tables, duck, transport, tmp_path, monkeypatch
) -> None:
    # The server holds the statement mid-result (after more rows than the sandbox's first Avatica block of
    # 50,000 and its first Druid megabytes: the client hands a batch on once it has the next one), so Ctrl-C
    # comes once the client has rows and has written part of the temporary file: no timing, the hold and
    # the file's growth are the events.
    sql = (
        f"SELECT v.caseid, v.duration, c.caseid AS midway_other FROM {demo_tables['vertex']} AS v "
        f"CROSS JOIN (SELECT caseid FROM {demo_tables['cases']} LIMIT 60) AS c"
    )
    after = 110_000
    assert len(duck(sql)) > after
    monkeypatch.setattr(conn, "sql_batch_rows", 2000)  # a row group per 2,000 rows: the file grows early
    conn.query("SELECT 1 AS warm", transport=transport)
    sandbox.hold_statements("midway_other", after_rows=after)

    def partly_written() -> bool:
        return any(f.name.endswith(".partial") and f.stat().st_size > 4096 for f in tmp_path.iterdir())

    target = tmp_path / "result.parquet"
    with interrupt_when_held(sandbox, until=partly_written), pytest.raises(QueryCancelled):
        conn.to_parquet(sql, target, transport=transport)
    assert sorted(os.listdir(tmp_path)) == []  # neither the target nor the temporary file
    assert sandbox.wait_ended("cancelled")["ended"] == {"cancelled": 1}  # the cancel reached the server
    assert conn.query("SELECT 4 AS good", transport=transport)["good"].tolist() == [4]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_chunks_arrow_and_parquet_agree(conn, demo_tables, duck, transport, tmp_path) -> None:
    sql = (
        f"SELECT __time, caseid, vertex_name, duration FROM {demo_tables['vertex']} GROUP BY 1, 2, 3, 4 "
        "ORDER BY caseid, __time"
    )
    expected_rows = len(duck(sql))
    chunks = list(conn.query_chunks(sql, chunk_rows=1000, transport=transport))
    assert [len(c) for c in chunks[:-1]] == [1000] * (len(chunks) - 1)
    assert sum(len(c) for c in chunks) == expected_rows
    whole = conn.query(sql, transport=transport)
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole)
    table = conn.query_arrow(sql, transport=transport)
    assert isinstance(table, pa.Table) and table.num_rows == expected_rows
    assert table.schema.field("__time").type == pa.timestamp("ms", tz="UTC")
    path = tmp_path / "v.parquet"
    assert conn.to_parquet(sql, path, transport=transport) == expected_rows
    assert pq.read_table(path).equals(table)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fetch_caps_rows_reports_progress_and_names_its_transport(conn, demo_tables, duck, transport) -> None:
    sql = (  # aggregating, so Druid may order by any column
        f"SELECT caseid, __time, vertex_name FROM {demo_tables['vertex']} GROUP BY 1, 2, 3 "
        "ORDER BY caseid, __time, vertex_name"
    )
    total = len(duck(sql))
    assert total > 25
    progress: list[int] = []
    got = conn.fetch(sql, transport=transport, limit=25, on_rows=progress.append, batch_rows=10)
    assert (len(got.frame), got.truncated, got.transport) == (25, True, transport)
    assert got.frame.attrs["transport"] == transport
    pd.testing.assert_frame_equal(got.frame, conn.query(sql, transport=transport).head(25))
    assert progress and progress == sorted(progress) and progress[-1] == 25  # batches: the transport's choice
    exact = conn.fetch(f"{sql} LIMIT 25", transport=transport, limit=25)
    assert (len(exact.frame), exact.truncated) == (25, False)
    everything = conn.fetch(sql, transport=transport)
    assert (len(everything.frame), everything.truncated) == (total, False)
    for chunk in conn.query_chunks(sql, chunk_rows=total // 2, transport=transport):
        assert chunk.attrs["transport"] == transport


def test_fetch_refuses_a_bad_cap(conn) -> None:
    for bad in (-1, 2.5, True, "10"):
        with pytest.raises(ConfigurationError, match="limit must be"):
            conn.fetch("SELECT 1", limit=bad)
    with pytest.raises(ConfigurationError, match="batch_rows must be"):
        conn.fetch("SELECT 1", batch_rows=0)
    assert conn.fetch('SELECT 1 AS "one"').transport in {"druid", "avatica", "jdbc"}  # "auto", resolved


def test_two_threads_on_one_connection_each_see_their_own_transport(conn, demo_tables) -> None:
    """Thread A's druid statement stays open while the main thread runs an avatica one, then A finishes.

    The interleaving is forced with events (no timing): A's progress callback holds A inside its statement
    until the other query is done, which is exactly when a shared "last transport" would be overwritten.
    """
    sql = f"SELECT caseid FROM {demo_tables['cases']} GROUP BY caseid ORDER BY caseid LIMIT 30"
    conn.query("SELECT 1", transport="druid")  # both transports exist before the threads start
    conn.query("SELECT 1", transport="avatica")
    in_flight, other_done = threading.Event(), threading.Event()
    answers: dict[str, object] = {}

    def hold(rows: int) -> None:
        in_flight.set()
        if not other_done.wait(timeout=120):
            raise AssertionError("the main thread's query never finished")

    def run_a() -> None:
        try:
            answers["a"] = conn.fetch(sql, transport="druid", on_rows=hold)
        except BaseException as exc:  # reported by the main thread
            answers["a"] = exc
            in_flight.set()

    a = threading.Thread(target=run_a, name="query-a")
    a.start()
    try:
        assert in_flight.wait(timeout=120), "thread A never started fetching"
        b = conn.fetch(sql, transport="avatica")
        frame_b = conn.query(sql, transport="avatica")
    finally:
        other_done.set()
        a.join(timeout=120)
    assert not a.is_alive()
    got_a = answers["a"]
    assert not isinstance(got_a, BaseException), got_a
    assert (got_a.transport, got_a.frame.attrs["transport"]) == ("druid", "druid")
    assert (b.transport, b.frame.attrs["transport"], frame_b.attrs["transport"]) == ("avatica",) * 3
    pd.testing.assert_frame_equal(got_a.frame, b.frame)
    assert not hasattr(conn, "last_transport")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_multi_million_cell_result(conn, demo_tables, duck, transport) -> None:
    vertex = demo_tables["vertex"]
    sql = (
        f"SELECT v.__time, v.enddate, v.duration, v.caseid, v.vertex_name, v.vertex_id, "
        f"v.total_occurences_by_caseid, v.order_amount_lpkr, k.ord FROM {vertex} v CROSS JOIN "
        f"(SELECT caseid AS ord FROM {demo_tables['cases']} GROUP BY caseid LIMIT 100) k"
    )
    count = int(duck(f"SELECT COUNT(*) AS n FROM ({sql})")["n"][0])
    frame = conn.query(sql, transport=transport)
    assert frame.size >= 2_000_000 and len(frame) == count
    assert frame["duration"].sum() == 100 * int(duck(f"SELECT SUM(duration) AS s FROM {vertex}")["s"][0])


def test_auto_picks_a_working_transport_and_logs_it(sandbox, connect_workgroup, caplog) -> None:
    import logging

    with (
        connect_workgroup(sandbox) as fresh,
        caplog.at_level(logging.DEBUG, logger="pm_notebook.sql"),
    ):
        frame = fresh.query('SELECT 1 AS "one"')
        name = fresh._sql().resolve("auto")
    assert name == "druid"  # the fastest in bench/bench_client.py, and it works on the sandbox
    assert frame["one"].tolist() == [1]
    assert any("'auto' chose 'druid'" in r.getMessage() for r in caplog.records)


def test_columns_lists_a_tables_schema(conn, demo_tables, duck) -> None:
    table = demo_tables["pid"] + "_vertex"
    columns = conn.columns(table)
    expected = duck(f"DESCRIBE {demo_tables['vertex']}")
    assert [c.name for c in columns] == expected["column_name"].tolist()
    assert [c.ordinal for c in columns] == list(range(1, len(columns) + 1))
    assert {c.name: c.data_type for c in columns}["duration"] == "BIGINT"


def test_wrong_secret_is_an_authentication_error(sandbox, connect_workgroup) -> None:
    with connect_workgroup(sandbox, secret="wrong-secret") as bad:
        for transport in ("druid", "avatica"):
            with pytest.raises(AuthenticationError) as info:
                bad.query("SELECT 1", transport=transport)
            assert "wrong-secret" not in str(info.value)


def test_other_workgroups_tables_are_not_visible(conn, sandbox) -> None:
    other = sandbox.workgroups["second"].project_ids[0]
    with pytest.raises(QueryError):
        conn.query(f'SELECT COUNT(*) FROM "{other}"', transport="avatica")


@pytest.mark.parametrize("bad", [[{"a": 1}], [object()], [float("nan")], [b"bytes"]])
def test_unsendable_parameter_values_are_refused_before_sending(conn, bad) -> None:
    with pytest.raises(ConfigurationError, match="Parameter 1"):
        conn.query("SELECT ? AS x", bad)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_numpy_and_timestamp_parameters_are_accepted(conn, demo_tables, duck, transport) -> None:
    import numpy as np

    some = duck(f"SELECT caseid, duration, __time FROM {demo_tables['cases']} ORDER BY caseid LIMIT 1")
    sql = f"SELECT caseid FROM {demo_tables['cases']} WHERE duration = ? AND __time = ?"
    stamp = pd.Timestamp(some["__time"][0], tz="UTC")
    frame = conn.query(sql, [np.int64(some["duration"][0]), stamp], transport=transport)
    assert frame["caseid"].tolist() == [some["caseid"][0]]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_failing_statements_do_not_leak_server_statements(conn, demo_tables, transport) -> None:
    # Druid allows 4 open statements per connection: ten failures in a row must not exhaust them.
    for _ in range(10):
        with pytest.raises(QueryError):
            conn.query(
                f"SELECT no_such_column FROM {demo_tables['cases']} WHERE caseid = ?",
                ["x"],
                transport=transport,
            )
        with pytest.raises(QueryError):
            conn.query("SELEC 1", transport=transport)
    assert conn.query("SELECT CAST(? AS BIGINT) AS v", [7], transport=transport)["v"].tolist() == [7]


@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_service_faults_are_clear_errors_and_pass(conn, sandbox, transport) -> None:
    from pm_notebook.errors import ServiceUnavailable, TransportError

    conn.query("SELECT 1 AS warm", transport=transport)
    sandbox.fault("/druid/v2/sql", status=503, times=1)
    with pytest.raises(ServiceUnavailable, match="HTTP 503"):
        conn.query("SELECT 1 AS x", transport=transport)
    sandbox.fault("/druid/v2/sql", drop=True, times=1)
    with pytest.raises(TransportError):
        conn.query("SELECT 1 AS x", transport=transport)
    sandbox.clear_faults()
    assert conn.query("SELECT 4 AS ok", transport=transport)["ok"].tolist() == [4]
