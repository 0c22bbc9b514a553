"""The public REST API under ``/pub``, with the real service's paths and JSON shapes.

Every route authenticates the bearer token (401), then checks the workgroup's public-API licence
(403), then resolves the project *within the caller's workgroup only*: an unknown project and another
workgroup's project are the same 404, so a workgroup never learns that someone else's project exists.

Which shapes are confirmed by public material and which are inferred is listed in
``docs/sandbox-data.md``. Paged routes (``variants``, ``completedCases``) count ``pageIndex`` from 1.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from .data.mapping import FileMapping
from .data.store import ProjectRecord, WorkgroupRecord
from .errors import ApiError, PlainTextError
from .oidc import IdentityProvider

__all__ = ["API_VERSION", "router"]

API_VERSION = "2.38.0-sandbox"

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "Missing, expired or invalid bearer token (see the WWW-Authenticate header)."},
    403: {"description": "The workgroup has no licence for the public API."},
}
_ERRORS_404: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    404: {"description": "No such project in this workgroup."},
}


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


class Variant(BaseModel):
    """A model variant (graphkey) with its name and how many current cases follow it."""

    id: str = Field(description="the variant's graphkey")
    name: str
    occurrences: int


class VariantPage(BaseModel):
    totalItems: int  # noqa: N815
    variants: list[Variant]


class CompletedCasesPage(BaseModel):
    totalItems: int  # noqa: N815
    caseIds: list[str]  # noqa: N815


class ConcurrentVertex(BaseModel):
    name: str
    eventInstance: int  # noqa: N815


class VertexInstance(BaseModel):
    id: str
    name: str
    eventInstance: int  # noqa: N815
    concurrentVertices: list[ConcurrentVertex] | None = None  # noqa: N815


class InstanceRef(BaseModel):
    id: str
    name: str
    eventInstance: int  # noqa: N815


class EdgeInstance(BaseModel):
    source: InstanceRef
    destination: InstanceRef


class GraphInstance(BaseModel):
    """One process variant (processkey) as an instance graph: every task execution, in order."""

    vertexInstances: list[VertexInstance]  # noqa: N815
    edgeInstances: list[EdgeInstance]  # noqa: N815
    reworkTotal: int  # noqa: N815
    concurrencyRate: float  # noqa: N815


class ColumnRef(BaseModel):
    columnIndex: int  # noqa: N815
    format: str | None = None


class MappedColumn(BaseModel):
    name: str
    columnIndex: int  # noqa: N815
    isCaseScope: bool  # noqa: N815
    aggregation: str | None = None
    unit: str | None = None


class ColumnMapping(BaseModel):
    """A project's column mapping, keyed the way the vendor SDK's ``get_column_mapping`` parses it."""

    caseId: ColumnRef | None = None  # noqa: N815
    activity: ColumnRef | None = None
    dateColumn: ColumnRef | None = None  # noqa: N815
    otherDateColumn: ColumnRef | None = None  # noqa: N815
    dimensions: list[MappedColumn]
    metrics: list[MappedColumn]


class MappingInfo(MappedColumn):
    databaseColumnName: str = Field(description="the Druid column holding this dimension or metric")  # noqa: N815


class MappingInfos(BaseModel):
    dimensions: list[MappingInfo]
    metrics: list[MappingInfo]


def _idp(request: Request) -> IdentityProvider:
    idp: IdentityProvider = request.app.state.idp
    return idp


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


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _rows(
    request: Request, wg: WorkgroupRecord, sql: str, params: list[Any] | None = None
) -> list[tuple[Any, ...]]:
    """Run one internal DuckDB statement on the workgroup's own database."""
    cursor = request.app.state.store.database(wg.id).cursor()
    try:
        rows: list[tuple[Any, ...]] = cursor.execute(sql, params or []).fetchall()
        return rows
    finally:
        cursor.close()


def _current(alias: str, project: ProjectRecord) -> str:
    """SQL condition keeping the current row of each case (outdated versions are in lookup ``<pid>``)."""
    return f"CAST({alias}.case_version AS VARCHAR) NOT IN (SELECT k FROM lookup.{_quote(project.id)})"


PageIndex = Annotated[int, Query(alias="pageIndex", ge=1, description="page number, 1 = first page")]
Limit = Annotated[int, Query(ge=1, le=10_000, description="items per page")]
ProjectIdParam = Annotated[
    str | None, Query(alias="projectId", description="the project id again (sent by the vendor SDK)")
]


def datasource_type(name: str) -> str:
    """The ``type`` the service gives a project's datasource by its name: ``vertex``, ``edge`` or ``cases``.

    Written here, not taken from the client (which classifies names the way the vendor SDK does): each side
    of the API is written on its own, and ``tests/sandbox/test_pub_api.py`` checks that the two agree.
    """
    if "_edge" in name or name.endswith("_simplifiedEdge"):
        return "edge"
    if "_vertex" in name:
        return "vertex"
    return "cases"


def _datasources(request: Request, project: ProjectRecord) -> list[Datasource]:
    host = request.url.hostname or "127.0.0.1"
    port = request.app.state.sql_port
    return [Datasource(name=t, type=datasource_type(t), host=host, port=port) for t in project.tables]


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
    return [
        Lookup(name=name, description=p.lookup_docs[name].description, usage=p.lookup_docs[name].usage)
        for name in p.lookups
        if name in p.lookup_docs
    ]


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
    rows = _rows(
        request,
        wg,
        "SELECT DISTINCT source_vertex_id, source_vertex_name, "
        "destination_vertex_id, destination_vertex_name "
        f"FROM druid.{_quote(p.id + '_edge')} ORDER BY 1, 3",
    )
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


_ERRORS_400 = {**_ERRORS_404, 400: {"description": "A parameter is missing or out of range."}}


@router.get("/project/{project_id}/variants", response_model=VariantPage, responses=_ERRORS_400)
def variants(
    project_id: str,
    request: Request,
    wg: Caller,
    page_index: PageIndex = 1,
    limit: Limit = 20,
    search: Annotated[str | None, Query(description="keep variants whose name contains this")] = None,
    _project_id: ProjectIdParam = None,
) -> VariantPage:
    """The project's model variants, most frequent first, one page at a time."""
    p = _project(wg, project_id)
    counts = _rows(
        request,
        wg,
        f"SELECT CAST(c.graphkey AS VARCHAR), COUNT(*) FROM druid.{_quote(p.id)} AS c "
        f"WHERE {_current('c', p)} GROUP BY 1",
    )
    names = _rows(request, wg, f"SELECT k, v FROM lookup.{_quote(p.id + '_variant_name')}")
    rank = {k: (i, v) for i, (k, v) in enumerate(names)}
    found = [
        Variant(id=key, name=rank[key][1], occurrences=n)
        for key, n in sorted(counts, key=lambda kn: (-kn[1], rank.get(kn[0], (len(rank),))[0]))
        if key in rank
    ]
    if search:
        found = [v for v in found if search.lower() in v.name.lower()]
    start = (page_index - 1) * limit
    return VariantPage(totalItems=len(found), variants=found[start : start + limit])


NO_END_CASE_RULE = "There is no END CASE rule set or there is overfiltering"


@router.get(
    "/project/{project_id}/completedCases",
    response_model=CompletedCasesPage,
    responses={**_ERRORS_400, 400: {"description": f"Plain text '{NO_END_CASE_RULE}', or a bad parameter."}},
)
def completed_cases(
    project_id: str,
    request: Request,
    wg: Caller,
    page_index: PageIndex = 1,
    limit: Limit = 20,
    search_case_id: Annotated[
        str | None, Query(alias="searchCaseId", description="keep case ids containing this")
    ] = None,
    _project_id: ProjectIdParam = None,
) -> CompletedCasesPage:
    """The ids of the project's completed cases (under its END CASE rule), in case-id order."""
    p = _project(wg, project_id)
    if p.end_activities is None:
        raise PlainTextError(400, NO_END_CASE_RULE)
    sql = (
        f"SELECT CAST(c.caseid AS VARCHAR) AS id FROM druid.{_quote(p.id)} AS c "
        f"JOIN lookup.{_quote(p.id + '_cases_is_completed')} AS l ON l.k = CAST(c.case_version AS VARCHAR) "
        "WHERE l.v = 'true'"
    )
    params: list[Any] = []
    if search_case_id:
        sql += " AND strpos(lower(CAST(c.caseid AS VARCHAR)), lower(?)) > 0"
        params.append(search_case_id)
    ids = [r[0] for r in _rows(request, wg, sql + " ORDER BY 1", params)]
    start = (page_index - 1) * limit
    return CompletedCasesPage(totalItems=len(ids), caseIds=ids[start : start + limit])


@router.get(
    "/project/{project_id}/graphInstance",
    response_model=GraphInstance,
    response_model_exclude_none=True,
    responses=_ERRORS_400,
)
def graph_instance(
    project_id: str,
    request: Request,
    wg: Caller,
    process_id: Annotated[str | None, Query(alias="processId", description="a processkey")] = None,
) -> GraphInstance:
    """The instance graph of one process variant, drawn from its earliest current case.

    Vertices are that case's task executions in order (``eventInstance`` 0, 1, ...; START shares 0
    with the first task and END the last task's number, as in the vendor SDK's sample); edges link
    consecutive executions, as the project's edge table does. ``reworkTotal`` is the variant's rework,
    ``concurrencyRate`` the mean concurrency of its cases.
    """
    p = _project(wg, project_id)
    if not process_id:
        raise ApiError(
            400,
            "Missing query parameter 'processId' (a processkey of the project): "
            f"GET /pub/project/{project_id}/graphInstance?processId=<processkey>.",
        )
    found = _rows(
        request,
        wg,
        f"SELECT arg_min(CAST(c.caseid AS VARCHAR), c.__time), max(c.rework), avg(c.concurrency), count(*) "
        f"FROM druid.{_quote(p.id)} AS c WHERE CAST(c.processkey AS VARCHAR) = ? AND {_current('c', p)}",
        [process_id],
    )
    case_id, rework, concurrency, n = found[0]
    if not n:
        raise ApiError(404, f"No process with processId {process_id!r} in project {project_id!r}.")
    tasks = _rows(
        request,
        wg,
        "SELECT CAST(vertex_id AS VARCHAR), CAST(vertex_name AS VARCHAR), epoch_ms(__time), enddate "
        f"FROM druid.{_quote(p.id + '_vertex')} WHERE CAST(caseid AS VARCHAR) = ? "
        "ORDER BY __time, enddate, vertex_name",
        [case_id],
    )
    ends = _rows(
        request,
        wg,
        "SELECT CAST(source_vertex_id AS VARCHAR), CAST(destination_vertex_id AS VARCHAR), "
        f"CAST(source_vertex_name AS VARCHAR) FROM druid.{_quote(p.id + '_edge')} "
        "WHERE CAST(caseid AS VARCHAR) = ? "
        "AND (CAST(source_vertex_name AS VARCHAR) = 'START' "
        "OR CAST(destination_vertex_name AS VARCHAR) = 'END')",
        [case_id],
    )
    start_id = next(src for src, _, name in ends if name == "START")
    end_id = next(dst for _, dst, name in ends if name != "START")
    refs = [InstanceRef(id=v, name=name, eventInstance=i) for i, (v, name, _, _) in enumerate(tasks)]
    concurrent: dict[int, list[ConcurrentVertex]] = {}
    for i in range(1, len(tasks)):
        if tasks[i][2] < tasks[i - 1][3]:  # starts before the previous execution ends
            concurrent.setdefault(i, []).append(ConcurrentVertex(name=tasks[i - 1][1], eventInstance=i - 1))
            concurrent.setdefault(i - 1, []).append(ConcurrentVertex(name=tasks[i][1], eventInstance=i))
    last = len(tasks) - 1
    start_ref = InstanceRef(id=start_id, name="START", eventInstance=0)
    end_ref = InstanceRef(id=end_id, name="END", eventInstance=last)
    vertices = [VertexInstance(**start_ref.model_dump())]
    vertices += [
        VertexInstance(**r.model_dump(), concurrentVertices=concurrent.get(r.eventInstance)) for r in refs
    ]
    vertices.append(VertexInstance(**end_ref.model_dump()))
    chain = [start_ref, *refs, end_ref]
    edges = [EdgeInstance(source=a, destination=b) for a, b in zip(chain, chain[1:], strict=False)]
    return GraphInstance(
        vertexInstances=vertices,
        edgeInstances=edges,
        reworkTotal=int(rework),
        concurrencyRate=round(float(concurrency), 4),
    )


@router.get("/project/{project_id}/column-mapping-exists", response_model=Exists, responses=_ERRORS_404)
def column_mapping_exists(project_id: str, wg: Caller) -> Exists:
    """Whether the project has a column mapping (every sandbox project has one)."""
    return Exists(exists=_project(wg, project_id).mapping is not None)


def _mapping(wg: WorkgroupRecord, project_id: str) -> FileMapping:
    p = _project(wg, project_id)
    if p.mapping is None:
        raise ApiError(404, f"Project {project_id!r} has no column mapping yet.")
    return p.mapping


@router.get(
    "/project/{project_id}/column-mapping",
    response_model=ColumnMapping,
    response_model_exclude_none=True,
    responses=_ERRORS_404,
)
def column_mapping(project_id: str, wg: Caller) -> ColumnMapping:
    """The project's column mapping: case id, activity and time columns, dimensions and metrics."""
    return ColumnMapping(**_mapping(wg, project_id).service_json())


@router.get(
    "/project/{project_id}/mappingInfos",
    response_model=MappingInfos,
    response_model_exclude_none=True,
    responses=_ERRORS_404,
)
def mapping_infos(project_id: str, wg: Caller) -> MappingInfos:
    """Each dimension and metric with its user name and its Druid column (``databaseColumnName``)."""
    return MappingInfos(**_mapping(wg, project_id).mapping_infos())


@router.get("/version", response_model=Version, responses=_ERRORS)
def version(wg: Caller) -> Version:
    """The API version."""
    return Version(version=API_VERSION)
