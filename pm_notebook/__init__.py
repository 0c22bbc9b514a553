"""pm_notebook: work with a process-mining service's data from Jupyter and pandas.

>>> import pm_notebook
>>> conn = pm_notebook.connect()            # doctest: +SKIP  (PM_* variables, .env or keyring)
>>> conn.query('SELECT COUNT(*) AS n FROM "my-project-id"')  # doctest: +SKIP

In a notebook: ``%load_ext pm_notebook`` then ``%%pmsql``.
"""

from __future__ import annotations

import typing as _typing

from . import errors as _errors
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
from ._version import __version__
from .connection import Connection, connect
from .errors import (
    AuthenticationError,
    CacheError,
    ClosedError,
    ConfigurationError,
    DriverError,
    HTTPError,
    LicenceError,
    MappingError,
    MissingDependency,
    NotFound,
    PermissionDenied,
    PMError,
    QueryCancelled,
    QueryError,
    QueryTimeout,
    ReplayMiss,
    RequestTimeout,
    SchemaError,
    ServiceUnavailable,
    TokenRejected,
    TransportError,
    UploadError,
)

if _typing.TYPE_CHECKING:  # pragma: no cover
    from IPython.core.interactiveshell import InteractiveShell

__all__ = [
    "AuthenticationError",
    "CacheError",
    "ClosedError",
    "Column",
    "ColumnMapping",
    "ConfigurationError",
    "Connection",
    "DriverError",
    "GraphInstance",
    "HTTPError",
    "LicenceError",
    "MappingError",
    "MappingInfo",
    "MissingDependency",
    "NotFound",
    "PMError",
    "PermissionDenied",
    "ProcessGraph",
    "Project",
    "QueryCancelled",
    "QueryError",
    "QueryTimeout",
    "ReplayMiss",
    "RequestTimeout",
    "SchemaError",
    "ServiceUnavailable",
    "Table",
    "TokenRejected",
    "TransportError",
    "UploadError",
    "Variant",
    "Workgroup",
    "__version__",
    "connect",
    "load_ipython_extension",
    "unload_ipython_extension",
]

for _name in _errors.__all__:
    _obj = getattr(_errors, _name)
    if isinstance(_obj, type):
        _obj.__module__ = "pm_notebook"


def load_ipython_extension(ipython: InteractiveShell) -> None:  # pragma: no cover - run by IPython
    """``%load_ext pm_notebook``: registers ``%pmsql`` / ``%%pmsql`` (IPython is imported only here)."""
    from .magic import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: InteractiveShell) -> None:  # pragma: no cover - run by IPython
    """``%unload_ext pm_notebook``: removes the magics again."""
    from .magic import unload_ipython_extension as _unload

    _unload(ipython)
