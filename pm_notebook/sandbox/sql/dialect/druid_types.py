"""Druid SQL type names for the store's DuckDB types."""

from __future__ import annotations

__all__ = ["duckdb_to_druid"]


def duckdb_to_druid(duck: str) -> str:
    """The Druid SQL type name for a DuckDB type name (``VARCHAR[]`` → ``ARRAY<VARCHAR>``)."""
    t = duck.upper().strip()
    if t.endswith("[]"):
        return f"ARRAY<{duckdb_to_druid(t[:-2])}>"
    base = t.split("(")[0].strip()
    if base in ("BOOLEAN", "BOOL"):
        return "BOOLEAN"
    if base in (
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "INT",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "UHUGEINT",
    ):
        return "BIGINT"
    if base in ("FLOAT", "REAL"):
        return "FLOAT"
    if base in ("DOUBLE", "DECIMAL", "NUMERIC"):
        return "DOUBLE"
    if base.startswith("TIMESTAMP"):
        return "TIMESTAMP"
    if base == "DATE":
        return "DATE"
    if base.startswith(("STRUCT", "MAP", "UNION")):
        return "OTHER"
    return "VARCHAR"
