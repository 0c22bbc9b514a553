"""Column roles and dimensions are resolved from the columns a project really has (INFORMATION_SCHEMA)."""

from __future__ import annotations

import pytest

from pm_notebook import SchemaError
from pm_notebook._models import Project
from pm_notebook.mining import ProcessLog, Schema

SERVICE_NAMING = {  # how the real service names user columns: detail_<n>_lpkr_<slug>
    "cases": {
        "__time": "TIMESTAMP",
        "caseid": "VARCHAR",
        "duration": "BIGINT",
        "detail_3_lpkr_company_code": "VARCHAR",
    },
    "vertex": {"__time": "TIMESTAMP", "caseid": "VARCHAR", "vertex_name": "VARCHAR", "duration": "BIGINT"},
    "edge": {"caseid": "VARCHAR", "source_vertex_name": "VARCHAR", "destination_vertex_name": "VARCHAR"},
}


def _schema(columns=SERVICE_NAMING) -> Schema:
    tables = {"cases": "p", "vertex": "p_vertex", "edge": "p_edge"}
    return Schema("p", tables, columns, frozenset({"p_variant_name"}))


def test_dimension_spellings():
    s = _schema()
    assert s.dimension("cases", "company_code") == '"detail_3_lpkr_company_code"'
    assert s.dimension("cases", "Company code") == '"detail_3_lpkr_company_code"'
    sandbox_style = _schema({**SERVICE_NAMING, "cases": {"supplier_lpkr": "VARCHAR"}})
    assert sandbox_style.dimension("cases", "supplier") == '"supplier_lpkr"'
    with pytest.raises(SchemaError, match="no column for the dimension 'region'") as err:
        s.dimension("cases", "region")
    assert "detail_3_lpkr_company_code" in str(err.value)


def test_a_missing_role_names_the_table_and_the_columns_tried():
    with pytest.raises(SchemaError, match=r"'p_vertex' has no column for the 'occurrences' role") as err:
        _schema().col("vertex", "occurrences")
    assert "total_occurences_by_caseid" in str(err.value)
    assert isinstance(err.value, LookupError)


def test_an_answer_needing_a_missing_column_fails_before_querying():
    class NoQueries:
        def query(self, *a, **k):  # any SQL would be a bug: the schema check comes first
            raise AssertionError("queried")

    log = ProcessLog(NoQueries(), Project("p", "P"), schema=_schema())  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="'occurrences' role"):
        log.activities()
    with pytest.raises(SchemaError, match="'end' role"):
        log.cases_over_time()
    assert (
        _schema().lookup("_variant_name") == "p_variant_name" and _schema().lookup("_excluded_cases") is None
    )
