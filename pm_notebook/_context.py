"""The notebook's current connection, shared by ``%pmsql`` and the widgets (which never import each other)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .connection import Connection

__all__ = ["clear_current", "get_current", "set_current"]

_lock = threading.Lock()
_current: Connection | None = None


def set_current(conn: Connection | None) -> None:
    """Make *conn* the connection that ``%pmsql`` and the widgets use from now on (``None`` forgets it)."""
    global _current
    with _lock:
        _current = conn


def get_current() -> Connection | None:
    """Return the current connection, or ``None`` when nothing has connected yet."""
    return _current


def clear_current() -> None:
    """Forget the current connection (does not close it)."""
    set_current(None)
