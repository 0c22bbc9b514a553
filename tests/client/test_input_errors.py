"""Careless input to the client gets a clear, specific pm_notebook error (never a bare TypeError/ValueError/
OSError), and ``to_parquet`` never leaves a partial file behind."""

from __future__ import annotations

import logging
import os

import pyarrow.parquet as pq
import pytest

import pm_notebook
from pm_notebook import ConfigurationError, frames
from pm_notebook.config import mask_jdbc_url, resolve
from pm_notebook.sql import Batch, ColumnSpec

COLUMNS = (ColumnSpec("n", "BIGINT"), ColumnSpec("s", "VARCHAR"))


@pytest.fixture
def folder(tmp_path):
    """An empty folder of its own (tmp_path also holds the client tests' working directory)."""
    path = tmp_path / "out"
    path.mkdir()
    return path


def _batch(start: int, rows: int) -> Batch:
    values = list(range(start, start + rows))
    return Batch(COLUMNS, (values, [f"r{v}" for v in values]), rows)


@pytest.mark.parametrize("bad", [123, 1.5, b"SELECT 1", None, ["SELECT 1"]])
def test_sql_that_is_not_text_names_its_type(sandbox, connect_to, bad) -> None:
    conn = connect_to(sandbox)
    for call in (conn.query, conn.query_arrow, lambda s: next(conn.query_chunks(s))):
        with pytest.raises(ConfigurationError) as info:
            call(bad)
        assert f"got {type(bad).__name__}" in str(info.value) and "must be a string" in str(info.value)
    with pytest.raises(ConfigurationError, match=f"got {type(bad).__name__}"):
        conn.to_parquet(bad, "x.parquet")


@pytest.mark.parametrize("blank", ["", "   \n\t"])
def test_blank_sql_is_called_empty(sandbox, connect_to, blank: str) -> None:
    with pytest.raises(ConfigurationError, match="SQL text is empty"):
        connect_to(sandbox).query(blank)


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1/pub", "https://[not-an-ip]:80"])
def test_malformed_ipv6_base_url(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve(url, "http://id.example.com/realms/r", "wg", "key", environ={}, use_keyring=False)
    text = str(info.value)
    assert text.startswith(f"base_url {url!r} is not a valid URL")
    assert "IPv6 address is written in brackets" in text


def test_malformed_ipv6_inside_jdbc_url() -> None:
    with pytest.raises(ConfigurationError, match="inside jdbc_url"):
        resolve(
            "http://api.example.com",
            "http://id.example.com/realms/r",
            "wg",
            "key",
            "jdbc:avatica:remote:url=http://[::1:8082/druid/v2/sql/avatica/",
            environ={},
            use_keyring=False,
        )


JDBC_WITH_PASSWORD = (
    "jdbc:avatica:remote:url=http://db.example.com:8082/druid/v2/sql/avatica/;"
    "user=wg;password=hunter2-in-url;avatica_password=also-hidden;serialization=JSON"
)


def test_password_in_jdbc_url_masked_in_repr_and_debug_log(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="pm_notebook")
    settings = resolve(
        "http://api.example.com",
        "http://id.example.com/realms/r",
        "wg",
        "the-client-secret",
        JDBC_WITH_PASSWORD,
        environ={},
        use_keyring=False,
    )
    assert settings.jdbc_url == JDBC_WITH_PASSWORD  # the driver still gets it
    shown = [repr(settings), str(settings), caplog.text]
    conn = pm_notebook.Connection(settings)
    shown.append(repr(conn))
    conn.close()
    for text in shown:
        assert "hunter2-in-url" not in text and "also-hidden" not in text and "the-client-secret" not in text
    assert ";password=***;" in repr(settings) and ";serialization=JSON" in repr(settings)
    assert "settings resolved" in caplog.text


def test_bad_jdbc_url_error_masks_its_password() -> None:
    bad = JDBC_WITH_PASSWORD.replace("jdbc:avatica:remote:", "jdbc:other:")
    with pytest.raises(ConfigurationError) as info:
        resolve("http://a.example.com", "http://i.example.com/realms/r", "wg", "k", bad, environ={})
    assert "hunter2-in-url" not in str(info.value) and "also-hidden" not in str(info.value)


def test_mask_jdbc_url_leaves_plain_urls_alone() -> None:
    plain = "jdbc:avatica:remote:url=http://h:8082/druid/v2/sql/avatica/;user=wg;serialization=JSON"
    assert mask_jdbc_url(plain) == plain
    assert mask_jdbc_url("jdbc:x:;truststore_password=abc") == "jdbc:x:;truststore_password=***"


def test_to_parquet_onto_a_directory_or_missing_folder(sandbox, connect_to, folder) -> None:
    conn = connect_to(sandbox)
    with pytest.raises(ConfigurationError, match="is a directory"):
        conn.to_parquet("SELECT 1 AS x", folder)
    with pytest.raises(ConfigurationError, match="does not exist"):
        conn.to_parquet("SELECT 1 AS x", folder / "no" / "such" / "folder" / "x.parquet")
    with pytest.raises(ConfigurationError, match="file path"):
        conn.to_parquet("SELECT 1 AS x", 42)
    assert sorted(os.listdir(folder)) == []


def test_to_parquet_writes_whole_file_through_the_sandbox(sandbox, connect_to, folder) -> None:
    conn = connect_to(sandbox)
    target = folder / "out.parquet"
    rows = conn.to_parquet("SELECT 7 AS x", target, transport="druid")
    assert rows == 1 and pq.read_table(target).column("x").to_pylist() == [7]
    assert os.listdir(folder) == ["out.parquet"]  # no temporary file left


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
@pytest.mark.parametrize("existing", [False, True])
def test_write_parquet_failing_midway_leaves_target_as_it_was(folder, failure, existing: bool) -> None:
    target = folder / "result.parquet"
    if existing:
        frames.write_parquet(COLUMNS, [_batch(0, 3)], target)
    before = target.read_bytes() if existing else None

    def batches():
        yield _batch(0, 5)
        yield _batch(5, 5)
        raise failure("midway")

    with pytest.raises(failure):
        frames.write_parquet(COLUMNS, batches(), target, chunk_rows=5)
    assert os.listdir(folder) == (["result.parquet"] if existing else [])
    if existing:
        assert target.read_bytes() == before


def test_write_parquet_replaces_an_existing_file_keeping_its_mode(folder) -> None:
    target = folder / "result.parquet"
    frames.write_parquet(COLUMNS, [_batch(0, 2)], target)
    os.chmod(target, 0o640)
    assert frames.write_parquet(COLUMNS, [_batch(0, 4), _batch(4, 4)], target, chunk_rows=3) == 8
    assert pq.read_table(target).column("n").to_pylist() == list(range(8))
    assert os.stat(target).st_mode & 0o777 == 0o640
