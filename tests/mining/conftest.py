"""Fixtures for the process-mining answers: a connection to the demo workgroup and, for expected values,
the same project's raw tables pulled from the in-process store (``sandbox_store``) into pandas."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest

PROJECT = "Purchase to Pay"


@pytest.fixture(scope="module")
def conn(sandbox, connect_workgroup):
    """A pm_notebook connection to the demo workgroup, shared by a test module."""
    with connect_workgroup(sandbox) as connection:
        yield connection


@pytest.fixture(scope="module")
def log(conn):
    return conn.mining(PROJECT)


@dataclass
class Raw:
    """The project's tables as plain pandas frames (strings as ``str``, times as UTC timestamps)."""

    pid: str
    cases: pd.DataFrame
    vertex: pd.DataFrame
    edge: pd.DataFrame
    excluded: set[str]
    variant_names: dict[str, str]
    completed: set[str] | None  # case_version keys of the completion lookup, when the project has one

    def current(self) -> set[str]:
        """Case ids left once the excluded cases are taken out (the default of a ProcessLog)."""
        return set(self.cases.loc[~self.cases["case_version"].isin(self.excluded), "caseid"])


def _frame(db, sql: str) -> pd.DataFrame:
    frame = db.sql(sql).df()
    for col in frame.columns:
        stringy = isinstance(frame[col].dtype, pd.CategoricalDtype) or frame[col].dtype == object
        if stringy and col != "distinct_vertices" and not col.startswith("all_"):  # lists stay lists
            frame[col] = frame[col].astype(object).where(frame[col].notna(), None)
            frame[col] = frame[col].map(lambda v: v if v is None else str(v))
        if col == "__time":
            frame[col] = pd.to_datetime(frame[col]).dt.tz_localize("UTC")
    return frame


@pytest.fixture(scope="session")
def raw(sandbox, sandbox_store) -> Raw:
    demo = sandbox_store.workgroup(sandbox.workgroups["demo"].client_id)
    project = next(p for p in demo.projects if p.name == PROJECT)
    db = sandbox_store.database(demo.id).cursor()
    pid = project.id
    try:
        cases = _frame(db, f'SELECT * FROM druid."{pid}"')
        vertex = _frame(db, f'SELECT * FROM druid."{pid}_vertex"')
        edge = _frame(db, f'SELECT * FROM druid."{pid}_edge"')
        excluded = set(_frame(db, f'SELECT k FROM lookup."{pid}_excluded_cases"')["k"])
        names = _frame(db, f'SELECT k, v FROM lookup."{pid}_variant_name"')
        completed = None
        if f"{pid}_cases_is_completed" in project.lookups:
            done = _frame(db, f'SELECT k, v FROM lookup."{pid}_cases_is_completed"')
            completed = set(done.loc[done["v"] == "true", "k"])
    finally:
        db.close()
    return Raw(pid, cases, vertex, edge, excluded, dict(zip(names["k"], names["v"], strict=True)), completed)


def ms(value) -> pd.Timedelta:
    """A millisecond count as a Timedelta (how the answers carry durations)."""
    return pd.Timedelta(milliseconds=float(value))


def quantile_bounds(values, q: float) -> tuple[pd.Timedelta, pd.Timedelta]:
    """The interval an exact or sketch quantile of *values* (ms) must fall in: between the lower and the
    higher order statistic around rank q·(n−1), widened by 1 % for Druid's sketches — and, with
    PM_TEST_DRUID=1 (the answers computed by a real Druid), by the sketch's rank error too (about 1.7 % of n
    for Druid's k = 128; 2 % and one rank here), which varies from run to run."""
    import os

    import numpy as np

    arr = np.sort(np.asarray(values, dtype="float64"))
    eps = 0.02 + 1 / len(arr) if os.environ.get("PM_TEST_DRUID") == "1" else 0.0
    lo = np.quantile(arr, max(q - eps, 0.0), method="lower")
    hi = np.quantile(arr, min(q + eps, 1.0), method="higher")
    return ms(lo * 0.99), ms(hi * 1.01)


def same_handovers(parts: pd.DataFrame, whole: pd.DataFrame) -> pd.DataFrame:
    """Check that handovers() answered in parts adds up to the answer of one window: the same pairs, counts
    and cases, mean waits within a millisecond; returns the two merged (``_whole`` suffixes)."""
    key = ["from_resource", "to_resource"]
    merged = parts.merge(whole, on=key, how="outer", suffixes=("", "_whole"), indicator=True)
    assert (merged["_merge"] == "both").all()
    assert (merged["handovers"] == merged["handovers_whole"]).all()
    assert (merged["cases"] == merged["cases_whole"]).all()
    assert ((merged["mean_wait"] - merged["mean_wait_whole"]).abs() <= pd.Timedelta(milliseconds=1)).all()
    return merged
