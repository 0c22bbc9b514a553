"""The public REST API under ``/pub``, with the real service's paths and JSON shapes.

Every route authenticates the bearer token (401), then checks the workgroup's public-API licence
(403), then resolves the project *within the caller's workgroup only*: an unknown project and another
workgroup's project are the same 404, so a workgroup never learns that someone else's project exists.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from .._models import table_kind
from .data.store import ProjectRecord, WorkgroupRecord
from .errors import ApiError
from .oidc import IdentityProvider

__all__ = ["API_VERSION", "router"]

API_VERSION = "2.38.0-sandbox"

_ERRORS = {
    401: {"description": "Missing, expired or invalid bearer token (see the WWW-Authenticate header)."},
    403: {"description": "The workgroup has no licence for the public API."},
}
_ERRORS_404 = {**_ERRORS, 404: {"description": "No such project in this workgroup."}}


class Datasource(BaseModel):
    """A Druid table of a project, queryable over JDBC / Avatica / Druid SQL."""

    name: str = Field(description="Table name: <projectId>, <projectId>_vertex or <projectId>_edge.")
    type: str = Field(description="cases | vertex | edge")
    host: str
    port: int


class ProjectInfo(BaseModel):
    id: str
    name: str
    description: str
    creationDate: str  # noqa: N815 - the service's JSON key
    workgroupId: str  # noqa: N815


class ProjectName(BaseModel):
    name: str


class Exists(BaseModel):
    exists: bool


class WorkgroupInfo(BaseModel):
    id: str
    name: str
    creationDate: str  # noqa: N815
    startValidityDate: str  # noqa: N815
    expirationDate: str  # noqa: N815
    isDemoWorkgroup: bool  # noqa: N815
    dataVersion: str  # noqa: N815


class Lookup(BaseModel):
    name: str
    description: str
    usage: str


class Version(BaseModel):
    version: str


class GraphVertex(BaseModel):
    id: str = Field(description="32-hex vertex id")
    name: str
    category: str | None = Field(default=None, description="start | end | task (gateways mode only)")


class GraphEdge(BaseModel):
    id: str
    source: str = Field(description="source vertex id")
    destination: str = Field(description="destination vertex id")


class Graph(BaseModel):
    """A project's model graph (simplified: START, tasks, END; self-loops allowed)."""

    vertices: list[GraphVertex]
    edges: list[GraphEdge]


def _idp(request: Request) -> IdentityProvider:
    return request.app.state.idp


def licensed_workgroup(request: Request) -> WorkgroupRecord:
    """Dependency: the caller's workgroup, after the bearer-token (401) and licence (403) checks."""
    wg = _idp(request).verify_access(request.headers.get("authorization"))
    if not wg.licensed:
        raise ApiError(
            403,
            f"Workgroup {wg.name!r} has no licence for the public API. The public API and its data access "
            "need a purchased licence: ask your workgroup administrator to activate it.",
            error="licence_required",
        )
    return wg


Caller = Annotated[WorkgroupRecord, Depends(licensed_workgroup)]


def _project(wg: WorkgroupRecord, project_id: str) -> ProjectRecord:
    project = wg.project(project_id)
    if project is None:
        raise ApiError(404, f"Project {project_id!r} not found in this workgroup.")
    return project


def _datasources(request: Request, project: ProjectRecord) -> list[Datasource]:
    host = request.url.hostname or "127.0.0.1"
    port = request.app.state.sql_port
    return [Datasource(name=t, type=table_kind(t), host=host, port=port) for t in project.tables]


router = APIRouter(prefix="/pub", tags=["public API"])


@router.get("/projects", response_model=list[str], responses=_ERRORS)
def list_projects(wg: Caller) -> list[str]:
    """The ids of the workgroup's projects."""
    return [p.id for p in wg.projects]


@router.get("/projects/{project_id}", response_model=ProjectInfo, responses=_ERRORS_404)
def get_project(project_id: str, wg: Caller) -> ProjectInfo:
    """A project's metadata."""
    p = _project(wg, project_id)
    return ProjectInfo(
        id=p.id, name=p.name, description=p.description, creationDate=p.created, workgroupId=wg.id
    )


@router.get("/project/{project_id}/name", response_model=ProjectName, responses=_ERRORS_404)
def get_project_name(project_id: str, wg: Caller) -> ProjectName:
    """A project's name (older route, kept by the service)."""
    return ProjectName(name=_project(wg, project_id).name)


@router.get("/project/{project_id}/exist", response_model=Exists, responses=_ERRORS)
def project_exists(project_id: str, wg: Caller) -> Exists:
    """Whether this workgroup has the project (another workgroup's project does not exist here)."""
    return Exists(exists=wg.project(project_id) is not None)


@router.get("/datasources/{project_id}", response_model=list[Datasource], responses=_ERRORS_404)
def datasources(project_id: str, request: Request, wg: Caller) -> list[Datasource]:
    """The project's Druid tables the workgroup may query."""
    return _datasources(request, _project(wg, project_id))


@router.get("/datasources", response_model=list[Datasource], responses=_ERRORS_404)
def datasources_by_query(
    request: Request, wg: Caller, id: Annotated[str | None, Query(description="The project id.")] = None
) -> list[Datasource]:
    """Older spelling of ``/datasources/{id}``."""
    if not id:
        raise ApiError(
            400, "Missing query parameter 'id' (the project id): GET /pub/datasources?id=<projectId>."
        )
    return _datasources(request, _project(wg, id))


@router.get("/lookups/{project_id}", response_model=list[Lookup], responses=_ERRORS_404)
def lookups(project_id: str, wg: Caller) -> list[Lookup]:
    """The project's Druid lookups, with how to use them in SQL."""
    p = _project(wg, project_id)
    out = []
    for name in p.lookups:
        key = "graphkey" if name.endswith("_variant_name") else "case_version"
        what = "variant name by graphkey" if key == "graphkey" else "excluded cases by case_version"
        out.append(Lookup(name=name, description=what, usage=f"LOOKUP({key}, '{name}')"))
    return out


@router.get("/workgroups/{workgroup_id}", response_model=WorkgroupInfo, responses=_ERRORS_404)
def workgroup_info(workgroup_id: str, wg: Caller) -> WorkgroupInfo:
    """The caller's own workgroup; any other id is 404."""
    if workgroup_id != wg.id:
        raise ApiError(404, f"Workgroup {workgroup_id!r} not found.")
    return WorkgroupInfo(
        id=wg.id,
        name=wg.name,
        creationDate=wg.created,
        startValidityDate=wg.created,
        expirationDate="2099-12-31T23:59:59Z",
        isDemoWorkgroup=wg.key == "demo",
        dataVersion="1",
    )


@router.get(
    "/project/{project_id}/graph",
    response_model=Graph,
    response_model_exclude_none=True,
    responses=_ERRORS_404,
)
def graph(
    project_id: str,
    request: Request,
    wg: Caller,
    mode: Annotated[str, Query(pattern="^(simplified|gateways)$")] = "simplified",
) -> Graph:
    """The project's model graph: every task and every observed transition, START and END included."""
    p = _project(wg, project_id)
    edge_table = '"' + f"{p.id}_edge".replace('"', '""') + '"'
    cursor = request.app.state.store.database(wg.id).cursor()
    try:
        rows = cursor.execute(
            "SELECT DISTINCT source_vertex_id, source_vertex_name, "
            "destination_vertex_id, destination_vertex_name "
            f"FROM druid.{edge_table} ORDER BY 1, 3"
        ).fetchall()
    finally:
        cursor.close()
    names: dict[str, str] = {}
    for src, src_name, dst, dst_name in rows:
        names[src], names[dst] = src_name, dst_name
    categories = {"START": "start", "END": "end"}
    vertices = [
        GraphVertex(id=v, name=n, category=categories.get(n, "task") if mode == "gateways" else None)
        for v, n in sorted(names.items(), key=lambda kv: kv[1])
    ]
    edges = [GraphEdge(id=f"{s[:16]}{d[:16]}", source=s, destination=d) for s, _, d, _ in rows]
    return Graph(vertices=vertices, edges=edges)


@router.get("/version", response_model=Version, responses=_ERRORS)
def version(wg: Caller) -> Version:
    """The API version."""
    return Version(version=API_VERSION)
