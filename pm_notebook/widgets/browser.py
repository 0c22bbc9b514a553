"""``ProjectBrowser``: projects → tables → columns and a preview, without writing a query. This module wires
the widgets (lists, filter, background loads, the offered cell); what they say is :mod:`._browser_text`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from .. import _current
from .._cells import cell_int
from .._checks import find_project
from .._models import Column, Project, Table
from ..connection import Connection
from ..errors import ConfigurationError, NotFound
from ._browser_text import (
    FALLBACK,
    KIND_WORDS,
    browsing_status,
    columns_html,
    inserted_status,
    pmsql_for,
    preview_html,
    project_label,
    table_label,
)
from ._common import Jobs, StatusLine, close_children, describe_error, esc, scroll_box
from ._insert import QueryInserter

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["ProjectBrowser", "pmsql_for"]

log = logging.getLogger(__name__)


class ProjectBrowser(w.VBox):
    """Browse the workgroup: projects (REST listing) → tables → columns (INFORMATION_SCHEMA) → preview.

    Projects are listed by name, tables by what they hold (cases, tasks, transitions) and their project's
    name. Choosing a project makes it the project of later ``%%pmsql`` cells, as ``%pmsql --project`` does:
    ``{cases}``, ``{vertex}`` and ``{edge}`` then name its tables. The offered cell names the table by its
    shortcut and chooses the project itself, so it also runs after a kernel restart.

    :param connection: the connection to browse; by default the notebook's current one (set by
        :class:`~pm_notebook.widgets.CredentialWidget` or :func:`pm_notebook._current.set_current`),
        looked up when the browser first loads, not in ``__init__``.
    :param preview_rows: how many rows the preview shows.
    :param autoload: load the project list when the browser is first displayed.

    Programmatic triggers do what the frontend does and wait for the result, for tests and scripts:
    :meth:`refresh`, :meth:`select`, :meth:`insert_query`.

    >>> from pm_notebook.widgets import ProjectBrowser
    >>> ProjectBrowser()            # doctest: +SKIP  (click a project, then a table)
    """

    def __init__(
        self,
        connection: Connection | None = None,
        *,
        preview_rows: int = 10,
        autoload: bool = True,
        **kwargs: Any,
    ) -> None:
        if (
            isinstance(preview_rows, bool)
            or not isinstance(preview_rows, int)
            or not 1 <= preview_rows <= 10_000
        ):
            super().__init__()  # a half-built widget would fail in __del__; build an empty one and close it
            w.VBox.close(self)
            raise ConfigurationError(
                f"preview_rows must be a whole number from 1 to 10000, got {preview_rows!r}."
            )
        self._connection = connection
        self.preview_rows = preview_rows
        self._autoload = autoload
        self._loaded = False
        self._jobs = Jobs("browser")
        self._projects: list[Project] = []
        self._listing: list[Table] = []  # the selected project's tables in the service's order
        self._tables: list[Table] = []  # the same, in the browser's order (cases, tasks, transitions)
        self._selected_project: Project | None = None
        self._selected_table: Table | None = None
        self.columns: list[Column] = []
        self.preview: pd.DataFrame | None = (
            None  # the first rows, once loaded (ids whole; shortened on screen)
        )
        self.row_count: int | None = None
        self.last_error: BaseException | None = None
        self._quiet = False
        self._callbacks: list[Callable[[Table], None]] = []

        self.filter = w.Text(
            placeholder="Filter projects and tables", continuous_update=True, layout=w.Layout(width="22em")
        )
        self.refresh_button = w.Button(
            description="Refresh", icon="refresh", tooltip="Reload the project list"
        )
        self.status = StatusLine()
        self.project_list = w.Select(
            options=[],
            rows=8,
            description="Projects",
            layout=w.Layout(width="30em"),
            style={"description_width": "5em"},
        )
        self.table_list = w.Select(
            options=[],
            rows=8,
            description="Tables",
            layout=w.Layout(width="30em"),
            style={"description_width": "4em"},
        )
        self.columns_view = w.HTML()
        self.preview_view = w.HTML()
        self.count_view = w.HTML()
        self.query_view = w.HTML()
        self.inserter = QueryInserter(disabled=True)
        self.inserter.on_outcome(self._inserted)
        detail = w.Tab(children=[self.columns_view, w.VBox([self.count_view, self.preview_view])])
        detail.titles = ("Columns", "Preview")
        self.detail = detail
        super().__init__(
            children=[
                w.HBox([self.filter, self.refresh_button]),
                self.status,
                w.HBox([self.project_list, self.table_list]),
                detail,
                # the offered cell on its own lines under the button: never run into a status text
                w.VBox([self.inserter, self.query_view]),
            ],
            **kwargs,
        )
        self.add_class("pm-browser")
        self.inserter.anchor = self.model_id
        self.status.show("Click Refresh to list the projects." if not autoload else "")
        self.filter.observe(lambda _c: self._locked(self._apply_filter), names="value")
        self.refresh_button.on_click(lambda _b: self._locked(self._refresh, wait=False))
        self.project_list.observe(self._project_clicked, names="value")
        self.table_list.observe(self._table_clicked, names="value")

    # --- public API ----------------------------------------------------------------------------
    @property
    def connection(self) -> Connection:
        """The browsed connection: the injected one, else the notebook's current one."""
        conn = self._connection or _current.get_current()
        if conn is None:
            raise ConfigurationError(
                "No connection to browse.",
                hint="Connect first with the CredentialWidget or pm_notebook.connect(), "
                "or pass ProjectBrowser(connection=conn).",
            )
        return conn

    @property
    def projects(self) -> list[Project]:
        """The projects of the last listing (unfiltered)."""
        return list(self._projects)

    @property
    def tables(self) -> list[Table]:
        """The tables of the selected project (unfiltered): cases, tasks, transitions."""
        return list(self._tables)

    @property
    def selected_project(self) -> Project | None:
        """The project whose tables are shown."""
        return self._selected_project

    @property
    def selected_table(self) -> Table | None:
        """The table whose columns and preview are shown."""
        return self._selected_table

    @property
    def status_text(self) -> str:
        """The status line as plain text."""
        return self.status.text

    @property
    def query(self) -> str:
        """The ``%%pmsql`` cell offered for the selected table ('' before one is selected)."""
        return self.inserter.query

    def project_label(self, project: Project) -> str:
        """How the Projects list shows *project* (see :func:`._browser_text.project_label`)."""
        return project_label(project, self._projects)

    def table_label(self, table: Table) -> str:
        """How the Tables list shows *table*: what it holds and its project (``tasks — Purchase to Pay``;
        see :func:`._browser_text.table_label`)."""
        project = self._selected_project
        owner = (
            self.project_label(project) if project is not None and project.id == table.project_id else None
        )
        return table_label(table, shortcut=self._shortcut(table) is not None, owner=owner)

    def refresh(self) -> list[Project]:
        """Reload the project list (as the Refresh button does) and wait; returns the projects."""
        self._refresh(wait=True)
        return self.projects

    def select(self, project: Project | str | None = None, table: Table | str | None = None) -> None:
        """Select a project and/or a table as a click would, and wait.

        :param project: a :class:`Project`, or a project's id or name (as ``%pmsql --project`` takes).
        :param table: a :class:`Table`, a table name, a shortcut (``vertex``, ``{vertex}``) or what the
            table holds (``cases``, ``tasks``, ``transitions``).
        :raises NotFound: no listed project has that id or name.
        :raises ConfigurationError: no table of the selected project matches.
        """
        with self._jobs.state:  # a listing the display started in the background applies before or after
            if not self._projects:  # not listed yet, or still listing in the background (then superseded)
                self._refresh(wait=True)
            if project is not None:
                chosen = self._find_project(project)
                self._show_selected(self.project_list, chosen.id)
                self._load_project(chosen, wait=True)
            if table is not None:
                chosen_table = self._find_table(table)
                self._show_selected(self.table_list, chosen_table.name)
                self._load_table(chosen_table, wait=True)

    def insert_query(self) -> str:
        """Ask the frontend to insert the ``%%pmsql`` cell for the selected table; returns its text."""
        if not self.inserter.query:
            raise ConfigurationError("No table selected.", hint="Select a project and a table first.")
        return self.inserter.insert()

    def on_select(self, callback: Callable[[Table], None]) -> None:
        """Call ``callback(table)`` once a table's columns and preview are shown."""
        self._callbacks.append(callback)

    def wait(self, timeout: float = 30.0) -> bool:
        """Wait for loads started from the frontend to finish."""
        return self._jobs.wait(timeout)

    def close(self) -> None:
        """Drop pending loads and close the widget (the connection and the chosen project stay)."""
        jobs = getattr(self, "_jobs", None)  # also called from __del__ of a widget whose __init__ failed
        for slot in ("projects", "tables", "table"):
            if jobs is not None:
                jobs.cancel(slot)
        close_children(self)
        super().close()

    # --- loading -------------------------------------------------------------------------------
    def _refresh(self, *, wait: bool) -> None:
        self._loaded = True
        self.status.show("Loading projects \u2026", "busy")
        self.refresh_button.disabled = True

        def work() -> list[Project]:
            return list(self.connection.projects())

        def done(projects: list[Project]) -> None:
            self._projects = sorted(projects, key=lambda p: ((p.name or "").lower(), p.id))
            self.refresh_button.disabled = False
            self.last_error = None
            keep = self._selected_project.id if self._selected_project else None
            if keep and not any(p.id == keep for p in self._projects):
                self._selected_project, self._selected_table = None, None
                self._listing, self._tables = [], []
                self._clear_table_view()
            self.status.show("", "ok")
            self._apply_filter()

        self._jobs.run("projects", work, done, self._failed, wait=wait)

    def _load_project(self, project: Project, *, wait: bool) -> None:
        self._selected_project, self._selected_table = project, None
        self._listing, self._tables = [], []
        self._set_quietly(self.table_list, None, options=[])
        self._clear_table_view()
        self.status.show(f"Loading the tables of {self.project_label(project)} \u2026", "busy")

        def work() -> tuple[Connection, list[Table]]:
            conn = self.connection
            return conn, list(conn.tables(project))

        def done(result: tuple[Connection, list[Table]]) -> None:
            conn, tables = result
            self._listing = tables
            order = list(KIND_WORDS)
            self._tables = sorted(
                tables, key=lambda t: (order.index(t.kind) if t.kind in order else len(order), t.name)
            )
            # the project of later %%pmsql cells, as %pmsql --project chooses it
            _current.set_project(conn, project, tables)
            self.last_error = None
            self.status.show("", "ok")
            self._apply_filter()

        self._jobs.run("tables", work, done, self._failed, wait=wait)

    def _load_table(self, table: Table, *, wait: bool) -> None:
        self._selected_table = table
        self._clear_table_view()
        label = self.table_label(table)
        self.columns_view.value = "<i>Loading columns \u2026</i>"
        self.preview_view.value = "<i>Loading preview \u2026</i>"
        self.status.show(f"Loading {label} \u2026", "busy")
        limit = self.preview_rows

        def work() -> tuple[list[Column], pd.DataFrame, int]:
            conn = self.connection
            columns = list(conn.columns(table))
            preview = conn.query(f"SELECT * FROM {table.sql_name} LIMIT {limit}")
            counted = conn.query(f"SELECT COUNT(*) AS row_count FROM {table.sql_name}")
            return columns, preview, cell_int(counted.iloc[0, 0])

        def done(result: tuple[list[Column], pd.DataFrame, int]) -> None:
            self.columns, self.preview, self.row_count = result
            self.last_error = None
            self.columns_view.value = columns_html(self.columns)
            self.count_view.value = (
                f"<b>{self.row_count:,}</b> rows in {esc(label)}; "
                f"the first {min(limit, self.row_count)} shown."
            )
            self.preview_view.value = scroll_box(preview_html(self.preview))
            self.inserter.query = self._cell_for(table)
            self.inserter.disabled = False
            self.query_view.value = (
                '<pre class="pm-query" style="margin:0.3em 0 0;line-height:normal">'
                f"{esc(self.inserter.query)}</pre>"
            )
            self.status.show("", "ok")
            self._show_state()
            for callback in self._callbacks:
                callback(table)

        def failed(exc: BaseException) -> None:
            self.columns_view.value = ""
            self.preview_view.value = ""
            self._failed(exc)

        self._jobs.run("table", work, done, failed, wait=wait)

    # --- helpers -------------------------------------------------------------------------------
    def _shortcut(self, table: Table) -> str | None:
        """The shortcut naming *table* once its project is chosen (the first listed table of its kind)."""
        first = next((t for t in self._listing if t.kind == table.kind), None)
        return table.kind if first is not None and first.name == table.name else None

    def _cell_for(self, table: Table) -> str:
        """The offered cell: it chooses the project (by name when that is unambiguous) and uses a shortcut."""
        project = self._selected_project
        if project is None:
            return pmsql_for(table)
        wanted = project.id
        if project.name:
            try:
                if find_project(self._projects, project.name).id == project.id:
                    wanted = project.name
            except (NotFound, ConfigurationError):  # a name two projects share: the id is unambiguous
                pass
        return pmsql_for(table, project=wanted, shortcut=self._shortcut(table))

    def _failed(self, exc: BaseException) -> None:
        self.last_error = exc
        self.refresh_button.disabled = False
        self.status.show(describe_error(exc), "error")

    def _clear_table_view(self) -> None:
        self._jobs.cancel("table")
        self.columns, self.preview, self.row_count = [], None, None
        self.columns_view.value = self.preview_view.value = self.count_view.value = self.query_view.value = ""
        self.inserter.query = ""
        self.inserter.disabled = True

    def _show_selected(self, select: w.Select, value: Any) -> None:
        """Select *value* in a list without a click's load; none when the filter hides it (for now)."""
        self._set_quietly(select, value if any(v == value for _, v in select.options) else None)

    def _set_quietly(self, select: w.Select, value: Any, options: list[Any] | None = None) -> None:
        """Change a list without firing the load its observer would start for a click."""
        self._quiet = True
        try:
            if options is not None:
                select.options = options
            select.value = value
        finally:
            self._quiet = False

    def _matches(self) -> tuple[list[Project], list[Table]]:
        """The projects and tables the filter lets through (the selected project is not added here)."""
        needle = self.filter.value.strip().lower()
        projects = [
            p for p in self._projects if not needle or needle in f"{self.project_label(p)} {p.id}".lower()
        ]
        tables = [
            t for t in self._tables if not needle or needle in f"{self.table_label(t)} {t.name}".lower()
        ]
        return projects, tables

    def _apply_filter(self) -> None:
        projects, tables = self._matches()
        if self._selected_project is not None and self._selected_project not in projects:
            projects.insert(0, self._selected_project)  # keep the selection visible while filtering
        keep_p = self._selected_project.id if self._selected_project else None
        keep_t = self._selected_table.name if self._selected_table else None
        self._set_quietly(
            self.project_list, keep_p, options=[(self.project_label(p), p.id) for p in projects]
        )
        table_options = [(self.table_label(t), t.name) for t in tables]
        self._set_quietly(
            self.table_list,
            keep_t if any(v == keep_t for _, v in table_options) else None,
            options=table_options,
        )
        self._show_state()

    def _show_state(self) -> None:
        """Say what the lists show now, the filter counted in; a loading or error status stays."""
        if self.status.kind not in ("ok", "idle") or not self._loaded:
            return
        projects, tables = self._matches()
        project, table = self._selected_project, self._selected_table
        text = browsing_status(
            needle=self.filter.value.strip(),
            projects=(len(projects), len(self._projects)),
            tables=(len(tables), len(self._tables)),
            project=self.project_label(project) if project is not None else None,
            table=self.table_label(table) if table is not None else None,
            columns=len(self.columns),
            rows=self.row_count,
            no_tables=not self._listing and not self._tables,
            shortcuts=[s for t in self._tables if (s := self._shortcut(t))],
        )
        self.status.show(text, "ok")

    def _find_project(self, wanted: Project | str) -> Project:
        return find_project(self._projects, wanted.id if isinstance(wanted, Project) else str(wanted))

    def _find_table(self, wanted: Table | str) -> Table:
        if self._selected_project is None:
            raise ConfigurationError(
                "Select a project before a table.", hint="select(project=..., table=...)"
            )
        key = wanted.name if isinstance(wanted, Table) else str(wanted).strip()
        for table in self._tables:
            if key == table.name:
                return table
        bare = key.strip("{}").lower()
        kind = next((k for k, word in KIND_WORDS.items() if bare in (k, word)), None)
        for table in self._listing:  # the shortcut's table: the first of its kind, as %%pmsql takes it
            if kind is not None and table.kind == kind:
                return table
        names = ", ".join(f"{KIND_WORDS.get(t.kind, t.kind)} ({t.name})" for t in self._tables) or "none"
        raise ConfigurationError(
            f"No table {key!r} in project {self.project_label(self._selected_project)!r}.",
            hint=f"Name one by what it holds (cases, tasks, transitions) or by name. Its tables: {names}.",
        )

    def _locked(self, change: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a change of the kernel's thread (a click, a filter) while no background answer applies."""
        with self._jobs.state:
            return change(*args, **kwargs)

    def _project_clicked(self, change: dict[str, Any]) -> None:
        if self._quiet or not change["new"]:
            return
        with self._jobs.state:
            project = next((p for p in self._projects if p.id == change["new"]), None)
            if project is not None:
                self._load_project(project, wait=False)

    def _table_clicked(self, change: dict[str, Any]) -> None:
        if self._quiet or not change["new"]:
            return
        with self._jobs.state:
            table = next((t for t in self._tables if t.name == change["new"]), None)
            if table is not None:
                self._load_table(table, wait=False)

    def _inserted(self, how: str) -> None:
        self.status.show(inserted_status(how), "ok")

    # --- display -------------------------------------------------------------------------------
    def _fallback_text(self) -> str:
        return FALLBACK

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        if self._autoload and not self._loaded:
            self._locked(self._refresh, wait=False)
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = self._fallback_text()
        return data

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"{self._fallback_text()}\nState: {self.status.text or 'not loaded yet'}")

    def _repr_html_(self) -> str:
        return f"<pre>{esc(self._fallback_text())}</pre>"

    def __repr__(self) -> str:
        project = self.project_label(self._selected_project) if self._selected_project else None
        table = self.table_label(self._selected_table) if self._selected_table else None
        return f"ProjectBrowser(project={project!r}, table={table!r}, status={self.status.text!r})"
