"""The server connections of one Avatica or JDBC transport: one per distinct query context, and one more for
each result still being read when another statement starts.

Druid's Avatica server reads the query context from the properties a connection was opened with, so a context
of its own needs a connection of its own (see :func:`pm_notebook.query_context.context_key`). Every statement
gets a result of its own, and a new statement never closes one still being read: while a result is open on a
connection (:class:`Seats`), the next statement of that context goes to another connection (opened then, and
kept). The server runs the calls of one connection one at a time (Druid's Avatica handler holds the connection
while a statement executes), so two results sharing a connection would queue behind each other; two
connections run side by side. :class:`Links` keeps the most recently used :data:`MAX_CONTEXTS` idle
connections and closes the oldest idle one past that; what a connection is, how it is opened and closed stay
with the transport.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from ..query_context import context_key

__all__ = ["CREATING", "MAX_CONTEXTS", "Links", "Seat", "Seats"]

#: server connections kept open per transport, one per distinct query context (Druid allows 25 per broker)
MAX_CONTEXTS = 4
#: how a statement is placed on its connection: ``"shared"`` reuses the connection's shared statement,
#: ``"new-shared"`` creates it (it stays for the connection's next queries), ``"owned"`` prepares a statement
#: that its result owns and closes (a parameterised query)
Seat = Literal["shared", "new-shared", "owned"]

#: :attr:`Seats.shared` while the shared statement is being created
CREATING = object()


@dataclass
class Seats:
    """The statements of one server connection (read and changed under :class:`Links`' lock): the shared
    one, reused by unparameterised queries, and whether a result is open on the connection (at most one).

    :attr:`shared` is the transport's handle of the shared statement (its id, its Java object), or
    :data:`CREATING`; only the result holding the connection changes it.
    """

    shared: Any = None  # the shared statement, if it exists on the server
    busy: bool = False  # a result is open on the connection
    retired: bool = False  # takes no new statement (its connection is closed once its result is)

    @property
    def results(self) -> int:
        """Results open on the connection (0 or 1)."""
        return int(self.busy)

    def take(self, reusable: bool) -> tuple[Seat, Any] | None:
        """The connection for one more statement (``reusable``: unparameterised) and the shared statement it
        reuses (else ``None``); ``None`` if a result is open on it (or it is retired)."""
        if self.retired or self.busy:
            return None
        self.busy = True
        if not reusable:
            return "owned", None
        if self.shared is None:
            self.shared = CREATING
            return "new-shared", None
        return "shared", self.shared

    def give_back(self, seat: Seat, *, shared_lost: bool = False) -> None:
        """The result of *seat* is closed (*shared_lost*: the shared statement is gone on the server too)."""
        self.busy = False
        if shared_lost and seat != "owned":
            self.shared = None


L = TypeVar("L")


class Links(Generic[L]):
    """A transport's connections keyed by query context, least recently used first.

    :param close: closes one connection (best effort: it must not raise); called on the idle connection
        evicted past *cap* and on every connection by :meth:`close_all`, outside the internal lock.
    :param cap: how many idle connections stay open (connections with results still open are never evicted).
    """

    def __init__(self, close: Callable[[L], None], *, cap: int = MAX_CONTEXTS) -> None:
        self._close = close
        self._cap = cap
        # Guards the mapping and the links' seats: opening and closing connections (server round trips)
        # happen outside it.
        self._lock = threading.Lock()
        self._links: OrderedDict[tuple[Any, ...], L] = OrderedDict()
        self._extra = 0  # numbers the second, third... connection of one context

    def get(self, context: dict[str, Any], open_link: Callable[[], L]) -> L:
        """The connection opened with the (checked) *context*, marked as the most recently used; opened now
        by *open_link* if there is none, which closes the least recently used idle one past the cap."""
        base = context_key(context)
        with self._lock:
            link = self._links.get((base,))
            if link is not None:
                self._links.move_to_end((base,))
                return link
        link = open_link()
        self._add(base, link)
        return link

    def take(
        self, context: dict[str, Any], open_link: Callable[[], L], *, reusable: bool
    ) -> tuple[L, Seat, Any]:
        """A connection opened with *context* on which no result is open, the seat taken on it and its shared
        statement (see :meth:`Seats.take`; *reusable*: an unparameterised statement). If every connection of
        the context has a result open, another one is opened for it."""
        base = context_key(context)
        with self._lock:
            for key, link in reversed(self._links.items()):
                if key[0] == base:
                    taken = _seats(link).take(reusable)
                    if taken is not None:
                        self._links.move_to_end(key)
                        return link, *taken
        link = open_link()
        with self._lock:
            taken = _seats(link).take(reusable)
        assert taken is not None  # a new connection has room
        self._add(base, link)
        return link, *taken

    def give_back(self, link: L, seat: Seat, *, shared_lost: bool = False) -> bool:
        """A result on *link* is closed (see :meth:`Seats.give_back`); ``True`` if *link* is retired and now
        idle: the caller closes it."""
        with self._lock:
            seats = _seats(link)
            seats.give_back(seat, shared_lost=shared_lost)
            return seats.retired and not seats.results

    def _add(self, base: tuple[tuple[str, str], ...], link: L) -> None:
        evicted: list[L] = []
        with self._lock:
            self._extra += 1
            key = (base,) if (base,) not in self._links else (base, self._extra)
            self._links[key] = link
            idle = [k for k, known in self._links.items() if k != key and not _busy(known)]
            while len(self._links) > self._cap and idle:
                evicted.append(self._links.pop(idle.pop(0)))
        for oldest in evicted:
            self._close(oldest)

    def forget(self, link: L) -> bool:
        """Drop *link* without closing it (the server forgot it, or the transport closes it its own way); it
        takes no new statement. ``True`` if no result is open on it (the caller may close it now)."""
        with self._lock:
            for key, known in list(self._links.items()):
                if known is link:
                    del self._links[key]
            seats = getattr(link, "seats", None)
            if isinstance(seats, Seats):
                seats.retired = True
                return not seats.results
            return True

    def close_all(self) -> None:
        """Close every connection, least recently used first, and forget them."""
        with self._lock:
            links = list(self._links.values())
            self._links.clear()
        for link in links:
            self._close(link)


def _seats(link: Any) -> Seats:
    seats: Seats = link.seats
    return seats


def _busy(link: Any) -> bool:
    seats = getattr(link, "seats", None)
    return isinstance(seats, Seats) and seats.results > 0
