"""``Connection``: the one object a notebook holds — settings, token, REST and SQL in one place."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _http, frames, lifecycle, sql
from ._cache import ResultCache
from ._cells import cell_int
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
from ._secret import Secret
from .api import RestClient
from .auth import TokenProvider
from .config import (
    CacheSettings,
    Settings,
    cache_settings,
    check_option_names,
    mask_jdbc_url,
    replay_settings,
    resolve,
)
from .errors import (
    ClosedError,
    ConfigurationError,
    NotFound,
    PMError,
    QueryCancelled,
    QueryError,
    ReplayMiss,
)
from .sql import dbapi

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa
    import requests

    from .mining import ProcessLog

__all__ = ["Connection", "Fetched", "connect"]


@dataclass(frozen=True)
class Fetched:
    """What :meth:`Connection.fetch` returns: one statement's result and where it came from.

    Each call gets its own, so two threads sharing a connection never see each other's transport.
    """

    #: the typed DataFrame (``frame.attrs["transport"]`` names the transport too)
    frame: pd.DataFrame
    #: the transport that ran the statement: ``"druid"``, ``"avatica"`` or ``"jdbc"`` (``"auto"`` resolved)
    transport: str
    #: whether the row cap stopped the fetch while more rows existed
    truncated: bool = False


def _check_sql(sql_text: Any) -> None:
    """A clear error for SQL that is not text, or is blank, before any transport is chosen or opened."""
    if not isinstance(sql_text, str):
        raise ConfigurationError(
            f"The SQL must be a string, got {type(sql_text).__name__}.",
            hint="Pass the statement as text, e.g. conn.query('SELECT COUNT(*) FROM \"<table>\"').",
        )
    if not sql_text.strip():
        raise ConfigurationError("The SQL text is empty.", hint="Pass a SELECT statement.")


def _check_positive(value: Any, name: str) -> None:
    """Refuse a row count that is not a positive ``int`` (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer, got {value!r}.")


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
        self._store = False
        self._replay = False
        self._results = ResultCache(CacheSettings.cache_dir)
        self._recorded = False  # whether connection.json was written to the current cache folder
        self._local = threading.local()  # per-thread "store this call" (magic --cache)
        caching = caching or CacheSettings()
        self.configure_cache(cache=caching.cache, replay=caching.replay, cache_dir=caching.cache_dir)
        self.rest.exchange = self._exchange

    @property
    def settings(self) -> Settings:
        """The resolved connection values (the secret stays masked)."""
        return self._settings

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
        if cache is not None:
            self._store = bool(cache)
        if cache_dir is not None:
            folder = ResultCache(cache_dir)
            if folder.folder != self._results.folder:
                self._results, self._recorded = folder, False
        if replay is not None and bool(replay) != self._replay:
            if not replay and not self._online:
                raise ConfigurationError(
                    "This connection was opened for replay without connection values; it cannot go online.",
                    hint="Connect anew with pm_notebook.connect() and the PM_* values of the service.",
                )
            self._replay = bool(replay)
            if self._replay:
                self._close_sql()
            _http.set_offline(self._session, self._settings, self._replay)

    @property
    def caching(self) -> bool:
        """Whether every result fetched is also stored in the cache folder."""
        return self._store

    @property
    def replaying(self) -> bool:
        """Whether answers come from the cache folder only (no network)."""
        return self._replay

    @property
    def cache_dir(self) -> Path:
        """The cache folder (see :meth:`configure_cache`)."""
        return self._results.folder

    @contextmanager
    def storing(self) -> Iterator[None]:
        """Within this block, this thread's queries and listings on this connection are stored too."""
        before = getattr(self._local, "store", False)
        self._local.store = True
        try:
            yield
        finally:
            self._local.store = before

    def _mode(self, cache: bool | None = None) -> str | None:
        """``"replay"``, ``"store"`` or None (plain live call) for one call (*cache*: that call's wish)."""
        if self._replay:
            return "replay"
        wanted = (self._store or getattr(self._local, "store", False)) if cache is None else cache
        return "store" if wanted else None

    def _record_connection(self) -> None:
        """Write the service's (non-secret) address beside the cache, so a replay needs no PM_* values."""
        if self._recorded:
            return
        s = self._settings
        record = {
            "base_url": s.base_url,
            "auth_url": s.auth_url,
            "client_id": s.client_id,
            "jdbc_url": mask_jdbc_url(s.jdbc_url),  # a driver password in the URL is never written down
        }
        self._results.store_rest("connection", [], record)
        self._recorded = True

    def _exchange(
        self, path: str, params: Any, what: str, send: Callable[[], requests.Response]
    ) -> requests.Response:
        """Every REST GET of :attr:`rest` comes here: replayed, or sent and (when storing) stored.

        Hooked at the one place REST answers arrive, so every listing (and any REST call added later) is
        covered; a 200 or a 404 is an answer worth replaying, anything else (401, 5xx) is not stored.
        """
        mode = self._mode()
        if mode == "replay":
            status, content_type, body = self._results.load_response(path, params, what)
            return _http.stored_response(self._settings.api_url + path, status, content_type, body)
        response = send()
        if mode == "store" and response.status_code in (200, 404):
            self._record_connection()
            content_type = response.headers.get("Content-Type", "application/json")
            self._results.store_response(path, params, response.status_code, content_type, response.content)
        return response

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

    def mining(self, project: Project | str, *, include_excluded: bool = False) -> ProcessLog:
        """The process log of *project* (a :class:`Project`, its id or its name) for process-mining answers.

        Every answer (``summary()``, ``variants()``, ``process_map()``...) is computed by Druid SQL; see
        :class:`pm_notebook.mining.ProcessLog`. Excluded cases are left out unless *include_excluded*.

        >>> conn.mining("Purchase to Pay").variants(top=5)  # doctest: +SKIP
        """
        self._check_open()
        from .mining import ProcessLog

        return ProcessLog.open(self, project, include_excluded=include_excluded)

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
        state = "closed" if self._closed else ("replaying" if self._replay else "open")
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
        wanted = (name or self.sql_transport or "auto").lower()
        if self._replay:
            self._check_open()
            if wanted not in sql.TRANSPORTS:
                raise ConfigurationError(
                    f"Unknown SQL transport {wanted!r}.", hint=f"Use one of {', '.join(sql.TRANSPORTS)}."
                )
            return wanted if wanted != "auto" else self._results.auto_transport()
        return self._sql().resolve(wanted)

    def _close_sql(self) -> None:
        transports, self._sql_transports = self._sql_transports, None
        if transports is not None:
            transports.close()

    @contextmanager
    def _statement(
        self, sql_text: str, params: Any, transport: str | None, *, batch_rows: int | None = None
    ) -> Iterator[tuple[str, sql.Result]]:
        """Run one statement, giving the name of the transport that runs it and its open result.

        Every way of querying goes through here. Ctrl-C cancels the statement on the server and surfaces
        as QueryCancelled; leaving the block early (a row cap, a loop left) closes it on the server.
        """
        _check_sql(sql_text)
        values = sql.check_params(params)
        chosen = self._sql().get(transport or self.sql_transport)
        result = None
        try:
            result = chosen.execute(sql_text, values, batch_rows=batch_rows or self.sql_batch_rows)
            yield chosen.name, result
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

        >>> got = conn.fetch('SELECT caseid FROM "my-project-id"', limit=10)  # doctest: +SKIP
        >>> got.frame, got.transport, got.truncated                           # doctest: +SKIP
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigurationError(f"limit must be 0 (all rows) or a positive integer, got {limit!r}.")
        if batch_rows is not None:
            _check_positive(batch_rows, "batch_rows")
        rows = batch_rows or self.sql_batch_rows
        if limit:
            rows = min(rows, limit + 1)  # one row past the cap tells "more exist" from "exactly limit"
        got = self._cached(sql, params, transport, cache, limit=limit, on_rows=on_rows, batch_rows=rows)
        if got is not None:
            table, name, truncated = got
        else:
            with self._statement(sql, params, transport, batch_rows=rows) as (name, result):
                table, truncated = frames.collect(
                    result.columns, result.batches(), limit=limit, on_rows=on_rows
                )
        return Fetched(frames.to_pandas(table, consume=True, transport=name), name, truncated)

    def _cached(
        self,
        sql_text: str,
        params: Any,
        transport: str | None,
        cache: bool | None,
        *,
        limit: int = 0,
        on_rows: Callable[[int], None] | None = None,
        batch_rows: int | None = None,
    ) -> tuple[pa.Table, str, bool] | None:
        """The whole result through the cache: replayed, or fetched and stored; None for a plain live call.

        Every statement method comes here first, so anything that queries through this connection (the
        magic, the process-mining answers) is stored and replayed without code of its own.

        :return: the Arrow table, the transport that served it and whether the row cap cut it.
        """
        if cache is not None and not isinstance(cache, bool):
            raise ConfigurationError(f"cache must be True, False or None, got {cache!r:.40}.")
        mode = self._mode(cache)
        if mode is None:
            return None
        self._check_open()
        _check_sql(sql_text)
        values = sql.check_params(params)
        requested = (transport or self.sql_transport or "auto").lower()
        if requested not in sql.TRANSPORTS:
            raise ConfigurationError(
                f"Unknown SQL transport {requested!r}.", hint=f"Use one of {', '.join(sql.TRANSPORTS)}."
            )
        if mode == "replay":
            entry = self._results.find(sql_text, values, requested, limit=limit)
            if entry.error is not None:
                raise self._results.stored_error(entry)
            table, truncated = self._results.load(entry), entry.truncated
            if limit and table.num_rows > limit:
                table, truncated = table.slice(0, limit), True
            if on_rows is not None:
                on_rows(table.num_rows)
            return table, entry.transport, truncated
        try:
            with self._statement(sql_text, values, transport, batch_rows=batch_rows) as (name, result):
                table, truncated = frames.collect(
                    result.columns, result.batches(), limit=limit, on_rows=on_rows
                )
        except QueryError as err:
            # The engine's own refusal (not a cancel nor a protocol hiccup) is an answer: replay shows it
            if type(err) is QueryError and err.server_message:
                self._record_connection()
                self._results.store_error(sql_text, values, requested, err)
            raise
        self._record_connection()
        self._results.store(
            sql_text, values, requested, table, transport=name, truncated=truncated, limit=limit
        )
        return table, name, truncated

    def query(
        self, sql: str, params: Any = None, *, transport: str | None = None, cache: bool | None = None
    ) -> pd.DataFrame:
        """Run *sql* and return a typed DataFrame.

        :param sql: Druid SQL; quote table names (``"<project id>_vertex"``); ``?`` marks a parameter.
        :param params: a list/tuple of values for the ``?`` placeholders, bound by the protocol.
        :param transport: ``"auto"`` (default), ``"druid"``, ``"avatica"`` or ``"jdbc"``.
        :param cache: True stores the result in the cache folder for offline replay (None: the connection's
            setting; see :func:`connect`).

        Types: TIMESTAMP → ``datetime64[ms, UTC]``, BIGINT → ``Int64``, DOUBLE → ``float64``, VARCHAR →
        ``string``, BOOLEAN → ``boolean``, arrays → lists; NULLs are kept; an empty result keeps its columns.
        ``frame.attrs["transport"]`` names the transport that ran it (see also :meth:`fetch`).
        """
        return self.fetch(sql, params, transport=transport, cache=cache).frame

    def query_arrow(
        self, sql: str, params: Any = None, *, transport: str | None = None, cache: bool | None = None
    ) -> pa.Table:
        """Run *sql* and return a ``pyarrow.Table`` with the same types as :meth:`query` (*cache*: idem)."""
        got = self._cached(sql, params, transport, cache)
        if got is not None:
            return got[0]
        with self._statement(sql, params, transport) as (_, result):
            return frames.batches_to_table(result.columns, result.batches())

    def query_chunks(
        self,
        sql: str,
        params: Any = None,
        *,
        chunk_rows: int = 100_000,
        transport: str | None = None,
        cache: bool | None = None,
    ) -> Iterator[pd.DataFrame]:
        """Run *sql* and yield DataFrames of at most *chunk_rows* rows (at least one, maybe empty).

        Rows are fetched as the chunks are consumed (in transport batches of at most *chunk_rows* or
        :attr:`sql_batch_rows` rows, whichever is smaller), so memory follows the chunk size, not the result;
        leaving the loop early cancels the rest on the server. When the result is stored in the cache
        (*cache*, or the connection's setting) or replayed, it is fetched whole first and then cut into
        chunks.
        """
        _check_positive(chunk_rows, "chunk_rows")
        got = self._cached(sql, params, transport, cache)
        if got is not None:
            table, name, _ = got
            for start in range(0, max(table.num_rows, 1), chunk_rows):
                yield frames.to_pandas(table.slice(start, chunk_rows), transport=name)
            return
        batch_rows = min(chunk_rows, self.sql_batch_rows)
        with self._statement(sql, params, transport, batch_rows=batch_rows) as (name, result):
            for table in frames.rechunk(result.columns, result.batches(), chunk_rows):
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
    ) -> int:
        """Stream the result of *sql* into a Parquet file at *path*; return the number of rows written.

        The file appears only when the whole result is written: rows go to a temporary file in the same
        folder, renamed onto *path* at the end, so an error or Ctrl-C midway leaves *path* as it was.
        Stored in the cache (*cache*, or the connection's setting) or replayed, the result is held whole.

        :param chunk_rows: rows per row group, and at most per transport batch (default
            :attr:`sql_batch_rows`): one chunk is held at a time, so memory follows it, not the result.
        """
        if chunk_rows is not None:
            _check_positive(chunk_rows, "chunk_rows")
        rows = chunk_rows or self.sql_batch_rows
        path = frames.parquet_target(path)
        got = self._cached(sql, params, transport, cache)
        if got is not None:
            return frames.write_table_parquet(got[0], path)
        batch_rows = min(rows, self.sql_batch_rows)
        with self._statement(sql, params, transport, batch_rows=batch_rows) as (_, result):
            return frames.write_parquet(result.columns, result.batches(), path, chunk_rows=rows)

    def dbapi(self, *, transport: str | None = None) -> dbapi.Connection:
        """A PEP 249 connection (paramstyle ``qmark``) on its own transport, for ``pandas.read_sql`` etc."""
        if self._replay:
            raise ReplayMiss(
                "Replay mode opens no SQL connection, and a DB-API connection cannot be replayed.",
                hint="Use conn.query / fetch / query_arrow / query_chunks / to_parquet, which replay; "
                "dbapi() needs the service.",
            )
        name = self._sql().resolve(transport or self.sql_transport)
        return dbapi.Connection(lambda: self._sql().new(name), to_arrow=frames.batch_to_arrow)


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
    pinned = _transport_option(transport)
    if not caching.replay:
        settings = resolve(base_url, auth_url, client_id, client_secret, jdbc_url, **options)
        conn = Connection(settings, caching=caching)
        conn.sql_transport = pinned
        return conn
    # Replay: the recorded (non-secret) address of the service names it in reprs; nothing is resolved, so
    # neither the environment's secret nor the keyring is read.
    recorded = _recorded_connection(ResultCache(caching.cache_dir))
    given = {"base_url": base_url, "auth_url": auth_url, "client_id": client_id, "jdbc_url": jdbc_url}
    recorded.update({k: v for k, v in given.items() if isinstance(v, str) and v.strip()})
    settings = replay_settings(recorded)
    conn = Connection(settings, caching=caching, online=False)
    conn.sql_transport = pinned
    return conn


def _transport_option(transport: object) -> str:
    """The ``transport`` argument of :func:`connect`, checked (a typo must not silently mean ``auto``)."""
    if transport is None:
        return "auto"
    name = transport.lower() if isinstance(transport, str) else transport
    if name not in sql.TRANSPORTS:
        raise ConfigurationError(
            f"Unknown SQL transport {transport!r}.", hint=f"Use one of {', '.join(sql.TRANSPORTS)}."
        )
    return str(name)


def _recorded_connection(results: ResultCache) -> dict[str, Any]:
    try:
        value = results.load_rest("connection", [])
    except (ReplayMiss, PMError):
        return {}
    return dict(value) if isinstance(value, dict) else {}
