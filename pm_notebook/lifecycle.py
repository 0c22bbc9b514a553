"""The write side of the public API (service model §3.2): create a project, set its column mapping, upload
an event log and follow its ingestion, list its files, reset, delete.

:class:`ProjectFiles` sends every request through :meth:`RestClient.request` / :meth:`RestClient.pages`
(one bearer token, one re-send after a 401). What it sends is built elsewhere: the column mapping by
:mod:`pm_notebook.mapping` (pure), the bodies by :mod:`pm_notebook._bodies`, the progress by
:mod:`pm_notebook._progress`. An upload's body is a :class:`~pm_notebook._http.StreamedBody`, so a 401 in
the middle of a streamed upload sends it again from its start. Uploading the same rows twice appends them
twice, as the service does: reset first to replace a project's data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

from . import _bodies, _http
from ._models import Project
from ._progress import Progress, ProgressCallback, in_notebook
from .api import RestClient, project_id, to_frame
from .errors import ConfigurationError, HTTPError, MappingError, RequestTimeout, UploadError
from .mapping import LogMapping, infer_mapping

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .config import Settings

__all__ = [
    "LogMapping",
    "ProjectFiles",
    "UploadedFile",
    "infer_mapping",
]

_DONE, _FAILED = "DONE", "FAILED"


@dataclass(frozen=True)
class UploadedFile:
    """A file of a project and its ingestion ``status``: ``PENDING``, ``PROCESSING``, ``DONE``, ``FAILED``."""

    id: str
    name: str
    status: str
    project_id: str
    reason: str | None = None
    size: int | None = None
    events: int | None = None
    creation_date: str | None = None

    @property
    def finished(self) -> bool:
        """Whether ingestion is over (``DONE`` or ``FAILED``)."""
        return self.status in (_DONE, _FAILED)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _file(data: Any, pid: str) -> UploadedFile:
    if not isinstance(data, Mapping) or not data.get("id"):
        raise HTTPError(f"file of project {pid}: expected a JSON object with an id, got {str(data)[:200]}.")
    status = data.get("status")
    if isinstance(status, Mapping):  # the older upload route nests {"progress", "status"}
        status = status.get("status")
    return UploadedFile(
        id=str(data["id"]),
        name=str(data.get("name") or ""),
        status=str(status or data.get("ingestionStatus") or "").upper(),
        project_id=pid,
        reason=data.get("reason"),
        size=data.get("size"),
        events=data.get("events"),
        creation_date=data.get("creationDate"),
    )


class ProjectFiles:
    """The write side of the public API for one workgroup, over a :class:`RestClient`.

    :param settings: connection values (``client_id``: the workgroup that owns new projects and files).
    :param rest: the REST client whose requests (token, session, errors) this one sends.
    """

    def __init__(self, settings: Settings, rest: RestClient) -> None:
        self._settings = settings
        self._rest = rest

    def _not_found(self, pid: str) -> Callable[[], tuple[str, str]]:
        return lambda: self._rest.unknown_project(pid)

    def create_project(self, name: str, description: str | None = None) -> Project:
        """Create a project (``POST /pub/project``) and return it."""
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError("The project name must be a non-empty string.")
        params = {"name": name.strip(), "workgroupId": self._settings.client_id}
        if description is not None:
            params["description"] = description
        response = self._rest.request("POST", "/project", what=f"create project {name!r}", params=params)
        data = _http.json_body(response, what="create project")
        pid = data.get("message") if isinstance(data, Mapping) else None
        if not isinstance(pid, str) or not pid:
            raise HTTPError(f"create project: the answer holds no project id ({str(data)[:200]}).")
        return self._rest.project(pid)

    def post_mapping(self, project: Project | str, body: dict[str, Any]) -> None:
        """Set the project's column mapping (``POST /pub/project/{id}/column-mapping``)."""
        pid = project_id(project)

        def refused(response: requests.Response) -> None:
            if response.status_code == 400:
                raise MappingError(
                    f"The service refused the column mapping of project {pid}: "
                    f"{_http.server_message(response)}",
                    hint="Reset the project to change the mapping of a project that holds data.",
                )

        self._rest.request(
            "POST",
            f"/project/{quote(pid, safe='')}/column-mapping",
            what=f"column mapping of project {pid}",
            not_found=self._not_found(pid),
            check=refused,
            json=body,
        )

    def files(self, project: Project | str, *, limit: int = 1000) -> list[UploadedFile]:
        """Every file of the project with its status (``GET /pub/projects/{id}/files``), oldest first."""
        pid = project_id(project)
        pages = self._rest.pages(
            f"/projects/{quote(pid, safe='')}/files",
            {"sortOrder": "ASC"},
            what=f"files of project {pid}",
            keys=("files",),
            page_size=limit,
            not_found=self._not_found(pid),
            live=True,  # statuses change while one watches: never from the offline cache
        )
        return [_file(item, pid) for page in pages for item in page]

    def file(self, project: Project | str, file_id: str) -> UploadedFile:
        """One file and its status (``GET /pub/projects/{id}/files/{fileId}``)."""
        pid = project_id(project)
        response = self._rest.request(
            "GET",
            f"/projects/{quote(pid, safe='')}/files/{quote(file_id, safe='')}",
            what=f"file {file_id}",
            not_found=lambda: (
                f"File {file_id!r} not found in project {pid!r}.",
                "List them with conn.files().",
            ),
        )
        return _file(_http.json_body(response, what="file"), pid)

    def reset(self, project: Project | str) -> None:
        """Empty the project: its data and files go, its name, description and mapping stay."""
        pid = project_id(project)
        self._rest.request(
            "POST",
            f"/project/{quote(pid, safe='')}/reset",
            what=f"reset project {pid}",
            not_found=self._not_found(pid),
        )

    def unarchive(self, project: Project | str) -> None:
        """Unarchive the project (the service archives projects idle for about two weeks)."""
        pid = project_id(project)
        self._rest.request(
            "PUT",
            f"/projects/{quote(pid, safe='')}/unarchive",
            what="unarchive",
            not_found=self._not_found(pid),
        )

    def delete_project(self, project: Project | str, confirm: str | None = None) -> None:
        """Delete the project and its data. *confirm* must be the project's name (asked for in a notebook).

        :raises ConfigurationError: no or a wrong confirmation; nothing is deleted then.
        """
        info = self._rest.project(project)
        if confirm is None and in_notebook():
            confirm = input(f"Type the project's name ({info.name}) to delete it and all its data: ")
        if confirm is None:
            raise ConfigurationError(
                f"Deleting project {info.id} needs its name as confirmation.",
                hint=f"Call delete_project(project, confirm={info.name!r}).",
            )
        if confirm != info.name:
            raise ConfigurationError(
                f"Confirmation {confirm!r} is not the name of project {info.id} ({info.name!r}); "
                "nothing was deleted."
            )
        self._rest.request(
            "DELETE",
            f"/project/{quote(info.id, safe='')}",
            what=f"delete project {info.id}",
            not_found=self._not_found(info.id),
        )

    def upload(
        self,
        project: Project | str,
        data: Any,
        mapping: LogMapping | Mapping[str, Any] | None = None,
        *,
        wait: bool = True,
        progress: bool | ProgressCallback | None = None,
        timeout: float = 3600.0,
        name: str | None = None,
    ) -> UploadedFile:
        """Map, upload and (by default) wait for the ingestion of an event log (see ``Connection.upload``)."""
        pid = project_id(project)
        prepared = _bodies.prepare(data, mapping, name)
        report = Progress(progress, prepared.filename)
        try:
            self.post_mapping(pid, prepared.mapping_json)
            uploaded = self._send_file(pid, prepared, report)
            if not wait or uploaded.finished:
                return self._checked(uploaded) if uploaded.status == _FAILED else uploaded
            return self._checked(self.wait(pid, uploaded.id, timeout=timeout, report=report))
        finally:
            report.close()

    def _checked(self, f: UploadedFile) -> UploadedFile:
        if f.status == _FAILED:
            raise UploadError(
                f"Ingestion of {f.name!r} into project {f.project_id} FAILED: "
                f"{f.reason or 'no reason given'}.",
                reason=f.reason,
                file_id=f.id,
                hint="Fix the data or the mapping and upload again; the project was left as it was.",
            )
        return f

    def _send_file(self, pid: str, prepared: _bodies.Upload, report: Progress) -> UploadedFile:
        filename = prepared.filename
        wg = quote(self._settings.client_id, safe="")
        path = f"/workgroups/{wg}/projects/{quote(pid, safe='')}/files"
        what = f"upload {filename!r} to project {pid}"

        def too_large(response: requests.Response) -> None:
            if response.status_code == 413:
                message = _http.server_message(response)
                raise UploadError(
                    f"{what}: refused, the file is over the service's size limit ({message}).",
                    reason=message,
                    status=413,
                    url=response.url,
                    hint="Split the event log into several uploads (each appends to the project).",
                )

        # Each iteration of the body streams the file afresh (reporting from 0): the re-send after a 401
        # sends it whole again.
        body = _http.StreamedBody(lambda: report.count_upload(prepared.chunks(), prepared.total))
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Disposition": f'attachment; filename="{filename.replace(chr(34), "")}"; '
            f"filename*=UTF-8''{quote(filename, safe='')}",
            "Accept": "application/json",
        }
        response = self._rest.request(
            "POST",
            path,
            what=what,
            not_found=self._not_found(pid),
            check=too_large,
            data=body,
            headers=headers,
        )
        return _file(_http.json_body(response, what=what), pid)

    def wait(
        self,
        project: Project | str,
        file_id: str,
        *,
        timeout: float = 3600.0,
        report: Progress | None = None,
        first_delay: float = 0.05,
        max_delay: float = 2.0,
    ) -> UploadedFile:
        """Poll the file's status with a growing delay until ``DONE`` or ``FAILED`` (not raised here).

        :raises RequestTimeout: still not finished after *timeout* seconds.
        """
        pid = project_id(project)
        deadline = time.monotonic() + timeout
        delay = first_delay
        while True:
            current = self.file(pid, file_id)
            if report is not None:
                report("ingest", 1 if current.finished else 0, 1)
            if current.finished:
                return current
            if time.monotonic() >= deadline:
                raise RequestTimeout(
                    f"File {current.name!r} of project {pid} is still {current.status} after {timeout:g} s.",
                    hint="Follow it later with conn.files(project); it keeps being ingested.",
                )
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.6, max_delay)

    def files_frame(self, project: Project | str) -> pd.DataFrame:
        """:meth:`files` as a DataFrame."""
        return to_frame(self.files(project), UploadedFile)
