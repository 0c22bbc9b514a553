"""Project shortcuts and listings: ``--project``, ``{cases}`` / ``{vertex}`` / ``{edge}``, ``--tables``,
``--columns``.

Listings are DataFrames built by :func:`pm_notebook.api.to_frame`, the client's one REST → DataFrame helper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._checks import find_project
from .._models import Column, Project, Table
from ..api import to_frame
from ..errors import ConfigurationError, NotFound

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from ..connection import Connection

__all__ = [
    "SHORTCUTS",
    "ProjectChoice",
    "TableRow",
    "columns_frame",
    "pick_project",
    "table_for",
    "tables_frame",
]

#: the ``{name}`` shortcuts a chosen project provides, one per table kind
SHORTCUTS = ("cases", "vertex", "edge")


@dataclass
class ProjectChoice:
    """The project chosen with ``--project`` and its tables, for one connection."""

    conn: Connection
    project: Project
    tables: list[Table]

    def table(self, kind: str) -> Table | None:
        """The project's table of *kind* (``cases``, ``vertex`` or ``edge``), if it has one."""
        return next((t for t in self.tables if t.kind == kind), None)

    def shortcuts(self) -> dict[str, Table]:
        """``{shortcut: table}`` for the shortcuts this project can fill."""
        return {k: t for k in SHORTCUTS if (t := self.table(k)) is not None}


def pick_project(projects: list[Project], wanted: str) -> Project:
    """The project ``--project`` names: by id, or else name (case-insensitively); a clear error otherwise.

    >>> pick_project([Project("p-1", "Sales"), Project("p-2", "HR")], "hr").id
    'p-2'
    """
    try:
        return find_project(projects, wanted)
    except NotFound as err:  # to the magic, an unknown --project is a wrong option value
        raise ConfigurationError(err.message, hint=err.hint) from None


@dataclass(frozen=True)
class TableRow:
    """One row of ``%pmsql --tables``."""

    project: str | None
    project_id: str
    table: str
    kind: str


def tables_frame(tables: Iterable[Table], projects: Mapping[str, Project]) -> pd.DataFrame:
    """The ``--tables`` listing: one row per table, with its project's name (*projects* maps id → project)."""
    rows = [
        TableRow(
            project=projects[t.project_id].name if t.project_id in projects else None,
            project_id=t.project_id,
            table=t.name,
            kind=t.kind,
        )
        for t in tables
    ]
    return to_frame(rows, TableRow)


def columns_frame(columns: Iterable[Column]) -> pd.DataFrame:
    """The ``--columns`` listing: name, data type, ordinal, nullable."""
    return to_frame(columns, Column)


def table_for(wanted: str, choice: ProjectChoice | None) -> Any:
    """What ``--columns WANTED`` names: a shortcut's :class:`Table`, or a table name (quotes removed).

    >>> table_for('"a""b"', None)
    'a"b'
    """
    name = wanted.strip().strip("{}").strip()
    if name in SHORTCUTS and choice is not None:
        return choice.table(name) or name
    if len(name) > 1 and name[0] == name[-1] == '"':
        return name[1:-1].replace('""', '"')
    return name
