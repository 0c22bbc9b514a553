"""Request counters and per-test fault switches, shared by both ports of one sandbox process.

A fault matches the next ``times`` requests whose path starts with its prefix and then answers with a
status (optionally with ``Retry-After``), waits ``delay`` seconds first, or drops the connection
without answering. ``status=None`` with a delay gives a slow but otherwise normal answer.
``drop_after_bytes=N`` lets the normal answer start, then drops the connection once N bytes of its body
went out (a connection lost mid-answer: the client sees a truncated body).

Dropping needs the socket, which ASGI hides; :func:`tracking_protocol` is a uvicorn (httptools) protocol that
records each connection's transport under its peer address so the middleware can abort it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["ADMIN_PREFIX", "Fault", "FaultBoard", "FaultMiddleware", "tracking_protocol"]

ADMIN_PREFIX = "/_sandbox"


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

    def __post_init__(self) -> None:
        if not self.path_prefix.startswith("/"):
            raise ValueError(f"path_prefix must start with '/' (got {self.path_prefix!r})")
        if self.status is not None and not 100 <= int(self.status) <= 599:
            raise ValueError(f"status must be an HTTP status 100-599 or null (got {self.status!r})")
        if int(self.times) < 1:
            raise ValueError(f"times must be at least 1 (got {self.times!r})")
        if float(self.delay) < 0:
            raise ValueError(f"delay must not be negative (got {self.delay!r})")
        if self.drop_after_bytes is not None and (
            isinstance(self.drop_after_bytes, bool)
            or not isinstance(self.drop_after_bytes, int)
            or self.drop_after_bytes < 0
        ):
            raise ValueError(f"drop_after_bytes must be a whole number >= 0 (got {self.drop_after_bytes!r})")


class FaultBoard:
    """Thread-safe store of armed faults and of per-endpoint request counts."""

    def __init__(self, extra_stats: Callable[[], dict[str, Any]] | None = None) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._requests: Counter[str] = Counter()
        self._extra_stats = extra_stats

    def add(self, fault: Fault) -> None:
        """Arm *fault* (faults are matched in the order they were armed)."""
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        """Disarm every fault."""
        with self._lock:
            self._faults.clear()

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
        return out

    def reset_stats(self) -> None:
        """Zero the request counters."""
        with self._lock:
            self._requests.clear()


class _Connections:
    def __init__(self) -> None:
        self._by_peer: dict[tuple, asyncio.BaseTransport] = {}

    def add(self, peer: tuple | None, transport: asyncio.BaseTransport) -> None:
        if peer:
            self._by_peer[tuple(peer)] = transport

    def remove(self, peer: tuple | None) -> None:
        if peer:
            self._by_peer.pop(tuple(peer), None)

    def get(self, peer: Any) -> asyncio.BaseTransport | None:
        return self._by_peer.get(tuple(peer)) if peer else None


def tracking_protocol(connections: _Connections) -> type[HttpToolsProtocol]:
    """A uvicorn httptools protocol class that registers each connection's transport in *connections*."""

    class TrackingProtocol(HttpToolsProtocol):
        def connection_made(self, transport):  # type: ignore[override]
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

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope["path"].startswith(ADMIN_PREFIX):
            await self.app(scope, receive, send)
            return
        self.board.count(scope["method"], scope["path"])
        fault = self.board.take(scope["path"])
        if fault is None:
            await self.app(scope, receive, send)
            return
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


def _cutting_send(send: Callable, transport: asyncio.BaseTransport | None, limit: int) -> Callable:
    """An ASGI ``send`` that passes the first *limit* body bytes, then aborts the connection and swallows
    the rest (the application keeps producing; its answer just never arrives whole). Bytes still in the
    socket buffer at the reset may be lost too: the client gets at most *limit* bytes of the body."""
    sent = 0
    cut = False

    async def cutting(message: dict) -> None:
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


async def _send_fault(send: Callable, fault: Fault, path: str) -> None:
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
