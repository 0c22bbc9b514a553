"""``RestClient``: the public REST API (``{base_url}/pub``) as typed results.

Routes used (service model §3.2): ``GET /projects`` (project ids), ``GET /projects/{id}`` (details),
``GET /datasources/{id}`` (the project's tables) and ``GET /workgroups/{client_id}``.
:func:`to_frame` turns any list of results into a pandas DataFrame.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

from . import _http
from ._models import Project, Table, Workgroup
from .auth import BearerAuth, TokenProvider
from .errors import HTTPError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .config import Settings

__all__ = ["RestClient", "to_frame"]

logger = logging.getLogger(__name__)


def to_frame(records: Iterable[Any], record_type: type | None = None) -> pd.DataFrame:
    """A DataFrame with one row per record (``Project``, ``Table``, ``Workgroup``, ``Column`` or mapping).

    Columns follow the fields of the first record; a single record gives a one-row frame.

    :param record_type: the dataclass whose fields name the columns when *records* is empty.

    >>> to_frame([Table("p1", "p1")]).columns.tolist()
    ['name', 'project_id', 'kind', 'host', 'port']
    """
    import pandas as pd  # pandas is heavy and only needed here; keeps the REST path light

    items = [records] if is_dataclass(records) or isinstance(records, Mapping) else list(records)
    rows = []
    columns: list[str] | None = None
    if record_type is not None and is_dataclass(record_type):
        columns = [f.name for f in fields(record_type) if f.name != "extra"]
    for item in items:
        if is_dataclass(item) and not isinstance(item, type):
            as_dict = getattr(item, "as_dict", None)
            row = as_dict() if as_dict else {f.name: getattr(item, f.name) for f in fields(item)}
        elif isinstance(item, Mapping):
            row = dict(item)
        else:
            raise TypeError(f"to_frame expects dataclass records or mappings, got {type(item).__name__}")
        if columns is None:
            columns = list(row)
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _project_id(project: Project | str) -> str:
    """Accept a :class:`Project` or its id; reject anything else with a clear message."""
    pid = project.id if isinstance(project, Project) else project
    if not isinstance(pid, str) or not pid.strip():
        raise TypeError(
            f"expected a Project or a non-empty project id string, got {type(project).__name__} {project!r}; "
            "use conn.projects() to list them"
        )
    return pid.strip()


def _text(data: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = data.get(key)
        if value is not None:
            return str(value)
    return None


class RestClient:
    """Typed access to the public REST API of one workgroup.

    :param settings: connection values (``api_url``, ``timeout``, ``client_id``).
    :param session: the HTTP session, shared with the token provider.
    :param tokens: the token provider whose bearer goes on every call (re-sent once on a 401).
    """

    def __init__(self, settings: Settings, session: requests.Session, tokens: TokenProvider) -> None:
        self._settings = settings
        self._session = session
        self._auth = BearerAuth(tokens)
        #: the offline cache's hook, set by the connection: ``exchange(path, params, what, send)`` returns the
        #: response of one GET, calling ``send()`` to really send it (store) or not at all (replay)
        self.exchange: Callable[..., requests.Response] | None = None

    def __repr__(self) -> str:
        return f"<RestClient {self._settings.api_url}>"

    def _get(self, path: str, *, what: str, not_found: Any = None, params: Any = None) -> Any:
        response = self._send(path, what=what, params=params)
        _http.raise_for_status(response, what=what, not_found=not_found)
        return _http.json_body(response, what=what)

    def _send(self, path: str, *, what: str, params: Any = None) -> requests.Response:
        """The response of one GET under the API root: every REST call of this client goes through here."""
        url = self._settings.api_url + path

        def send() -> requests.Response:
            return _http.send(
                self._session,
                "GET",
                url,
                timeout=self._settings.timeout,
                what=what,
                auth=self._auth,
                params=params,
            )

        return send() if self.exchange is None else self.exchange(path, params, what, send)

    def _unknown_project(self, pid: str) -> tuple[str, str]:
        return (
            f"Project {pid!r} was not found, or workgroup {self._settings.client_id!r} may not see it.",
            "Use conn.projects() to list the projects this workgroup can use.",
        )

    def project_ids(self) -> list[str]:
        """The ids of the workgroup's projects (``GET /pub/projects``)."""
        data = self._get("/projects", what="list projects")
        if not isinstance(data, list):
            raise self._shape_error("list projects", "a JSON array", data)
        ids = []
        for item in data:
            if isinstance(item, Mapping):
                item = item.get("id")
            if not isinstance(item, (str, int)):
                raise self._shape_error("list projects", "project ids", data)
            ids.append(str(item))
        return ids

    def projects(self) -> list[Project]:
        """The workgroup's projects with their details, in the order the service lists them."""
        return [self.project(pid) for pid in self.project_ids()]

    def project(self, project: Project | str) -> Project:
        """One project's details (``GET /pub/projects/{id}``).

        :raises NotFound: the project does not exist or this workgroup may not see it.
        """
        pid = _project_id(project)
        data = self._get(
            f"/projects/{quote(pid, safe='')}",
            what=f"project {pid}",
            not_found=lambda: self._unknown_project(pid),
        )
        if not isinstance(data, Mapping):
            raise self._shape_error(f"project {pid}", "a JSON object", data)
        return Project(
            id=_text(data, "id", "projectId") or pid,
            name=_text(data, "name"),
            description=_text(data, "description"),
            creation_date=_text(data, "creationDate", "creation_date", "created"),
        )

    def tables(self, project: Project | str) -> list[Table]:
        """The tables of a project this workgroup may query (``GET /pub/datasources/{id}``).

        :raises NotFound: the project does not exist or this workgroup may not see it.
        """
        pid = _project_id(project)
        data = self._get(
            f"/datasources/{quote(pid, safe='')}",
            what=f"tables of project {pid}",
            not_found=lambda: self._unknown_project(pid),
        )
        if not isinstance(data, list) or not all(isinstance(d, Mapping) and d.get("name") for d in data):
            expected = "a JSON array of {name, type, host, port}"
            raise self._shape_error(f"tables of project {pid}", expected, data)
        tables = []
        for item in data:
            port = item.get("port")
            tables.append(
                Table(
                    name=str(item["name"]),
                    project_id=pid,
                    kind=_kind(item.get("type")),
                    host=_text(item, "host"),
                    port=int(port) if isinstance(port, (int, str)) and str(port).isdigit() else None,
                )
            )
        return tables

    def workgroup(self) -> Workgroup:
        """The workgroup's metadata (``GET /pub/workgroups/{client_id}``)."""
        wid = self._settings.client_id
        data = self._get(f"/workgroups/{quote(wid, safe='')}", what="workgroup info")
        if not isinstance(data, Mapping):
            raise self._shape_error("workgroup info", "a JSON object", data)
        demo = data.get("isDemoWorkgroup")
        known = {"id", "name", "creationDate", "startValidityDate", "expirationDate"}
        known |= {"isDemoWorkgroup", "dataVersion"}
        return Workgroup(
            id=_text(data, "id") or wid,
            name=_text(data, "name"),
            creation_date=_text(data, "creationDate"),
            start_validity_date=_text(data, "startValidityDate"),
            expiration_date=_text(data, "expirationDate"),
            is_demo_workgroup=demo if isinstance(demo, bool) else None,
            data_version=_text(data, "dataVersion"),
            extra={k: v for k, v in data.items() if k not in known},
        )

    def _shape_error(self, what: str, expected: str, data: Any) -> HTTPError:
        return HTTPError(
            f"{what}: expected {expected} from {self._settings.api_url}, got {type(data).__name__}.",
            hint="Check that base_url points to the process-mining API.",
            url=self._settings.api_url,
        )


def _kind(value: Any) -> str:
    """Map the table ``type`` to ``cases``/``vertex``/``edge``; empty lets :class:`Table` classify by name."""
    text = str(value or "").lower()
    if "edge" in text:
        return "edge"
    if "vertex" in text or "vertices" in text:
        return "vertex"
    if "case" in text:
        return "cases"
    return ""
