"""The transport contract: what every SQL transport takes (a :class:`Target`) and gives (a :class:`Result`
of :class:`Batch` objects described by :class:`ColumnSpec`).

This module holds data types and protocols only, so :mod:`pm_notebook.frames` and type checkers can import it
without pulling in a transport.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._secret import Secret
from ..config import Settings, avatica_url_from_jdbc, sql_http_url_from_jdbc

__all__ = ["Batch", "ColumnSpec", "Result", "Target", "Transport"]


@dataclass(frozen=True)
class ColumnSpec:
    """One result column as the server declared it.

    :param name: the column label.
    :param type_name: the SQL type name, upper case (``TIMESTAMP``, ``BIGINT``, ``VARCHAR``, ``ARRAY``, ...).
    :param element_type: for ``ARRAY`` columns, the SQL type of the elements.
    :param nullable: whether the server says the column may hold NULLs.
    """

    name: str
    type_name: str
    element_type: str | None = None
    nullable: bool = True


@dataclass(frozen=True)
class Batch:
    """A slice of a result, in one of two wire shapes.

    - ``data[i]`` holds column ``columns[i]`` as a sequence of wire values or an Arrow array. Wire values are
      what the protocol carries: epoch ms or ISO text for ``TIMESTAMP``, epoch days for ``DATE``, JSON
      numbers, strings, booleans, lists, ``None`` for NULL.
    - or ``array_lines`` holds the rows as newline-delimited JSON arrays in column order (Druid's
      ``arrayLines``; ``data`` empty; ``num_rows`` is -1 when the lines are not counted before parsing).
      In lines, TIMESTAMP and DATE values are ISO text (Druid's), or epoch ms and epoch days when
      ``epoch_times`` is true (Avatica's wire values).
    """

    columns: tuple[ColumnSpec, ...]
    data: tuple[Any, ...]
    num_rows: int
    array_lines: bytes | None = None
    epoch_times: bool = False


class Result(Protocol):
    """An open statement's result: the declared columns, then batches until exhausted.

    ``close()`` releases the server-side statement; ``cancel()`` may be called while a batch is being fetched
    (from another thread, or after a KeyboardInterrupt) and asks the server to stop the query. After a
    KeyboardInterrupt the transport leaves the calling thread ready for the next statement (the JDBC one
    clears the interrupt flag the JVM set on it).
    """

    columns: tuple[ColumnSpec, ...]

    def batches(self) -> Iterator[Batch]: ...

    def cancel(self) -> None: ...

    def close(self) -> None: ...


class Transport(Protocol):
    """The whole transport contract: run one statement, get a :class:`Result`; close.

    A transport module defines ``open_transport(target: Target) -> Transport`` and gets one line in
    :data:`pm_notebook.sql.REGISTRY`.
    """

    name: str

    def execute(
        self,
        sql: str,
        params: Sequence[Any] | None = None,
        *,
        batch_rows: int = 65536,
        context: Mapping[str, Any] | None = None,
    ) -> Result:
        """Run *sql* with Druid query *context* (checked by :func:`pm_notebook.query_context.check_context`
        before any request, then sent as the protocol sends it: the SQL API's ``context`` object, or the
        Avatica/JDBC connection properties)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Target:
    """Where and as whom every transport connects: one value, built once per connection.

    :param jdbc_url: the Avatica JDBC URL, driver options included (``jdbc`` transport).
    :param avatica_url: the HTTP endpoint inside it (``avatica`` transport).
    :param sql_http_url: ``http://<host>:<port>`` of Druid's SQL HTTP API (``druid`` transport).
    :param user: the login (the workgroup's client id).
    :param password: the client secret, revealed only where bytes go on the wire.
    :param timeout: read timeout of one call or between two chunks of an answer, in seconds.
    :param driver: the Avatica driver jar (else ``PM_JDBC_DRIVER``, else the cached download).
    """

    jdbc_url: str
    avatica_url: str
    sql_http_url: str
    user: str
    password: Secret
    timeout: float = 300.0
    driver: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.password, Secret):  # a str handed in by a caller: hide it at once
            object.__setattr__(self, "password", Secret(self.password))

    @classmethod
    def from_jdbc_url(
        cls,
        jdbc_url: str,
        user: str,
        password: Secret | str,
        *,
        timeout: float = 300.0,
        driver: str | None = None,
    ) -> Target:
        """The target named by a JDBC URL (the other URLs derived from it by :mod:`pm_notebook.config`)."""
        return cls(
            jdbc_url=jdbc_url,
            avatica_url=avatica_url_from_jdbc(jdbc_url),
            sql_http_url=sql_http_url_from_jdbc(jdbc_url),
            user=user,
            password=Secret(password),
            timeout=timeout,
            driver=driver,
        )

    @classmethod
    def from_settings(cls, settings: Settings, *, driver: str | None = None) -> Target:
        """The target of a connection's settings (SQL reads wait at least five minutes)."""
        return cls.from_jdbc_url(
            settings.jdbc_url,
            settings.client_id,
            settings.client_secret,
            timeout=max(300.0, settings.timeout[1]),
            driver=driver,
        )
