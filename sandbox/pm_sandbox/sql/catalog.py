"""A workgroup's catalogue as the SQL port shows it: the tables the dialect sees and Druid's
``INFORMATION_SCHEMA`` views, with DuckDB's types named as Druid names them (see :mod:`.types`).

Dictionary-encoded string columns (DuckDB ``ENUM``) are named VARCHAR here, as everywhere the client looks.
"""

from __future__ import annotations

from typing import cast

import duckdb

from .access import META_SCHEMA, Catalog
from .types import duckdb_to_druid_sql, jdbc_type_sql

__all__ = ["COLUMN_TYPE_SQL", "install_metadata", "read_catalog", "type_name"]


def type_name(duck_type: duckdb.sqltypes.DuckDBPyType) -> str:
    """DuckDB's name for *duck_type*, an ENUM (dictionary-encoded string) named VARCHAR."""
    if duck_type.id == "enum":
        return "VARCHAR"  # str() would spell out every value of the dictionary
    if duck_type.id == "list":
        return type_name(cast("duckdb.sqltypes.DuckDBPyType", duck_type.children[0][1])) + "[]"
    return str(duck_type)


# SQL naming a duckdb_columns() row's type as _type_name does (what the catalogue and metadata show).
COLUMN_TYPE_SQL = "CASE WHEN starts_with(data_type, 'ENUM(') THEN 'VARCHAR' ELSE data_type END"


def read_catalog(db: duckdb.DuckDBPyConnection) -> Catalog:
    cur = db.cursor()
    try:
        rows = cur.execute(
            f"SELECT schema_name, table_name, column_name, {COLUMN_TYPE_SQL} FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name IN ('druid', 'lookup') "
            "ORDER BY schema_name, table_name, column_index"
        ).fetchall()
    finally:
        cur.close()
    tables: dict[str, dict[str, str]] = {}
    lookups: set[str] = set()
    for schema, table, column, dtype in rows:
        if schema == "druid":
            tables.setdefault(table, {})[column] = dtype
        else:
            lookups.add(table)
    return Catalog(tables=tables, lookups=frozenset(lookups))


def install_metadata(db: duckdb.DuckDBPyConnection) -> None:
    """Create Druid's INFORMATION_SCHEMA views (schema ``pm_meta``) in the workgroup's database."""
    cur = db.cursor()
    try:
        if cur.execute("SELECT 1 FROM duckdb_schemas() WHERE schema_name = ?", [META_SCHEMA]).fetchall():
            return
        m = META_SCHEMA
        cur.execute(f"CREATE SCHEMA {m}")
        cur.execute(f"""CREATE VIEW {m}."SCHEMATA" AS
        SELECT * FROM (VALUES ('druid','druid'), ('druid','lookup'), ('druid','INFORMATION_SCHEMA'))
              AS s("CATALOG_NAME", "SCHEMA_NAME")""")
        cur.execute(f"""CREATE VIEW {m}."TABLES" AS
        SELECT 'druid' AS "TABLE_CATALOG", schema_name AS "TABLE_SCHEMA", table_name AS "TABLE_NAME",
          'TABLE' AS "TABLE_TYPE", CASE WHEN schema_name = 'lookup' THEN 'YES' ELSE 'NO' END AS "IS_JOINABLE",
          CASE WHEN schema_name = 'lookup' THEN 'YES' ELSE 'NO' END AS "IS_BROADCAST"
        FROM duckdb_tables() WHERE database_name = current_database() AND schema_name IN ('druid', 'lookup')
        UNION ALL
        SELECT 'druid', 'INFORMATION_SCHEMA', t, 'SYSTEM_TABLE', 'NO', 'NO'
        FROM (VALUES ('COLUMNS'), ('SCHEMATA'), ('TABLES')) AS v(t)""")
        cur.execute(f"""CREATE VIEW {m}."COLUMNS" AS
        SELECT 'druid' AS "TABLE_CATALOG", schema_name AS "TABLE_SCHEMA", table_name AS "TABLE_NAME",
          column_name AS "COLUMN_NAME", CAST(column_index AS BIGINT) AS "ORDINAL_POSITION",
          CAST(NULL AS VARCHAR) AS "COLUMN_DEFAULT",
          CASE WHEN column_name = '__time' THEN 'NO' ELSE 'YES' END AS "IS_NULLABLE",
          {duckdb_to_druid_sql("column_type")} AS "DATA_TYPE",
          CAST(NULL AS BIGINT) AS "CHARACTER_MAXIMUM_LENGTH",
          CAST(NULL AS BIGINT) AS "CHARACTER_OCTET_LENGTH",
          CAST(NULL AS BIGINT) AS "NUMERIC_PRECISION", CAST(NULL AS BIGINT) AS "NUMERIC_PRECISION_RADIX",
          CAST(NULL AS BIGINT) AS "NUMERIC_SCALE", CAST(NULL AS BIGINT) AS "DATETIME_PRECISION",
          CASE WHEN column_type = 'VARCHAR' THEN 'UTF-16LE' END AS "CHARACTER_SET_NAME",
          CASE WHEN column_type = 'VARCHAR' THEN 'UTF-16LE$en_US$primary' END AS "COLLATION_NAME",
          {jdbc_type_sql(duckdb_to_druid_sql("column_type"))} AS "JDBC_TYPE"
        FROM (SELECT *, {COLUMN_TYPE_SQL} AS column_type FROM duckdb_columns()
              WHERE database_name = current_database() AND schema_name IN ('druid', 'lookup'))""")
    finally:
        cur.close()
