"""Store against the sandbox, replay with no network: the same DataFrame, dtypes and transport, on every
transport and every statement method; misses and corrupted entries are clear errors."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

import pm_notebook
from pm_notebook import CacheError, QueryError, ReplayMiss

#: the JVM transport is marked so ``-m "not jdbc"`` leaves it out (as in tests/sql)
TRANSPORTS = ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)]

#: every type the client maps (timestamp, date, string incl. non-ASCII and '', bigint, boolean, double,
#: arrays) with NULLs in each column, and a parameter
TYPED = (
    "SELECT __time, CAST(__time AS DATE) AS d, vertex_name || ' é€😀' AS u, '' AS e, duration, "
    "duration > 1000 AS b, "
    "CASE WHEN MOD(duration, 3) = 0 THEN NULL ELSE duration > 5 END AS bn, "
    "CASE WHEN MOD(duration, 4) = 0 THEN NULL ELSE CAST(duration AS DOUBLE) / 7 END AS x, "
    "CASE WHEN MOD(duration, 5) = 0 THEN NULL ELSE vertex_name END AS s, "
    "CASE WHEN MOD(duration, 6) = 0 THEN NULL ELSE __time END AS tn, "
    "CASE WHEN MOD(duration, 7) = 0 THEN NULL ELSE duration END AS n, "
    "CASE WHEN MOD(duration, 2) = 0 THEN NULL ELSE ARRAY[vertex_name, NULL, 'ü'] END AS arr "
    "FROM {vertex} WHERE duration > ? ORDER BY __time LIMIT 150"
)


def assert_same(got: pd.DataFrame, live: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, live)
    assert got.attrs == live.attrs and "transport" in got.attrs


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_typed_result_with_nulls_comes_back_identical(live, replay, vertex, transport) -> None:
    sql = TYPED.format(vertex=vertex)
    stored = live.query(sql, [0], transport=transport)
    assert stored.attrs["transport"] == transport and len(stored) > 0
    assert stored.isna().any().sum() == 6  # bn x s tn n arr: the NULLs are really there to be kept
    assert str(stored["tn"].dtype) == "datetime64[ms, UTC]" and str(stored["n"].dtype) == "Int64"
    assert str(stored["bn"].dtype) == "boolean" and str(stored["s"].dtype) == "string"
    again = replay().query(sql, [0], transport=transport)
    assert_same(again, stored)
    assert isinstance(again["arr"].dropna().iloc[0], list)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_empty_result_keeps_its_columns_and_dtypes(live, replay, vertex, transport) -> None:
    sql = TYPED.format(vertex=vertex)
    stored = live.query(sql, [10**15], transport=transport)
    assert len(stored) == 0 and len(stored.columns) == 12
    assert_same(replay().query(sql, [10**15], transport=transport), stored)


def test_every_statement_method_replays(live, replay, vertex, tmp_path) -> None:
    sql = TYPED.format(vertex=vertex)
    arrow = live.query_arrow(sql, [1])
    chunks = list(live.query_chunks(sql, [2], chunk_rows=40))
    rows = live.to_parquet(sql, tmp_path / "live.parquet", [3])
    fetched = live.fetch(sql, [4], limit=25)
    assert fetched.truncated and len(fetched.frame) == 25 and [len(c) for c in chunks] == [40, 40, 40, 30]

    r = replay()
    assert r.query_arrow(sql, [1]).equals(arrow)
    again = list(r.query_chunks(sql, [2], chunk_rows=40))
    assert len(again) == len(chunks)
    for a, b in zip(again, chunks, strict=True):
        assert_same(a, b)
    assert r.to_parquet(sql, tmp_path / "replayed.parquet", [3]) == rows
    assert pa.parquet.read_table(tmp_path / "replayed.parquet").equals(
        pa.parquet.read_table(tmp_path / "live.parquet")
    )
    got = r.fetch(sql, [4], limit=25)
    assert (got.truncated, got.transport) == (True, fetched.transport)
    assert_same(got.frame, fetched.frame)
    assert_same(r.fetch(sql, [4], limit=10).frame, fetched.frame.head(10))  # a smaller cap is served
    with pytest.raises(ReplayMiss, match="first 25 rows"):  # the stored rows stop at 25: more is a miss
        r.fetch(sql, [4], limit=50)


def test_an_empty_chunked_result_replays_as_one_empty_chunk(live, replay, vertex) -> None:
    sql = TYPED.format(vertex=vertex)
    (live_chunk,) = live.query_chunks(sql, [10**15], chunk_rows=10)
    (chunk,) = replay().query_chunks(sql, [10**15], chunk_rows=10)
    assert_same(chunk, live_chunk)


def test_only_asked_calls_are_stored_without_connection_wide_caching(
    sandbox, cache_dir, live_connection, replay, vertex
):

    sql = f"SELECT COUNT(*) AS n FROM {vertex}"
    with live_connection(sandbox, cache_dir, cache=False) as conn:
        conn.query(sql + " WHERE duration > 0")
        stored = conn.query(sql, cache=True)
    r = replay()
    assert_same(r.query(sql), stored)
    with pytest.raises(ReplayMiss):
        r.query(sql + " WHERE duration > 0")


def test_a_query_error_is_replayed_as_the_same_error(live, replay, vertex) -> None:
    sql = f"SELECT caseid,\n       durration\nFROM {vertex}"
    with pytest.raises(QueryError) as first:
        live.query(sql)
    with pytest.raises(QueryError) as again:
        replay().query(sql)
    assert type(again.value) is QueryError
    assert str(again.value) == str(first.value) and again.value.position == first.value.position
    assert again.value.server_message == first.value.server_message


def test_parameters_differ_by_type_and_the_miss_shows_both(live, replay, vertex) -> None:
    sql = f"SELECT COUNT(*) AS n FROM {vertex} WHERE duration > ?"
    live.query(sql, [1])
    r = replay()
    r.query(sql, [1])
    for other, shown in ((1.0, "1.0"), ("1", "'1'"), (True, "True"), (2, "2")):
        with pytest.raises(ReplayMiss) as miss:
            r.query(sql, [other])
        text = str(miss.value)
        assert "other parameters" in text and f"asked:  [{shown}]" in text and "stored: [1]" in text
        assert "PM_CACHE=1" in text  # what to do


def test_other_sql_shows_the_closest_stored_statement(live, replay, vertex) -> None:
    live.query(f"SELECT vertex_name, COUNT(*) AS n FROM {vertex} GROUP BY 1 ORDER BY 1 LIMIT 5")
    live.query(f"SELECT caseid FROM {vertex} LIMIT 1")
    with pytest.raises(ReplayMiss) as miss:
        replay().query(f"SELECT vertex_name, COUNT(*) AS n FROM {vertex} GROUP BY 1 ORDER BY 2 LIMIT 5")
    text = str(miss.value)
    assert "not stored" in text and "closest stored SQL" in text
    assert f"stored: …{vertex} GROUP BY 1 ORDER BY [1]" in text  # six words of context, then the change
    assert f"asked:  …{vertex} GROUP BY 1 ORDER BY [2]" in text


def test_a_miss_names_the_transport_it_was_stored_for(live, replay, vertex) -> None:
    sql = f"SELECT COUNT(*) AS n FROM {vertex}"
    live.query(sql, transport="druid")
    r = replay()
    assert r.query(sql).attrs["transport"] == "druid"  # "auto" accepts whatever transport answered
    with pytest.raises(ReplayMiss, match="transport 'avatica'"):
        r.query(sql, transport="avatica")


def test_an_empty_or_missing_cache_folder_is_a_clear_miss(replay, cache_dir) -> None:
    with pytest.raises(ReplayMiss, match="no result is stored .* missing or empty"):
        replay().query("SELECT 1")
    assert not cache_dir.exists()  # replay never creates the folder


def _entry_files(cache_dir, sql: str):
    for path in cache_dir.glob("*.json"):
        if path.name.startswith("rest-"):
            continue
        entry = json.loads(path.read_text())
        if entry["sql"] == sql:
            return path, cache_dir / entry["data"]
    raise AssertionError(f"no entry for {sql!r}")


@pytest.mark.parametrize("damage", ["flip a byte", "cut short", "data file lost", "garbled description"])
def test_a_corrupted_or_partial_entry_is_reported(live, replay, vertex, cache_dir, damage) -> None:
    sql = f"SELECT caseid, duration FROM {vertex} ORDER BY __time LIMIT 50"
    live.query(sql)
    description, data = _entry_files(cache_dir, sql)
    if damage == "flip a byte":
        raw = bytearray(data.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        data.write_bytes(bytes(raw))
    elif damage == "cut short":
        data.write_bytes(data.read_bytes()[:-100])
    elif damage == "data file lost":
        data.unlink()
    else:
        description.write_text(description.read_text()[:40])
    with pytest.raises(CacheError) as err:
        replay().query(sql)
    text = str(err.value)
    assert "Delete" in text and ("corrupted or partial" in text or "lost" in text or "unreadable" in text)


def test_storing_again_replaces_the_entry_atomically(live, replay, vertex, cache_dir) -> None:
    sql = f"SELECT caseid FROM {vertex} ORDER BY __time LIMIT 3"
    live.query(sql)
    live.query(sql)
    assert len(list(cache_dir.glob("*.parquet"))) == 1  # the previous rows are not left behind
    assert not list(cache_dir.glob(".*partial"))
    assert_same(replay().query(sql), live.query(sql))


def test_rest_listings_replay(live, replay) -> None:
    projects = live.projects()
    tables = {p.id: live.tables(p) for p in projects}
    one = live.project(projects[0].id)
    workgroup = live.workgroup()
    with pytest.raises(pm_notebook.NotFound) as live_404:
        live.tables("no-such-project")
    r = replay()
    assert r.projects() == projects and r.project(projects[0]) == one
    assert {p.id: r.tables(p.id) for p in projects} == tables
    assert r.workgroup() == workgroup and r.workgroup().extra == workgroup.extra
    with pytest.raises(pm_notebook.NotFound) as replayed_404:  # a 404 is an answer: it replays as one
        r.tables("no-such-project")
    assert str(replayed_404.value) == str(live_404.value)
    with pytest.raises(ReplayMiss) as miss:
        r.tables("other-project")
    text = str(miss.value)
    assert (
        "the answer to tables of project other-project (GET /datasources/other-project) is not stored" in text
    )
    assert "Stored for that route: /datasources/" in text and f"/datasources/{projects[0].id}" in text
    assert "PM_CACHE=1" in text


def test_a_corrupted_rest_answer_is_reported(live, replay, cache_dir) -> None:
    live.workgroup()
    (stored,) = [p for p in cache_dir.glob("rest-*.json") if json.loads(p.read_text())["call"] == "GET"]
    raw = json.loads(stored.read_text())
    raw["value"]["body"] = raw["value"]["body"].replace("name", "nom", 1)  # edited after it was stored
    stored.write_text(json.dumps(raw))
    with pytest.raises(CacheError, match=r"stored answer to workgroup info \(GET /workgroups/.*corrupted"):
        replay().workgroup()


def test_replay_resolves_auto_to_the_transport_that_served_it(live, replay, vertex) -> None:
    live.sql_transport = "avatica"  # what "auto" would have probed, made deterministic for the test
    live.query(f"SELECT COUNT(*) AS n FROM {vertex}")
    live.sql_transport = "auto"
    r = replay()
    with pytest.raises(ReplayMiss, match="no statement run with transport 'auto'"):
        r.resolve_transport()
    live.query(f"SELECT COUNT(*) AS n FROM {vertex}")
    served = live.resolve_transport()
    assert r.resolve_transport() == served and r.resolve_transport("jdbc") == "jdbc"
    with pytest.raises(pm_notebook.ConfigurationError, match="Unknown SQL transport"):
        r.resolve_transport("odbc")


def test_columns_and_other_helpers_replay_through_the_same_path(live, replay, vertex) -> None:
    table = vertex.strip('"')
    assert replay is not None
    columns = live.columns(table)
    assert replay().columns(table) == columns


def test_the_replay_connection_names_the_recorded_service_without_a_secret(live, replay, sandbox) -> None:
    live.projects()
    r = replay()
    assert r.settings.base_url == sandbox.base_url and r.settings.client_id == live.settings.client_id
    assert r.settings.client_secret.reveal() == ""
    assert r.replaying and not r.caching and "replaying" in repr(r)
    with pytest.raises(pm_notebook.ConfigurationError, match="cannot go online"):
        r.configure_cache(replay=False)


def test_the_cache_folder_holds_no_secret_and_no_token(live, sandbox, cache_dir, vertex) -> None:
    live.projects()
    live.workgroup()
    live.query(f"SELECT caseid FROM {vertex} LIMIT 2")
    with pytest.raises(QueryError):
        live.query("SELECT nope FROM nowhere")
    token = live.tokens.current.access_token.reveal()
    secret = sandbox.workgroups["demo"].client_secret
    files = list(cache_dir.iterdir())
    assert len(files) >= 6
    for path in files:
        data = path.read_bytes()
        assert secret.encode() not in data and token.encode() not in data and b"eyJ" not in data, path.name


def test_parameters_keep_their_sql_type_in_the_key() -> None:
    """Plain values and classified parameters (a Druid type + canonical value, as the SQL layer may hand
    them over) are both tagged with their SQL type, so equal-looking values of other types never collide."""
    from dataclasses import dataclass

    from pm_notebook._cache import ResultCache, tag_params

    @dataclass(frozen=True)
    class Classified:  # the shape of a classified parameter: its Druid type and canonical value
        type: str
        value: object

    plain = tag_params([1, 1.0, "1", True, None])
    assert plain == [["BIGINT", 1], ["DOUBLE", "1.0"], ["VARCHAR", "1"], ["BOOLEAN", True], ["NULL", None]]
    classified = [Classified("BIGINT", 1), Classified("DOUBLE", 1.0), Classified("VARCHAR", "1")]
    assert tag_params(classified) == plain[:3]
    keys = {ResultCache.key("SELECT ?", tag_params([v]), "auto") for v in (1, 1.0, "1", True)}
    assert len(keys) == 4
