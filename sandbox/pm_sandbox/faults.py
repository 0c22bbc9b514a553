"""Request counters and per-test fault switches, shared by both ports of one sandbox process.

A fault matches the next ``times`` requests whose path starts with its prefix and then answers with a
status (optionally with ``Retry-After``), waits ``delay`` seconds first (at most :data:`MAX_DELAY`), or
drops the connection without answering. ``status=None`` with a delay gives a slow but otherwise normal
answer. ``drop_after_bytes=N`` lets the normal answer start, then drops the connection once N bytes of its
body went out (a connection lost mid-answer: the client sees a truncated body). ``hold=True`` keeps the
request waiting until :meth:`FaultBoard.release` (or :meth:`FaultBoard.clear`), however long that is, before
the rest of the fault applies: a slow answer by construction, not by a guessed delay.

The board also carries the SQL engine's statement holds (``holds``, a
:class:`~pm_sandbox.sql.engine.StatementHolds`: the next statements matching a text or a
workgroup wait until interrupted or released): released and disarmed with the faults, and reported in
:meth:`FaultBoard.stats`.

Dropping needs the socket, which ASGI hides; :func:`tracking_protocol` is a uvicorn (httptools) protocol that
records each connection's transport under its peer address so the middleware can abort it. It also
refuses a request head (request line and headers) over :data:`~pm_sandbox.limits.MAX_HEAD_BYTES`
with a 431 in the endpoint's error shape (httptools itself sets no limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .limits import MAX_HEAD_BYTES, head_too_large

if TYPE_CHECKING:  # pragma: no cover
    from .sql.engine import StatementHolds

__all__ = ["ADMIN_PREFIX", "MAX_DELAY", "Fault", "FaultBoard", "FaultMiddleware", "tracking_protocol"]

ADMIN_PREFIX = "/_sandbox"
#: the longest delay a fault may ask for, seconds: longer is a hang, not a fault
MAX_DELAY = 600.0
#: a Retry-After is only announced, never waited for by the sandbox: a day at most
MAX_RETRY_AFTER = 86_400.0


@dataclass
class Fault:
    """One armed fault switch."""

    path_prefix: str
    status: int | None = 503
    times: int = 1
    retry_after: float | None = None
    delay: float = 0.0
    drop: bool = False
    drop_after_bytes: int | None = None
    hold: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.path_prefix, str) or not self.path_prefix.startswith("/"):
            raise ValueError(f"path_prefix must be a string starting with '/' (got {self.path_prefix!r})")
        if self.status is not None and (not _is_int(self.status) or not 100 <= self.status <= 599):
            raise ValueError(f"status must be an HTTP status 100-599 or null (got {self.status!r})")
        if not _is_int(self.times) or not 1 <= self.times <= 1_000_000:
            raise ValueError(f"times must be an integer from 1 to 1000000 (got {self.times!r})")
        _check_seconds("delay", self.delay)
        if self.retry_after is not None:
            _check_seconds("retry_after", self.retry_after, limit=MAX_RETRY_AFTER)  # only announced
        if self.drop_after_bytes is not None and (
            not _is_int(self.drop_after_bytes) or self.drop_after_bytes < 0
        ):
            raise ValueError(f"drop_after_bytes must be a whole number >= 0 (got {self.drop_after_bytes!r})")
        if not isinstance(self.drop, bool):
            raise ValueError(f"drop must be true or false (got {self.drop!r})")
        if not isinstance(self.hold, bool):
            raise ValueError(f"hold must be true or false (got {self.hold!r})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_seconds(name: str, value: Any, limit: float = MAX_DELAY) -> None:
    """A number of seconds from 0 to *limit* (NaN, infinities and strings are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds (got {value!r})")
    if not 0 <= value <= limit:
        raise ValueError(f"{name} must be from 0 to {limit:g} seconds (got {value!r})")


class FaultBoard:
    """Thread-safe store of armed faults and of per-endpoint request counts."""

    def __init__(
        self,
        extra_stats: Callable[[], dict[str, Any]] | None = None,
        *,
        holds: StatementHolds | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._requests: Counter[str] = Counter()
        self._extra_stats = extra_stats
        self._held: list[threading.Event] = []  # one per request kept waiting by a ``hold`` fault
        #: the SQL engine's statement holds (None when the board serves no SQL port)
        self.holds = holds

    def add(self, fault: Fault) -> None:
        """Arm *fault* (faults are matched in the order they were armed)."""
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        """Disarm every fault and statement hold, and release what they hold."""
        with self._lock:
            self._faults.clear()
        if self.holds is not None:
            self.holds.clear()
        self.release()

    def hold_request(self) -> threading.Event:
        """Register a request kept waiting by a ``hold`` fault; it goes on once the event is set."""
        event = threading.Event()
        with self._lock:
            self._held.append(event)
        return event

    def unhold_request(self, event: threading.Event) -> None:
        """Forget a held request (released, or its client left)."""
        with self._lock:
            if event in self._held:
                self._held.remove(event)

    def release(self) -> dict[str, int]:
        """Let every held request and held statement go on; ``{"requests": n, "statements": n}``."""
        with self._lock:
            held, self._held = self._held, []
        for event in held:
            event.set()
        statements = self.holds.release() if self.holds is not None else 0
        return {"requests": len(held), "statements": statements}

    def held(self) -> dict[str, Any]:
        """``{"requests": n held now, "statements": the statement holds' state (armed, held, ended)}``."""
        with self._lock:
            requests = len(self._held)
        statements = self.holds.state() if self.holds is not None else {"armed": [], "held": 0, "ended": {}}
        return {"requests": requests, "statements": statements}

    def pending(self) -> list[dict[str, Any]]:
        """The armed faults, as plain dicts."""
        with self._lock:
            return [asdict(f) for f in self._faults]

    def take(self, path: str) -> Fault | None:
        """The first fault matching *path*, consuming one of its ``times``."""
        with self._lock:
            for fault in self._faults:
                if path.startswith(fault.path_prefix):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def count(self, method: str, path: str) -> None:
        """Count one request to ``"<METHOD> <path>"``."""
        with self._lock:
            self._requests[f"{method} {path}"] += 1

    def stats(self) -> dict[str, Any]:
        """``{"requests": {"<METHOD> <path>": n}, ...extra}``."""
        with self._lock:
            out: dict[str, Any] = {"requests": dict(self._requests)}
        if self._extra_stats:
            out.update(self._extra_stats())
        out["faults"] = self.pending()
        out["held"] = self.held()
        return out

    def reset_stats(self) -> None:
        """Zero the request counters."""
        with self._lock:
            self._requests.clear()


class _Connections:
    def __init__(self) -> None:
        self._by_peer: dict[tuple[Any, ...], asyncio.Transport] = {}

    def add(self, peer: tuple[Any, ...] | None, transport: asyncio.Transport) -> None:
        if peer:
            self._by_peer[tuple(peer)] = transport

    def remove(self, peer: tuple[Any, ...] | None) -> None:
        if peer:
            self._by_peer.pop(tuple(peer), None)

    def get(self, peer: Any) -> asyncio.Transport | None:
        return self._by_peer.get(tuple(peer)) if peer else None


class _HeadTooLarge(Exception):
    pass


def tracking_protocol(
    connections: _Connections, max_head_bytes: int = MAX_HEAD_BYTES
) -> type[HttpToolsProtocol]:
    """A uvicorn httptools protocol class that registers each connection's transport in *connections*
    and refuses request heads larger than *max_head_bytes*."""

    class TrackingProtocol(HttpToolsProtocol):
        _head_bytes = 0
        _head_refused = False

        def on_message_begin(self) -> None:
            self._head_bytes = 0
            super().on_message_begin()

        def _count(self, n: int) -> None:
            self._head_bytes += n
            if self._head_bytes > max_head_bytes:
                self._head_refused = True
                raise _HeadTooLarge  # the parser stops; uvicorn answers through send_400_response

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value) + 4)
            super().on_header(name, value)

        def send_400_response(self, msg: str) -> None:
            if not self._head_refused:
                super().send_400_response(msg)
                return
            path = self.url.split(b"?", 1)[0].decode("latin-1")
            status, body = head_too_large(path, max_head_bytes)
            reason = b"Internal Server Error" if status == 500 else b"Request Header Fields Too Large"
            head = (
                b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n" % (status, reason, len(body))
            )
            self.transport.write(head + body)
            self.transport.close()

        # uvicorn's protocol takes the stream Transport it is given, narrower than BaseProtocol says.
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            # Headers and body leave in separate writes: without TCP_NODELAY, Nagle holds the body back
            # until the client's delayed ACK (~40 ms on every request).
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)
            connections.add(self.client, transport)

        def connection_lost(self, exc: Exception | None) -> None:
            connections.remove(self.client)
            super().connection_lost(exc)

    return TrackingProtocol


class FaultMiddleware:
    """ASGI middleware: counts every non-admin request, then applies the first matching fault."""

    def __init__(self, app: Any, board: FaultBoard, connections: _Connections) -> None:
        self.app = app
        self.board = board
        self.connections = connections

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(ADMIN_PREFIX):
            await self.app(scope, receive, send)
            return
        self.board.count(scope["method"], scope["path"])
        fault = self.board.take(scope["path"])
        if fault is None:
            await self.app(scope, receive, send)
            return
        if fault.hold:
            released = self.board.hold_request()
            try:
                while not released.is_set():  # the admin route that releases it runs in another thread
                    await asyncio.sleep(0.01)
            finally:
                self.board.unhold_request(released)
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.drop:
            transport = self.connections.get(scope.get("client"))
            if transport is not None:
                transport.abort()
                for _ in range(3):  # let uvicorn see the disconnect so it does not try to answer 500
                    await asyncio.sleep(0)
                return
        if fault.drop_after_bytes is not None:
            transport = self.connections.get(scope.get("client"))
            await self.app(scope, receive, _cutting_send(send, transport, fault.drop_after_bytes))
            return
        if fault.status is None:
            await self.app(scope, receive, send)
            return
        await _send_fault(send, fault, scope["path"])


def _cutting_send(send: Send, transport: asyncio.Transport | None, limit: int) -> Send:
    """An ASGI ``send`` that passes the first *limit* body bytes, then aborts the connection and swallows
    the rest (the application keeps producing; its answer just never arrives whole). Bytes still in the
    socket buffer at the reset may be lost too: the client gets at most *limit* bytes of the body."""
    sent = 0
    cut = False

    async def cutting(message: Message) -> None:
        nonlocal sent, cut
        if cut:
            return
        if message["type"] != "http.response.body" or transport is None:
            await send(message)
            return
        body = message.get("body", b"")
        if sent + len(body) < limit:  # an answer shorter than the limit arrives whole
            sent += len(body)
            await send(message)
            return
        if limit > sent:
            await send({"type": "http.response.body", "body": body[: limit - sent], "more_body": True})
        sent = limit
        cut = True
        for _ in range(2):  # let the part written leave the socket buffer before the reset
            await asyncio.sleep(0)
        transport.abort()

    return cutting


async def _send_fault(send: Send, fault: Fault, path: str) -> None:
    status = int(fault.status or 503)
    body = json.dumps(
        {"status": status, "error": "sandbox_fault", "message": f"Injected fault {status} for {path}"}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if fault.retry_after is not None:
        value = fault.retry_after
        headers.append((b"retry-after", str(int(value) if float(value).is_integer() else value).encode()))
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="pub", error="invalid_token"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
