"""DuckDB expression templates with placeholders, and argument helpers for the function table."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from ..errors import SqlError

# The store keeps low-cardinality strings as ENUMs (see store.py); to clients they are VARCHARs, so in a
# type name from typeof()/pg_typeof() every ENUM('a', 'it''s', ...) is replaced by VARCHAR.
PLAIN_TYPE_NAME = r"regexp_replace({fn}(__A__), '{enum}\((''([^'']|'''')*''(, )?)*\)', '{varchar}', 'g')"


def tmpl(template: str, **args: exp.Expr) -> exp.Expr:
    """Parse a DuckDB template and substitute the columns ``__A__``, ``__B__``... with *args*."""
    tree = sqlglot.parse_one(template, read="duckdb")

    def sub(node: exp.Expr) -> exp.Expr:
        if (
            isinstance(node, exp.Column)
            and not node.table
            and node.name.startswith("__")
            and node.name.endswith("__")
        ):
            key = node.name.strip("_")
            if key in args:
                return args[key].copy()
        return node

    return tree.transform(sub)


def literal_str(node: exp.Expr | None, what: str, fn: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    raise SqlError(
        f"{fn}: {what} must be a string literal (got {node.sql() if node else 'nothing'}).", "unsupported"
    )
