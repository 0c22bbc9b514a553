"""The server connections of one Avatica or JDBC transport, one per distinct query context.

Druid's Avatica server reads the query context from the properties a connection was opened with, so a context
of its own needs a connection of its own (see :func:`.context.context_key`). :class:`Links` keeps the most
recently used :data:`MAX_CONTEXTS` of them and closes the oldest past that; what a connection is, how it is
opened and how it is closed stay with the transport.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .context import context_key

__all__ = ["MAX_CONTEXTS", "Links"]

#: server connections kept open per transport, one per distinct query context (Druid allows 25 per broker)
MAX_CONTEXTS = 4

L = TypeVar("L")


class Links(Generic[L]):
    """A transport's connections keyed by query context, least recently used first.

    :param close: closes one connection (best effort: it must not raise); called on the connection evicted
        past *cap* and on every connection by :meth:`close_all`, outside the internal lock.
    :param cap: how many connections stay open.
    """

    def __init__(self, close: Callable[[L], None], *, cap: int = MAX_CONTEXTS) -> None:
        self._close = close
        self._cap = cap
        # Guards the mapping only: opening and closing connections (server round trips) happen outside it.
        self._lock = threading.Lock()
        self._links: OrderedDict[tuple[tuple[str, str], ...], L] = OrderedDict()

    def get(self, context: dict[str, Any], open_link: Callable[[], L]) -> L:
        """The connection opened with the (checked) *context*, marked as the most recently used; opened now
        by *open_link* if there is none, which closes the least recently used one past the cap."""
        key = context_key(context)
        with self._lock:
            link = self._links.get(key)
            if link is not None:
                self._links.move_to_end(key)
                return link
        link = open_link()
        evicted: list[L] = []
        with self._lock:
            self._links[key] = link
            while len(self._links) > self._cap:
                evicted.append(self._links.popitem(last=False)[1])
        for oldest in evicted:
            self._close(oldest)
        return link

    def forget(self, link: L) -> None:
        """Drop *link* without closing it (the server forgot it, or the transport closes it its own way)."""
        with self._lock:
            for key, known in list(self._links.items()):
                if known is link:
                    del self._links[key]

    def close_all(self) -> None:
        """Close every connection, least recently used first, and forget them."""
        with self._lock:
            links = list(self._links.values())
            self._links.clear()
        for link in links:
            self._close(link)
