"""The stand-in's Druid SQL corpus on a real Druid 33 and on the stand-in: the same rows, or the same
refusal."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from _compare import differences

from pm_notebook.errors import QueryError

HERE = Path(__file__).resolve().parent


def _corpus():
    spec = importlib.util.spec_from_file_location(
        "druid_corpus", HERE.parent / "sandbox_sql" / "druid_corpus.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CORPUS = _corpus()


@pytest.fixture(scope="module")
def fmt(sandbox):
    pid = sandbox.workgroups["demo"].project_ids[0]

    def fill(sql: str) -> str:
        return sql.format(
            c=f'"{pid}"',
            v=f'"{pid}_vertex"',
            e=f'"{pid}_edge"',
            vn=f"{pid}_variant_name",
            ex=f"{pid}_excluded_cases",
            pid=pid,
        )

    return fill


@pytest.mark.parametrize("sql", [q for _, q in CORPUS.VALID], ids=[n for n, _ in CORPUS.VALID])
def test_same_rows(standin_conn, druid_conn, fmt, sql):
    statement = fmt(sql)
    ours = standin_conn.query(statement, transport="druid")
    theirs = druid_conn.query(statement, transport="druid")
    assert differences(statement, ours, theirs) == []


@pytest.mark.parametrize("sql", [q for _, q in CORPUS.REFUSED], ids=[n for n, _ in CORPUS.REFUSED])
def test_same_refusal(standin_conn, druid_conn, fmt, sql):
    statement = fmt(sql)
    with pytest.raises(QueryError) as theirs:
        druid_conn.query(statement, transport="druid")
    with pytest.raises(QueryError) as ours:
        standin_conn.query(statement, transport="druid")
    assert type(ours.value) is type(theirs.value)
