"""The ``%pmsql`` line magic and the ``%%pmsql`` cell magic: parse, delegate, render.

:mod:`.args` parses the line, :mod:`.template` fills ``{name}`` / ``:name``, :class:`.session.Session`
picks the connection and project, :meth:`pm_notebook.Connection.fetch` runs the query (row cap, progress)
and says which transport served it, :mod:`.display` renders. Service errors keep their type and are shown
short, with a caret in the cell (:func:`.display.shown`; the full traceback with ``--verbose``); a malformed
``%pmsql`` line is an IPython ``UsageError``.

Capture convention: ``%%pmsql -o df`` stores the DataFrame in ``df`` (and still displays it unless
``--no-display``); the line form returns it: ``df = %pmsql SELECT ...``.
"""

from __future__ import annotations

import time
import uuid
from collections import ChainMap
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from traitlets import Bool, Dict, Enum, Float, Int, TraitError, Unicode, validate

from .. import _current
from ..connection import OUTPUTS, Connection
from ..errors import ConfigurationError, PMError, QueryCancelled, QueryError
from ..query_context import check_context, describe_context, merge_contexts
from ..sql import TRANSPORTS
from . import completion
from .args import USAGE, ArgumentError, MagicArgs, parse_args
from .display import Footer, ProgressLine, ResultView, Source, TextView, format_error, shown
from .projects import columns_frame, tables_frame
from .session import Session
from .template import TemplateError, render

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.completer import CompletionContext, SimpleMatcherResult

__all__ = ["PmSql"]

_EXPLAIN = "EXPLAIN PLAN FOR "


@dataclass
class _Call:
    """What one invocation sent and where it came from, so an error can point into the cell."""

    sql: str | None = None
    source: Source | None = None


@magics_class
class PmSql(Magics):
    """``%pmsql`` / ``%%pmsql``; its options are settable with ``%config PmSql.<option> = value``."""

    #: the identifier of this magic's completion matcher (found again by ``%unload_ext``)
    matcher_identifier = "pm_notebook.pmsql"

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
    output = Enum(
        OUTPUTS,
        default_value="pandas",
        config=True,
        help="What a query's result becomes: 'pandas' or 'polars' (the polars extra); --polars: one query.",
    )
    progress = Bool(True, config=True, help="Show elapsed time and rows fetched for long queries.")
    progress_delay = Float(1.0, config=True, help="Seconds a query runs before its progress line appears.")
    chunk_rows = Int(10_000, config=True, help="Rows fetched per round trip while streaming a result.")
    cache = Bool(
        False,
        config=True,
        help="Store every result and listing in the cache folder for offline replay (--cache on every cell).",
    )
    replay = Bool(
        False,
        config=True,
        help="Answer every query from the cache folder: no network, no credentials (also PM_REPLAY=1).",
    )
    cache_dir = Unicode(
        None,
        allow_none=True,
        config=True,
        help="The cache folder; None: the connection's (PM_CACHE_DIR, else .pm_cache beside the notebook).",
    )

    context = Dict(
        config=True,
        help="Druid query context keys sent with every query, e.g. {'sqlTimeZone': 'Europe/Paris'}; laid "
        "over the connection's default (PM_QUERY_CONTEXT), and --context KEY=VALUE over it.",
    )

    @validate("context")
    def _checked_context(self, proposal: Any) -> dict[str, Any]:
        try:
            return check_context(proposal["value"])
        except ConfigurationError as err:
            raise TraitError(f"PmSql.context: {err}") from None

    @validate("chunk_rows")
    def _positive_chunk_rows(self, proposal: Any) -> int:
        if proposal["value"] < 1:
            raise TraitError(f"PmSql.chunk_rows must be a positive number of rows, got {proposal['value']}.")
        return int(proposal["value"])

    @validate("autolimit")
    def _autolimit_not_negative(self, proposal: Any) -> int:
        if proposal["value"] < 0:
            value = proposal["value"]
            raise TraitError(f"PmSql.autolimit must be 0 (no limit) or a number of rows, got {value}.")
        return int(proposal["value"])

    def __init__(self, shell: Any = None, session: Session | None = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        #: connection, project choice and completion caches (shareable with other magics of the shell)
        self.session = session or Session()

    @property
    def _ipython(self) -> Any:
        """The hosting shell (IPython types it optional; a registered magic always has one)."""
        if self.shell is None:
            raise RuntimeError("PmSql needs an IPython shell: load it with %load_ext pm_notebook.")
        return self.shell

    # --- entry point ---------------------------------------------------------------------------
    @no_var_expand  # `{name}` is ours: IPython must not paste values into the SQL line
    @needs_local_scope
    @line_cell_magic
    def pmsql(self, line: str, cell: str | None = None, local_ns: dict[str, Any] | None = None) -> Any:
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
        namespace = ChainMap(local_ns or {}, self._ipython.user_ns)
        call = _Call(source=_source(line, cell, args.sql))
        try:
            return self._run(args, namespace, call, line_form=cell is None, verbose=verbose)
        except (PMError, TemplateError, KeyboardInterrupt) as err:
            if verbose and not isinstance(err, KeyboardInterrupt):
                raise
            error: BaseException = err
            if isinstance(err, KeyboardInterrupt):  # the magic has stopped the statement on the server
                error = QueryCancelled("Query cancelled: the statement was stopped on the server.")
            suggestion = None
            if isinstance(err, QueryError):
                message = err.server_message or err.message
                suggestion = completion.did_you_mean(message, args.sql, self.session, _current.get_current())
            text = format_error(
                error, sql=call.sql, source=call.source, suggestion=suggestion, verbose=verbose
            )
            raise shown(error, text) from (err if error is not err else None)

    def complete(self, context: CompletionContext) -> SimpleMatcherResult:
        """Complete table names, ``{cases}``-style shortcuts and column names inside ``%pmsql`` code."""
        return completion.complete(context, self.session, magic="pmsql")

    # --- steps ---------------------------------------------------------------------------------
    def _run(
        self, args: MagicArgs, ns: Mapping[str, Any], call: _Call, *, line_form: bool, verbose: bool
    ) -> Any:
        session = self.session
        options: dict[str, Any] = {"replay": True} if self.replay else {}
        if self.cache_dir:
            options["cache_dir"] = self.cache_dir
        conn = session.connection(
            ns, variable=args.connection, reconnect=args.connect, env_file=args.env_file, options=options
        )
        if (
            options
        ):  # %config PmSql.replay / cache_dir apply to the connection the magic uses, whoever made it
            conn.configure_cache(**options)
        store = args.cache or self.cache
        with conn.storing() if store else nullcontext():
            if args.project:
                session.choose_project(conn, args.project)
            if args.tables:
                frame = tables_frame(*session.tables(conn))
                return self._result(frame, args, line_form, started=None)
            if args.columns is not None:
                frame = columns_frame(session.table_columns(conn, args.columns))
                return self._result(frame, args, line_form, started=None)
            if not args.sql:
                connected = not args.project or args.connect or args.env_file or args.connection
                if args.display:  # --no-display: choose the project silently
                    self._show(TextView(session.status(conn, connected=bool(connected))))
                return None
            return self._query(conn, args, ns, call, line_form=line_form, verbose=verbose, store=store)

    def _query(
        self,
        conn: Connection,
        args: MagicArgs,
        ns: Mapping[str, Any],
        call: _Call,
        *,
        line_form: bool,
        verbose: bool,
        store: bool = False,
    ) -> Any:
        rendered = render(args.sql, ns.__getitem__, identifier=lambda name: self.session.shortcut(conn, name))
        sql = rendered.sql
        if args.explain:
            sql = _EXPLAIN + sql
        call.sql = sql
        if call.source is not None:
            call.source.to_typed = rendered.template_offset
            call.source.sent_prefix = len(_EXPLAIN) if args.explain else 0
        params = rendered.params or None
        transport = args.transport or self.transport
        # %config PmSql.context, then --context; the connection lays them over its default. Merged here
        # too, so a bad key stops the cell before any request and the display shows what is sent.
        context = {**self.context, **args.context} or None
        sent = describe_context(merge_contexts(conn.context, context))
        if verbose:
            names = ", ".join(f":{n}" for n in dict.fromkeys(rendered.param_names))
            header = f"-- transport: {transport or 'default'}; parameters: {names or 'none'}"
            if sent:
                header += f"\n-- context: {sent}"
            self._show(TextView(f"{header}\n{sql}"))
        started = time.monotonic()
        if args.to_parquet:
            rows = conn.to_parquet(sql, args.to_parquet, params, transport=transport, context=context)
            if args.display:
                elapsed = time.monotonic() - started
                self._show(TextView(f"Wrote {rows:,} rows to {args.to_parquet} in {elapsed:.2f} s."))
            return None
        if args.chunks:
            # the iterator runs after this cell's storing() block: ask for storing explicitly
            cache = True if store else None
            chunks = conn.query_chunks(
                sql, params, chunk_rows=args.chunks, transport=transport, cache=cache, context=context
            )
            if args.output:
                self._ipython.user_ns[args.output] = chunks
                if args.display:
                    self._show(
                        TextView(
                            f"{args.output} streams the result: for frame in {args.output}: ... "
                            f"gives DataFrames of up to {args.chunks:,} rows."
                        )
                    )
                return None
            return chunks
        limit = args.limit if args.limit is not None else self.autolimit
        progress = None
        if self.progress:
            progress = ProgressLine(self._progress_display(), delay=self.progress_delay)
        try:
            fetched = conn.fetch(
                sql,
                params,
                transport=transport,
                limit=limit,
                on_rows=progress.rows if progress else None,
                batch_rows=self.chunk_rows,
                context=context,
                # a plan is text, shown as such: always pandas
                output="polars"
                if (args.polars or self.output == "polars") and not args.explain
                else "pandas",
            )
        finally:
            if progress:
                progress.stop()
        frame = fetched.frame
        if args.explain:
            plan = "\n".join(str(v) for v in frame[frame.columns[0]]) if len(frame.columns) else ""
            if args.display:
                self._show(TextView(plan))
            return self._keep(frame, args, line_form)
        return self._result(
            frame,
            args,
            line_form,
            started=started,
            limit=limit if fetched.truncated else None,
            transport=fetched.transport,
            context=sent or None,
        )

    def _result(
        self,
        frame: Any,
        args: MagicArgs,
        line_form: bool,
        *,
        started: float | None,
        limit: int | None = None,
        transport: str | None = None,
        context: str | None = None,
    ) -> Any:
        if args.display and (args.output or not line_form):
            elapsed = time.monotonic() - started if started is not None else 0.0
            footer = Footer(
                rows=len(frame),
                columns=len(frame.columns),
                elapsed=elapsed,
                transport=transport if started is not None else None,
                limit=limit,
                context=context,
            )
            self._show(ResultView(frame, footer, displaylimit=self.displaylimit))
        return self._keep(frame, args, line_form)

    def _keep(self, frame: Any, args: MagicArgs, line_form: bool) -> Any:
        if args.output:
            self._ipython.user_ns[args.output] = frame
            return None
        return frame if line_form else None

    # --- display -------------------------------------------------------------------------------
    def _show(self, obj: Any, *, display_id: str | None = None, update: bool = False) -> None:
        """Publish *obj* through this shell (not the global singleton), so any shell can host the magic."""
        data, metadata = self._ipython.display_formatter.format(obj)
        if display_id is None:
            self._ipython.display_pub.publish(data, metadata)
        else:
            transient = {"display_id": display_id}
            self._ipython.display_pub.publish(data, metadata, transient=transient, update=update)

    def _progress_display(self) -> Callable[[str], None]:
        display_id = uuid.uuid4().hex
        shown = False

        def show(text: str) -> None:
            nonlocal shown
            self._show(TextView(text), display_id=display_id, update=shown)
            shown = True

        return show


def _source(line: str, cell: str | None, sql: str) -> Source | None:
    """The cell as typed (its ``%%pmsql`` line is line 1) or the ``%pmsql`` line, and where *sql* is."""
    if not sql:
        return None
    head = f"%%pmsql {line}".rstrip() if cell is not None else f"%pmsql {line}"
    body = f"{head}\n{cell}" if cell is not None else head
    found = body.find(sql, len(head) + 1 if cell is not None else len("%pmsql "))
    if found < 0:
        return None
    return Source(body, sql_offset=found, numbered=cell is not None)


# `%pmsql?` shows the docstring: make it the full option list.
PmSql.pmsql.__doc__ = f"{PmSql.pmsql.__doc__}\n\n{USAGE}"
