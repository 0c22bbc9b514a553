"""``Connection``: the one object a notebook holds — settings, token, REST and SQL in one place.

It is longer than our other modules because it is the front door: one documented method per public verb
(the REST reads, the write side, the shapers ``query``/``fetch``/``query_arrow``/``query_polars``/
``query_chunks``/``to_parquet``/``dbapi``, ``mining``), each a few lines over the single-purpose modules
(``_offline``, ``frames``, ``lifecycle``, ``sql``, ``mining``) that hold the logic.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from . import _http, frames, lifecycle, sql
from ._cells import cell_int
from ._checks import positive_int
from ._models import (
    Column,
    ColumnMapping,
    GraphInstance,
    MappingInfo,
    ProcessGraph,
    Project,
    Table,
    Variant,
    Workgroup,
)
from ._offline import REPLAY, STORE, Offline, recorded_connection, recorded_context
from ._secret import Secret
from .api import RestClient
from .auth import TokenProvider
from .config import (
    CacheSettings,
    Settings,
    cache_settings,
    check_option_names,
    query_context,
    replay_settings,
    resolve,
)
from .errors import ClosedError, ConfigurationError, NotFound, QueryCancelled, ReplayMiss
from .query_context import merge_contexts
from .sql import dbapi

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from .mining import ProcessLog

__all__ = ["OUTPUTS", "Connection", "Fetched", "connect"]

#: what a query's rows can become: ``fetch(output=...)``, ``%%pmsql --polars``, ``%config PmSql.output``
OUTPUTS = ("pandas", "polars")


@dataclass(frozen=True)
class Fetched:
    """What :meth:`Connection.fetch` returns: one statement's result and where it came from.

    Each call gets its own, so two threads sharing a connection never see each other's transport.
    """

    #: the typed DataFrame: pandas (``frame.attrs["transport"]`` names the transport too), or polars when
    #: fetched with ``output="polars"``
    frame: pd.DataFrame | pl.DataFrame
    #: the transport that ran the statement: ``"druid"``, ``"avatica"`` or ``"jdbc"`` (``"auto"`` resolved)
    transport: str
    #: whether the row cap stopped the fetch while more rows existed
    truncated: bool = False


class _Chunks:
    """What :meth:`Connection.query_chunks` returns: an iterator of DataFrames whose ``close()`` ends the
    statement on the server; asked for more after that, it raises ClosedError (a generator would just end, and
    a ``for`` loop would take the last chunk read for the last of the result)."""

    def __init__(self, chunks: Generator[pd.DataFrame, None, None]) -> None:
        self._chunks = chunks
        self._closed_early = False
        self._ended = False

    def __iter__(self) -> _Chunks:
        return self

    def __next__(self) -> pd.DataFrame:
        if self._closed_early:
            raise ClosedError(
                "This chunk iterator was closed before its last chunk, which ended its statement. "
                "Run query_chunks again to read the result."
            )
        try:
            return next(self._chunks)
        except BaseException:
            self._ended = True  # the result's end, or an error already raised: nothing more comes
            raise

    def close(self) -> None:
        """End the statement (closed on the server if rows are left); later ``next()`` calls raise
        ClosedError. Closing an iterator read to the end changes nothing."""
        if not self._ended:
            self._closed_early = True
        self._chunks.close()


def _check_sql(sql_text: Any) -> None:
    """A clear error for SQL that is not text, or is blank, before any transport is chosen or opened."""
    if not isinstance(sql_text, str):
        raise ConfigurationError(
            f"The SQL must be a string, got {type(sql_text).__name__}.",
            hint="Pass the statement as text, e.g. conn.query('SELECT COUNT(*) FROM \"<table>\"').",
        )
    if not sql_text.strip():
        raise ConfigurationError("The SQL text is empty.", hint="Pass a SELECT statement.")


class Connection:
    """A connection to one workgroup of the service.

    Build it with :func:`pm_notebook.connect`. It owns one token provider, one REST client and,
    lazily, the SQL transports; ``with connect() as conn:`` closes them all.

    Offline cache: with ``cache`` on, every SQL result and REST listing it fetches is also stored in the
    cache folder; with ``replay`` on, it answers from that folder only and sends no request at all (see
    :meth:`configure_cache`).
    """

    def __init__(
        self, settings: Settings, *, caching: CacheSettings | None = None, online: bool = True
    ) -> None:
        if not isinstance(settings, Settings):
            raise TypeError("Connection expects a pm_notebook.config.Settings; use pm_notebook.connect(...)")
        self._settings = settings
        self._session = _http.build_session(settings)
        #: the token provider (``.current``, ``.seconds_left()`` for displays)
        self.tokens = TokenProvider(settings, self._session)
        #: the typed REST client
        self.rest = RestClient(settings, self._session, self.tokens)
        #: the write side of the REST API (projects, column mappings, files)
        self.files_api = lifecycle.ProjectFiles(settings, self.rest)
        self._sql_transports: sql.Transports | None = None  # created on the first query
        self._closed = False
        self._online = online  # False: made for replay without connection values; can never go live
        self._offline = Offline(settings)
        _http.use_answers(self._session, settings, self._offline, replay=False)
        caching = caching or CacheSettings()
        self.configure_cache(cache=caching.cache, replay=caching.replay, cache_dir=caching.cache_dir)

    @property
    def settings(self) -> Settings:
        """The resolved connection values (the secret stays masked)."""
        return self._settings

    @property
    def context(self) -> dict[str, Any]:
        """The default Druid query context of every statement (``connect(context=...)`` or
        ``PM_QUERY_CONTEXT``); a statement's own ``context=`` is laid over it, key by key. A copy."""
        return dict(self._settings.context)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("This connection is closed; create a new one with pm_notebook.connect().")

    # --- offline cache ------------------------------------------------------------------------
    def configure_cache(
        self, *, cache: bool | None = None, replay: bool | None = None, cache_dir: Any = None
    ) -> None:
        """Turn storing (*cache*) or replay (*replay*) on or off, or move the cache folder (None: keep).

        In replay mode the HTTP session refuses every request and no SQL transport is opened: each answer
        comes from the cache folder or is a :class:`~pm_notebook.errors.ReplayMiss`.

        :raises ConfigurationError: turning replay off on a connection made without connection values.
        """
        self._offline.configure(cache=cache, cache_dir=cache_dir)
        if replay is not None and bool(replay) != self._offline.replay:
            if not replay and not self._online:
                raise ConfigurationError(
                    "This connection was opened for replay without connection values; it cannot go online.",
                    hint="Connect anew with pm_notebook.connect() and the PM_* values of the service.",
                )
            self._offline.replay = bool(replay)
            if replay:
                self._close_sql()
            _http.use_answers(self._session, self._settings, self._offline, replay=bool(replay))

    @property
    def caching(self) -> bool:
        """Whether every result fetched is also stored in the cache folder."""
        return self._offline.store

    @property
    def replaying(self) -> bool:
        """Whether answers come from the cache folder only (no network)."""
        return self._offline.replay

    @property
    def cache_dir(self) -> Path:
        """The cache folder (see :meth:`configure_cache`)."""
        return self._offline.folder

    def storing(self) -> AbstractContextManager[None]:
        """Within this block, this thread's queries and listings on this connection are stored too."""
        return self._offline.storing()

    def projects(self) -> list[Project]:
        """The workgroup's projects (``GET /pub/projects`` plus each project's details).

        Turn the list into a DataFrame with ``pm_notebook.api.to_frame(conn.projects())``.
        """
        self._check_open()
        return self.rest.projects()

    def project(self, project_id: Project | str) -> Project:
        """One project's details; :class:`~pm_notebook.errors.NotFound` if unknown or not visible."""
        self._check_open()
        return self.rest.project(project_id)

    def tables(self, project: Project | str) -> list[Table]:
        """The tables of *project* (a :class:`Project` or its id) that this workgroup may query."""
        self._check_open()
        return self.rest.tables(project)

    def workgroup(self) -> Workgroup:
        """The workgroup's metadata (name, validity dates, ...)."""
        self._check_open()
        return self.rest.workgroup()

    def variants(self, project: Project | str, *, search: str | None = None) -> list[Variant]:
        """Every model variant of *project* (id = graphkey, name, occurrences), most frequent first.

        All pages are fetched; ``to_frame(conn.variants(p))`` gives a DataFrame.

        :param search: keep the variants whose name contains this text.
        """
        self._check_open()
        return self.rest.variants(project, search=search)

    def completed_cases(self, project: Project | str, *, search: str | None = None) -> list[str]:
        """The ids of *project*'s completed cases under its END CASE rule (all pages).

        :param search: keep the case ids containing this text.
        :raises HTTPError: the project has no END CASE rule (the hint says how to set one).
        """
        self._check_open()
        return self.rest.completed_cases(project, search=search)

    def graph(self, project: Project | str, mode: str = "simplified") -> ProcessGraph:
        """*project*'s model graph; *mode* ``"simplified"`` (tasks, START, END) or ``"gateways"``."""
        self._check_open()
        return self.rest.graph(project, mode)

    def graph_instance(self, project: Project | str, process_key: str) -> GraphInstance:
        """The instance graph of one process variant (a ``processkey`` of the cases table)."""
        self._check_open()
        return self.rest.graph_instance(project, process_key)

    def column_mapping(self, project: Project | str) -> ColumnMapping:
        """*project*'s column mapping: case id, activity, time, dimension and metric columns of its files."""
        self._check_open()
        return self.rest.column_mapping(project)

    def mapping_infos(self, project: Project | str) -> list[MappingInfo]:
        """Each dimension and metric of *project* with the Druid column that holds it."""
        self._check_open()
        return self.rest.mapping_infos(project)

    def column_names(self, project: Project | str) -> dict[str, str]:
        """The user's dimension/metric names → their Druid columns, e.g. ``{"Destination":
        "detail_7_lpkr_destination"}``: write SQL with these, never with guessed short names."""
        return {m.name: m.database_column_name for m in self.mapping_infos(project)}

    def mining(
        self,
        project: Project | str,
        *,
        include_excluded: bool = False,
        context: Mapping[str, Any] | None = None,
        resource: str | None = None,
        large_subqueries: bool | int = False,
    ) -> ProcessLog:
        """The process log of *project* (a :class:`Project`, its id or its name) for process-mining answers.

        Every answer (``summary()``, ``variants()``, ``process_map()``...) is computed by Druid SQL; see
        :class:`pm_notebook.mining.ProcessLog`. The cases a user excluded (the project's
        ``_excluded_cases`` lookup) are left out unless *include_excluded*; every answer says how many.
        *context* is Druid's query context, sent with every statement of the log; *resource* names the task
        dimension of who did each task (default: ``resource``); *large_subqueries* lets the statements Druid
        runs by inlining a subquery exceed the server's ``maxSubqueryRows`` (see
        :meth:`pm_notebook.mining.ProcessLog.open`).

        >>> conn.mining("Purchase to Pay").variants(top=5)  # doctest: +SKIP
        """
        self._check_open()
        from .mining import ProcessLog

        return ProcessLog.open(
            self,
            project,
            include_excluded=include_excluded,
            context=context,
            resource=resource,
            large_subqueries=large_subqueries,
        )

    # --- projects and files (write side) -----------------------------------------------------
    def create_project(self, name: str, description: str | None = None) -> Project:
        """Create an empty project in this workgroup and return it."""
        self._check_open()
        return self.files_api.create_project(name, description)

    def upload(
        self,
        project: Project | str,
        data: Any,
        mapping: lifecycle.LogMapping | dict[str, Any] | None = None,
        *,
        wait: bool = True,
        progress: bool | Callable[[str, int, int | None], None] | None = None,
        timeout: float = 3600.0,
        name: str | None = None,
    ) -> lifecycle.UploadedFile:
        """Upload an event log to *project* and, by default, wait until it is mined.

        :param data: a pandas DataFrame (streamed as CSV, never copied whole), a path to a ``.csv`` or a
            ``.zip`` of CSV files, or a file opened in binary mode.
        :param mapping: by column *name*: a :class:`~pm_notebook.lifecycle.LogMapping` or a dict with any
            of ``case_id, activity, start, end, dimensions, metrics, time_format, units``; whatever is not
            given is inferred from pm4py-style or common names (``case:concept:name``, ``Case ID``,
            ``Activity``, ``time:timestamp``, ``start_timestamp``, ...); other columns become metrics
            (numbers) or dimensions (the rest).
        :param wait: poll (with a growing delay) until the file is ``DONE``; a ``FAILED`` file raises
            :class:`~pm_notebook.errors.UploadError` with the service's reason.
        :param progress: ``None`` = a tqdm bar in a notebook when tqdm is installed; ``True``/``False``
            force it on/off; a callable gets ``(phase, done, total)``, phase ``"upload"`` (bytes) then
            ``"ingest"`` (0 → 1).
        :param name: the file name the service shows (default ``dataframe.csv`` / the file's own name).

        Uploading the same rows twice appends them twice, as the service does; ``reset`` first to replace.
        """
        self._check_open()
        return self.files_api.upload(
            project, data, mapping, wait=wait, progress=progress, timeout=timeout, name=name
        )

    def files(self, project: Project | str) -> list[lifecycle.UploadedFile]:
        """The project's uploaded files with their ingestion status, oldest first."""
        self._check_open()
        return self.files_api.files(project)

    def reset(self, project: Project | str) -> None:
        """Empty *project* (data and files); its name, description and column mapping stay."""
        self._check_open()
        self.files_api.reset(project)

    def delete_project(self, project: Project | str, confirm: str | None = None) -> None:
        """Delete *project* and its data; *confirm* must be its name (a notebook asks for it)."""
        self._check_open()
        self.files_api.delete_project(project, confirm=confirm)

    def close(self) -> None:
        """Release the HTTP connections (and, once opened, the SQL transports); calling it twice is fine."""
        if self._closed:
            return
        self._closed = True
        self._close_sql()
        self._session.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("replaying" if self._offline.replay else "open")
        s = self._settings
        return f"<Connection workgroup={s.client_id!r} base_url={s.base_url!r} {state}>"

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- SQL ----------------------------------------------------------------------------------
    #: default SQL transport: "auto" (probe, fastest first), "druid", "avatica" or "jdbc"
    sql_transport: str = "auto"
    #: rows per transport batch (memory bound of query_chunks/to_parquet between conversions)
    sql_batch_rows: int = 65536

    def _sql(self) -> sql.Transports:
        self._check_open()
        if self._sql_transports is None:
            self._sql_transports = sql.Transports(sql.Target.from_settings(self._settings))
        return self._sql_transports

    def resolve_transport(self, name: str | None = None) -> str:
        """The concrete transport a statement with ``transport=name`` goes through (default: the connection's
        :attr:`sql_transport`; ``"auto"`` is resolved by probing once).

        In replay mode nothing is probed: ``"auto"`` is the transport that served the stored ``"auto"``
        statements (so an answer's ``attrs["transport"]`` is the live run's).
        """
        if self._offline.replay:
            self._check_open()
            wanted = sql.transport_name(name or self.sql_transport)
            return wanted if wanted != "auto" else self._offline.auto_transport()
        return self._sql().resolve(name or self.sql_transport)

    def _close_sql(self) -> None:
        transports, self._sql_transports = self._sql_transports, None
        if transports is not None:
            transports.close()

    @contextmanager
    def _served(
        self,
        sql_text: str,
        params: Any,
        transport: str | None,
        cache: bool | None,
        *,
        limit: int = 0,
        batch_rows: int | None = None,
        on_rows: Callable[[int], None] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[str, frames.Rows]]:
        """Run one statement: the name of the transport that serves it and its rows, live, stored or replayed.

        Every statement method comes here, so anything that queries through this connection (the magic,
        the process-mining answers) is stored and replayed without code of its own. In replay the transport
        is the cache folder; while storing (*cache*, else the connection's setting) the live rows are read
        whole and stored before they are served.

        :param limit: serve at most this many rows (0: all); ``rows.truncated`` says whether more existed.
        :param on_rows: called with the number of rows read so far (a progress line).
        :param context: the statement's Druid query context, laid over the connection's :attr:`context`
            (checked here, before any request; stored and replayed results are keyed by the part of it that
            may change the answer).
        """
        mode = self._offline.mode(cache)
        self._check_open()
        _check_sql(sql_text)
        values = sql.check_params(params)
        requested = sql.transport_name(transport or self.sql_transport)
        sent = merge_contexts(self._settings.context, context)
        if mode == REPLAY:
            replayer = self._offline.replayer(requested)
            served = replayer.execute(sql_text, values, limit=limit, on_rows=on_rows, context=sent)
        else:
            rows = batch_rows or self.sql_batch_rows
            served = self._live(
                requested, sql_text, values, limit=limit, batch_rows=rows, on_rows=on_rows, context=sent
            )
            if mode == STORE:
                served = self._offline.stored(served, sql_text, values, requested, limit=limit, context=sent)
        with served as (name, got):
            yield name, got

    @contextmanager
    def _live(
        self,
        requested: str,
        sql_text: str,
        values: list[Any],
        *,
        limit: int,
        batch_rows: int,
        on_rows: Callable[[int], None] | None,
        context: dict[str, Any] | None,
    ) -> Iterator[tuple[str, frames.Rows]]:
        """One statement on the service: the one place a transport executes (with the checked *context*).

        Ctrl-C cancels the statement on the server and surfaces as QueryCancelled; leaving the block early
        (a row cap, a loop left) closes it on the server.
        """
        chosen = self._sql().get(requested)
        result = None
        try:
            result = chosen.execute(sql_text, values, batch_rows=batch_rows, context=context)
            yield chosen.name, frames.parse(result.columns, result.batches(), limit=limit, on_rows=on_rows)
        except KeyboardInterrupt:
            if result is not None:
                result.cancel()
            sql.after_interrupt()  # e.g. with a JVM in the process, Ctrl-C also interrupted its Java side
            raise QueryCancelled(
                "The query was cancelled (KeyboardInterrupt); the connection is still usable.", sql=sql_text
            ) from None
        finally:
            if result is not None:
                result.close()

    def columns(self, table: Table | str) -> list[Column]:
        """The columns of a table (a :class:`Table` or its name), from ``INFORMATION_SCHEMA.COLUMNS``."""
        name = table.name if isinstance(table, Table) else table
        if not isinstance(name, str) or not name:
            raise ConfigurationError(
                "columns() needs a Table or a table name.", hint="conn.columns(conn.tables(p)[0])"
            )
        frame = self.query(
            "SELECT COLUMN_NAME, DATA_TYPE, ORDINAL_POSITION, IS_NULLABLE FROM INFORMATION_SCHEMA.COLUMNS "
            "WHERE TABLE_SCHEMA = 'druid' AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
            [name],
        )
        if frame.empty:
            raise NotFound(
                f"Table {name!r} does not exist, or this workgroup may not query it.",
                hint="List the queryable tables with conn.tables(project).",
            )
        return [
            Column(
                name=str(r.COLUMN_NAME),
                data_type=str(r.DATA_TYPE),
                ordinal=cell_int(r.ORDINAL_POSITION),
                nullable=str(r.IS_NULLABLE).upper() != "NO",
            )
            for r in frame.itertuples(index=False)
        ]

    def fetch(
        self,
        sql: str,
        params: Any = None,
        *,
        transport: str | None = None,
        limit: int = 0,
        on_rows: Callable[[int], None] | None = None,
        batch_rows: int | None = None,
        cache: bool | None = None,
        context: Mapping[str, Any] | None = None,
        output: Literal["pandas", "polars"] = "pandas",
    ) -> Fetched:
        """Run *sql* and return its DataFrame together with the transport that served it.

        :meth:`query` is this call's ``.frame``; the ``%%pmsql`` magic uses the rest.

        :param sql: Druid SQL; ``?`` marks a parameter.
        :param params: a list/tuple of values for the ``?`` placeholders.
        :param transport: ``"auto"`` (default), ``"druid"``, ``"avatica"`` or ``"jdbc"``.
        :param limit: fetch at most this many rows (0: all); when more exist the statement is closed on the
            server early and :attr:`Fetched.truncated` is true.
        :param on_rows: called on this thread with the number of rows fetched so far, after each batch.
        :param batch_rows: rows per round trip to the server (default :attr:`sql_batch_rows`).
        :param cache: True stores this result in the cache folder (None: the connection's ``cache``
            setting). In replay mode the result comes from the cache whatever this says.
        :param context: Druid query context keys for this statement (``{"sqlTimeZone": "Europe/Paris"}``),
            laid over the connection's :attr:`context`; a bad key or value is a
            :class:`~pm_notebook.errors.ConfigurationError` before any request.
        :param output: ``"pandas"`` or ``"polars"`` (the ``polars`` extra; see :meth:`query_polars`).

        >>> got = conn.fetch('SELECT caseid FROM "my-project-id"', limit=10)  # doctest: +SKIP
        >>> got.frame, got.transport, got.truncated                           # doctest: +SKIP
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigurationError(f"limit must be 0 (all rows) or a positive integer, got {limit!r}.")
        if output not in OUTPUTS:
            raise ConfigurationError(
                f"output must be one of {', '.join(map(repr, OUTPUTS))}, got {output!r}.",
                hint="conn.query(...) gives pandas, conn.query_polars(...) polars.",
            )
        if output == "polars":
            frames.require_polars()  # a missing extra fails before the query runs, not after
        rows = self.sql_batch_rows if batch_rows is None else positive_int(batch_rows, "batch_rows")
        if limit:
            rows = min(rows, limit + 1)  # one row past the cap tells "more exist" from "exactly limit"
        served = self._served(
            sql, params, transport, cache, limit=limit, batch_rows=rows, on_rows=on_rows, context=context
        )
        with served as (name, got):
            table = frames.to_table(got)
        if output == "polars":  # (polars was checked before the query ran)
            return Fetched(frames.to_polars(table), name, got.truncated)
        return Fetched(frames.to_pandas(table, consume=True, transport=name), name, got.truncated)

    def query(
        self,
        sql: str,
        params: Any = None,
        *,
        transport: str | None = None,
        cache: bool | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> pd.DataFrame:
        """Run *sql* and return a typed DataFrame.

        :param sql: Druid SQL; quote table names (``"<project id>_vertex"``); ``?`` marks a parameter.
        :param params: a list/tuple of values for the ``?`` placeholders, bound by the protocol.
        :param transport: ``"auto"`` (default), ``"druid"``, ``"avatica"`` or ``"jdbc"``.
        :param cache: True stores the result in the cache folder for offline replay (None: the connection's
            setting; see :func:`connect`).
        :param context: Druid query context keys for this statement, laid over the connection's
            :attr:`context` (``{"enableWindowing": True}`` for ``LAG() OVER (...)``); checked before any
            request.

        Types: TIMESTAMP → ``datetime64[ms, UTC]``, BIGINT → ``Int64``, DOUBLE → ``float64``, VARCHAR →
        ``string``, BOOLEAN → ``boolean``, arrays → lists; NULLs are kept; an empty result keeps its columns.
        ``frame.attrs["transport"]`` names the transport that ran it (see also :meth:`fetch`).
        """
        return cast(
            "pd.DataFrame", self.fetch(sql, params, transport=transport, cache=cache, context=context).frame
        )

    def query_polars(
        self,
        sql: str,
        params: Any = None,
        *,
        transport: str | None = None,
        cache: bool | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> pl.DataFrame:
        """Run *sql* and return a polars DataFrame (the ``polars`` extra); arguments as :meth:`query`.

        The columns are the result's Arrow columns, taken without a copy where polars stores the type the
        same way (times, dates, numbers, booleans) and converted where it does not (text, lists' offsets):
        the table is in :mod:`pm_notebook.frames`. NULLs stay nulls, in float columns too (no NaN).

        :raises MissingDependency: polars is not installed (``pip install 'pm-notebook[polars]'``).
        """
        got = self.fetch(sql, params, transport=transport, cache=cache, context=context, output="polars")
        return cast("pl.DataFrame", got.frame)

    def query_arrow(
        self,
        sql: str,
        params: Any = None,
        *,
        transport: str | None = None,
        cache: bool | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> pa.Table:
        """Run *sql* and return a ``pyarrow.Table`` with the same types as :meth:`query` (*cache*, *context*:
        idem)."""
        with self._served(sql, params, transport, cache, context=context) as (_, got):
            return frames.to_table(got)

    def query_chunks(
        self,
        sql: str,
        params: Any = None,
        *,
        chunk_rows: int = 100_000,
        transport: str | None = None,
        cache: bool | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> Iterator[pd.DataFrame]:
        """Run *sql* and yield DataFrames of at most *chunk_rows* rows (at least one, maybe empty).

        Rows are fetched as the chunks are consumed (in transport batches of at most *chunk_rows* or
        :attr:`sql_batch_rows` rows, whichever is smaller), so memory follows the chunk size, not the result;
        leaving the loop early cancels the rest on the server. When the result is stored in the cache
        (*cache*, or the connection's setting) or replayed, it is fetched whole first and then cut into
        chunks. *context*: as :meth:`query` (checked when the first chunk is asked for).

        The statement is a result of its own: other statements on this connection (from this thread or
        another) may run between two chunks and leave it whole. ``close()`` on the iterator (or dropping it)
        ends the statement; asking a closed iterator for more, or one whose connection was closed meanwhile,
        raises :class:`~pm_notebook.errors.ClosedError`.
        """
        return _Chunks(self._chunks(sql, params, chunk_rows, transport, cache, context))

    def _chunks(
        self,
        sql: str,
        params: Any,
        chunk_rows: int,
        transport: str | None,
        cache: bool | None,
        context: Mapping[str, Any] | None,
    ) -> Generator[pd.DataFrame, None, None]:
        chunk_rows = positive_int(chunk_rows, "chunk_rows")
        batch_rows = min(chunk_rows, self.sql_batch_rows)
        served = self._served(sql, params, transport, cache, batch_rows=batch_rows, context=context)
        with served as (name, got):
            for table in frames.chunks(got, chunk_rows):
                yield frames.to_pandas(table, consume=True, transport=name)

    def to_parquet(
        self,
        sql: str,
        path: Any,
        params: Any = None,
        *,
        transport: str | None = None,
        cache: bool | None = None,
        chunk_rows: int | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> int:
        """Stream the result of *sql* into a Parquet file at *path*; return the number of rows written.

        The file appears only when the whole result is written: rows go to a temporary file in the same
        folder, renamed onto *path* at the end, so an error or Ctrl-C midway leaves *path* as it was.
        Stored in the cache (*cache*, or the connection's setting) or replayed, the result is held whole.

        :param chunk_rows: rows per row group, and at most per transport batch (default
            :attr:`sql_batch_rows`): one chunk is held at a time, so memory follows it, not the result.
        :param context: as :meth:`query`.
        """
        rows = self.sql_batch_rows if chunk_rows is None else positive_int(chunk_rows, "chunk_rows")
        path = frames.parquet_target(path)
        batch_rows = min(rows, self.sql_batch_rows)
        served = self._served(sql, params, transport, cache, batch_rows=batch_rows, context=context)
        with served as (_, got):
            return frames.write_rows(got, path, chunk_rows=rows)

    def dbapi(
        self, *, transport: str | None = None, context: Mapping[str, Any] | None = None
    ) -> dbapi.Connection:
        """A PEP 249 connection (paramstyle ``qmark``) on its own transport, for ``pandas.read_sql`` etc.

        :param context: Druid query context keys for its every statement, laid over the connection's
            :attr:`context` (checked here, before any request).
        """
        sent = merge_contexts(self._settings.context, context)
        if self._offline.replay:
            raise ReplayMiss(
                "Replay mode opens no SQL connection, and a DB-API connection cannot be replayed.",
                hint="Use conn.query / fetch / query_arrow / query_chunks / to_parquet, which replay; "
                "dbapi() needs the service.",
            )
        name = self._sql().resolve(transport or self.sql_transport)
        return dbapi.Connection(lambda: self._sql().new(name), to_arrow=frames.batch_to_arrow, context=sent)


def connect(
    base_url: str | None = None,
    auth_url: str | None = None,
    client_id: str | None = None,
    client_secret: str | Secret | None = None,
    jdbc_url: str | None = None,
    *,
    cache: bool | None = None,
    replay: bool | None = None,
    cache_dir: Any = None,
    transport: str | None = None,
    context: Mapping[str, Any] | None = None,
    **options: Any,
) -> Connection:
    """Connect to a workgroup; missing values come from ``PM_*`` env vars, then ``.env``, then the OS keyring.

    No network call is made here: the first REST call requests the token, so a wrong secret surfaces as an
    :class:`~pm_notebook.errors.AuthenticationError` on that call.

    :param cache: store every SQL result and REST listing in the cache folder, for offline replay
        (default: ``PM_CACHE``, else off).
    :param replay: answer every query and listing from the cache folder, with no network and no credentials
        (default: ``PM_REPLAY``, else off); a call whose SQL or parameters were not stored raises
        :class:`~pm_notebook.errors.ReplayMiss`. Connection values are then optional.
    :param cache_dir: the cache folder (default: ``PM_CACHE_DIR``, else ``.pm_cache`` in the working
        directory, which is the notebook's folder in Jupyter).
    :param transport: the SQL transport of every query that names none (``conn.sql_transport``):
        ``"auto"`` (default: the fastest that answers, see docs/transports.md), ``"druid"``, ``"avatica"`` or
        ``"jdbc"``.
    :param context: the default Druid query context of every statement (default: ``PM_QUERY_CONTEXT``, a
        JSON object, in the environment or ``.env``), e.g. ``{"sqlTimeZone": "Europe/Paris"}``; a query's
        own ``context=`` is laid over it, key by key.
    :param options: ``env_file``, ``use_keyring``, ``timeout``, ``retries``, ``backoff_factor``,
        ``backoff_max``, ``renew_before`` (see :func:`pm_notebook.config.resolve`).
    :raises ConfigurationError: a value is missing or malformed.

    >>> with pm_notebook.connect() as conn:  # doctest: +SKIP
    ...     conn.projects()
    """
    if isinstance(client_secret, str):  # no frame of ours keeps it in clear (tracebacks with locals)
        client_secret = Secret(client_secret)
    caching = cache_settings(cache, replay, cache_dir)
    check_option_names(options)
    pinned = sql.transport_name(transport)
    if not caching.replay:
        settings = resolve(base_url, auth_url, client_id, client_secret, jdbc_url, context=context, **options)
        conn = Connection(settings, caching=caching)
        conn.sql_transport = pinned
        return conn
    # Replay: the recorded (non-secret) address of the service names it in reprs; nothing is resolved, so
    # neither the environment's secret nor the keyring is read.
    recorded = recorded_connection(caching.cache_dir)
    given = {"base_url": base_url, "auth_url": auth_url, "client_id": client_id, "jdbc_url": jdbc_url}
    recorded.update({k: v for k, v in given.items() if isinstance(v, str) and v.strip()})
    # The default context: the argument, else PM_QUERY_CONTEXT, else the one the results were stored with
    # (recorded beside them), so whoever replays a shared folder finds them without the author's variables.
    default_context, source = query_context(context, environ=options.get("environ"), use_dotenv=False)
    if source == "default":
        default_context = recorded_context(recorded)
    settings = replay_settings(recorded, default_context)
    conn = Connection(settings, caching=caching, online=False)
    conn.sql_transport = pinned
    return conn
