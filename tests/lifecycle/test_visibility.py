"""Nothing is half-visible: while a file is being ingested (held by the sandbox's ingest-hold switch just
before its tables are swapped in, so no timing is assumed), the project shows its previous state in the
listings and in SQL; once released, the new data appears whole."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from pm_notebook.errors import QueryError


def _frame(cases: int, tag: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "case": [f"{tag}{i // 3}" for i in range(3 * cases)],
            "activity": ["a", "b", "c"] * cases,
            "timestamp": pd.Timestamp("2025-01-01") + pd.to_timedelta(range(3 * cases), unit="min"),
        }
    )


def _until(check, what: str) -> None:
    deadline = time.monotonic() + 120
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def held(lc_sandbox):
    lc_sandbox.hold_ingestion(True)
    yield lc_sandbox
    lc_sandbox.hold_ingestion(False)


def test_first_file_tables_appear_only_when_complete(conn, project, held):
    f = conn.upload(project, _frame(5, "x"), wait=False)
    _until(held.ingestion_waiting, "the ingestion to reach the hold")
    assert conn.files_api.file(project, f.id).status == "PROCESSING"
    assert conn.tables(project) == []
    with pytest.raises(QueryError):
        conn.query(f'SELECT COUNT(*) FROM "{project.id}_vertex"')
    held.hold_ingestion(False)
    assert conn.files_api.wait(project, f.id, timeout=120).status == "DONE"
    assert conn.query(f'SELECT COUNT(*) AS n FROM "{project.id}_vertex"')["n"].iloc[0] == 15


def test_append_is_seen_whole_or_not_at_all(conn, project, lc_sandbox):
    conn.upload(project, _frame(4, "old"))
    lc_sandbox.hold_ingestion(True)
    try:
        f = conn.upload(project, _frame(6, "new"), wait=False)
        _until(lc_sandbox.ingestion_waiting, "the ingestion to reach the hold")
        got = conn.query(f'SELECT COUNT(*) AS n, COUNT(DISTINCT caseid) AS c FROM "{project.id}"')
        assert (got["n"].iloc[0], got["c"].iloc[0]) == (4, 4)
    finally:
        lc_sandbox.hold_ingestion(False)
    assert conn.files_api.wait(project, f.id, timeout=120).status == "DONE"
    assert conn.query(f'SELECT COUNT(*) AS n FROM "{project.id}"')["n"].iloc[0] == 10
