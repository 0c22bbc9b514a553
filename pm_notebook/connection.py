"""``Connection``: the one object a notebook holds — settings, token, REST and SQL in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from . import _http, frames, sql
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

    from .mining import ProcessLog

__all__ = ["Connection", "connect"]


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

    def mining(self, project: Project | str, *, include_excluded: bool = False) -> ProcessLog:
        """The process log of *project* (a :class:`Project`, its id or its name) for process-mining answers.

        Every answer (``summary()``, ``variants()``, ``process_map()``...) is computed by Druid SQL; see
        :class:`pm_notebook.mining.ProcessLog`. Excluded cases are left out unless *include_excluded*.

        >>> conn.mining("Purchase to Pay").variants(top=5)  # doctest: +SKIP
        """
        self._check_open()
        from .mining import ProcessLog

        return ProcessLog.open(self, project, include_excluded=include_excluded)

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
    #: the transport the last statement went through ("druid", "avatica" or "jdbc"); None before any
    last_transport: str | None = None

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
    def _statement(self, sql_text: str, params: Any, transport: str | None) -> Iterator[sql.Result]:
        """Run one statement; Ctrl-C cancels it on the server and surfaces as QueryCancelled.

        The name of the transport used is left in ``self.last_transport`` (shown by the magic's footer).
        """
        values = sql.check_params(params)
        chosen = self._sql().get(transport or self.sql_transport)
        self.last_transport = chosen.name
        result = None
        try:
            result = chosen.execute(sql_text, values, batch_rows=self.sql_batch_rows)
            yield result
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

    def query(self, sql: str, params: Any = None, *, transport: str | None = None) -> pd.DataFrame:
        """Run *sql* and return a typed DataFrame.

        :param sql: Druid SQL; quote table names (``"<project id>_vertex"``); ``?`` marks a parameter.
        :param params: a list/tuple of values for the ``?`` placeholders, bound by the protocol.
        :param transport: ``"auto"`` (default), ``"druid"``, ``"avatica"`` or ``"jdbc"``.

        Types: TIMESTAMP → ``datetime64[ms, UTC]``, BIGINT → ``Int64``, DOUBLE → ``float64``, VARCHAR →
        ``string``, BOOLEAN → ``boolean``, arrays → lists; NULLs are kept; an empty result keeps its columns.
        """
        frame = frames.to_pandas(self.query_arrow(sql, params, transport=transport), consume=True)
        frame.attrs["transport"] = self.last_transport
        return frame

    def query_arrow(self, sql: str, params: Any = None, *, transport: str | None = None) -> pa.Table:
        """Run *sql* and return a ``pyarrow.Table`` with the same types as :meth:`query`."""
        with self._statement(sql, params, transport) as result:
            return frames.batches_to_table(result.columns, result.batches())

    def query_chunks(
        self, sql: str, params: Any = None, *, chunk_rows: int = 100_000, transport: str | None = None
    ) -> Iterator[pd.DataFrame]:
        """Run *sql* and yield DataFrames of at most *chunk_rows* rows (at least one, maybe empty).

        Rows are fetched as the chunks are consumed; leaving the loop early cancels the rest on the server.
        """
        if not isinstance(chunk_rows, int) or chunk_rows < 1:
            raise ConfigurationError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
        with self._statement(sql, params, transport) as result:
            result_transport = self.last_transport
            for table in frames.rechunk(result.columns, result.batches(), chunk_rows):
                chunk = frames.to_pandas(table, consume=True)
                chunk.attrs["transport"] = result_transport
                yield chunk

    def to_parquet(self, sql: str, path: Any, params: Any = None, *, transport: str | None = None) -> int:
        """Stream the result of *sql* into a Parquet file at *path*; return the number of rows written."""
        with self._statement(sql, params, transport) as result:
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
