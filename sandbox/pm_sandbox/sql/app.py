"""ASGI app of the sandbox's SQL port (Druid's 8082): Avatica JSON and the Druid SQL HTTP API.

Routes (each with and without the trailing slash):

* ``POST /druid/v2/sql/avatica/`` — Avatica JSON for the Avatica JDBC driver (:mod:`.avatica`);
* ``POST /druid/v2/sql/`` — Druid's SQL HTTP API, HTTP Basic ``client_id:client_secret`` (:mod:`.druid_api`).

Both run on :class:`~.engine.SqlEngine` over the store's per-workgroup DuckDB databases; blocking
work runs in worker threads, within a thread budget per workgroup (:class:`_Budgets`), so slow queries
never stall the event loop and one workgroup's load never starves another. Bodies over
``SqlOptions.max_request_bytes`` are refused (:mod:`pm_sandbox.limits`); a garbled
``Authorization: Basic`` header is a 401 on both routes. With ``SqlOptions.compression_level`` set, answers
are gzip-compressed for clients that accept it, as Druid's are by default.

>>> from pm_sandbox.data.store import build_store        # doctest: +SKIP
>>> app = create_sql_app(build_store(), options=SqlOptions(query_timeout=30))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import orjson
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..limits import BodyLimit
from . import druid_api
from .avatica import AvaticaService
from .engine import SqlEngine, SqlOptions
from .errors import SqlError

if TYPE_CHECKING:
    from ..data.store import Store, WorkgroupRecord

__all__ = ["SqlOptions", "add_sql_arguments", "create_sql_app", "sql_options_from_args"]

log = logging.getLogger(__name__)

_JSON = "application/json;charset=utf-8"


def add_sql_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one ``--sql-<option>`` flag per :class:`SqlOptions` field (e.g. ``--sql-query-timeout 5``)."""
    group = parser.add_argument_group("SQL port limits")
    for f in dataclasses.fields(SqlOptions):
        flag = "--sql-" + f.name.replace("_", "-")
        group.add_argument(
            flag, dest="sql_" + f.name, type=type(f.default), default=None, help=f"default {f.default}"
        )


def sql_options_from_args(args: argparse.Namespace) -> SqlOptions:
    """The :class:`SqlOptions` given by the flags of :func:`add_sql_arguments` (unset flags keep defaults)."""
    given = {f.name: getattr(args, "sql_" + f.name, None) for f in dataclasses.fields(SqlOptions)}
    return SqlOptions(**{k: v for k, v in given.items() if v is not None})


class _BadCredentials(Exception):
    """An ``Authorization: Basic`` header that is not base64 of UTF-8 ``user:password``."""


def _basic_auth(request: Request) -> tuple[str, str] | None:
    """The HTTP Basic pair of *request*, ``None`` without one; :class:`_BadCredentials` if it is garbled."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        # Header values arrive as latin-1 text: a non-ASCII one is garbage, not base64 (b64decode would
        # raise a bare ValueError for it).
        raw = base64.b64decode(value.strip().encode("ascii"), validate=True)
        user, sep, password = raw.decode("utf-8").partition(":")
    except (ValueError, UnicodeError):  # binascii.Error is a ValueError
        raise _BadCredentials from None
    if not sep:
        raise _BadCredentials
    return user, password


_BAD_BASIC = (
    "Unauthorized: the Authorization header is not valid HTTP Basic (base64 of <client_id>:<client_secret> "
    "in UTF-8)."
)


def _druid_error(err: SqlError, query_id: str | None = None, *, header: bool = False) -> Response:
    # Druid 33 names the query in both headers, and says whether a header was asked for, on errors too
    headers = {"X-Druid-Query-Id": query_id, "X-Druid-SQL-Query-Id": query_id} if query_id else {}
    if header:
        headers["X-Druid-SQL-Header-Included"] = "yes"
    if err.kind == "unauthorized":
        headers["WWW-Authenticate"] = 'Basic realm="druid"'
    return Response(
        orjson.dumps(err.druid_body(query_id)),
        status_code=err.http_status,
        media_type="application/json",  # Druid's SQL API: no charset (its Avatica endpoint names one)
        headers=headers,
    )


class _Budgets:
    """Per-workgroup worker-thread budgets, so one workgroup's load never takes another's threads.

    Blocking work of a workgroup runs in at most ``max_threads_per_workgroup`` threads (streaming a Druid
    answer, in up to ``max_concurrent_queries`` more); its other requests wait *without* a thread, at most
    ``query_timeout``, then are refused as over capacity. Requests that belong to no workgroup (refused
    without any engine work) share one small budget. None of this uses the event loop's default thread
    pool, which the main port's ``/pub`` handlers use.
    """

    def __init__(self, options: SqlOptions) -> None:
        self.options = options
        self._requests: dict[str | None, anyio.CapacityLimiter] = {}
        self._streams: dict[str, anyio.CapacityLimiter] = {}
        self._pool: anyio.CapacityLimiter | None = None

    def _limiter(self, table: dict[Any, anyio.CapacityLimiter], key: Any, size: int) -> anyio.CapacityLimiter:
        limiter = table.get(key)
        if limiter is None:  # created on the event loop (one thread): no race
            limiter = table[key] = anyio.CapacityLimiter(size)
        return limiter

    async def run(self, client_id: str | None, func: Callable[..., Any], *args: Any) -> Any:
        """``func(*args)`` in a worker thread of *client_id*'s budget (:class:`SqlError` if none frees up)."""
        size = max(1, self.options.max_threads_per_workgroup) if client_id is not None else 4
        limiter = self._limiter(self._requests, client_id, size)
        with anyio.move_on_after(self.options.query_timeout) as waited:
            await limiter.acquire()
        if waited.cancelled_caught:
            raise SqlError("Too many requests are running for this workgroup; try again shortly.", "capacity")
        try:
            return await anyio.to_thread.run_sync(func, *args, limiter=self._threads())
        finally:
            limiter.release()

    async def stream(self, client_id: str, func: Callable[..., Any], *args: Any) -> Any:
        """``func(*args)`` for one piece of a streamed answer (one running query holds at most one thread)."""
        limiter = self._limiter(self._streams, client_id, max(1, self.options.max_concurrent_queries))
        return await anyio.to_thread.run_sync(func, *args, limiter=limiter)

    def _threads(self) -> anyio.CapacityLimiter:
        # The budgets above do the limiting; this pool only keeps the work off the default limiter.
        if self._pool is None:
            self._pool = anyio.CapacityLimiter(10_000)
        return self._pool


def create_sql_app(
    store: Store,
    *,
    options: SqlOptions | None = None,
    druid: str | None = None,
) -> Starlette:
    """Build the SQL-port app over *store* (a ``pm_sandbox.data.store.Store``).

    :param options: limits (timeout, row cap, statements per connection, expiry, frame sizes, body size).
    :param druid: a Druid broker's URL: every checked SQL request is forwarded there
        (:mod:`pm_sandbox.forward`) instead of running on the workgroup's DuckDB.
    The engine and the Avatica service are reachable as ``app.state.sql_engine`` and ``app.state.avatica``.
    """
    options = options or SqlOptions()
    engine = SqlEngine(store, options)
    avatica: AvaticaService
    forward = None
    if druid is None:
        avatica = AvaticaService(engine)
    else:
        from ..forward import Broker, DruidForward, ForwardedAvatica

        broker = Broker(druid)
        avatica = ForwardedAvatica(engine, broker)
        forward = DruidForward(engine, broker)
    running = druid_api.Running()
    budgets = _Budgets(options)

    async def avatica_endpoint(request: Request) -> Response:
        body = await request.body()
        avatica.server_address = f"localhost:{request.url.port}"  # Druid names its own host:port
        try:
            basic = _basic_auth(request)
        except _BadCredentials:
            # Druid's authenticator refuses a garbled header at the HTTP level, before Avatica.
            error = SqlError(_BAD_BASIC, "unauthorized").avatica_body()
            headers = {"WWW-Authenticate": 'Basic realm="druid"'}
            return Response(orjson.dumps(error), status_code=401, media_type=_JSON, headers=headers)
        answered = avatica.handle_inline(body) if basic is None else None
        if answered is None:
            try:
                req = avatica.parse(body)
                answered = await budgets.run(avatica.owner(req), avatica.answer, req, basic)
            except SqlError as e:
                answered = 500, orjson.dumps(e.avatica_body(avatica.rpc_metadata()))
        status, payload = answered
        return Response(payload, status_code=status, media_type=_JSON)

    def workgroup(request: Request) -> WorkgroupRecord | Response:
        """The workgroup of the request's HTTP Basic credentials, or Druid's 401 answer."""
        try:
            creds = _basic_auth(request)
        except _BadCredentials:
            return _druid_error(SqlError(_BAD_BASIC, "unauthorized"))
        wg = store.authenticate(*creds) if creds else None
        if wg is not None:
            return wg
        what = "wrong client id or secret" if creds else "no HTTP Basic credentials"
        return _druid_error(
            SqlError(
                f"Unauthorized ({what}): authenticate with HTTP Basic <client_id>:<client_secret>.",
                "unauthorized",
            )
        )

    async def forwarded(wg: WorkgroupRecord, body: bytes) -> Response:
        """The request checked as without Druid, then Druid's answer as it came (status, headers, body)."""
        assert forward is not None
        prepared = forward.prepare(body)
        try:
            upstream = await budgets.run(wg.id, forward.open, wg.id, prepared)
        except SqlError as e:
            return _druid_error(e, prepared.query_id, header=prepared.header)
        return StreamingResponse(
            _pieces(budgets, wg.id, upstream.chunks()),
            status_code=upstream.status,
            headers=upstream.headers,
            background=BackgroundTask(budgets.stream, wg.id, upstream.close),
        )

    async def druid_endpoint(request: Request) -> Response:
        wg = workgroup(request)
        if isinstance(wg, Response):
            return wg
        if forward is not None:
            return await forwarded(wg, await request.body())
        query_id, header = None, False
        try:
            req = druid_api.parse_request(await request.body())
            query_id, header = req.query_id, req.header
            answer = await budgets.run(
                wg.id, functools.partial(druid_api.answer, engine, wg.id, req, running=running)
            )
        except SqlError as e:
            return _druid_error(e, query_id, header=header)
        except ClientDisconnect:
            raise  # ends quietly in BodyLimit: nobody to answer
        except Exception as e:  # keep the Druid error shape even for our own bugs
            log.exception("druid sql internal error")
            return _druid_error(
                SqlError(f"Internal error: {type(e).__name__}: {e}", "internal"), query_id, header=header
            )
        headers = {"X-Druid-Query-Id": req.query_id, "X-Druid-SQL-Query-Id": req.query_id}
        if req.header:
            headers["X-Druid-SQL-Header-Included"] = "yes"
        if answer.body is not None:
            return Response(answer.body, media_type=req.media_type, headers=headers)
        return StreamingResponse(
            _pieces(budgets, wg.id, answer.chunks),
            media_type=req.media_type,
            headers=headers,
            background=BackgroundTask(budgets.stream, wg.id, answer.close),
        )

    async def druid_cancel(request: Request) -> Response:
        wg = workgroup(request)
        if isinstance(wg, Response):
            return wg
        query_id = request.path_params["query_id"]
        if forward is not None:
            answer = await budgets.run(wg.id, forward.cancel, wg.id, query_id)
            if answer is None:
                return Response(status_code=404)
            status, body, headers = answer
            return Response(body, status_code=status, headers=headers)
        if running.cancel(query_id, wg.id):
            return Response(status_code=202)
        return Response(status_code=404)

    routes = [
        Route("/druid/v2/sql/{query_id}", druid_cancel, methods=["DELETE"]),
        Route("/druid/v2/sql/avatica/", avatica_endpoint, methods=["POST"]),
        Route("/druid/v2/sql/avatica", avatica_endpoint, methods=["POST"]),
        Route("/druid/v2/sql/", druid_endpoint, methods=["POST"]),
        Route("/druid/v2/sql", druid_endpoint, methods=["POST"]),
    ]
    middleware = [Middleware(BodyLimit, max_bytes=options.max_request_bytes)]
    if options.compression_level:
        # As Druid's Jetty GzipHandler: only for a client that sends Accept-Encoding: gzip, streamed answers
        # flushed piece by piece, bodies under 32 bytes (Jetty's minimum) left as they are.
        level = 6 if options.compression_level < 0 else options.compression_level
        middleware.append(Middleware(GZipMiddleware, minimum_size=32, compresslevel=level))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.sql_engine = engine
    app.state.avatica = avatica
    app.state.forward = forward
    return app


_DONE = object()


async def _pieces(budgets: _Budgets, client_id: str, chunks: Iterator[Any]) -> AsyncIterator[Any]:
    """The pieces of a streamed answer, each produced in a thread of the workgroup's stream budget."""
    while (piece := await budgets.stream(client_id, next, chunks, _DONE)) is not _DONE:
        yield piece
