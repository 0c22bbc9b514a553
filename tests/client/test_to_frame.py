"""REST results → DataFrames (pure)."""

from __future__ import annotations

import pytest

from pm_notebook import Column, Project, Table, Workgroup
from pm_notebook.api import to_frame


def test_records_become_rows_with_field_columns() -> None:
    frame = to_frame([Table("p", "p"), Table("p_vertex", "p"), Table("p_edge", "p", host="h", port=8082)])
    assert frame["kind"].tolist() == ["cases", "vertex", "edge"]
    assert frame.loc[2, "port"] == 8082


def test_single_record_and_extra_hidden() -> None:
    frame = to_frame(Workgroup("wg", name="Demo", extra={"x": 1}))
    assert frame.shape[0] == 1 and "extra" not in frame.columns and frame.loc[0, "name"] == "Demo"


def test_empty_list_keeps_columns_when_typed() -> None:
    assert to_frame([], Project).columns.tolist() == ["id", "name", "description", "creation_date"]
    assert to_frame([], Workgroup).columns.tolist()[-1] == "data_version"
    assert to_frame([]).empty


def test_mappings_and_bad_items() -> None:
    assert to_frame([{"a": 1}, {"a": 2}])["a"].sum() == 3
    assert to_frame([Column("c", "BIGINT", 1)]).loc[0, "data_type"] == "BIGINT"
    with pytest.raises(TypeError, match="dataclass records or mappings"):
        to_frame(["p1"])
