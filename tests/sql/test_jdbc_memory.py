"""The JDBC transport's chunked, column-wise reading: small chunks give the same frames as the JVM-free
transport, the Java side holds one chunk at most, and every chunk lives on in memory Python owns."""

from __future__ import annotations

import gc

import pandas as pd
import pyarrow as pa
import pytest

from pm_notebook.sql import Target, jdbc, make_transport

pytestmark = pytest.mark.jdbc


def every_type_sql(vertex: str) -> str:
    """All the kinds the Java reader has (with NULLs, empty and non-ASCII text, arrays with NULL items)."""
    return (
        "SELECT __time, CAST(__time AS DATE) AS d, vertex_name || ' é€😀' AS u, '' AS e, duration, "
        "duration > 1000 AS b, "
        "CASE WHEN MOD(duration, 3) = 0 THEN NULL ELSE duration > 5 END AS bn, "
        "CASE WHEN MOD(duration, 4) = 0 THEN NULL ELSE CAST(duration AS DOUBLE) / 7 END AS x, "
        "CASE WHEN MOD(duration, 5) = 0 THEN NULL ELSE vertex_name END AS s, "
        "CASE WHEN MOD(duration, 6) = 0 THEN NULL ELSE __time END AS tn, "
        "CASE WHEN MOD(duration, 2) = 0 THEN NULL ELSE CAST(__time AS DATE) END AS dn, "
        "CASE WHEN MOD(duration, 7) = 0 THEN NULL ELSE ARRAY[vertex_name, NULL, 'ü'] END AS arr "
        f"FROM {vertex} ORDER BY __time LIMIT 120"
    )


@pytest.fixture
def small_batches(conn):
    saved = conn.sql_batch_rows
    conn.sql_batch_rows = 7
    yield conn
    conn.sql_batch_rows = saved


def test_small_chunks_give_the_same_frame_as_avatica(small_batches, demo_tables) -> None:
    sql = every_type_sql(demo_tables["vertex"])
    frame = small_batches.query(sql, transport="jdbc")
    expected = small_batches.query(sql, transport="avatica")
    assert len(frame) == 120
    nulls = frame.isna().sum()
    assert all(0 < nulls[c] < len(frame) for c in ("bn", "x", "s", "tn", "dn", "arr"))
    assert any(v is None for items in frame["arr"].dropna() for v in items)  # NULL items inside arrays
    pd.testing.assert_frame_equal(frame, expected)


@pytest.fixture
def transport(sandbox):
    demo = sandbox.workgroups["demo"]
    jdbc_transport = make_transport(
        "jdbc", Target.from_jdbc_url(sandbox.jdbc_url, demo.client_id, demo.client_secret)
    )
    yield jdbc_transport
    jdbc_transport.close()


def _table(batches) -> pa.Table:
    names = [c.name for c in batches[0].columns]
    return pa.Table.from_batches([pa.RecordBatch.from_arrays(list(b.data), names=names) for b in batches])


def test_chunks_are_bounded_in_java_and_owned_by_python(transport, demo_tables) -> None:
    import jpype

    sql = every_type_sql(demo_tables["vertex"])
    result = transport.execute(sql, batch_rows=5)
    batches, capacities = [], []
    for batch in result.batches():
        batches.append(batch)
        capacities.append(int(result._reader.capacity()))
    assert [b.num_rows for b in batches] == [5] * 24
    assert max(capacities) == 5  # the Java buffers are reused, never more than one chunk
    # Each chunk was copied out before the next one was read into the same Java buffers, and lives in memory
    # of its own: forget the reader, collect both heaps, then compare with the same rows read in one chunk.
    del result
    gc.collect()
    jpype.java.lang.System.gc()
    (whole,) = list(transport.execute(sql, batch_rows=1000).batches())
    assert whole.num_rows == 120
    assert _table(batches).equals(_table([whole]))


@pytest.mark.skipif(jdbc._MAP_PRIVATE is None, reason="anonymous private memory maps are POSIX-only")
def test_big_parts_are_memory_maps_small_parts_come_from_the_pool() -> None:
    pool = pa.default_memory_pool()
    before = pool.bytes_allocated()
    big = jdbc._allocate(jdbc.MAP_MIN_BYTES)
    assert pool.bytes_allocated() == before  # not pooled: freed to the OS with its column
    small = jdbc._allocate(100)
    assert pool.bytes_allocated() > before
    for buffer, size in ((big, jdbc.MAP_MIN_BYTES), (small, 100)):
        assert buffer.is_mutable and buffer.size >= size
        view = memoryview(buffer)
        view[size - 1] = 7
        assert buffer.to_pybytes()[size - 1] == 7
