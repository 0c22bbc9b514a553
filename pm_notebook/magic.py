"""``%load_ext pm_notebook``: the ``%pmsql`` line magic and the ``%%pmsql`` cell magic.

Thin by design: :mod:`._magic_args` parses the line, :mod:`._template` fills ``{name}`` / ``:name``,
:class:`pm_notebook.Connection` runs the query, :mod:`._magic_display` renders. Service errors become a short
IPython ``UsageError`` here and only here (full traceback with ``--verbose``).

Capture convention: ``%%pmsql -o df`` stores the DataFrame in ``df`` (and still displays it unless
``--no-display``); the line form returns it: ``df = %pmsql SELECT ...``.

Tab completion inside ``%pmsql`` lines and ``%%pmsql`` cells (table names, ``{cases}``-style shortcuts, column
names of the chosen project's tables, options) is an IPython completion matcher (API v2), so it works in the
terminal and in Jupyter kernels alike.

>>> %load_ext pm_notebook                                  # doctest: +SKIP
>>> %pmsql --project "Purchase to pay"                     # doctest: +SKIP
>>> %%pmsql -o slow                                        # doctest: +SKIP
... SELECT caseid, duration FROM {cases} WHERE duration > :threshold ORDER BY __time DESC
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from traitlets import Bool, Enum, Float, Int

from . import _context
from ._magic_args import OPTION_NAMES, TRANSPORTS, USAGE, ArgumentError, MagicArgs, parse_args
from ._magic_display import Footer, ProgressLine, ResultView, TextView, format_error
from ._template import TemplateError, render
from .config import ENV_VARS
from .connection import Connection, connect
from .errors import ConfigurationError, PMError

__all__ = ["PmSql", "load_ipython_extension", "unload_ipython_extension"]

logger = logging.getLogger(__name__)

SHORTCUTS = ("cases", "vertex", "edge")
_EXPLAIN = "EXPLAIN PLAN FOR "


@dataclass
class _ProjectChoice:
    """The project chosen with ``--project`` and its tables, for one connection."""

    conn: Any
    project: Any
    tables: list[Any]

    def table(self, kind: str) -> Any | None:
        return next((t for t in self.tables if t.kind == kind), None)


@dataclass
class _Call:
    """What one invocation sent, so an error can point into the query."""

    sql: str | None = None
    line_offset: int = 0
    column_offset: int = 0


def pick_project(projects: list[Any], wanted: str) -> Any:
    """The project whose id, or else name (case-insensitively), is *wanted*; a clear error otherwise.

    >>> from pm_notebook._models import Project
    >>> pick_project([Project("p-1", "Sales"), Project("p-2", "HR")], "hr").id
    'p-2'
    """
    for p in projects:
        if p.id == wanted:
            return p
    exact = [p for p in projects if p.name == wanted]
    matches = exact or [p for p in projects if (p.name or "").casefold() == wanted.casefold()]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(f"{p.name!r} ({p.id})" for p in projects) or "none"
    if not matches:
        raise ConfigurationError(
            f"No project named or with id {wanted!r} in this workgroup.",
            hint=f"Projects you can see: {known}.",
        )
    raise ConfigurationError(
        f"{len(matches)} projects are named {wanted!r}.", hint=f"Use the project id instead: {known}."
    )


@magics_class
class PmSql(Magics):
    """``%pmsql`` / ``%%pmsql``; its options are settable with ``%config PmSql.<option> = value``."""

    autolimit = Int(
        0,
        config=True,
        help="Fetch at most this many rows per query (0 = no limit); --limit N overrides it for one query.",
    )
    displaylimit = Int(
        20, config=True, help="Rows shown under a cell (the DataFrame keeps every row); 0 = all."
    )
    transport = Enum(
        TRANSPORTS,
        default_value=None,
        allow_none=True,
        config=True,
        help="SQL transport for queries; None uses the connection's default.",
    )
    verbose = Bool(False, config=True, help="Show the SQL sent and full tracebacks on errors.")
    progress = Bool(True, config=True, help="Show elapsed time and rows fetched for long queries.")
    progress_delay = Float(1.0, config=True, help="Seconds a query runs before its progress line appears.")
    chunk_rows = Int(10_000, config=True, help="Rows fetched per round trip while streaming a result.")

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._owned: Connection | None = None  # the connection this magic opened (closed when replaced)
        self._choice: _ProjectChoice | None = None
        self._columns: dict[str, list[str]] = {}  # completion cache: table name -> column names
        self._tables_seen: list[Any] = []  # completion cache: tables of the chosen project or workgroup

    # --- entry point ---------------------------------------------------------------------------
    @no_var_expand  # `{name}` is ours: IPython must not paste values into the SQL line
    @needs_local_scope
    @line_cell_magic
    def pmsql(self, line: str, cell: str | None = None, local_ns: dict | None = None) -> Any:
        """Run Druid SQL against the process-mining service; ``%pmsql --help`` lists the options."""
        try:
            args = parse_args(line, cell)
        except ArgumentError as err:
            raise UsageError(str(err)) from None
        if args.help:
            self._show(TextView(USAGE))
            return None
        if args.chunks and cell is not None and not args.output:
            raise UsageError("--chunks streams an iterator of DataFrames: keep it with -o NAME.")
        verbose = args.verbose or self.verbose
        namespace = ChainMap(local_ns or {}, self.shell.user_ns)
        call = _Call()
        try:
            return self._run(args, namespace, call, line_form=cell is None, verbose=verbose)
        except (PMError, TemplateError, KeyboardInterrupt) as err:
            if verbose and not isinstance(err, KeyboardInterrupt):
                raise
            message = format_error(
                err,
                sql=call.sql,
                line_offset=call.line_offset,
                column_offset=call.column_offset,
                verbose=verbose,
            )
            raise UsageError(message) from err

    # --- steps ---------------------------------------------------------------------------------
    def _run(
        self, args: MagicArgs, ns: Mapping[str, Any], call: _Call, *, line_form: bool, verbose: bool
    ) -> Any:
        conn = self._connection(args, ns)
        if args.project:
            self._choose_project(conn, args.project)
        if args.tables:
            return self._result(self._tables_frame(conn), args, line_form, started=None)
        if args.columns is not None:
            return self._result(self._columns_frame(conn, args.columns), args, line_form, started=None)
        if not args.sql:
            connected = not args.project or args.connect or args.env_file or args.connection
            self._show(TextView(self._status(conn, connected=bool(connected))))
            return None
        return self._query(conn, args, ns, call, line_form=line_form, verbose=verbose)

    def _connection(self, args: MagicArgs, ns: Mapping[str, Any]) -> Any:
        if args.connection:
            if args.connection not in ns:
                raise ConfigurationError(
                    f"--connection {args.connection}: no Python variable of that name.",
                    hint="Create it with conn = pm_notebook.connect(...).",
                )
            conn = ns[args.connection]
            if not isinstance(conn, Connection):
                raise ConfigurationError(
                    f"--connection {args.connection}: expected a pm_notebook Connection, "
                    f"got a {type(conn).__name__}.",
                    hint="Create it with pm_notebook.connect(...).",
                )
            self._adopt(conn, owned=False)
            return conn
        if args.connect or args.env_file:
            self._adopt(connect(**self._env_file_values(args.env_file)), owned=True)
        current = _context.get_current()
        if current is None:
            current = connect()
            self._adopt(current, owned=True)
        return current

    @staticmethod
    def _env_file_values(path: str | None) -> dict[str, str]:
        if path is None:
            return {}
        if not Path(path).is_file():
            raise ConfigurationError(
                f"--env-file {path}: no such file.",
                hint="Give the path of a .env file with PM_BASE_URL, PM_CLIENT_ID, ...",
            )
        from dotenv import dotenv_values

        # The file's values are passed as arguments so that they win over PM_* variables of the process.
        found = dotenv_values(path)
        values = {arg: found[var] for arg, var in ENV_VARS.items() if found.get(var)}
        if not values:
            raise ConfigurationError(f"--env-file {path}: it sets none of {', '.join(ENV_VARS.values())}.")
        return {**values, "env_file": path}

    def _adopt(self, conn: Any, *, owned: bool) -> None:
        """Make *conn* current; close the connection this magic opened before, if it is being replaced."""
        previous = self._owned
        if previous is not None and previous is not conn:
            try:
                previous.close()
            except Exception:  # closing the old connection must not block using the new one
                logger.debug("closing the previous %%pmsql connection failed", exc_info=True)
        self._owned = conn if owned else None
        _context.set_current(conn)

    def _status(self, conn: Any, *, connected: bool) -> str:
        lines = [f"Connected to {conn.settings.base_url}."] if connected else []
        if self._choice and self._choice.conn is conn:
            p = self._choice.project
            names = ", ".join(f"{{{k}}} = {t.sql_name}" for k in SHORTCUTS if (t := self._choice.table(k)))
            lines.append(f"Project {p.name!r} ({p.id}): {names or 'no tables yet'}.")
        return "\n".join(lines)

    def _choose_project(self, conn: Any, wanted: str) -> None:
        project = pick_project(conn.projects(), wanted)
        tables = conn.tables(project)
        self._choice = _ProjectChoice(conn=conn, project=project, tables=tables)
        self._tables_seen = list(tables)

    def _shortcut(self, conn: Any, name: str) -> str | None:
        if name not in SHORTCUTS or self._choice is None or self._choice.conn is not conn:
            return None
        table = self._choice.table(name)
        if table is None:
            project = self._choice.project.name
            raise ConfigurationError(f"{{{name}}}: project {project!r} has no {name} table.")
        return table.sql_name

    def _tables_frame(self, conn: Any) -> Any:
        import pandas as pd

        if self._choice is not None and self._choice.conn is conn:
            projects = {self._choice.project.id: self._choice.project}
            tables = list(self._choice.tables)
        else:
            projects = {p.id: p for p in conn.projects()}
            tables = [t for p in projects.values() for t in conn.tables(p)]
            self._tables_seen = tables
        rows = [
            {
                "project": projects[t.project_id].name if t.project_id in projects else None,
                "project_id": t.project_id,
                "table": t.name,
                "kind": t.kind,
            }
            for t in tables
        ]
        return pd.DataFrame(rows, columns=["project", "project_id", "table", "kind"])

    def _columns_frame(self, conn: Any, wanted: str) -> Any:
        import pandas as pd

        name = wanted.strip().strip("{}").strip()
        table: Any = name
        if name in SHORTCUTS and self._choice is not None and self._choice.conn is conn:
            table = self._choice.table(name) or name
        elif len(name) > 1 and name[0] == name[-1] == '"':
            table = name[1:-1].replace('""', '"')
        columns = conn.columns(table)
        self._columns[getattr(table, "name", table)] = [c.name for c in columns]
        rows = [c.as_dict() for c in columns]
        return pd.DataFrame(rows, columns=["name", "data_type", "ordinal", "nullable"])

    def _query(
        self,
        conn: Any,
        args: MagicArgs,
        ns: Mapping[str, Any],
        call: _Call,
        *,
        line_form: bool,
        verbose: bool,
    ) -> Any:
        rendered = render(args.sql, ns.__getitem__, identifier=lambda name: self._shortcut(conn, name))
        call.sql = rendered.sql
        sql = rendered.sql
        if args.explain:
            sql, call.column_offset = _EXPLAIN + sql, len(_EXPLAIN)
        params = rendered.params or None
        transport = args.transport or self.transport
        if verbose:
            names = ", ".join(f":{n}" for n in dict.fromkeys(rendered.param_names))
            header = f"-- transport: {transport or 'default'}; parameters: {names or 'none'}"
            self._show(TextView(f"{header}\n{sql}"))
        started = time.monotonic()
        if args.to_parquet:
            rows = conn.to_parquet(sql, args.to_parquet, params, transport=transport)
            if args.display:
                self._show(
                    TextView(
                        f"Wrote {rows:,} rows to {args.to_parquet} in {time.monotonic() - started:.2f} s."
                    )
                )
            return None
        if args.chunks:
            chunks = conn.query_chunks(sql, params, chunk_rows=args.chunks, transport=transport)
            if args.output:
                self.shell.user_ns[args.output] = chunks
                if args.display:
                    self._show(
                        TextView(
                            f"{args.output} streams the result: `for frame in {args.output}: "
                            f"...` gives DataFrames of up to {args.chunks:,} rows."
                        )
                    )
                return None
            return chunks
        limit = args.limit if args.limit is not None else self.autolimit
        frame, stopped = self._fetch(conn, sql, params, transport=transport, limit=limit)
        if args.explain:
            plan = "\n".join(str(v) for v in frame.iloc[:, 0]) if len(frame.columns) else ""
            if args.display:
                self._show(TextView(plan))
            return self._keep(frame, args, line_form)
        return self._result(
            frame,
            args,
            line_form,
            started=started,
            limit=limit if stopped else None,
            transport=frame.attrs.get("transport") or transport or getattr(conn, "sql_transport", None),
        )

    def _fetch(
        self, conn: Any, sql: str, params: list | None, *, transport: str | None, limit: int
    ) -> tuple[Any, bool]:
        """Run the query; stream it when a progress line or a row limit needs rows as they arrive."""
        if not self.progress and not limit:
            return conn.query(sql, params, transport=transport), False
        import pandas as pd

        chunk_rows = min(self.chunk_rows, limit + 1) if limit else self.chunk_rows
        progress = None
        if self.progress:
            progress = ProgressLine(self._progress_display(), delay=self.progress_delay)
        frames: list[Any] = []
        total, stopped = 0, False
        chunks = conn.query_chunks(sql, params, chunk_rows=chunk_rows, transport=transport)
        try:
            for chunk in chunks:
                frames.append(chunk)
                total += len(chunk)
                if progress:
                    progress.rows(total)
                if limit and total > limit:
                    stopped = True
                    break
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # ends the statement on the server when we stop early or are interrupted
            if progress:
                progress.stop()
        if not frames:
            raise PMError(
                "The query returned no result set.", hint="Only SELECT-like statements return rows."
            )
        parts = [f for f in frames if len(f)] or frames[:1]  # an empty chunk only matters when it is all
        frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        frame.attrs = dict(frames[0].attrs)
        if stopped:
            frame = frame.iloc[:limit].copy()
            frame.attrs = dict(frames[0].attrs)
        return frame, stopped

    def _result(
        self,
        frame: Any,
        args: MagicArgs,
        line_form: bool,
        *,
        started: float | None,
        limit: int | None = None,
        transport: str | None = None,
    ) -> Any:
        if args.display and (args.output or not line_form):
            elapsed = time.monotonic() - started if started is not None else 0.0
            footer = Footer(
                rows=len(frame),
                columns=len(frame.columns),
                elapsed=elapsed,
                transport=transport if started is not None else None,
                limit=limit,
            )
            self._show(ResultView(frame, footer, displaylimit=self.displaylimit))
        return self._keep(frame, args, line_form)

    def _keep(self, frame: Any, args: MagicArgs, line_form: bool) -> Any:
        if args.output:
            self.shell.user_ns[args.output] = frame
            return None
        return frame if line_form else None

    # --- display -------------------------------------------------------------------------------
    def _show(self, obj: Any, *, display_id: str | None = None, update: bool = False) -> None:
        """Publish *obj* through this shell (not the global singleton), so any shell can host the magic."""
        data, metadata = self.shell.display_formatter.format(obj)
        if display_id is None:
            self.shell.display_pub.publish(data, metadata)
        else:
            transient = {"display_id": display_id}
            self.shell.display_pub.publish(data, metadata, transient=transient, update=update)

    def _progress_display(self) -> Any:
        display_id = uuid.uuid4().hex
        shown = False

        def show(text: str) -> None:
            nonlocal shown
            self._show(TextView(text), display_id=display_id, update=shown)
            shown = True

        return show

    # --- tab completion (IPython matcher API v2) -------------------------------------------------
    def complete(self, context: Any) -> dict:
        """Complete table names, ``{cases}``-style shortcuts and column names inside ``%pmsql`` code."""
        from IPython.core.completer import SimpleCompletion

        lines = context.full_text.split("\n")
        in_cell = lines[0].lstrip().startswith("%%pmsql") and context.cursor_line > 0
        in_line = context.line_with_cursor.lstrip().startswith("%pmsql")
        if not (in_cell or in_line):
            return {"completions": [], "suppress": False}
        token = context.token
        words: dict[str, str] = {}
        if in_line and token.startswith("-"):
            words.update((opt, "option") for opt in OPTION_NAMES)
        else:
            words.update(self._completion_words())
        found = [SimpleCompletion(w, type=kind) for w, kind in sorted(words.items()) if w.startswith(token)]
        return {"completions": found, "suppress": bool(found)}

    def _completion_words(self) -> dict[str, str]:
        words: dict[str, str] = {}
        conn = _context.get_current()
        if conn is None:
            return words
        if self._choice is not None and self._choice.conn is conn:
            words.update((k, "shortcut") for k in SHORTCUTS if self._choice.table(k))
        tables = self._tables_seen
        for t in tables:
            words[t.name] = "table"
            if t.name not in self._columns:
                try:
                    self._columns[t.name] = [c.name for c in conn.columns(t)]
                except Exception:  # completion must never raise into the editor; it just offers less
                    logger.debug("no columns for completion of %s", t.name, exc_info=True)
                    self._columns[t.name] = []
            words.update((c, "column") for c in self._columns[t.name])
        return words


# `%pmsql?` shows the docstring: make it the full option list.
PmSql.pmsql.__doc__ = f"{PmSql.pmsql.__doc__}\n\n{USAGE}"


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%pmsql``/``%%pmsql``, ``%config PmSql`` and the completer on *ipython*."""
    unload_ipython_extension(ipython)
    magic = PmSql(shell=ipython)  # Magics.__init__ adds it to ipython.configurables (for %config PmSql)
    ipython.register_magics(magic)

    def pmsql_matcher(context: Any) -> dict:
        return magic.complete(context)

    pmsql_matcher.matcher_api_version = 2  # type: ignore[attr-defined]
    pmsql_matcher.matcher_identifier = "pm_notebook.pmsql"  # type: ignore[attr-defined]
    pmsql_matcher.matcher_priority = 1  # type: ignore[attr-defined]
    completer = getattr(ipython, "Completer", None)
    if completer is not None:
        completer.custom_matchers.append(pmsql_matcher)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove what :func:`load_ipython_extension` added (``%reload_ext`` calls both)."""
    ipython.configurables[:] = [c for c in ipython.configurables if not isinstance(c, PmSql)]
    completer = getattr(ipython, "Completer", None)
    if completer is not None:
        completer.custom_matchers[:] = [
            m
            for m in completer.custom_matchers
            if getattr(m, "matcher_identifier", None) != "pm_notebook.pmsql"
        ]
