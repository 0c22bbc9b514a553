"""The write side of ``/pub``: create a project, post its column mapping, upload files, follow their
ingestion, reset, unarchive and delete — with the vendor SDK's paths and shapes (service model §3.2).

Same checks as the read routes (:mod:`.pub_api`): bearer token (401), licence (403), then the project
*within the caller's workgroup* (404 for an unknown or foreign one). Uploads are streamed to disk with a
size limit (413 beyond it); ingestion runs in the background (:mod:`.data.ingest`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from .data.ingest import IngestError, Ingestor, check_file_type
from .data.store import ProjectRecord, WorkgroupRecord
from .errors import ApiError
from .pub_api import Caller

__all__ = ["router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "Missing, expired or invalid bearer token."},
    403: {"description": "The workgroup has no licence for the public API."},
}
_ERRORS_404: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    404: {"description": "No such project in this workgroup."},
}
_FILENAME = re.compile(
    r"""filename\*\s*=\s*[\w-]+'[^']*'([^;]+)|filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]+))"""
)


class Message(BaseModel):
    message: str = Field(description="the new project's id")


class FileInfo(BaseModel):
    id: str
    name: str
    creationDate: str  # noqa: N815
    size: int
    status: str = Field(description="PENDING | PROCESSING | DONE | FAILED")
    ingestionStatus: str  # noqa: N815
    reason: str | None = Field(default=None, description="why the file FAILED")
    events: int | None = Field(default=None, description="events ingested (DONE)")


class FilePage(BaseModel):
    totalItems: int  # noqa: N815
    files: list[FileInfo]


def _ingestor(request: Request) -> Ingestor:
    ingestor: Ingestor = request.app.state.ingestor
    return ingestor


def _project(wg: WorkgroupRecord, project_id: str) -> ProjectRecord:
    project = wg.project(project_id)
    if project is None:
        raise ApiError(404, f"Project {project_id!r} not found in this workgroup.")
    return project


router = APIRouter(prefix="/pub", tags=["public API: projects and files"])


@router.post("/project", status_code=201, response_model=Message, responses=_ERRORS_404)
def create_project(
    request: Request,
    wg: Caller,
    name: Annotated[str, Query(min_length=1, max_length=200, description="the project's name")],
    workgroupId: Annotated[str, Query(description="the caller's workgroup id")],  # noqa: N803
    description: Annotated[str | None, Query(max_length=2000)] = None,
) -> Message:
    """Create an empty project; its id comes back in ``message``."""
    if workgroupId != wg.id:
        raise ApiError(404, f"Workgroup {workgroupId!r} not found.")
    if not name.strip():
        raise ApiError(400, "The project name must not be blank.")
    record = _ingestor(request).create_project(wg.id, name.strip(), description or "")
    return Message(message=record.id)


@router.delete("/project/{project_id}", status_code=204, responses=_ERRORS_404)
def delete_project(project_id: str, request: Request, wg: Caller) -> Response:
    """Delete the project, its tables and its files."""
    _ingestor(request).delete(wg.id, _project(wg, project_id))
    return Response(status_code=204)


@router.post("/project/{project_id}/reset", status_code=204, responses=_ERRORS_404)
def reset_project(project_id: str, request: Request, wg: Caller) -> Response:
    """Wipe the project's data and files; keep its name, description and column mapping."""
    _ingestor(request).reset(wg.id, _project(wg, project_id))
    return Response(status_code=204)


@router.put("/projects/{project_id}/unarchive", status_code=204, responses=_ERRORS_404)
def unarchive_project(project_id: str, wg: Caller) -> Response:
    """Unarchive the project (sandbox projects never archive: nothing to do)."""
    _project(wg, project_id)
    return Response(status_code=204)


@router.post("/project/{project_id}/column-mapping", status_code=204, responses=_ERRORS_404)
async def post_column_mapping(project_id: str, request: Request, wg: Caller) -> Response:
    """Set the project's column mapping: ``{"fileStructure": {...}, "columnMapping": {...}}``."""
    project = _project(wg, project_id)
    try:
        body = await request.json()
    except ValueError:
        raise ApiError(400, "The column mapping must be a JSON document.") from None
    try:
        _ingestor(request).set_mapping(project, body)
    except IngestError as exc:
        raise ApiError(400, f"Invalid column mapping: {exc}.") from None
    return Response(status_code=204)


def _filename(header: str | None) -> str | None:
    match = _FILENAME.search(header or "")
    if not match:
        return None
    star, quoted, plain = match.groups()
    name = unquote(star) if star else (quoted.replace('\\"', '"') if quoted is not None else plain.strip())
    return name.replace("\\", "/").rsplit("/", 1)[-1].strip() or None


@router.post(
    "/workgroups/{workgroup_id}/projects/{project_id}/files",
    status_code=201,
    response_model=FileInfo,
    responses={**_ERRORS_404, 413: {"description": "The file is over the size limit."}},
)
async def add_file(workgroup_id: str, project_id: str, request: Request, wg: Caller) -> JSONResponse:
    """Upload one file (raw bytes, ``application/octet-stream``, name in ``Content-Disposition``).

    Answers 201 with the file's id, name and status (``PENDING``); ingestion follows in the background.
    """
    if workgroup_id != wg.id:
        raise ApiError(404, f"Workgroup {workgroup_id!r} not found.")
    project = _project(wg, project_id)
    name = _filename(request.headers.get("content-disposition"))
    if not name:
        raise ApiError(
            400, 'Send the file name in a Content-Disposition header: attachment; filename="log.csv".'
        )
    ingestor = _ingestor(request)
    record = ingestor.new_file(project, name)
    limit = ingestor.max_upload_bytes
    refused = check_file_type(name)
    declared = request.headers.get("content-length")
    if refused is None and declared and declared.isdigit() and int(declared) > limit:
        refused = f"file over the size limit: {name!r} is {int(declared)} bytes, the limit is {limit} bytes"
    size = 0
    assert record.path is not None
    with open(record.path, "wb") as out:
        async for chunk in request.stream():  # read to the end even when refusing: the client gets an answer
            size += len(chunk)
            if refused is None and size > limit:
                refused = f"file over the size limit: {name!r} is over {limit} bytes"
            if refused is None:
                out.write(chunk)
    record.size = size
    if refused is not None:
        ingestor.fail(record, refused)
        if refused.startswith("file over"):
            raise ApiError(413, f"{refused[0].upper()}{refused[1:]}.", error="Payload Too Large")
        return JSONResponse(FileInfo(**record.as_json()).model_dump(), status_code=201)
    if size == 0:
        ingestor.fail(record, f"{name!r} is empty (0 bytes)")
        return JSONResponse(FileInfo(**record.as_json()).model_dump(), status_code=201)
    answer = FileInfo(**record.as_json()).model_dump()  # as received: PENDING, whatever the worker does next
    ingestor.submit(wg.id, project, record)
    return JSONResponse(answer, status_code=201)


@router.get("/projects/{project_id}/files", response_model=FilePage, responses=_ERRORS_404)
def list_files(
    project_id: str,
    request: Request,
    wg: Caller,
    pageIndex: Annotated[int, Query(ge=1, description="page number, 1 = first page")] = 1,  # noqa: N803
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    sortOrder: Annotated[str, Query(pattern="^(ASC|DESC|asc|desc)$")] = "ASC",  # noqa: N803
) -> FilePage:
    """The project's files by upload time, paged."""
    files = _ingestor(request).files(_project(wg, project_id))
    if sortOrder.upper() == "DESC":
        files.reverse()
    start = (pageIndex - 1) * limit
    return FilePage(
        totalItems=len(files), files=[FileInfo(**f.as_json()) for f in files[start : start + limit]]
    )


@router.get("/projects/{project_id}/files/{file_id}", response_model=FileInfo, responses=_ERRORS_404)
def get_file(project_id: str, file_id: str, request: Request, wg: Caller) -> FileInfo:
    """One file's metadata and ingestion ``status`` (and ``reason`` when it FAILED)."""
    record = _ingestor(request).file(_project(wg, project_id), file_id)
    if record is None:
        raise ApiError(404, f"File {file_id!r} not found in project {project_id!r}.")
    return FileInfo(**record.as_json())
