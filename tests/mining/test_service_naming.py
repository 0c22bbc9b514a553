"""Answers on a project named as the real service names its columns (``detail_<n>_lpkr_<slug>``), that keeps
outdated case versions (the ``<pid>`` lookup): dimensions by the user's names, each case counted once."""

from __future__ import annotations

import pandas as pd
import pytest

from .conftest import _frame, quantile_bounds


@pytest.fixture(scope="module")
def second(sandbox, connect_workgroup):
    with connect_workgroup(sandbox, "second") as conn:
        yield conn


@pytest.fixture(scope="module")
def parcel(second):
    return next(p for p in second.projects() if p.name.startswith("Parcel Delivery"))


@pytest.fixture(scope="module")
def tables(sandbox, sandbox_store, parcel):
    db = sandbox_store.database(sandbox.workgroups["second"].client_id).cursor()
    try:
        cases = _frame(db, f'SELECT * FROM druid."{parcel.id}"')
        vertex = _frame(db, f'SELECT * FROM druid."{parcel.id}_vertex"')
        outdated = set(_frame(db, f'SELECT k FROM lookup."{parcel.id}"')["k"])
        excluded = set(_frame(db, f'SELECT k FROM lookup."{parcel.id}_excluded_cases"')["k"])
    finally:
        db.close()
    assert outdated, "the project keeps outdated case versions"
    current = cases[~cases["case_version"].isin(outdated | excluded)]
    return current, vertex


def test_columns_have_the_service_naming(second, parcel):
    names = second.column_names(parcel)
    assert names["Destination"] == "detail_7_lpkr_destination"
    assert all(col.startswith("detail_") and "_lpkr_" in col for col in names.values())


def test_each_case_counted_once_in_its_current_version(second, parcel, tables):
    current, vertex = tables
    assert current["caseid"].is_unique
    row = second.mining(parcel).summary().iloc[0]
    assert row["cases"] == len(current)
    assert row["events"] == vertex["caseid"].isin(set(current["caseid"])).sum()
    assert row["variants"] == current["processkey"].nunique()


def test_throughput_by_a_dimension_named_as_the_user_named_it(second, parcel, tables):
    current, _ = tables
    by = second.mining(parcel).throughput(by="Destination", quantiles=(0.5,))
    expected = current.groupby("detail_7_lpkr_destination")["duration"]
    assert dict(zip(by["Destination"], by["cases"], strict=True)) == expected.size().to_dict()
    for r in by.itertuples(index=False):
        values = expected.get_group(r.Destination)
        assert r.max == pd.Timedelta(milliseconds=float(values.max()))
        lo, hi = quantile_bounds(values, 0.5)
        assert lo <= r.p50 <= hi
    assert "detail_7_lpkr_destination" in by.attrs["sql"]
