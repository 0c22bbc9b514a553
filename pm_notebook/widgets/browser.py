"""``ProjectBrowser``: projects → tables → columns and a preview, without writing a query."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from .._cells import cell_int
from .._context import get_current
from .._models import Column, Project, Table
from ..connection import Connection
from ..errors import ConfigurationError
from ._common import NO_WIDGETS, Jobs, StatusLine, close_children, describe_error, esc, scroll_box
from ._insert import QueryInserter

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["ProjectBrowser", "pmsql_for"]

log = logging.getLogger(__name__)


def pmsql_for(table: Table, limit: int = 100) -> str:
    """The ready ``%%pmsql`` cell offered for *table*.

    >>> pmsql_for(Table(name="p-1_vertex", project_id="p-1"))
    '%%pmsql\\nSELECT *\\nFROM "p-1_vertex"\\nLIMIT 100'
    """
    return f"%%pmsql\nSELECT *\nFROM {table.sql_name}\nLIMIT {int(limit)}"


def _project_label(project: Project) -> str:
    return f"{project.name} \u2014 {project.id}" if project.name else project.id


def _columns_html(columns: list[Column]) -> str:
    rows = "".join(
        f"<tr><td>{esc(c.name)}</td><td><code>{esc(c.data_type)}</code></td></tr>" for c in columns
    )
    return scroll_box(
        '<table class="pm-columns"><thead><tr><th>Column</th><th>Druid type</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


class ProjectBrowser(w.VBox):
    """Browse the workgroup: projects (REST listing) → tables → columns (INFORMATION_SCHEMA) → preview.

    :param connection: the connection to browse; by default the notebook's current one (set by
        :class:`~pm_notebook.widgets.CredentialWidget` or :func:`pm_notebook._context.set_current`),
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
        self._tables: list[Table] = []
        self._selected_project: Project | None = None
        self._selected_table: Table | None = None
        self.columns: list[Column] = []
        self.preview: pd.DataFrame | None = None  # the first rows, once loaded
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
            layout=w.Layout(width="34em"),
            style={"description_width": "5em"},
        )
        self.table_list = w.Select(
            options=[],
            rows=8,
            description="Tables",
            layout=w.Layout(width="28em"),
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
                w.HBox([self.inserter, self.query_view]),
            ],
            **kwargs,
        )
        self.add_class("pm-browser")
        self.inserter.anchor = self.model_id
        self.status.show("Click Refresh to list the projects." if not autoload else "")
        self.filter.observe(lambda _c: self._apply_filter(), names="value")
        self.refresh_button.on_click(lambda _b: self._refresh(wait=False))
        self.project_list.observe(self._project_clicked, names="value")
        self.table_list.observe(self._table_clicked, names="value")

    # --- public API ----------------------------------------------------------------------------
    @property
    def connection(self) -> Connection:
        """The browsed connection: the injected one, else the notebook's current one."""
        conn = self._connection or get_current()
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
        """The tables of the selected project (unfiltered)."""
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

    def refresh(self) -> list[Project]:
        """Reload the project list (as the Refresh button does) and wait; returns the projects."""
        self._refresh(wait=True)
        return self.projects

    def select(self, project: Project | str | None = None, table: Table | str | None = None) -> None:
        """Select a project and/or a table (by object, id or name) as a click would, and wait.

        :raises ConfigurationError: no listed project or table matches.
        """
        if not self._loaded:
            self._refresh(wait=True)
        if project is not None:
            chosen = self._find_project(project)
            self._set_quietly(self.project_list, chosen.id)
            self._load_project(chosen, wait=True)
        if table is not None:
            chosen_table = self._find_table(table)
            self._set_quietly(self.table_list, chosen_table.name)
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
        """Drop pending loads and close the widget (the connection stays open)."""
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
            self._apply_filter()
            if keep and any(p.id == keep for p in self._projects):
                self._set_quietly(self.project_list, keep)
            n = len(self._projects)
            self.status.show(f"{n} project{'s' if n != 1 else ''}. Select one to see its tables.", "ok")

        self._jobs.run("projects", work, done, self._failed, wait=wait)

    def _load_project(self, project: Project, *, wait: bool) -> None:
        self._selected_project, self._selected_table = project, None
        self._tables = []
        self._set_quietly(self.table_list, None, options=[])
        self._clear_table_view()
        self.status.show(f"Loading the tables of {_project_label(project)} \u2026", "busy")

        def work() -> list[Table]:
            return list(self.connection.tables(project))

        def done(tables: list[Table]) -> None:
            self._tables = sorted(tables, key=lambda t: t.name)
            self.last_error = None
            self._apply_filter()
            n = len(self._tables)
            self.status.show(f"{project.name or project.id}: {n} table{'s' if n != 1 else ''}.", "ok")

        self._jobs.run("tables", work, done, self._failed, wait=wait)

    def _load_table(self, table: Table, *, wait: bool) -> None:
        self._selected_table = table
        self._clear_table_view()
        self.columns_view.value = "<i>Loading columns \u2026</i>"
        self.preview_view.value = "<i>Loading preview \u2026</i>"
        self.status.show(f"Loading {table.name} \u2026", "busy")
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
            self.columns_view.value = _columns_html(self.columns)
            self.count_view.value = (
                f"<b>{self.row_count:,}</b> rows in <code>{esc(table.name)}</code>; "
                f"the first {min(limit, self.row_count)} shown."
            )
            self.preview_view.value = scroll_box(
                self.preview.to_html(index=False, max_cols=40, border=0, classes="pm-preview")
            )
            self.inserter.query = pmsql_for(table)
            self.inserter.disabled = False
            self.query_view.value = f"<code>{esc(' '.join(self.inserter.query.splitlines()[1:]))}</code>"
            self.status.show(f"{table.name}: {len(self.columns)} columns, {self.row_count:,} rows.", "ok")
            for callback in self._callbacks:
                callback(table)

        def failed(exc: BaseException) -> None:
            self.columns_view.value = ""
            self.preview_view.value = ""
            self._failed(exc)

        self._jobs.run("table", work, done, failed, wait=wait)

    # --- helpers -------------------------------------------------------------------------------
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

    def _set_quietly(self, select: w.Select, value: Any, options: list[Any] | None = None) -> None:
        """Change a list without firing the load its observer would start for a click."""
        self._quiet = True
        try:
            if options is not None:
                select.options = options
            select.value = value
        finally:
            self._quiet = False

    def _apply_filter(self) -> None:
        needle = self.filter.value.strip().lower()
        projects = [p for p in self._projects if not needle or needle in _project_label(p).lower()]
        if self._selected_project is not None and self._selected_project not in projects:
            projects.insert(0, self._selected_project)  # keep the selection visible while filtering
        tables = [
            t
            for t in self._tables
            if not needle
            or needle in t.name.lower()
            or (
                self._selected_project is not None
                and needle in _project_label(self._selected_project).lower()
            )
        ]
        keep_p = self._selected_project.id if self._selected_project else None
        keep_t = self._selected_table.name if self._selected_table else None
        self._set_quietly(self.project_list, keep_p, options=[(_project_label(p), p.id) for p in projects])
        table_options = [(t.name, t.name) for t in tables]
        self._set_quietly(
            self.table_list,
            keep_t if any(v == keep_t for _, v in table_options) else None,
            options=table_options,
        )

    def _find_project(self, wanted: Project | str) -> Project:
        key = wanted.id if isinstance(wanted, Project) else str(wanted)
        for project in self._projects:
            if key in (project.id, project.name):
                return project
        raise ConfigurationError(
            f"No project {key!r} in this workgroup's listing.",
            hint="Use a project id or name from browser.projects, or call refresh().",
        )

    def _find_table(self, wanted: Table | str) -> Table:
        if self._selected_project is None:
            raise ConfigurationError(
                "Select a project before a table.", hint="select(project=..., table=...)"
            )
        key = wanted.name if isinstance(wanted, Table) else str(wanted)
        for table in self._tables:
            if key == table.name:
                return table
        names = ", ".join(t.name for t in self._tables) or "none"
        raise ConfigurationError(
            f"No table {key!r} in project {self._selected_project.id}.", hint=f"Its tables: {names}."
        )

    def _project_clicked(self, change: dict[str, Any]) -> None:
        if self._quiet or not change["new"]:
            return
        project = next((p for p in self._projects if p.id == change["new"]), None)
        if project is not None:
            self._load_project(project, wait=False)

    def _table_clicked(self, change: dict[str, Any]) -> None:
        if self._quiet or not change["new"]:
            return
        table = next((t for t in self._tables if t.name == change["new"]), None)
        if table is not None:
            self._load_table(table, wait=False)

    def _inserted(self, how: str) -> None:
        text = {
            "cell": "The %%pmsql query was inserted into a new cell below.",
            "clipboard": "The %%pmsql query was copied to the clipboard: paste it into a cell.",
        }.get(how, "Copy the %%pmsql query shown next to the button into a cell.")
        self.status.show(text, "ok")

    # --- display -------------------------------------------------------------------------------
    def _fallback_text(self) -> str:
        return (
            f"pm_notebook project browser\n{NO_WIDGETS}\n"
            "Or list them in code: conn.projects(), conn.tables(project), conn.columns(table)."
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        if self._autoload and not self._loaded:
            self._refresh(wait=False)
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = self._fallback_text()
        return data

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"{self._fallback_text()}\nState: {self.status.text or 'not loaded yet'}")

    def _repr_html_(self) -> str:
        return f"<pre>{esc(self._fallback_text())}</pre>"

    def __repr__(self) -> str:
        project = self._selected_project.id if self._selected_project else None
        table = self._selected_table.name if self._selected_table else None
        return f"ProjectBrowser(project={project!r}, table={table!r}, status={self.status.text!r})"
