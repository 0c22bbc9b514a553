"""What the magics of one shell remember between cells: the connection, the chosen project, completion caches.

The connection itself is the notebook's current one (:mod:`pm_notebook._current`, shared with the widgets);
a :class:`Session` adds what only the magics need, so another magic of the same shell can share it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import _current
from .._models import Column, Project, Table
from ..config import CONTEXT_ENV_VAR, ENV_VARS, parse_context_variable
from ..connection import Connection, connect
from ..errors import ConfigurationError
from .projects import SHORTCUTS, ProjectChoice, pick_project, table_for

__all__ = ["Session"]

logger = logging.getLogger(__name__)


class Session:
    """The magics' state for one shell (no IPython here: plain values in, plain values out)."""

    def __init__(self) -> None:
        self._owned: Connection | None = None  # the connection a magic opened (closed when replaced)
        #: completion cache: table name -> column names
        self.columns: dict[str, list[str]] = {}
        #: completion cache: the tables of the chosen project, or of the last workgroup-wide listing
        self.tables_seen: list[Table] = []
        #: completion cache: the workgroup's lookups, for the connection they were read on
        self._lookups: tuple[Connection, list[str]] | None = None
        #: ``%pm``'s process logs by (project id, resource), on the connection they were opened on
        self._logs: dict[tuple[str, str | None], Any] = {}
        self._logs_conn: Connection | None = None

    # --- the connection -------------------------------------------------------------------------------
    def connection(
        self,
        ns: Mapping[str, Any],
        *,
        variable: str | None = None,
        reconnect: bool = False,
        env_file: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Connection:
        """The connection to use: the one held in *variable*, a new one, or the current one (made if none).

        :param variable: ``--connection VAR``: a Python variable of *ns* holding a Connection.
        :param reconnect: ``--connect``: connect anew from ``PM_*`` variables, ``.env`` or the keyring.
        :param env_file: ``--env-file PATH``: connect anew with that file's values.
        :param options: more :func:`pm_notebook.connect` arguments for a connection made here
            (``replay``, ``cache_dir``).
        """
        options = dict(options or {})
        if variable:
            if variable not in ns:
                raise ConfigurationError(
                    f"--connection {variable}: no Python variable of that name.",
                    hint="Create it with conn = pm_notebook.connect(...).",
                )
            conn = ns[variable]
            if not isinstance(conn, Connection):
                raise ConfigurationError(
                    f"--connection {variable}: expected a pm_notebook Connection, "
                    f"got a {type(conn).__name__}.",
                    hint="Create it with pm_notebook.connect(...).",
                )
            self.adopt(conn, owned=False)
            return conn
        if reconnect or env_file:
            values: dict[str, Any] = {**_env_file_values(env_file), **options}
            self.adopt(connect(**values), owned=True)
        current = _current.get_current()
        if current is None:
            current = connect(**options)
            self.adopt(current, owned=True)
        return current

    def adopt(self, conn: Connection, *, owned: bool) -> None:
        """Make *conn* current; close the connection a magic opened before, if it is being replaced."""
        previous = self._owned
        if previous is not None and previous is not conn:
            try:
                previous.close()
            except Exception:  # closing the old connection must not block using the new one
                logger.debug("closing the previous %%pmsql connection failed", exc_info=True)
        self._owned = conn if owned else None
        _current.set_current(conn)

    # --- the project -------------------------------------------------------------------------------------
    def choice(self, conn: Connection) -> ProjectChoice | None:
        """The project chosen for *conn* (a choice made on another connection does not apply).

        The choice lives in :mod:`pm_notebook._current`, so a project chosen in the ProjectBrowser is the one
        of later cells too.
        """
        chosen = _current.get_project(conn)
        if chosen is None:
            return None
        return ProjectChoice(conn=conn, project=chosen.project, tables=list(chosen.tables))

    def choose_project(self, conn: Connection, wanted: str) -> None:
        """``--project NAME|ID``: choose the project behind ``{cases}``, ``{vertex}``, ``{edge}``."""
        project = pick_project(conn.projects(), wanted)
        tables = conn.tables(project)
        _current.set_project(conn, project, tables)
        self.tables_seen = list(tables)

    def shortcut(self, conn: Connection, name: str) -> str | None:
        """The quoted table behind ``{name}`` when *name* is a shortcut and a project is chosen; else None."""
        choice = self.choice(conn)
        if name not in SHORTCUTS or choice is None:
            return None
        table = choice.table(name)
        if table is None:
            raise ConfigurationError(f"{{{name}}}: project {choice.project.name!r} has no {name} table.")
        return table.sql_name

    # --- the process logs of %pm -------------------------------------------------------------------------
    def mining(self, conn: Connection, project: Project, *, resource: str | None) -> Any:
        """The :class:`~pm_notebook.mining.ProcessLog` of *project* on *conn*, unfiltered (excluded cases left
        out): opened by the first ``%pm`` line that asks for it and reused by the next, so the project's
        schema and its excluded-case count are read once per session, not once per line (a ``%pm upload``,
        or another connection, opens it anew)."""
        if self._logs_conn is not conn:
            self._logs, self._logs_conn = {}, conn
        key = (project.id, resource)
        if key not in self._logs:
            self._logs[key] = conn.mining(project, resource=resource)
        return self._logs[key]

    def forget_logs(self) -> None:
        """Open every process log anew on its next use (the project's data changed: an upload)."""
        self._logs, self._logs_conn = {}, None

    def status(self, conn: Connection, *, connected: bool) -> str:
        """What ``%pmsql`` with no SQL says: the service connected to and the chosen project's shortcuts."""
        lines = [f"Connected to {conn.settings.base_url}."] if connected else []
        choice = self.choice(conn)
        if choice is not None:
            # names, not the tables' UUIDs: %pmsql --tables lists those
            kinds = {"cases": "cases", "vertex": "tasks", "edge": "transitions"}
            names = ", ".join(f"{{{k}}} ({kinds[k]})" for k in choice.shortcuts())
            lines.append(f"Project {choice.project.name!r}: {names or 'no tables yet'}.")
        return "\n".join(lines)

    # --- what completion and error suggestions know (read once, never raising) ---------------------------
    def known_tables(self, conn: Connection) -> list[Table]:
        """The tables completion offers: the chosen project's, else those listed (listed once if none)."""
        choice = self.choice(conn)
        if choice is not None:
            return list(choice.tables)
        if not self.tables_seen:
            try:
                self.tables(conn)
            except Exception:  # completion offers less rather than failing
                logger.debug("no tables for completion", exc_info=True)
        return list(self.tables_seen)

    def known_columns(self, conn: Connection, table: Table) -> list[str]:
        """The column names of *table* (read once per table, then cached)."""
        if table.name not in self.columns:
            try:
                self.columns[table.name] = [c.name for c in conn.columns(table)]
            except Exception:  # completion offers less rather than failing
                logger.debug("no columns for completion of %s", table.name, exc_info=True)
                return []
        return self.columns[table.name]

    def known_lookups(self, conn: Connection) -> list[str]:
        """The workgroup's lookup names (schema ``lookup``), read once per connection."""
        if self._lookups is None or self._lookups[0] is not conn:
            try:
                frame = conn.query(
                    "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'lookup' "
                    "ORDER BY TABLE_NAME"
                )
            except Exception:  # completion offers less rather than failing
                logger.debug("no lookups for completion", exc_info=True)
                return []
            self._lookups = (conn, [str(v) for v in frame.iloc[:, 0]])
        return list(self._lookups[1])

    # --- listings ----------------------------------------------------------------------------------------
    def tables(self, conn: Connection) -> tuple[list[Table], dict[str, Any]]:
        """The tables ``--tables`` lists (the chosen project's, else every project's) and their projects."""
        choice = self.choice(conn)
        if choice is not None:
            return list(choice.tables), {choice.project.id: choice.project}
        projects = {p.id: p for p in conn.projects()}
        tables = [t for p in projects.values() for t in conn.tables(p)]
        self.tables_seen = tables
        return tables, projects

    def table_columns(self, conn: Connection, wanted: str) -> list[Column]:
        """The columns ``--columns WANTED`` lists (a table name, or a shortcut of the chosen project)."""
        table = table_for(wanted, self.choice(conn))
        columns = conn.columns(table)
        self.columns[getattr(table, "name", table)] = [c.name for c in columns]
        return columns


def _env_file_values(path: str | None) -> dict[str, Any]:
    """``connect()`` arguments from a ``.env`` file, so that its values win over the process's PM_*."""
    if path is None:
        return {}
    if not Path(path).is_file():
        raise ConfigurationError(
            f"--env-file {path}: no such file.",
            hint="Give the path of a .env file with PM_BASE_URL, PM_CLIENT_ID, ...",
        )
    from dotenv import dotenv_values

    found = dotenv_values(path)
    values: dict[str, Any] = {arg: value for arg, var in ENV_VARS.items() if (value := found.get(var))}
    if not values:
        raise ConfigurationError(f"--env-file {path}: it sets none of {', '.join(ENV_VARS.values())}.")
    text = found.get(CONTEXT_ENV_VAR)
    if text and text.strip():  # the file's default context wins over the process's, as its other values do
        values["context"] = parse_context_variable(text, f"{CONTEXT_ENV_VAR} in --env-file {path}")
    return {**values, "env_file": path}
