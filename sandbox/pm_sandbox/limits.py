"""Request size limits of both ports, refused in the words of the endpoint that was asked.

* :class:`BodyLimit` (ASGI middleware): a body over the limit — announced by ``Content-Length`` or counted
  while a chunked body arrives — is refused before the app reads it: **413**.
* :func:`head_too_large` answers a request whose request line and headers exceed :data:`MAX_HEAD_BYTES`
  (checked by the sandbox's HTTP protocol, :func:`pm_sandbox.faults.tracking_protocol`): **431**.

:class:`BodyLimit` also ends, quietly, a request whose client left before its body was read (one
DEBUG line, not an ERROR traceback per disconnect).

Each refusal has the error shape of the endpoint it was meant for (:func:`refusal`): Keycloak's
``{"error", "error_description"}`` under ``/realms/``, Druid's error object on the Druid SQL API, an
Avatica ``ErrorResponse`` on the Avatica endpoint — sent with HTTP 500, the only error status the Avatica
driver reads a message from — and the public API's ``{"status", "error", "message"}`` everywhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Scope, Send

from .errors import ApiError
from .sql.errors import SqlError

__all__ = ["MAX_BODY_BYTES", "MAX_HEAD_BYTES", "BodyLimit", "head_too_large", "refusal"]

log = logging.getLogger(__name__)

#: default largest request body, bytes (both ports; the SQL port's is ``SqlOptions.max_request_bytes``)
MAX_BODY_BYTES = 1 << 20
#: largest request line + headers, bytes
MAX_HEAD_BYTES = 64 << 10
# A refused body is read (and dropped) up to this size before answering: closing a socket with unread
# data resets it, and the client would lose the answer while it is still sending.
_DRAIN_BYTES = 64 << 20

_REASON = {413: "Payload Too Large", 431: "Request Header Fields Too Large"}


def refusal(path: str, status: int, message: str) -> tuple[int, bytes]:
    """``(status, JSON body)`` refusing a request to *path* with *status* in that endpoint's error shape."""
    if path.startswith("/druid/v2/sql/avatica"):
        return 500, orjson.dumps(SqlError(message).avatica_body())
    if path.startswith("/druid/"):
        return status, orjson.dumps(SqlError(message).druid_body())
    if path.startswith("/realms/"):
        return status, orjson.dumps({"error": "invalid_request", "error_description": message})
    return status, orjson.dumps(ApiError(status, message, error=_REASON.get(status)).body)


def head_too_large(path: str, limit: int = MAX_HEAD_BYTES) -> tuple[int, bytes]:
    """The refusal of a request to *path* whose request line and headers exceed *limit* bytes."""
    return refusal(
        path, 431, f"Request line and headers are larger than {limit:,} bytes: send shorter headers."
    )


class BodyLimit:
    """ASGI middleware refusing request bodies larger than *max_bytes* (413) before the app reads them.

    A body with ``Content-Length`` is checked up front; a chunked one is read (up to the limit) and then
    replayed to the app, so the app never sees part of a body it should not have received.
    """

    def __init__(
        self, app: Any, max_bytes: int = MAX_BODY_BYTES, exempt: Callable[[Scope], bool] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        #: requests whose route streams its body with a limit of its own (file uploads)
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.exempt is not None and self.exempt(scope)):
            await self.app(scope, receive, send)
            return
        try:
            await self._limited(scope, receive, send)
        except ClientDisconnect:  # nobody is left to answer: not a server error
            log.debug("client left before its request was read: %s %s", scope["method"], scope["path"])

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if int(length) > self.max_bytes:  # the HTTP parser already refused a non-numeric length
                await self._refuse(scope, receive, send, 0, more=True)
                return
            await self.app(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its body was complete
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, size, more=message.get("more_body", False))
                return
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, read: int, *, more: bool) -> None:
        while more and read <= _DRAIN_BYTES:
            message = await receive()
            if message["type"] != "http.request":
                return
            read += len(message.get("body", b""))
            more = message.get("more_body", False)
        text = f"The request body is larger than {self.max_bytes:,} bytes, the limit of this endpoint."
        status, body = refusal(scope["path"], 413, text)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),  # the unread body must not be parsed as the next request
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
