"""ASGI app of the sandbox's SQL port (Druid's 8082): Avatica JSON and the Druid SQL HTTP API.

Routes (each with and without the trailing slash):

* ``POST /druid/v2/sql/avatica/`` — Avatica JSON for the Avatica JDBC driver (:mod:`.avatica`);
* ``POST /druid/v2/sql/`` — Druid's SQL HTTP API, HTTP Basic ``client_id:client_secret`` (:mod:`.druid_api`).

Both run on :class:`~.engine.SqlEngine` over the store's per-workgroup DuckDB databases; blocking
work runs in the thread pool so slow queries never stall the event loop.

>>> from pm_notebook.sandbox.data.store import build_store        # doctest: +SKIP
>>> app = create_sql_app(build_store(), options=SqlOptions(query_timeout=30))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import base64
import binascii
import dataclasses
import functools
import logging

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from . import druid_api
from .avatica import AvaticaService
from .engine import SqlEngine, SqlOptions
from .errors import SqlError

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


def _basic_auth(request: Request) -> tuple[str, str] | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic" or not value:
        return None
    try:
        user, sep, password = base64.b64decode(value.strip()).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


def _druid_error(err: SqlError, query_id: str | None = None) -> Response:
    import orjson

    headers = {"X-Druid-SQL-Query-Id": query_id} if query_id else {}
    if err.kind == "unauthorized":
        headers["WWW-Authenticate"] = 'Basic realm="druid"'
    return Response(
        orjson.dumps(err.druid_body(query_id)), status_code=err.http_status, media_type=_JSON, headers=headers
    )


def create_sql_app(store: object, *, options: SqlOptions | None = None) -> Starlette:
    """Build the SQL-port app over *store* (a ``pm_notebook.sandbox.data.store.Store``).

    :param options: limits (timeout, row cap, statements per connection, expiry, frame sizes).
    The engine and the Avatica service are reachable as ``app.state.sql_engine`` and ``app.state.avatica``.
    """
    engine = SqlEngine(store, options)
    avatica = AvaticaService(engine)
    running = druid_api.Running()

    async def avatica_endpoint(request: Request) -> Response:
        body = await request.body()
        answered = avatica.handle_inline(body)
        status, payload = answered or await run_in_threadpool(avatica.handle, body, _basic_auth(request))
        return Response(payload, status_code=status, media_type=_JSON)

    def workgroup(request: Request) -> tuple[object | None, Response | None]:
        """The workgroup of the request's HTTP Basic credentials, or Druid's 401 answer."""
        creds = _basic_auth(request)
        wg = store.authenticate(*creds) if creds else None  # type: ignore[attr-defined]
        if wg is not None:
            return wg, None
        what = "wrong client id or secret" if creds else "no HTTP Basic credentials"
        return None, _druid_error(
            SqlError(
                f"Unauthorized ({what}): authenticate with HTTP Basic <client_id>:<client_secret>.",
                "unauthorized",
            )
        )

    async def druid_endpoint(request: Request) -> Response:
        wg, refused = workgroup(request)
        if refused is not None:
            return refused
        query_id = None
        try:
            req = druid_api.parse_request(await request.body())
            query_id = req.query_id
            answer = await run_in_threadpool(
                functools.partial(druid_api.answer, engine, wg.id, req, running=running)
            )
        except SqlError as e:
            return _druid_error(e, query_id)
        except Exception as e:  # keep the Druid error shape even for our own bugs
            log.exception("druid sql internal error")
            return _druid_error(SqlError(f"Internal error: {type(e).__name__}: {e}", "internal"), query_id)
        headers = {"X-Druid-SQL-Query-Id": req.query_id}
        if req.header:
            headers["X-Druid-SQL-Header-Included"] = "yes"
        if answer.body is not None:
            return Response(answer.body, media_type=req.media_type, headers=headers)
        return StreamingResponse(
            answer.chunks, media_type=req.media_type, headers=headers, background=BackgroundTask(answer.close)
        )

    async def druid_cancel(request: Request) -> Response:
        wg, refused = workgroup(request)
        if refused is not None:
            return refused
        query_id = request.path_params["query_id"]
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
    app = Starlette(routes=routes)
    app.state.sql_engine = engine
    app.state.avatica = avatica
    return app
