"""What a workgroup's SQL may touch: statement kinds, tables, functions (enforced on the parsed tree).

The first line of defence is physical: each workgroup has its own DuckDB database with external
access disabled and the configuration locked (see ``data/store.py``). This module is the second: it
walks the sqlglot tree of every statement before anything runs and

* accepts only queries (``SELECT``, ``WITH``, set operations, ``VALUES``, ``EXPLAIN PLAN FOR``);
* resolves every table reference against the caller's own catalogue (schema ``druid`` by default,
  ``lookup``, ``INFORMATION_SCHEMA``), rewriting it to the fully qualified DuckDB name; anything else,
  including another workgroup's table, is "not found" with the same message whether it exists or not;
* refuses table functions and the DuckDB functions that reach files, settings or the catalogue.

Every refusal is a :class:`~pm_sandbox.sql.errors.SqlError` that names the construct.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from .errors import SqlError

__all__ = ["META_SCHEMA", "Catalog", "check_first_keyword", "check_tree"]

# Schema (inside the workgroup's DuckDB) holding our INFORMATION_SCHEMA views.
META_SCHEMA = "pm_meta"
_META_TABLES = ("TABLES", "COLUMNS", "SCHEMATA")

_QUERY_KEYWORDS = {"SELECT", "WITH", "EXPLAIN", "VALUES", "("}
_WRITE_KEYWORDS = {
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "UPSERT",
    "REPLACE",
    "CREATE",
    "DROP",
    "ALTER",
    "TRUNCATE",
    "COPY",
    "ATTACH",
    "DETACH",
    "INSTALL",
    "LOAD",
    "FORCE",
    "SET",
    "RESET",
    "PRAGMA",
    "CALL",
    "EXPORT",
    "IMPORT",
    "USE",
    "CHECKPOINT",
    "VACUUM",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "ABORT",
    "GRANT",
    "REVOKE",
    "DESCRIBE",
    "SHOW",
    "SUMMARIZE",
    "PREPARE",
    "EXECUTE",
    "DEALLOCATE",
    "ANALYZE",
    "COMMENT",
    "FROM",
}

# Functions refused anywhere in a statement (lower-case); prefixes cover whole families.
_FORBIDDEN_FUNCTIONS = {
    "getenv",
    "current_setting",
    "query",
    "query_table",
    "glob",
    "read_text",
    "read_blob",
    "sniff_csv",
    "load_extension",
    "install_extension",
    "checkpoint",
    "force_checkpoint",
    "setseed",
    "nextval",
    "currval",
    "getvariable",
    "set_variable",
    "which_secret",
    "enable_profiling",
    "disable_profiling",
    "icu_calendar_names",
    "pg_timezone_names",
    "test_all_types",
    "test_vector_types",
    "range",
    "generate_series",
    "repeat_row",
    "summary",
    "json_execute_serialized_sql",
    "parse_path",
    "st_read",
    "sql_auto_complete",
    "copy_database",
    "ducklake",
    "postgres_query",
    "mysql_query",
    "sqlite_attach",
    "current_database",
    "current_catalog",
    "current_schemas",
    "user_agent",
    "version",
    "platform",
}
_FORBIDDEN_PREFIXES = (
    "read_",
    "duckdb_",
    "pragma_",
    "parquet_",
    "iceberg_",
    "delta_",
    "sqlite_",
    "postgres_",
    "mysql_",
    "http",
    "s3",
    "azure_",
    "gcs_",
    "fts_",
    "json_execute",
    "arrow_scan",
    "seq_scan",
    "system.",
)
# Statement node types that are never a query, wherever they appear in the tree.
_FORBIDDEN_NODES = tuple(
    getattr(exp, name)
    for name in (
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "Copy",
        "Command",
        "Set",
        "Pragma",
        "Use",
        "Transaction",
        "Commit",
        "Rollback",
        "Describe",
        "LoadData",
        "Into",
        "Attach",
        "Detach",
        "Install",
        "Export",
        "Summarize",
        "Analyze",
        "Grant",
        "Revoke",
        "TruncateTable",
    )
    if hasattr(exp, name)
)


@dataclass(frozen=True)
class Catalog:
    """The caller's own objects: Druid tables (with their DuckDB column types) and lookups."""

    tables: dict[str, dict[str, str]] = field(default_factory=dict)
    lookups: frozenset[str] = frozenset()

    @property
    def multi_value_columns(self) -> frozenset[str]:
        """Names of list-typed (multi-value) columns in any of the tables."""
        return frozenset(c for cols in self.tables.values() for c, t in cols.items() if t.endswith("[]"))


def check_first_keyword(keyword: str) -> None:
    """Refuse a statement by its first keyword before parsing (some are not parseable as Druid SQL)."""
    kw = keyword.upper()
    if kw in _QUERY_KEYWORDS:
        return
    if kw in _WRITE_KEYWORDS:
        raise SqlError(
            f"{kw} statements are not allowed: the SQL endpoint is read-only and accepts only queries "
            "(SELECT, WITH ... SELECT, EXPLAIN PLAN FOR ...).",
            "refused",
        )
    raise SqlError(
        f"Unexpected '{keyword}' at the start of the statement: only queries (SELECT ...) are accepted."
    )


def check_tree(tree: exp.Expr, catalog: Catalog) -> list[str]:
    """Check *tree* in place and qualify its table references; return the Druid tables it reads.

    :raises SqlError: naming the first forbidden construct found.
    """
    if not isinstance(tree, (exp.Select, exp.SetOperation, exp.Subquery, exp.Values)):
        name = type(tree).__name__.upper()
        raise SqlError(
            f"{name} statements are not allowed: only queries are accepted (read-only endpoint).", "refused"
        )
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise SqlError(
                f"{type(node).__name__.upper()} is not allowed inside a query (read-only endpoint).",
                "refused",
            )
        if isinstance(node, exp.Func):
            _check_function(node)
        if isinstance(node, exp.Identifier) and not node.quoted and node.name.startswith("$"):
            raise SqlError(f"Parameter {node.name} is not supported: use ? placeholders.")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    used: list[str] = []
    for table in list(tree.find_all(exp.Table)):
        resolved = _resolve_table(table, catalog, ctes)
        if resolved:
            used.append(resolved)
    return used


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this)
    return node.sql_name()


def _check_function(node: exp.Func) -> None:
    name = _function_name(node)
    low = name.lower()
    if low in _FORBIDDEN_FUNCTIONS or low.startswith(_FORBIDDEN_PREFIXES):
        raise SqlError(
            f"Function {name.upper()} is not allowed: the SQL endpoint has no access to files, the network, "
            "settings or the engine's catalogue.",
            "refused",
        )


def _resolve_table(table: exp.Table, catalog: Catalog, ctes: set[str]) -> str | None:
    if not isinstance(table.this, exp.Identifier):
        what = table.this.sql() if isinstance(table.this, exp.Expression) else str(table.this)
        head = what.split("(")[0].upper()
        raise SqlError(
            f"Table function {head} is not allowed: query the workgroup's tables (schema 'druid') instead.",
            "refused",
        )
    name, db, cat = table.name, table.db, table.catalog
    if cat and cat.lower() != "druid":
        raise _not_found(f"Object '{cat}' not found", cat)
    if not db and name.lower() in ctes:
        return None
    schema = (db or "druid").lower()
    # Calcite's wording: "Object 'x' not found" (unqualified) or "... not found within 'schema'".
    within = f" within '{db}'" if db else ""
    if schema == "druid":
        if name not in catalog.tables:
            raise _not_found(f"Object '{name}' not found{within}", name)
        _qualify(table, "druid", name)
        return name
    if schema == "lookup":
        if name not in catalog.lookups:
            raise _not_found(f"Object '{name}' not found{within}", name)
        _qualify(table, "lookup", name)
        return None
    if schema == "information_schema":
        if name.upper() not in _META_TABLES:
            raise _not_found(f"Object '{name}' not found{within}", name)
        _qualify(table, META_SCHEMA, name.upper())
        return None
    if schema in ("sys", "view"):
        raise SqlError(f"Schema '{db}' is not available in the sandbox.", "unsupported")
    raise _not_found(f"Object '{db}' not found", db)


def _not_found(message: str, subject: str) -> SqlError:
    """A name that does not resolve; the translator adds the position of *subject* (Calcite's style)."""
    return SqlError(message, context={"sourceType": "sql", "subject": subject})


def _qualify(table: exp.Table, schema: str, name: str) -> None:
    table.set("catalog", None)
    table.set("db", exp.to_identifier(schema, quoted=True))
    table.set("this", exp.to_identifier(name, quoted=True))
