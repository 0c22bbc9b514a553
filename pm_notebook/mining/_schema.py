"""Where each role a process analysis needs lives in a project's tables, read from INFORMATION_SCHEMA.

Nothing here hard-codes the sandbox's spelling beyond a list of accepted names per role: the columns a
project really has are read once from ``INFORMATION_SCHEMA.COLUMNS`` (and its lookups from
``INFORMATION_SCHEMA.TABLES``), and a role with no matching column is a :class:`SchemaError` that names
the table, the role and the names tried.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .._models import quote_identifier as quote
from ..errors import SchemaError

__all__ = ["ROLES", "Schema", "quote", "read_schema"]

#: role -> accepted column names (lower case, in order of preference), per table kind
ROLES: dict[str, dict[str, tuple[str, ...]]] = {
    "cases": {
        "time": ("__time",),
        "end": ("enddate", "end_date"),
        "duration": ("duration",),
        "case": ("caseid", "case_id"),
        "model": ("graphkey", "graph_key"),
        "variant": ("processkey", "process_key"),
        "case_version": ("case_version", "caseversion"),
        "rework": ("rework",),
        "activities": ("distinct_vertices",),
    },
    "vertex": {
        "time": ("__time",),
        "end": ("enddate", "end_date"),
        "duration": ("duration",),
        "case": ("caseid", "case_id"),
        "model": ("graphkey", "graph_key"),
        "variant": ("processkey", "process_key"),
        "activity": ("vertex_name", "vertexname"),
        "occurrences": ("total_occurences_by_caseid", "total_occurrences_by_caseid"),
    },
    "edge": {
        "time": ("__time",),
        "end": ("enddate", "end_date"),
        "duration": ("duration",),
        "case": ("caseid", "case_id"),
        "model": ("graphkey", "graph_key"),
        "variant": ("processkey", "process_key"),
        "source": ("source_vertex_name", "sourcevertexname"),
        "target": ("destination_vertex_name", "destinationvertexname"),
    },
}


def _slug(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


@dataclass(frozen=True)
class Schema:
    """The project's three tables, their columns (name -> Druid type) and the lookups that exist."""

    project_id: str
    tables: dict[str, str]  # kind -> table name
    columns: dict[str, dict[str, str]]  # kind -> {column name: data type}
    lookups: frozenset[str] = field(default_factory=frozenset)

    def table(self, kind: str) -> str:
        """The quoted table name of *kind* (``cases``, ``vertex`` or ``edge``)."""
        return quote(self.tables[kind])

    def has(self, kind: str, role: str) -> bool:
        """Whether the *kind* table has a column for *role*."""
        return self._find(kind, role) is not None

    def col(self, kind: str, role: str) -> str:
        """The quoted column of the *kind* table playing *role*; :class:`SchemaError` when it has none."""
        found = self._find(kind, role)
        if found is None:
            tried = ", ".join(ROLES[kind][role])
            raise SchemaError(
                f"Table {self.tables[kind]!r} has no column for the {role!r} role (looked for: {tried}).",
                hint="Check the project's columns with conn.columns(table); the analysis needs this one.",
            )
        return quote(found)

    def _find(self, kind: str, role: str) -> str | None:
        present = {c.lower(): c for c in self.columns[kind]}
        for name in ROLES[kind][role]:
            if name in present:
                return present[name]
        return None

    def dimension(self, kind: str, name: str) -> str:
        """The quoted column of the *kind* table for the user dimension *name*.

        Accepted spellings: the column itself, ``<name>_lpkr`` and the service's ``detail_<n>_lpkr_<name>``
        (names compared as lower-case slugs, so ``"Company code"`` finds ``company_code_lpkr``).
        """
        if not isinstance(name, str) or not name.strip():
            raise SchemaError(f"A dimension must be a column name, got {name!r}.")
        present = {c.lower(): c for c in self.columns[kind]}
        slug = _slug(name)
        for candidate in (name.lower(), slug, f"{slug}_lpkr"):
            if candidate in present:
                return quote(present[candidate])
        detail = re.compile(rf"^detail_\d+_lpkr_{re.escape(slug)}$")
        for lower, real in present.items():
            if detail.match(lower):
                return quote(real)
        dims = sorted(
            c for c in self.columns[kind] if "lpkr" in c.lower() and not c.lower().startswith("all_")
        )
        raise SchemaError(
            f"Table {self.tables[kind]!r} has no column for the dimension {name!r}.",
            hint=f"Known dimension columns: {', '.join(dims) or 'none'}.",
        )

    def lookup(self, suffix: str) -> str | None:
        """The name of the lookup ``<project id><suffix>`` when it exists, else ``None``."""
        name = f"{self.project_id}{suffix}"
        return name if name in self.lookups else None


def read_schema(project_id: str, run: Callable[[str, list[Any]], pd.DataFrame]) -> Schema:
    """Read the columns of the project's three tables and its lookups (two INFORMATION_SCHEMA queries)."""
    tables = {"cases": project_id, "vertex": f"{project_id}_vertex", "edge": f"{project_id}_edge"}
    cols = run(
        "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS "
        "WHERE TABLE_SCHEMA = 'druid' AND TABLE_NAME IN (?, ?, ?)",
        list(tables.values()),
    )
    columns: dict[str, dict[str, str]] = {kind: {} for kind in tables}
    by_name = {v: k for k, v in tables.items()}
    for r in cols.itertuples(index=False):
        columns[by_name[str(r[0])]][str(r[1])] = str(r[2])
    missing = [tables[k] for k, v in columns.items() if not v]
    if missing:
        raise SchemaError(
            f"Project {project_id!r} has no queryable table {', '.join(repr(m) for m in missing)}.",
            hint="List the project's tables with conn.tables(project).",
        )
    looks = run("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'lookup'", [])
    names = frozenset(str(x) for x in looks.iloc[:, 0] if str(x).startswith(project_id))
    return Schema(project_id, tables, columns, names)
