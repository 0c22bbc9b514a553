"""The results a transport has open, and the error a reader gets from a result closed under it.

Every statement has a result of its own: a transport never closes one result to run the next. It keeps its
open results weakly (:class:`OpenResults`), so a result its owner dropped is garbage as usual (each transport
ends a dropped result's statement and threads itself), and closing the transport closes those still open. A
result closed before its last row fails its reader at once with :func:`closed_error`, which names what closed
it: never a hang, never the server blamed for a close of ours.
"""

from __future__ import annotations

import threading
import weakref
from typing import Protocol

from ..errors import ClosedError

__all__ = ["BY_OWNER", "BY_TRANSPORT", "OpenResults", "closed_error"]

#: what closed a result: its owner (the code that ran the statement)
BY_OWNER = "its owner closed it (a chunk iterator closed or dropped, a cursor closed, or result.close())"
#: what closed a result: the transport, with the connection
BY_TRANSPORT = "the connection was closed (or switched to replay), which closes its statements"


def closed_error(transport: str, by: str) -> ClosedError:
    """The misuse error of reading a *transport* result that *by* closed before its last row."""
    return ClosedError(
        f"This {transport} result was closed before all its rows were read: {by}. "
        "Run the query again (on an open connection) to read it."
    )


class _Closable(Protocol):
    def close(self, *, by: str = ...) -> None: ...


class OpenResults:
    """The results of one transport not yet closed, held weakly (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: weakref.WeakSet[_Closable] = weakref.WeakSet()

    def add(self, result: _Closable) -> None:
        with self._lock:
            self._results.add(result)

    def discard(self, result: _Closable) -> None:
        with self._lock:
            self._results.discard(result)

    def close_all(self) -> None:
        """Close every open result, telling its reader that the transport was closed."""
        with self._lock:
            results = list(self._results)
            self._results.clear()
        for result in results:
            result.close(by=BY_TRANSPORT)
