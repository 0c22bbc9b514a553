"""The notebook's current connection and project, shared by the magics and the widgets (which never import
each other).

The project is the one behind ``%%pmsql``'s ``{cases}`` / ``{vertex}`` / ``{edge}``: ``%pmsql --project``
chooses it, and so does choosing a project in the :class:`~pm_notebook.widgets.ProjectBrowser`. It is kept
with the connection it was chosen on, so a project chosen for one connection never fills another's shortcuts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ._models import Project, Table
    from .connection import Connection

__all__ = ["ChosenProject", "clear_current", "get_current", "get_project", "set_current", "set_project"]

_lock = threading.Lock()
_current: Connection | None = None
_project: ChosenProject | None = None


@dataclass(frozen=True)
class ChosenProject:
    """A project chosen for later ``%%pmsql`` cells: the connection it was chosen on, its tables as listed."""

    connection: Connection
    project: Project
    tables: tuple[Table, ...]

    def table(self, kind: str) -> Table | None:
        """The table behind the ``{kind}`` shortcut (``cases``, ``vertex``, ``edge``): the first listed."""
        return next((t for t in self.tables if t.kind == kind), None)


def set_current(conn: Connection | None) -> None:
    """Make *conn* the connection that ``%pmsql`` and the widgets use from now on (``None`` forgets it)."""
    global _current, _project
    with _lock:
        _current = conn
        if conn is None:
            _project = None


def get_current() -> Connection | None:
    """Return the current connection, or ``None`` when nothing has connected yet."""
    return _current


def clear_current() -> None:
    """Forget the current connection and the chosen project (closes nothing)."""
    set_current(None)


def set_project(conn: Connection, project: Project, tables: list[Table] | tuple[Table, ...]) -> ChosenProject:
    """Choose *project* (with its *tables*, in listing order) for later ``%%pmsql`` cells on *conn*."""
    global _project
    chosen = ChosenProject(connection=conn, project=project, tables=tuple(tables))
    with _lock:
        _project = chosen
    return chosen


def get_project(conn: Connection) -> ChosenProject | None:
    """The project chosen for *conn*, or ``None`` (none chosen, or chosen on another connection)."""
    chosen = _project
    return chosen if chosen is not None and chosen.connection is conn else None
