"""DuckDB's errors in Druid's words: no ``Binder Error``, ``Catalog Error`` or ``Candidate bindings`` reaches
a client.

The translator refuses what is not Druid SQL before DuckDB sees it; what DuckDB still rejects (a column
that does not exist, a type mismatch, a value out of range while running) is reworded here as Calcite's
validator or Druid's runtime would word it, with Calcite's position when the name can be found in the
statement.
"""

from __future__ import annotations

import re

from ..errors import SqlError, invalid_sql

__all__ = ["from_duckdb"]

_ENUM_TYPE = re.compile(r"ENUM\((?:'(?:[^']|'')*'(?:, )?)*\)")
_PREFIX = re.compile(r"^[A-Za-z ]*(?:Error|Exception):\s*")
_PARAM = re.compile(r"\$p(\d+)")
_TYPES = {
    "INTEGER": "BIGINT",
    "INT32": "BIGINT",
    "INT64": "BIGINT",
    "HUGEINT": "BIGINT",
    "DECIMAL": "DOUBLE",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMP",
    "VARCHAR[]": "VARCHAR ARRAY",
    '"NULL"': "NULL",
}


def _druid_types(text: str) -> str:
    text = _ENUM_TYPE.sub("VARCHAR", text)
    text = re.sub(r"DECIMAL\(\d+,\d+\)", "DOUBLE", text)
    for duck, druid in _TYPES.items():
        text = text.replace(duck, druid)
    return text


def _position(sql: str, name: str) -> tuple[int, int, int, int] | None:
    """Position of the first whole-word *name* (quoted or not) in *sql*."""
    m = re.search(rf'(?<![\w"]){re.escape(name)}(?![\w"])|"{re.escape(name)}"', sql)
    if m is None:
        return None
    i = m.start()
    line = sql.count("\n", 0, i) + 1
    col = i - (sql.rfind("\n", 0, i) + 1) + 1
    return line, col, line, col + len(m.group(0)) - 1


def from_duckdb(kind: str, message: str, sql: str) -> SqlError:
    """Reword DuckDB's *message* (exception class name *kind*, e.g. ``BinderException``) for *sql*."""
    text = message.split("\n\nLINE ")[0].split("\nLINE ")[0].strip()
    text = _PREFIX.sub("", text)
    text = text.split("\nCandidate bindings")[0].split("\nDid you mean")[0].strip()
    text = _druid_types(_PARAM.sub("?", text)).replace('"pm_meta".', "").replace("pm_meta.", "")
    m = re.search(r'Referenced column "([^"]+)" not found', text)
    if m:
        return invalid_sql(f"Column '{m.group(1)}' not found in any table", _position(sql, m.group(1)))
    m = re.search(r'Table "([^"]+)" does not have a column named "([^"]+)"', text)
    if m:
        name = m.group(2)
        return invalid_sql(f"Column '{name}' not found in table '{m.group(1)}'", _position(sql, name))
    m = re.search(r'Referenced table "([^"]+)" not found', text)
    if m:
        return invalid_sql(f"Table '{m.group(1)}' not found", _position(sql, m.group(1)))
    m = re.search(r'Ambiguous reference to column name "([^"]+)"', text)
    if m:
        return invalid_sql(f"Column '{m.group(1)}' is ambiguous", _position(sql, m.group(1)))
    m = re.search(r'column "([^"]+)" must appear in the GROUP BY clause', text)
    if m:
        return invalid_sql(f"Expression '{m.group(1)}' is not being grouped", _position(sql, m.group(1)))
    m = re.search(r"No function matches the given name and argument types '(\w+)\((.*?)\)'", text)
    if m:
        name, types = (
            m.group(1).upper(),
            ", ".join(f"<{t.strip()}>" for t in m.group(2).split(",") if t.strip()),
        )
        return invalid_sql(
            f"Cannot apply '{name}' to arguments of type '{name}({types})'", _position(sql, m.group(1))
        )
    m = re.search(r"Cannot compare values of type (\S+) and (?:type )?(\S+)", text)
    if m:
        return invalid_sql(f"Cannot apply '=' to arguments of type '<{m.group(1)}> = <{m.group(2)}>'")
    if "Division by zero" in text:
        # an integer DIV, MOD or / by 0: Druid's long arithmetic throws Java's ArithmeticException
        return SqlError(
            "Query failed while running: / by zero (an integer division or MOD by 0; "
            "SAFE_DIVIDE(x, y) answers NULL for y = 0).",
            "runtime",
        )
    if kind in ("BinderException", "CatalogException", "ParserException"):
        return invalid_sql(f"SQL is not valid: {text}")
    if kind in (
        "ConversionException",
        "OutOfRangeException",
        "InvalidInputException",
        "NotImplementedException",
    ):
        return SqlError(f"Query failed while running: {text}", "runtime")
    return SqlError(f"Query failed: {text}", "runtime")
