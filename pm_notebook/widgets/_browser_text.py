"""What the :class:`~pm_notebook.widgets.ProjectBrowser` says, apart from how it is wired: the labels of its
lists, the ``%%pmsql`` cell it offers, its HTML tables and its status lines. Plain functions of the records
and counts they are given; the browser calls them with its state."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from .._models import Column, Project, Table
from ._common import NO_WIDGETS, esc, scroll_box

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "FALLBACK",
    "KIND_WORDS",
    "browsing_status",
    "columns_html",
    "inserted_status",
    "pmsql_for",
    "preview_html",
    "project_label",
    "short_id",
    "table_label",
]


#: what an analyst calls each kind of table, in the order the browser lists them
KIND_WORDS = {"cases": "cases", "vertex": "tasks", "edge": "transitions"}

# an id at the start of a value: a UUID (a project, table or graph key, maybe with a suffix such as
# ``_vertex``) or a 32-digit hex hash (a task's vertex_id)
_LONG_ID = re.compile(r"[0-9a-fA-F]{8}(?:(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|[0-9a-fA-F]{24})")


def pmsql_for(
    table: Table, limit: int = 100, *, project: str | None = None, shortcut: str | None = None
) -> str:
    """The ready ``%%pmsql`` cell offered for *table*.

    :param project: the ``--project`` value (a name or id) that makes the cell choose the table's project,
        for itself and the cells after it.
    :param shortcut: ``cases``, ``vertex`` or ``edge``: name the table by its shortcut (``{vertex}``) rather
        than by its quoted name; only with *project*.

    >>> pmsql_for(Table(name="p-1_vertex", project_id="p-1"))
    '%%pmsql\\nSELECT *\\nFROM "p-1_vertex"\\nLIMIT 100'
    >>> print(pmsql_for(Table(name="p-1_vertex", project_id="p-1"), project="My project", shortcut="vertex"))
    %%pmsql --project "My project"
    SELECT *
    FROM {vertex}
    LIMIT 100
    """
    head = "%%pmsql"
    if project is not None:
        # the magic's option parser groups quotes as a shell does; double quotes read best when they fit
        quoted = f'"{project}"' if '"' not in project else shlex.quote(project)
        head += f" --project {quoted}"
    source = f"{{{shortcut}}}" if project is not None and shortcut else table.sql_name
    return f"{head}\nSELECT *\nFROM {source}\nLIMIT {int(limit)}"


def short_id(value: object) -> object:
    """*value* with a leading long id (a UUID, a 32-digit hex hash) cut to its first 8 characters
    (``325d96a9…_vertex``); other values as they are. The preview shows ids this way so that a row stays one
    line; the DataFrame keeps them whole.

    >>> short_id("325d96a9-31c5-53e4-971a-990ae45ca02f_vertex"), short_id(12), short_id("PO-0001")
    ('325d96a9…_vertex', 12, 'PO-0001')
    """
    if isinstance(value, str) and (found := _LONG_ID.match(value)):
        return f"{value[:8]}\u2026{value[found.end() :]}"
    return value


def preview_html(frame: pd.DataFrame) -> str:
    """The preview table, ids shortened (:func:`short_id`); the frame itself is not changed."""
    import pandas as pd

    def shorten(value: object) -> str:
        return str(short_id(value))

    texts = [c for c in frame.columns if pd.api.types.is_string_dtype(frame[c])]
    html: str = frame.to_html(
        index=False, max_cols=40, border=0, classes="pm-preview", formatters=dict.fromkeys(texts, shorten)
    )
    return html


def columns_html(columns: list[Column]) -> str:
    rows = "".join(
        f"<tr><td>{esc(c.name)}</td><td><code>{esc(c.data_type)}</code></td></tr>" for c in columns
    )
    return scroll_box(
        '<table class="pm-columns"><thead><tr><th>Column</th><th>Druid type</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def project_label(project: Project, projects: list[Project]) -> str:
    """How the Projects list shows *project*: its name (with the start of its id when another of *projects*
    has the same name), its id only when it has no name."""
    if not project.name:
        return project.id
    if sum(p.name == project.name for p in projects) > 1:
        return f"{project.name} ({short_id(project.id)})"
    return project.name


def table_label(table: Table, *, shortcut: bool, owner: str | None) -> str:
    """How the Tables list shows *table*: what it holds and its project (``tasks — Purchase to Pay``).

    A table that is not its kind's *shortcut* table (a second transitions table) adds what its name has after
    the project id, so no two labels are alike. *owner*: the label of the table's project when known (else
    the start of its id).
    """
    word = KIND_WORDS.get(table.kind, table.kind)
    if not shortcut:
        rest = table.name[len(table.project_id) :] if table.name.startswith(table.project_id) else ""
        word += f" ({rest.lstrip('_') or short_id(table.name)})"
    return f"{word} \u2014 {owner or short_id(table.project_id)}"


def browsing_status(
    *,
    needle: str,
    projects: tuple[int, int],
    tables: tuple[int, int],
    project: str | None,
    table: str | None,
    columns: int,
    rows: int | None,
    no_tables: bool,
    shortcuts: list[str],
) -> str:
    """The status line of what the lists show: *projects* and *tables* as (shown, total) under the filter
    *needle*; *project* and *table* the labels of the selected ones; *columns* and *rows* the selected
    table's; *no_tables*: the selected project has none; *shortcuts*: the ``%%pmsql`` shortcuts it gives."""
    (k, n), (j, m) = projects, tables

    def counted(shown: int, total: int, noun: str) -> str:
        plural = noun if total == 1 else noun + "s"
        return f"{shown} of {total} {plural}" if needle else f"{total} {plural}"

    if table is not None and rows is not None:
        text = f"{table}: {columns} columns, {rows:,} rows."
        if needle:
            text += f" Filter {needle!r}: {counted(k, n, 'project')}, {counted(j, m, 'table')}."
    elif project is not None and no_tables:
        text = f"{project}: no tables yet."
    elif project is not None:
        text = f"{project}: {counted(j, m, 'table')}"
        text += f" match {needle!r}." if needle else "."
        if shortcuts:
            text += f" %%pmsql cells now use it: {', '.join(f'{{{s}}}' for s in shortcuts)}."
        text += " Select a table to see its columns and rows."
    else:
        text = counted(k, n, "project") + (f" match {needle!r}." if needle else ".")
        text += " Select one to see its tables." if k else " Clear the filter to see them all."
    return text


def inserted_status(how: str) -> str:
    """The status line once the offered cell went *how* (``cell``, ``clipboard``, or shown to copy)."""
    return {
        "cell": "The %%pmsql cell below the browser is ready: run it.",
        "clipboard": "The %%pmsql cell was copied to the clipboard: paste it into a cell.",
    }.get(how, "Copy the %%pmsql cell shown under the button into a cell.")


#: what a frontend that cannot show widgets shows instead
FALLBACK = (
    f"pm_notebook project browser\n{NO_WIDGETS}\n"
    "Or list them in code: conn.projects(), conn.tables(project), conn.columns(table)."
)
