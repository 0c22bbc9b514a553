"""HTTP wiring of the sandbox's main port: the realm (identity provider), ``/pub``, admin routes.

Every :class:`~pm_sandbox.errors.SandboxHTTPError` a handler raises is rendered here, and
only here, as JSON with its status and headers (Keycloak's shape under ``/realms/``, the public API's
elsewhere). Admin routes (``/_sandbox/...``) are for tests and tools; they stay out of the OpenAPI
document and always require the admin key (they serve every workgroup's secret and the fault switches).
Bodies over :data:`~pm_sandbox.limits.MAX_BODY_BYTES` are refused with 413.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from . import pub_api, pub_write
from .data.store import ProjectRecord, Store
from .errors import ApiError, OAuthError, SandboxHTTPError
from .faults import ADMIN_PREFIX, Fault, FaultBoard
from .limits import MAX_BODY_BYTES, BodyLimit
from .oidc import REALM, IdentityProvider

__all__ = ["ADMIN_HEADER", "create_app"]

ADMIN_HEADER = "X-Sandbox-Admin"


_UPLOAD = re.compile(r"^/pub/workgroups/[^/]+/projects/[^/]+/files/?$")


def _is_upload(scope: Scope) -> bool:
    """A file upload: its route streams the body to disk under its own size limit (``--max-upload-bytes``)."""
    return scope.get("method") == "POST" and bool(_UPLOAD.match(scope.get("path", "")))


def create_app(
    store: Store,
    idp: IdentityProvider,
    board: FaultBoard,
    *,
    sql_port: int,
    admin_key: str,
    max_request_bytes: int = MAX_BODY_BYTES,
    max_upload_bytes: int | None = None,
    after_ingest: Callable[[str, ProjectRecord], None] | None = None,
) -> FastAPI:
    """The main-port application; the admin routes answer only requests bearing *admin_key*."""
    if not admin_key:
        raise ValueError("the admin routes need a non-empty admin key")
    app = FastAPI(
        title="Process-mining service public API (pm_sandbox, the stand-in)",
        version=pub_api.API_VERSION,
        description="Local stand-in of the service's public API. Authenticate with a bearer token from "
        f"the realm's token endpoint (`/realms/{REALM}/protocol/openid-connect/token`).",
        openapi_url="/pub/openapi.json",
        docs_url="/pub/docs",
        redoc_url=None,
    )
    app.state.store = store
    app.state.idp = idp
    app.state.board = board
    app.state.sql_port = sql_port
    app.add_middleware(BodyLimit, max_bytes=max_request_bytes, exempt=_is_upload)
    from .data.ingest import DEFAULT_MAX_UPLOAD_BYTES, Ingestor

    app.state.ingestor = Ingestor(
        store, max_upload_bytes=max_upload_bytes or DEFAULT_MAX_UPLOAD_BYTES, after_swap=after_ingest
    )

    @app.exception_handler(SandboxHTTPError)
    async def _render(request: Request, exc: SandboxHTTPError) -> Response:
        if isinstance(exc.body, str):
            return PlainTextResponse(exc.body, status_code=exc.status, headers=exc.headers)
        return JSONResponse(exc.body, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        err = ApiError(400, f"Invalid request: {problems}")
        return JSONResponse(err.body, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if request.url.path.startswith("/realms/"):  # the identity provider answers in Keycloak's words
            oauth = OAuthError(exc.status_code, "invalid_request", str(exc.detail))
            return JSONResponse(oauth.body, status_code=exc.status_code, headers=oauth.headers)
        err = ApiError(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}")
        return JSONResponse(err.body, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    app.include_router(pub_api.router)
    app.include_router(pub_write.router)
    _add_realm_routes(app, idp)
    _add_admin_routes(app, store, idp, board, admin_key)

    @app.get("/", include_in_schema=False)
    def root() -> dict[str, Any]:
        return {
            "service": "pm_sandbox",
            "public_api": f"{idp.base_url}/pub",
            "auth_url": idp.issuer,
            "openapi": f"{idp.base_url}/pub/openapi.json",
        }

    return app


def _realm(realm: str) -> None:
    if realm != REALM:
        raise SandboxHTTPError(404, {"error": "Realm does not exist"})


def _add_realm_routes(app: FastAPI, idp: IdentityProvider) -> None:
    base = "/realms/{realm}"

    @app.post(base + "/protocol/openid-connect/token", include_in_schema=False)
    async def token(realm: str, request: Request) -> JSONResponse:
        _realm(realm)
        try:
            form = await request.form()
        except StarletteHTTPException as exc:  # too many fields, a part too large, a broken multipart body
            raise OAuthError(400, "invalid_request", str(exc.detail)) from None
        items = [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
        body = idp.token(items, request.headers.get("authorization"))
        return JSONResponse(body, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    @app.get(base + "/protocol/openid-connect/certs", include_in_schema=False)
    def certs(realm: str) -> dict[str, Any]:
        _realm(realm)
        return idp.jwks()

    @app.get(base + "/.well-known/openid-configuration", include_in_schema=False)
    def discovery(realm: str) -> dict[str, Any]:
        _realm(realm)
        return idp.discovery()

    @app.get(base, include_in_schema=False)
    def realm_info(realm: str) -> dict[str, Any]:
        _realm(realm)
        return idp.realm_info()


def _add_admin_routes(
    app: FastAPI, store: Store, idp: IdentityProvider, board: FaultBoard, admin_key: str
) -> None:
    def check(request: Request) -> None:
        given = request.headers.get(ADMIN_HEADER, "").encode("latin-1")  # as the header arrived
        if not hmac.compare_digest(given, admin_key.encode()):
            raise SandboxHTTPError(403, {"error": "forbidden", "message": f"send the {ADMIN_HEADER} header"})

    @app.get(ADMIN_PREFIX + "/tokens", include_in_schema=False)
    def issued_tokens(request: Request) -> dict[str, Any]:
        """The latest access and refresh tokens issued (tests grep outputs and logs for them)."""
        check(request)
        return {"tokens": list(idp.issued), "issued": idp.tokens_issued}

    @app.get(ADMIN_PREFIX + "/stats", include_in_schema=False)
    def stats(request: Request) -> dict[str, Any]:
        check(request)
        return board.stats()

    @app.delete(ADMIN_PREFIX + "/stats", include_in_schema=False)
    def reset_stats(request: Request) -> dict[str, Any]:
        check(request)
        board.reset_stats()
        return {"ok": True}

    @app.post(ADMIN_PREFIX + "/faults", include_in_schema=False)
    async def add_fault(request: Request) -> dict[str, Any]:
        check(request)
        try:
            spec = await request.json()
            if not isinstance(spec, dict):
                raise TypeError("the fault must be a JSON object")
            fault = Fault(**spec)
        except (ValueError, TypeError) as exc:
            raise SandboxHTTPError(400, {"error": "bad_fault", "message": str(exc)}) from None
        board.add(fault)
        return {"ok": True, "faults": board.pending()}

    @app.delete(ADMIN_PREFIX + "/faults", include_in_schema=False)
    def clear_faults(request: Request) -> dict[str, Any]:
        check(request)
        board.clear()
        return {"ok": True}

    @app.post(ADMIN_PREFIX + "/holds", include_in_schema=False)
    async def add_hold(request: Request) -> dict[str, Any]:
        check(request)
        if board.holds is None:
            raise SandboxHTTPError(409, {"error": "no_sql_port", "message": "this sandbox serves no SQL"})
        try:
            spec = await request.json()
            if not isinstance(spec, dict):
                raise TypeError(
                    'send {"sql_contains": ..., "client_id": ..., "times": n or null, "after_rows": n}'
                )
            board.holds.arm(**spec)
        except (ValueError, TypeError) as exc:
            raise SandboxHTTPError(400, {"error": "bad_hold", "message": str(exc)}) from None
        return {"ok": True, **board.held()}

    @app.get(ADMIN_PREFIX + "/holds", include_in_schema=False)
    def holds(request: Request) -> dict[str, Any]:
        check(request)
        return board.held()

    @app.post(ADMIN_PREFIX + "/release", include_in_schema=False)
    def release(request: Request) -> dict[str, Any]:
        check(request)
        return board.release()

    @app.post(ADMIN_PREFIX + "/ingest-hold", include_in_schema=False)
    async def ingest_hold(request: Request) -> dict[str, Any]:
        """``{"hold": true|false}``: hold or release ingestions before their tables are swapped in."""
        check(request)
        spec = await request.json()
        ingestor = request.app.state.ingestor
        if isinstance(spec, dict) and "hold" in spec:
            ingestor.hold(bool(spec["hold"]))
        return {"ok": True, "waiting": ingestor.waiting}

    @app.get(ADMIN_PREFIX + "/workgroups", include_in_schema=False)
    def workgroups(request: Request) -> list[dict[str, Any]]:
        check(request)
        return [
            {
                "key": wg.key,
                "client_id": wg.id,
                "client_secret": wg.secret,
                "name": wg.name,
                "licensed": wg.licensed,
                "project_ids": [p.id for p in wg.projects],
                "projects": [
                    {"id": p.id, "name": p.name, "tables": p.tables, "rows": p.rows} for p in wg.projects
                ],
            }
            for wg in store.workgroups()
        ]
