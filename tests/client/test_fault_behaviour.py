"""The client under faults injected by the sandbox's switches, over real HTTP: 5xx bursts, 429 with
Retry-After, connections dropped mid-answer, an identity-provider outage, Avatica connection and statement
expiry, a sandbox restart between two fetches, slow answers. Each ends in a bounded retry or a clear
pm_notebook error; a large result is either whole (compared with a fault-free run) or an error — never
silently truncated or duplicated."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from pm_notebook import PMError, QueryError, RequestTimeout, ServiceUnavailable, TransportError
from pm_sandbox import SandboxError

FAST = {"backoff_factor": 0.05, "backoff_max": 1.0}
SQL_PREFIX = {"druid": "/druid/v2/sql/", "avatica": "/druid/v2/sql/avatica/"}
TRANSPORTS = ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)]
LARGE_ROWS = 60_000  # many Avatica frames (at most 5,000 rows each) and many Druid chunks


def large_sql(sb) -> str:
    """A deterministic, ordered result of LARGE_ROWS rows with a unique key per row."""
    pid = sb.workgroups["demo"].project_ids[0]
    return (
        f'SELECT v.vertex_id, v.caseid AS vcase, c.caseid AS ccase, v.duration FROM "{pid}_vertex" v '
        f'CROSS JOIN "{pid}" c GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3 LIMIT {LARGE_ROWS}'
    )


def assert_prefix_without_duplicates(chunks: list[pd.DataFrame], expected: pd.DataFrame) -> None:
    """Rows received before an error are exactly the first rows of the full result, each once."""
    got = pd.concat(chunks, ignore_index=True) if chunks else expected.iloc[:0]
    assert len(got) < len(expected)
    pd.testing.assert_frame_equal(got, expected.iloc[: len(got)].reset_index(drop=True), check_dtype=False)


def chunked(conn, sql: str, transport: str, on_first=None) -> tuple[list[pd.DataFrame], PMError | None]:
    """Read *sql* in chunks of ~5,000 rows (small transport batches, so the rows really arrive in pieces);
    call *on_first* after the first chunk; return the chunks and the error that stopped them, if any."""
    conn.sql_batch_rows = 5_000
    chunks: list[pd.DataFrame] = []
    try:
        for chunk in conn.query_chunks(sql, chunk_rows=5_000, transport=transport):
            chunks.append(chunk)
            if len(chunks) == 1 and on_first is not None:
                on_first()
    except PMError as exc:
        return chunks, exc
    return chunks, None


@pytest.fixture(scope="module")
def expected_large(sandbox, connect_workgroup) -> pd.DataFrame:
    """The large result, fetched once without faults (druid), for comparison."""
    with connect_workgroup(sandbox) as conn:
        frame = conn.query(large_sql(sandbox), transport="druid")
    assert len(frame) == LARGE_ROWS and not frame.duplicated(["vertex_id", "vcase", "ccase"]).any()
    return frame


# --- 5xx bursts and 429 ---------------------------------------------------------------------------------


def test_rest_5xx_burst_longer_than_the_retries_is_a_clear_error_then_recovers(sandbox, connect_to, counts):
    conn = connect_to(sandbox, retries=2, **FAST)
    conn.rest.project_ids()
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", status=502, times=10)
    with pytest.raises(ServiceUnavailable, match="502"):
        conn.rest.project_ids()
    assert counts(sandbox, "GET /pub/projects") == 3  # bounded: 1 + 2 retries
    sandbox.clear_faults()
    assert conn.rest.project_ids()


def test_rest_500_is_not_retried(sandbox, connect_to, counts):
    conn = connect_to(sandbox, retries=3, **FAST)
    conn.rest.project_ids()
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", status=500, times=1)
    with pytest.raises(ServiceUnavailable, match="500"):
        conn.rest.project_ids()
    assert counts(sandbox, "GET /pub/projects") == 1


def test_429_with_a_huge_retry_after_waits_only_backoff_max(sandbox, connect_to):
    conn = connect_to(sandbox, retries=2, backoff_factor=0.0, backoff_max=0.5)
    conn.rest.project_ids()
    sandbox.fault("/pub/projects", status=429, times=1, retry_after=3600)
    start = time.monotonic()
    assert conn.rest.project_ids()
    assert time.monotonic() - start < 120  # a generous bound: an honoured hour would fail it


@pytest.mark.parametrize("status", [429, 503, 500])
@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_sql_5xx_or_429_is_a_clear_error_then_the_next_query_works(sandbox, connect_to, transport, status):
    conn = connect_to(sandbox, retries=2, **FAST)
    assert conn.query("SELECT 1 AS x", transport=transport)["x"].tolist() == [1]
    sandbox.fault(SQL_PREFIX[transport], status=status, times=1, retry_after=1 if status == 429 else None)
    with pytest.raises(PMError) as info:
        conn.query("SELECT 2 AS x", transport=transport)
    if status != 500:  # a 500 from the Druid SQL API is an engine failure: its body's text is the message
        assert isinstance(info.value, ServiceUnavailable) and str(status) in str(info.value)
    assert conn.query("SELECT 3 AS x", transport=transport)["x"].tolist() == [3]


# --- dropped connections ----------------------------------------------------------------------------------


def test_rest_body_cut_midway_is_a_transport_error(sandbox, connect_to):
    conn = connect_to(sandbox, retries=2, **FAST)
    conn.rest.project_ids()
    sandbox.fault("/pub/projects", drop_after_bytes=5, times=5)
    with pytest.raises(TransportError):
        conn.rest.project_ids()
    sandbox.clear_faults()
    assert conn.rest.project_ids()


@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_large_result_cut_mid_answer_is_an_error_never_a_short_frame(
    sandbox, connect_to, expected_large, transport
):
    conn = connect_to(sandbox)
    sandbox.fault(SQL_PREFIX[transport], drop_after_bytes=300_000, times=1 if transport == "druid" else 50)
    with pytest.raises(PMError) as info:
        conn.query(large_sql(sandbox), transport=transport)
    assert isinstance(info.value, (QueryError, TransportError)), info.value
    sandbox.clear_faults()
    pd.testing.assert_frame_equal(conn.query(large_sql(sandbox), transport=transport), expected_large)


def test_avatica_chunks_cut_between_fetches_stop_with_an_error_after_a_clean_prefix(
    sandbox, connect_to, expected_large
):
    conn = connect_to(sandbox)

    def cut_what_follows() -> None:  # the statement is open on the server: its next fetches break
        sandbox.fault(SQL_PREFIX["avatica"], drop_after_bytes=1_000, times=50)

    chunks, error = chunked(conn, large_sql(sandbox), "avatica", on_first=cut_what_follows)
    sandbox.clear_faults()
    assert isinstance(error, (QueryError, TransportError)), error
    assert chunks, "the first chunk arrived before the fault was armed"
    assert_prefix_without_duplicates(chunks, expected_large)


def test_druid_chunks_cut_mid_stream_stop_with_an_error_after_a_clean_prefix(
    sandbox, connect_to, expected_large
):
    conn = connect_to(sandbox)
    whole = len(expected_large.to_json(orient="values"))  # about the size of the arrayLines answer
    sandbox.fault(SQL_PREFIX["druid"], drop_after_bytes=whole // 2, times=1)
    chunks, error = chunked(conn, large_sql(sandbox), "druid")
    assert isinstance(error, QueryError) and "broke off" in str(error) or "ended early" in str(error), error
    assert_prefix_without_duplicates(chunks, expected_large)


@pytest.mark.jdbc
def test_jdbc_large_result_cut_mid_answer_is_an_error(sandbox, connect_to, expected_large):
    conn = connect_to(sandbox)
    conn.query("SELECT 1 AS warm", transport="jdbc")
    sandbox.fault(SQL_PREFIX["avatica"], drop_after_bytes=1_000, times=1_000)
    with pytest.raises(PMError):
        conn.query(large_sql(sandbox), transport="jdbc")
    sandbox.clear_faults()
    got = conn.query(large_sql(sandbox), transport="jdbc")
    pd.testing.assert_frame_equal(got, expected_large, check_dtype=False)


# --- the identity provider ---------------------------------------------------------------------------------


def test_token_endpoint_outage_is_a_clear_error_and_never_a_retry_storm(sandbox, connect_to, counts):
    conn = connect_to(sandbox, retries=3, **FAST)
    sandbox.reset_stats()
    sandbox.fault(counts.token_path(sandbox), status=503, times=100)
    for _ in range(3):
        with pytest.raises(ServiceUnavailable) as info:
            conn.projects()
        assert "token" in str(info.value).lower()
    assert counts.tokens(sandbox) == 3  # one POST per call: a token request is never re-posted
    sandbox.clear_faults()
    assert conn.projects()


def test_slow_token_endpoint_times_out_clearly(sandbox, connect_to, counts):
    conn = connect_to(sandbox, retries=0, timeout=(5.0, 1.0))
    sandbox.fault(counts.token_path(sandbox), status=None, delay=4.0, times=1)
    with pytest.raises(RequestTimeout) as info:
        conn.workgroup()
    assert counts.token_path(sandbox) in str(info.value) and "within 1 s" in str(info.value)


# --- Avatica expiry and a sandbox restart ------------------------------------------------------------

EXPIRING = ["--sql-connection-idle-timeout", "1", "--sql-statement-idle-timeout", "1"]


def _let_server_expire(seconds: float = 2.5) -> None:
    """Wait out the sandbox's 1 s idle timeouts (and its 1 s sweep period); waiting longer changes nothing."""
    time.sleep(seconds)


def test_avatica_connection_expiry_between_queries_reconnects(sandbox_factory, connect_to):
    sb = sandbox_factory(cases=20, extra_args=EXPIRING)
    conn = connect_to(sb)
    assert conn.query("SELECT 1 AS x", transport="avatica")["x"].tolist() == [1]
    _let_server_expire()
    assert conn.query("SELECT 2 AS x", transport="avatica")["x"].tolist() == [2]
    assert conn.query("SELECT ? AS x", [3], transport="avatica")["x"].tolist() == [3]


@pytest.mark.slow
@pytest.mark.parametrize(
    "expiring",
    [EXPIRING, ["--sql-connection-idle-timeout", "600", "--sql-statement-idle-timeout", "1"]],
    ids=["connection", "statement"],
)
def test_avatica_expiry_mid_result_is_a_clear_error_never_a_short_result(
    sandbox_factory, connect_to, expiring
):
    sb = sandbox_factory(cases=300, extra_args=expiring)
    conn = connect_to(sb)
    other = connect_to(sb)
    expected = conn.query(large_sql(sb), transport="druid")

    def expire() -> None:
        _let_server_expire()
        # the sandbox sweeps idle connections when it handles a request (an inline fetch does not sweep)
        assert other.query("SELECT 1 AS x", transport="avatica")["x"].tolist() == [1]

    chunks, error = chunked(conn, large_sql(sb), "avatica", on_first=expire)
    assert isinstance(error, QueryError) and "run the query again" in str(error).lower(), error
    assert_prefix_without_duplicates(chunks, expected)
    assert len(conn.query(large_sql(sb), transport="avatica")) == LARGE_ROWS  # and the next query works


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_sandbox_restart_between_two_fetches(sandbox_factory, connect_to, transport):
    sb = sandbox_factory(cases=300)
    conn = connect_to(sb, retries=1, **FAST)
    expected = conn.query(large_sql(sb), transport="druid")
    restarted = []

    def restart() -> None:
        sb.stop()
        restarted.append(_restart_on_same_ports(sandbox_factory, sb))

    chunks, error = chunked(conn, large_sql(sb), transport, on_first=restart)
    if error is None:  # the whole answer had already arrived (Druid streams it in one response)
        assert transport == "druid"
        pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), expected)
    else:
        assert_prefix_without_duplicates(chunks, expected)
    if restarted[0] is not None:  # same seed: same workgroups and secrets, so the connection carries on
        assert len(conn.query(large_sql(sb), transport=transport)) == LARGE_ROWS


def _restart_on_same_ports(sandbox_factory, sb):
    """A new sandbox on the stopped one's ports (None when the OS has not released them yet)."""
    try:
        return sandbox_factory(port=sb.port, sql_port=sb.sql_port, cases=300)
    except SandboxError:
        return None


# --- slow answers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["druid", "avatica"])
def test_slow_sql_answer_hits_the_transport_timeout(sandbox, transport):
    from pm_notebook.sql import Target, make_transport

    wg = sandbox.workgroups["demo"]
    target = Target.from_jdbc_url(sandbox.jdbc_url, wg.client_id, wg.client_secret, timeout=1.0)
    sql = make_transport(transport, target)
    try:
        sandbox.fault(SQL_PREFIX[transport], status=None, delay=4.0, times=5)
        with pytest.raises(RequestTimeout) as info:
            result = sql.execute("SELECT 1 AS x")
            list(result.batches())
        assert "within 1 s" in str(info.value) and sandbox.sql_url in str(info.value)
    finally:
        sandbox.clear_faults()
        sql.close()


def test_slow_rest_answer_retried_then_a_clear_timeout(sandbox, connect_to, counts):
    conn = connect_to(sandbox, retries=1, timeout=(5.0, 1.0), **FAST)
    conn.rest.project_ids()
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", status=None, delay=4.0, times=2)
    with pytest.raises(RequestTimeout, match="within 1 s"):
        conn.rest.project_ids()
    assert counts(sandbox, "GET /pub/projects") == 2  # a GET read timeout is retried once, then given up
