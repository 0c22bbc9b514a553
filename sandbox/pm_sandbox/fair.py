"""Requests served in turns shared fairly among workgroups: one workgroup's load cannot slow another's.

Per-workgroup budgets (query slots, worker threads, Avatica connections) stop one workgroup from
*holding* what another needs; they do not share out the processor. Both ports are served by one
event loop, and under load that loop is the queue: 50 busy clients of one workgroup keep dozens of
requests in progress, and a quiet workgroup's request waits its turn behind all of them, FIFO.

:class:`FairAdmission` (ASGI middleware, outermost on both ports) lets only ``turns`` requests be in
progress at once and, when a turn frees, gives it to the waiting workgroup that holds the fewest turns
(among equals, the one served longest ago): a quiet workgroup waits for one request, not for the busy
one's whole queue. Telling the workgroup costs no verification — the client id of an ``Authorization:
Basic`` header, the ``azp`` claim of a bearer token (read, not checked: the app checks it), the owner of
an Avatica ``connectionId`` — and a request that names none is served in an anonymous group of its own.
Claiming another workgroup's id only changes where one waits; it grants nothing.

A request that has been in progress for longer than ``slice_seconds`` stops counting (it goes on): a long
query, a held statement or a slowly read answer never blocks the turns, it only stops being shielded
from the rest.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import os
import re
import time
from collections import deque
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
from starlette.types import Message, Receive, Scope, Send

__all__ = ["FairAdmission", "FairTurns", "workgroup_of"]

#: largest Avatica request body read ahead to find its workgroup (bigger ones wait in the anonymous group)
_PEEK_BYTES = 64 << 10
_CONNECTION_ID = re.compile(rb'"connectionId"\s*:\s*"([^"\\]{1,200})"')
_USER = re.compile(rb'"user"\s*:\s*"([^"\\]{1,200})"')


class FairTurns:
    """At most *turns* holders at once, handed out round-robin by workgroup (one event loop's tasks).

    :param turns: holders at once (``0``: two per processor).
    :param slice_seconds: after this long a holder no longer holds its turn.
    """

    def __init__(self, turns: int = 0, slice_seconds: float = 0.05) -> None:
        if turns < 0 or not slice_seconds > 0:
            raise ValueError("turns must be >= 0 and slice_seconds > 0")
        self.turns = turns or 2 * (os.cpu_count() or 1)
        self.slice_seconds = slice_seconds
        self._running: dict[int, tuple[Any, float]] = {}  # ticket -> (workgroup, started)
        self._waiting: dict[Any, deque[tuple[int, asyncio.Future[None]]]] = {}
        self._served: dict[Any, int] = {}  # workgroup -> when it last got a turn (a counter)
        self._tickets = itertools.count()
        self._clock = itertools.count()
        self._timer: asyncio.TimerHandle | None = None

    @asynccontextmanager
    async def turn(self, workgroup: Any):  # type: ignore[no-untyped-def]
        """Wait for a turn for *workgroup*; hold it while the ``async with`` block runs."""
        ticket = next(self._tickets)
        loop = asyncio.get_running_loop()
        if not self._waiting and self._active(time.monotonic())[0] < self.turns:
            self._grant(workgroup, ticket, time.monotonic())  # the usual case when not loaded: no wait
        else:
            granted: asyncio.Future[None] = loop.create_future()
            self._waiting.setdefault(workgroup, deque()).append((ticket, granted))
            self._dispatch(loop)
            try:
                await granted
            except BaseException:
                if granted.done() and not granted.cancelled():
                    self._release(ticket, loop)  # granted while being cancelled: give it back
                else:
                    self._forget(workgroup, ticket)
                raise
        try:
            yield
        finally:
            self._release(ticket, loop)

    def state(self) -> dict[str, Any]:
        """``{"turns", "active", "waiting": n, "waiting_by_workgroup": {workgroup: n}}``: the requests in
        progress within their slice and those waiting (for tests and ``/_sandbox/stats``; any thread)."""
        waiting = {str(w): len(q) for w, q in list(self._waiting.items()) if q}
        return {
            "turns": self.turns,
            "active": self._active(time.monotonic())[0],
            "waiting": sum(waiting.values()),
            "waiting_by_workgroup": waiting,
        }

    # -- scheduling (event loop only: no lock needed) -------------------------------------------------
    def _grant(self, workgroup: Any, ticket: int, now: float) -> None:
        self._running[ticket] = (workgroup, now)
        self._served[workgroup] = next(self._clock)
        if len(self._served) > 4096:  # forget workgroups that have long been quiet
            for key in sorted(self._served, key=self._served.__getitem__)[:2048]:
                del self._served[key]

    def _release(self, ticket: int, loop: asyncio.AbstractEventLoop) -> None:
        if self._running.pop(ticket, None) is not None:
            self._dispatch(loop)

    def _forget(self, workgroup: Any, ticket: int) -> None:
        queue = self._waiting.get(workgroup)
        if queue is None:
            return
        for i, (t, _) in enumerate(queue):
            if t == ticket:
                del queue[i]
                break
        if not queue:
            del self._waiting[workgroup]

    def _active(self, now: float) -> tuple[int, dict[Any, int]]:
        per_workgroup: dict[Any, int] = {}
        for workgroup, started in list(self._running.values()):  # state() reads it from other threads
            if now - started < self.slice_seconds:
                per_workgroup[workgroup] = per_workgroup.get(workgroup, 0) + 1
        return sum(per_workgroup.values()), per_workgroup

    def _dispatch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Grant free turns to the waiting workgroups, fewest turns held first; re-check when a slice ends."""
        now = time.monotonic()
        active, per_workgroup = self._active(now)
        while self._waiting and active < self.turns:
            workgroup = min(self._waiting, key=lambda w: (per_workgroup.get(w, 0), self._served.get(w, -1)))
            queue = self._waiting[workgroup]
            ticket, granted = queue.popleft()
            if not queue:
                del self._waiting[workgroup]
            if granted.done():  # cancelled while waiting
                continue
            self._grant(workgroup, ticket, now)
            granted.set_result(None)
            active += 1
            per_workgroup[workgroup] = per_workgroup.get(workgroup, 0) + 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._waiting:  # all turns taken: the next one frees at a release or when a slice ends
            ends = [
                s + self.slice_seconds - now
                for _, s in self._running.values()
                if now - s < self.slice_seconds
            ]
            if ends:
                self._timer = loop.call_later(max(min(ends), 0.0005), self._dispatch, loop)


Identify = Callable[[Scope, bytes | None], Any]


class FairAdmission:
    """ASGI middleware: each HTTP request waits for a fair turn (:class:`FairTurns`) before the app runs.

    :param identify: ``identify(scope, body)`` → the request's workgroup (or ``None``); *body* is the
        request body when the path starts with one of *peek_paths* and it is small, else ``None``.
    :param exempt: path prefixes served without a turn (the sandbox's admin routes).
    """

    def __init__(
        self,
        app: Any,
        turns: FairTurns,
        identify: Identify,
        peek_paths: tuple[str, ...] = (),
        exempt: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.turns = turns
        self.identify = identify
        self.peek_paths = peek_paths
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.exempt and scope["path"].startswith(self.exempt)):
            await self.app(scope, receive, send)
            return
        body: bytes | None = None
        peek = self.peek_paths and scope["path"].startswith(self.peek_paths)
        if peek and scope["method"] == "POST" and _small(scope):
            body, receive = await _read_ahead(receive)
        async with self.turns.turn(self.identify(scope, body)):
            await self.app(scope, receive, send)


def _small(scope: Scope) -> bool:
    length = dict(scope["headers"]).get(b"content-length")
    return length is not None and length.isdigit() and int(length) <= _PEEK_BYTES


async def _read_ahead(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole (small) body, and a ``receive`` that gives it to the app as if unread."""
    messages, chunks = [], []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    replay = deque(messages)

    async def replayed() -> Message:
        return replay.popleft() if replay else await receive()

    return b"".join(chunks), replayed


def workgroup_of(scope: Scope, body: bytes | None, avatica_owner: Callable[[str], str | None]) -> str | None:
    """The workgroup a request claims to be from (unverified; only used to pick its queue)."""
    auth = dict(scope["headers"]).get(b"authorization", b"")
    scheme, _, value = auth.partition(b" ")
    scheme = scheme.lower()
    try:
        if scheme == b"basic":
            return base64.b64decode(value.strip(), validate=True).partition(b":")[0].decode()
        if scheme == b"bearer":
            payload = value.strip().split(b".")[1]
            claims = orjson.loads(base64.urlsafe_b64decode(payload + b"=" * (-len(payload) % 4)))
            azp = claims.get("azp") if isinstance(claims, dict) else None
            return azp if isinstance(azp, str) else None
    except (ValueError, IndexError, binascii.Error, orjson.JSONDecodeError):
        return None
    if body:
        found = _CONNECTION_ID.search(body)
        owner = avatica_owner(found.group(1).decode()) if found is not None else None
        if owner is None:  # openConnection (a new id): the connection's user is its client id
            found = _USER.search(body)
            owner = found.group(1).decode() if found is not None else None
        return owner
    return None
