"""``Connection``: the one object a notebook holds — settings, token, REST and SQL in one place."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _http, frames, lifecycle, sql
from ._models import Column, Project, Table, Workgroup
from ._secret import Secret
from .api import RestClient
from .auth import TokenProvider
from .config import Settings, resolve
from .errors import ClosedError, ConfigurationError, NotFound, QueryCancelled
from .sql import dbapi

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

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


class Connection:
    """A connection to one workgroup of the service.

    Build it with :func:`pm_notebook.connect`. It owns one token provider, one REST client and,
    lazily, the SQL transports; ``with connect() as conn:`` closes them all.
    """

    def __init__(self, settings: Settings) -> None:
        if not isinstance(settings, Settings):
            raise TypeError("Connection expects a pm_notebook.config.Settings; use pm_notebook.connect(...)")
        self._settings = settings
        self._session = _http.build_session(settings)
        #: the token provider (``.current``, ``.seconds_left()`` for displays)
        self.tokens = TokenProvider(settings, self._session)
        #: the typed REST client
        self.rest = RestClient(settings, self._session, self.tokens)
        #: the write side of the REST API (projects, column mappings, files)
        self.files_api = lifecycle.ProjectFiles(settings, self._session, self.tokens, self.rest)
        self._sql_transports: sql.Transports | None = None  # created on the first query
        self._closed = False

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

    # --- projects and files (write side) -----------------------------------------------------
    def create_project(self, name: str, description: str | None = None) -> Project:
        """Create an empty project in this workgroup and return it."""
        self._check_open()
        return self.files_api.create_project(name, description)

    def upload(
        self,
        project: Project | str,
        data: Any,
        mapping: lifecycle.ColumnMapping | dict | None = None,
        *,
        wait: bool = True,
        progress: bool | Callable[[str, int, int | None], None] | None = None,
        timeout: float = 3600.0,
        name: str | None = None,
    ) -> lifecycle.UploadedFile:
        """Upload an event log to *project* and, by default, wait until it is mined.

        :param data: a pandas DataFrame (streamed as CSV, never copied whole), a path to a ``.csv`` or a
            ``.zip`` of CSV files, or a file opened in binary mode.
        :param mapping: by column *name*: a :class:`~pm_notebook.lifecycle.ColumnMapping` or a dict with any
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

    def column_mapping(self, project: Project | str) -> pd.DataFrame:
        """The project's column mapping, one row per mapped column."""
        self._check_open()
        return self.files_api.column_mapping(project)

    def close(self) -> None:
        """Release the HTTP connections (and, once opened, the SQL transports); calling it twice is fine."""
        if self._closed:
            return
        self._closed = True
        self._close_sql()
        self._session.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
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
            s = self._settings
            self._sql_transports = sql.Transports(
                jdbc_url=s.jdbc_url,
                sql_http_url=s.sql_http_url,
                user=s.client_id,
                password=s.client_secret,
                timeout=max(300.0, s.timeout[1]),
            )
        return self._sql_transports

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
            from .sql._jvm import clear_interrupt

            clear_interrupt()  # with a JVM in the process, Ctrl-C also interrupted this thread's Java side
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
                ordinal=int(r.ORDINAL_POSITION),
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

        >>> got = conn.fetch('SELECT caseid FROM "my-project-id"', limit=10)  # doctest: +SKIP
        >>> got.frame, got.transport, got.truncated                           # doctest: +SKIP
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigurationError(f"limit must be 0 (all rows) or a positive integer, got {limit!r}.")
        if batch_rows is not None and (
            isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1
        ):
            raise ConfigurationError(f"batch_rows must be a positive integer, got {batch_rows!r}.")
        rows = batch_rows or self.sql_batch_rows
        if limit:
            rows = min(rows, limit + 1)  # one row past the cap tells "more exist" from "exactly limit"
        with self._statement(sql, params, transport, batch_rows=rows) as (name, result):
            table, truncated = frames.collect(result.columns, result.batches(), limit=limit, on_rows=on_rows)
        return Fetched(frames.to_pandas(table, consume=True, transport=name), name, truncated)

    def query(self, sql: str, params: Any = None, *, transport: str | None = None) -> pd.DataFrame:
        """Run *sql* and return a typed DataFrame.

        :param sql: Druid SQL; quote table names (``"<project id>_vertex"``); ``?`` marks a parameter.
        :param params: a list/tuple of values for the ``?`` placeholders, bound by the protocol.
        :param transport: ``"auto"`` (default), ``"druid"``, ``"avatica"`` or ``"jdbc"``.

        Types: TIMESTAMP → ``datetime64[ms, UTC]``, BIGINT → ``Int64``, DOUBLE → ``float64``, VARCHAR →
        ``string``, BOOLEAN → ``boolean``, arrays → lists; NULLs are kept; an empty result keeps its columns.
        ``frame.attrs["transport"]`` names the transport that ran it (see also :meth:`fetch`).
        """
        return self.fetch(sql, params, transport=transport).frame

    def query_arrow(self, sql: str, params: Any = None, *, transport: str | None = None) -> pa.Table:
        """Run *sql* and return a ``pyarrow.Table`` with the same types as :meth:`query`."""
        with self._statement(sql, params, transport) as (_, result):
            return frames.batches_to_table(result.columns, result.batches())

    def query_chunks(
        self, sql: str, params: Any = None, *, chunk_rows: int = 100_000, transport: str | None = None
    ) -> Iterator[pd.DataFrame]:
        """Run *sql* and yield DataFrames of at most *chunk_rows* rows (at least one, maybe empty).

        Rows are fetched as the chunks are consumed; leaving the loop early cancels the rest on the server.
        """
        if not isinstance(chunk_rows, int) or chunk_rows < 1:
            raise ConfigurationError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
        with self._statement(sql, params, transport) as (name, result):
            for table in frames.rechunk(result.columns, result.batches(), chunk_rows):
                yield frames.to_pandas(table, consume=True, transport=name)

    def to_parquet(self, sql: str, path: Any, params: Any = None, *, transport: str | None = None) -> int:
        """Stream the result of *sql* into a Parquet file at *path*; return the number of rows written.

        The file appears only when the whole result is written: rows go to a temporary file in the same
        folder, renamed onto *path* at the end, so an error or Ctrl-C midway leaves *path* as it was.
        """
        path = frames.parquet_target(path)
        with self._statement(sql, params, transport) as (_, result):
            batches = result.batches()
            return frames.write_parquet(result.columns, batches, path, chunk_rows=self.sql_batch_rows)

    def dbapi(self, *, transport: str | None = None) -> dbapi.Connection:
        """A PEP 249 connection (paramstyle ``qmark``) on its own transport, for ``pandas.read_sql`` etc."""
        name = self._sql().resolve(transport or self.sql_transport)
        return dbapi.Connection(lambda: self._sql().new(name), to_arrow=frames.batch_to_arrow)


def connect(
    base_url: str | None = None,
    auth_url: str | None = None,
    client_id: str | None = None,
    client_secret: str | Secret | None = None,
    jdbc_url: str | None = None,
    **options: Any,
) -> Connection:
    """Connect to a workgroup; missing values come from ``PM_*`` env vars, then ``.env``, then the OS keyring.

    No network call is made here: the first REST call requests the token, so a wrong secret surfaces as an
    :class:`~pm_notebook.errors.AuthenticationError` on that call.

    :param options: ``env_file``, ``use_keyring``, ``timeout``, ``retries``, ``backoff_factor``,
        ``backoff_max``, ``renew_before`` (see :func:`pm_notebook.config.resolve`).
    :raises ConfigurationError: a value is missing or malformed.

    >>> with pm_notebook.connect() as conn:  # doctest: +SKIP
    ...     conn.projects()
    """
    if isinstance(client_secret, str):  # no frame of ours keeps it in clear (tracebacks with locals)
        client_secret = Secret(client_secret)
    settings = resolve(base_url, auth_url, client_id, client_secret, jdbc_url, **options)
    return Connection(settings)
