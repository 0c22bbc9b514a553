"""A PEP 249 (DB-API 2.0) facade over any SQL transport, for ``pandas.read_sql``, JupySQL and friends.

Get one from :meth:`pm_notebook.Connection.dbapi` (it brings its own transport, so an open cursor never
competes with ``conn.query``). Parameters use the ``qmark`` style and are bound by the protocol. The service
is read-only: ``commit`` does nothing and ``rollback`` raises :class:`NotSupportedError`.

Errors follow the PEP's tree and also derive from :class:`pm_notebook.PMError`, so either can be caught: query
failures are :class:`ProgrammingError`, cancellations and service/network failures :class:`OperationalError`,
misuse of a closed object :class:`InterfaceError`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import ClosedError, ConfigurationError, PMError, QueryError
from ..query_context import check_context

__all__ = [
    "BINARY",
    "DATETIME",
    "NUMBER",
    "ROWID",
    "STRING",
    "Binary",
    "Connection",
    "Cursor",
    "DataError",
    "DatabaseError",
    "Date",
    "DateFromTicks",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Time",
    "TimeFromTicks",
    "Timestamp",
    "TimestampFromTicks",
    "Warning",
    "apilevel",
    "connect",
    "paramstyle",
    "threadsafety",
]

apilevel = "2.0"
threadsafety = 1  # threads may share the module, not connections
paramstyle = "qmark"


class Warning(Exception):  # noqa: A001 - the name is fixed by PEP 249
    """PEP 249 ``Warning`` (never raised: the service sends no warnings)."""


class Error(PMError):
    """PEP 249 ``Error``: root of the DB-API errors (also a :class:`pm_notebook.PMError`)."""

    def __init__(self, message: str, *, hint: str | None = None, cause: BaseException | None = None) -> None:
        super().__init__(message, hint=hint)
        for name in ("sql", "sqlstate", "error_code", "position", "server_message"):
            setattr(self, name, getattr(cause, name, None))


class _ShownAsMessage:
    """In IPython, the error shows as its message and hint instead of a traceback through the calling tool
    (JupySQL re-raises a driver's errors as they are). Every DB-API error but :class:`InternalError` (a bug,
    whose traceback matters) is caused by the statement, the service or the caller."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an exception is shown
        return f"{type(self).__name__}: {self}".splitlines()


class InterfaceError(_ShownAsMessage, Error):
    """PEP 249: misuse of the interface (a closed cursor or connection)."""


class DatabaseError(Error):
    """PEP 249: an error of the database."""


class DataError(_ShownAsMessage, DatabaseError):
    """PEP 249: bad data (a value that does not fit its declared type)."""


class OperationalError(_ShownAsMessage, DatabaseError):
    """PEP 249: the service failed (network, credentials, cancellation, unavailability)."""


class IntegrityError(_ShownAsMessage, DatabaseError):
    """PEP 249 (never raised: the service is read-only)."""


class InternalError(DatabaseError):
    """PEP 249: an unexpected failure inside pm_notebook (a bug; IPython shows its whole traceback)."""


class ProgrammingError(_ShownAsMessage, DatabaseError):
    """PEP 249: the statement is wrong (SQL error, wrong parameter count or type)."""


class NotSupportedError(_ShownAsMessage, DatabaseError):
    """PEP 249: not available on this read-only service (``rollback``)."""


# Type objects: ``cursor.description[i][1]`` is the SQL type name; these compare equal to the matching names.
class _TypeObject(frozenset[str]):
    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other.split("(", 1)[0].upper() in self
        return frozenset.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = frozenset.__hash__


STRING = _TypeObject({"VARCHAR", "CHAR", "STRING"})
BINARY = _TypeObject({"VARBINARY", "BINARY"})
NUMBER = _TypeObject(
    {"BIGINT", "INTEGER", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC"}
)
DATETIME = _TypeObject({"TIMESTAMP", "DATE", "TIME"})
ROWID = _TypeObject(set())

Date = dt.date
Time = dt.time
Timestamp = dt.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> dt.date:  # noqa: N802 - PEP 249 name
    """PEP 249 constructor."""
    return dt.datetime.fromtimestamp(ticks, dt.timezone.utc).date()


def TimeFromTicks(ticks: float) -> dt.time:  # noqa: N802 - PEP 249 name
    """PEP 249 constructor."""
    return dt.datetime.fromtimestamp(ticks, dt.timezone.utc).time()


def TimestampFromTicks(ticks: float) -> dt.datetime:  # noqa: N802 - PEP 249 name
    """PEP 249 constructor."""
    return dt.datetime.fromtimestamp(ticks, dt.timezone.utc)


def _translate(exc: BaseException) -> Error:
    """Our errors → the PEP 249 class a DB-API caller expects (the original is chained)."""
    from ..errors import QueryCancelled, QueryTimeout

    if isinstance(exc, Error):
        return exc
    if isinstance(exc, ClosedError):
        return InterfaceError(str(exc))
    if isinstance(exc, (ConfigurationError, TypeError)):
        return ProgrammingError(str(exc), cause=exc)
    if isinstance(exc, QueryCancelled):
        return OperationalError(getattr(exc, "message", str(exc)), cause=exc)
    if isinstance(exc, QueryTimeout):  # PEP 249: timeouts are OperationalError
        return OperationalError(exc.message, hint=exc.hint, cause=exc)
    if isinstance(exc, QueryError):
        return ProgrammingError(exc.message, hint=exc.hint, cause=exc)
    if isinstance(exc, PMError):
        return OperationalError(exc.message, hint=exc.hint, cause=exc)
    return InternalError(f"{type(exc).__name__}: {exc}")


def connect(client: Any, *, transport: str | None = None) -> Connection:
    """PEP 249 constructor: a DB-API connection on *client*, a :class:`pm_notebook.Connection`.

    Same as ``client.dbapi(transport=...)``; closing the DB-API connection leaves *client* open.
    """
    if not hasattr(client, "dbapi"):
        raise InterfaceError(
            "connect() needs a pm_notebook.Connection: dbapi.connect(pm_notebook.connect())."
        )
    connection: Connection = client.dbapi(transport=transport)
    return connection


class Connection:
    """PEP 249 connection over one transport (made on first use by *factory*).

    :param factory: builds the transport (``pm_notebook.Connection.dbapi`` passes a fresh one per connection).
    :param to_arrow: turns a transport batch into an Arrow record batch
    (``pm_notebook.frames.batch_to_arrow``).
    :param context: the Druid query context of every statement (checked here, before any request).
    """

    # PEP 249 optional extension: the exception classes as connection attributes.
    Warning = Warning
    Error = Error
    InterfaceError = InterfaceError
    DatabaseError = DatabaseError
    DataError = DataError
    OperationalError = OperationalError
    IntegrityError = IntegrityError
    InternalError = InternalError
    ProgrammingError = ProgrammingError
    NotSupportedError = NotSupportedError

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        to_arrow: Callable[[Any], Any],
        context: Mapping[str, Any] | None = None,
    ) -> None:
        #: the checked context (a bad one raises ConfigurationError here, before any request)
        self.context = check_context(context) or None
        self._factory = factory
        self._to_arrow = to_arrow
        self._transport: Any = None
        self._cursors: list[Cursor] = []
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("The DB-API connection is closed.")

    def transport(self) -> Any:
        """The underlying transport (created on first use)."""
        self._check()
        if self._transport is None:
            try:
                self._transport = self._factory()
            except Exception as exc:
                raise _translate(exc) from exc
        return self._transport

    def cursor(self) -> Cursor:
        """A new cursor."""
        self._check()
        cursor = Cursor(self)
        self._cursors.append(cursor)
        return cursor

    def commit(self) -> None:
        """Nothing to commit: the service is read-only."""
        self._check()

    def rollback(self) -> None:
        """Unsupported: the service has no transactions."""
        self._check()
        raise NotSupportedError("The service has no transactions to roll back.")

    def close(self) -> None:
        """Close every cursor and the transport; closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        for cursor in self._cursors:
            cursor.close()
        if self._transport is not None:
            self._transport.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Cursor:
    """PEP 249 cursor. ``description`` type codes are SQL type names (compare with :data:`STRING` etc.)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1
        self.description: tuple[tuple[Any, ...], ...] | None = None
        self.rowcount = -1
        self._result: Any = None
        self._rows: Iterator[tuple[Any, ...]] = iter(())
        self._fetched = 0
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("The cursor is closed.")
        self.connection._check()

    def _release(self) -> None:
        if self._result is not None:
            self._result.close()
            self._result = None

    def execute(self, operation: str, parameters: Sequence[Any] | None = None) -> Cursor:
        """Run *operation*; ``?`` placeholders are bound from the *parameters* sequence."""
        self._check()
        if isinstance(parameters, dict):
            raise ProgrammingError("Parameters must be a sequence: paramstyle is 'qmark' (use ?).")
        self._release()
        self.description, self.rowcount, self._fetched = None, -1, 0
        transport = self.connection.transport()
        try:
            if self.connection.context:
                result = transport.execute(operation, list(parameters or []), context=self.connection.context)
            else:
                result = transport.execute(operation, list(parameters or []))
        except KeyboardInterrupt:
            raise OperationalError("The query was cancelled (KeyboardInterrupt).") from None
        except Exception as exc:
            raise _translate(exc) from exc
        self._result = result
        self.description = tuple(
            (c.name, c.type_name, None, None, None, None, c.nullable) for c in result.columns
        )
        self._rows = self._iter_rows(result)
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> None:
        """Run *operation* once per parameter sequence (the results are discarded, as PEP 249 allows)."""
        for parameters in seq_of_parameters:
            self.execute(operation, parameters)
        self._release()

    def _iter_rows(self, result: Any) -> Iterator[tuple[Any, ...]]:
        try:
            for batch in result.batches():
                record = self.connection._to_arrow(batch)
                columns = [column.to_pylist() for column in record.columns]
                yield from zip(*columns, strict=True) if columns else ((),) * record.num_rows
        except KeyboardInterrupt:
            result.cancel()
            raise OperationalError("The query was cancelled (KeyboardInterrupt).") from None
        except Error:
            raise
        except Exception as exc:
            raise _translate(exc) from exc
        self.rowcount = self._fetched

    def _next(self) -> tuple[Any, ...] | None:
        if self.description is None:
            raise ProgrammingError("No result to fetch: call execute() first.")
        row = next(self._rows, None)
        if row is None:
            if self.rowcount < 0:
                self.rowcount = self._fetched
            return None
        self._fetched += 1
        return row

    def fetchone(self) -> tuple[Any, ...] | None:
        """The next row, or ``None`` at the end."""
        self._check()
        return self._next()

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        """Up to *size* (default :attr:`arraysize`) rows."""
        self._check()
        rows = []
        for _ in range(self.arraysize if size is None else size):
            row = self._next()
            if row is None:
                break
            rows.append(row)
        return rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        """All remaining rows."""
        self._check()
        rows = []
        while (row := self._next()) is not None:
            rows.append(row)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def setinputsizes(self, sizes: Any) -> None:
        """PEP 249: accepted and ignored."""

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """PEP 249: accepted and ignored."""

    def close(self) -> None:
        """Release the open result; closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        self._release()

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
