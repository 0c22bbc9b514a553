"""The sandbox's one type table: the INFORMATION_SCHEMA SQL derived from it names every DuckDB type as the
Python mapping does, with the JDBC id Druid reports for that name."""

import duckdb
import pytest

from pm_sandbox.sql.types import TYPES, by_druid, duckdb_to_druid, duckdb_to_druid_sql, jdbc_type_sql

DUCKDB_TYPES = {
    "BIGINT": "BIGINT",
    "INTEGER": "BIGINT",
    "HUGEINT": "BIGINT",
    "UTINYINT": "BIGINT",  # Druid stores every integer as a LONG, unsigned ones too
    "UBIGINT": "BIGINT",
    "DOUBLE": "DOUBLE",
    "DECIMAL(18,3)": "DOUBLE",
    "FLOAT": "FLOAT",
    "VARCHAR": "VARCHAR",
    "BOOLEAN": "BOOLEAN",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMP",
    "STRUCT(a INTEGER)": "OTHER",  # a nested value is Druid's COMPLEX<json>
    "MAP(VARCHAR, INTEGER)": "OTHER",
    "UUID": "VARCHAR",
    "VARCHAR[]": "ARRAY<VARCHAR>",
    "DOUBLE[]": "ARRAY<DOUBLE>",
    "BIGINT[]": "ARRAY<BIGINT>",
}


@pytest.mark.parametrize(("duck", "druid"), DUCKDB_TYPES.items())
def test_the_sql_twin_names_a_type_as_the_python_mapping_does(duck: str, druid: str) -> None:
    con = duckdb.connect()
    try:
        name, jdbc = con.execute(
            f"SELECT {duckdb_to_druid_sql('$1')}, {jdbc_type_sql(duckdb_to_druid_sql('$1'))}", [duck]
        ).fetchone()
    finally:
        con.close()
    assert duckdb_to_druid(duck) == name == druid
    assert jdbc == (2003 if druid.startswith("ARRAY<") else by_druid(druid).jdbc)


def test_every_druid_type_has_one_row_and_other_is_jdbc_other() -> None:
    names = [t.druid for t in TYPES]
    assert len(names) == len(set(names))
    assert (by_druid("OTHER").jdbc, by_druid("OTHER").rep, by_druid("OTHER").native) == (
        1111,
        "OBJECT",
        "COMPLEX<json>",
    )
