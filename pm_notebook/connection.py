"""``Connection``: the one object a notebook holds — settings, token, REST and SQL in one place.

Ownership while the first version is being built (remove this note when done):
- REST part (``__init__``, ``settings``, ``tokens``, ``rest``, ``projects`` ... ``workgroup``, ``close``): client core (issue 4).
- SQL part (``query*``, ``to_parquet``, ``dbapi``, ``columns``): SQL client (issue 5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

__all__ = ["Connection", "connect"]


class Connection:
    """A connection to one workgroup of the service.

    Build it with :func:`pm_notebook.connect`. It owns one token provider, one REST client and,
    lazily, the SQL transports; ``with connect() as conn:`` closes them all.
    """

    # --- REST part (issue 4) -------------------------------------------------------------------
    def __init__(self, settings: Any) -> None:
        raise NotImplementedError

    def projects(self) -> list:
        raise NotImplementedError

    def project(self, project_id: str):
        raise NotImplementedError

    def tables(self, project) -> list:
        raise NotImplementedError

    def workgroup(self):
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- SQL part (issue 5) --------------------------------------------------------------------
    def columns(self, table) -> list:
        raise NotImplementedError

    def query(self, sql: str, params: Any = None, *, transport: str | None = None) -> pd.DataFrame:
        raise NotImplementedError

    def query_arrow(self, sql: str, params: Any = None, *, transport: str | None = None) -> pa.Table:
        raise NotImplementedError

    def query_chunks(self, sql: str, params: Any = None, *, chunk_rows: int = 100_000, transport: str | None = None):
        raise NotImplementedError

    def to_parquet(self, sql: str, path: Any, params: Any = None, *, transport: str | None = None) -> int:
        raise NotImplementedError

    def dbapi(self, *, transport: str | None = None):
        raise NotImplementedError


def connect(
    base_url: str | None = None,
    auth_url: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    jdbc_url: str | None = None,
    **options: Any,
) -> Connection:
    """Connect to a workgroup; missing values come from ``PM_*`` env vars, then ``.env``, then the OS keyring."""
    raise NotImplementedError
