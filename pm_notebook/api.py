"""``RestClient``: the public REST API (``{base_url}/pub``) as typed results.

Routes used (service model §3.2): ``GET /projects`` (project ids), ``GET /projects/{id}`` (details),
``GET /datasources/{id}`` (the project's tables), ``GET /workgroups/{client_id}``, and per project
``/project/{id}/variants`` and ``/completedCases`` (paged: every page is fetched for the caller),
``/graph``, ``/graphInstance``, ``/column-mapping-exists``, ``/column-mapping`` and ``/mappingInfos``.
The envelopes of the paged routes are not public (see ``docs/sandbox-data.md``), so their parsing
accepts the sandbox's ``{"totalItems", "<items>"}`` as well as a bare list or another list key.
:func:`to_frame` turns any list of results into a pandas DataFrame.

:meth:`RestClient.request` and :meth:`RestClient.pages` are the way to the API for the write side too
(:mod:`pm_notebook.lifecycle`). The module is over 600 lines because it holds one method per route, each
parsing its own envelope; splitting the routes would only scatter the one client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

from . import _http
from ._checks import positive_int
from ._models import (
    ColumnMapping,
    EdgeInstance,
    GraphEdge,
    GraphInstance,
    GraphVertex,
    MappedColumn,
    MappingInfo,
    ProcessGraph,
    Project,
    Table,
    Variant,
    VertexInstance,
    Workgroup,
)
from .auth import BearerAuth, TokenProvider
from .errors import ConfigurationError, HTTPError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .config import Settings

__all__ = ["RestClient", "project_id", "to_frame"]

logger = logging.getLogger(__name__)


def to_frame(records: Iterable[Any], record_type: type | None = None) -> pd.DataFrame:
    """A DataFrame with one row per record (``Project``, ``Table``, ``Variant``, ``MappingInfo``, ...).

    Columns follow the fields of the first record; a single record gives a one-row frame.

    :param record_type: the dataclass whose fields name the columns when *records* is empty.

    >>> to_frame([Table("p1", "p1")]).columns.tolist()
    ['name', 'project_id', 'kind', 'host', 'port']
    """
    import pandas as pd  # pandas is heavy and only needed here; keeps the REST path light

    items = [records] if is_dataclass(records) or isinstance(records, Mapping) else list(records)
    rows: list[dict[str, Any]] = []
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


def project_id(project: Project | str) -> str:
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

    def __repr__(self) -> str:
        return f"<RestClient {self._settings.api_url}>"

    def _get(self, path: str, *, what: str, not_found: Any = None, params: Any = None) -> Any:
        response = self._send(path, what=what, params=params)
        _http.raise_for_status(response, what=what, not_found=not_found)
        return _http.json_body(response, what=what)

    def _send(self, path: str, *, what: str, params: Any = None, live: bool = False) -> requests.Response:
        """The response of one GET under the API root: every read of this client goes through here (and, while
        the connection caches or replays, through the offline adapters, unless *live*)."""
        return _http.send(
            self._session,
            "GET",
            self._settings.api_url + path,
            timeout=self._settings.timeout,
            what=what,
            live=live,
            auth=self._auth,
            params=params,
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        not_found: Callable[[], tuple[str, str]] | None = None,
        check: Callable[[requests.Response], None] | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """Send one request under the API root with the bearer token and return its successful response.

        Always sent live (never stored or replayed by the offline cache): the write routes, and reads whose
        answer changes while one watches (a file's ingestion status). On a 401 the token is renewed and the
        request re-sent once (:class:`~pm_notebook.auth.BearerAuth`); a streamed body must then be a
        :class:`~pm_notebook._http.StreamedBody`, which streams again from its start.

        :param what: a few words for messages ("upload 'log.csv' to project p1").
        :param not_found: ``(message, hint)`` of a 404.
        :param check: called with the response before the status check; may raise a more specific error.
        :param kwargs: passed to ``requests`` (``params``, ``json``, ``data``, ``headers``).
        :raises HTTPError: the matching subclass for an unsuccessful answer (see
            :func:`~pm_notebook._http.error_for_response`).
        """
        response = _http.send(
            self._session,
            method,
            self._settings.api_url + path,
            timeout=self._settings.timeout,
            what=what,
            live=True,
            auth=self._auth,
            **kwargs,
        )
        if check is not None:
            check(response)
        return _http.raise_for_status(response, what=what, not_found=not_found)

    def unknown_project(self, pid: str) -> tuple[str, str]:
        """``(message, hint)`` of a 404 for project *pid*: unknown, or not visible to this workgroup."""
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
        pid = project_id(project)
        data = self._get(
            f"/projects/{quote(pid, safe='')}",
            what=f"project {pid}",
            not_found=lambda: self.unknown_project(pid),
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
        pid = project_id(project)
        data = self._get(
            f"/datasources/{quote(pid, safe='')}",
            what=f"tables of project {pid}",
            not_found=lambda: self.unknown_project(pid),
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

    # --- variants, completed cases, graphs, column mapping -------------------------------------
    def _project_route(self, project: Project | str, route: str) -> tuple[str, str]:
        pid = project_id(project)
        return pid, f"/project/{quote(pid, safe='')}/{route}"

    def pages(
        self,
        path: str,
        params: Mapping[str, Any],
        *,
        what: str,
        keys: tuple[str, ...],
        page_size: int,
        not_found: Callable[[], tuple[str, str]] | None = None,
        check: Callable[[requests.Response], None] | None = None,
        live: bool = False,
    ) -> Iterator[list[Any]]:
        """The items of a paged GET route, page by page: ``pageIndex`` 1, 2, ... until the last page.

        A page is the last when it is empty or short, when ``totalItems`` items have come, or when it repeats
        the one before (a service ignoring ``pageIndex`` would repeat itself forever).

        :param keys: the envelope's list key(s) (a bare list or the envelope's only list is accepted too).
        :param not_found: ``(message, hint)`` of a 404.
        :param check: called with each raw response before the status check; may raise a specific error.
        :param live: send every page (as :meth:`request` does), never through the offline cache.
        :raises ConfigurationError: *page_size* is not a positive integer.
        """
        page_size = positive_int(page_size, "page_size")  # checked now, not at the first page

        def walk() -> Iterator[list[Any]]:
            seen = 0
            previous: list[Any] | None = None
            page = 1
            while True:
                query = {**params, "pageIndex": page, "limit": page_size}
                response = self._send(path, what=what, params=query, live=live)
                if check is not None:
                    check(response)
                _http.raise_for_status(response, what=what, not_found=not_found)
                data = _http.json_body(response, what=what)
                got, total = _page_items(data, keys)
                if got is None:
                    raise self._shape_error(what, f"a page of items ({' / '.join(keys)})", data)
                if got and got == previous:
                    return
                yield got
                seen += len(got)
                if not got or len(got) < page_size or (total is not None and seen >= total):
                    return
                previous, page = got, page + 1

        return walk()

    def _project_pages(
        self, path: str, params: dict[str, Any], *, what: str, keys: tuple[str, ...], pid: str, **kw: Any
    ) -> list[Any]:
        """Every item of a paged route of project *pid*."""
        pages = self.pages(
            path, params, what=what, keys=keys, not_found=lambda: self.unknown_project(pid), **kw
        )
        return [item for page in pages for item in page]

    def variants(
        self, project: Project | str, *, search: str | None = None, page_size: int = 500
    ) -> list[Variant]:
        """Every model variant of *project*, most frequent first (all pages of ``GET .../variants``).

        :param search: keep the variants whose name contains this text (the service's ``search``).
        :param page_size: variants per request.
        :raises NotFound: the project does not exist or this workgroup may not see it.
        """
        pid, path = self._project_route(project, "variants")
        params: dict[str, Any] = {"projectId": pid}
        if search is not None:
            params["search"] = str(search)
        what = f"variants of project {pid}"
        raw = self._project_pages(path, params, what=what, keys=("variants",), pid=pid, page_size=page_size)
        out = []
        for item in raw:
            if not isinstance(item, Mapping):
                raise self._shape_error(what, "variant objects", item)
            count = _first(item, "occurrences", "occurrence", "count", "casesCount", "nbOccurrences")
            out.append(
                Variant(
                    id=_text(item, "id", "graphkey", "variantId") or "",
                    name=_text(item, "name"),
                    occurrences=int(count) if isinstance(count, (int, float)) else None,
                    project_id=pid,
                )
            )
        return out

    def completed_cases(
        self, project: Project | str, *, search: str | None = None, page_size: int = 1000
    ) -> list[str]:
        """The ids of *project*'s completed cases (all pages of ``GET .../completedCases``).

        :param search: keep the case ids containing this text (the service's ``searchCaseId``).
        :raises HTTPError: the project has no END CASE business rule (the service cannot tell which
            cases are complete), with a hint on setting one.
        :raises NotFound: the project does not exist or this workgroup may not see it.
        """
        pid, path = self._project_route(project, "completedCases")
        params: dict[str, Any] = {"projectId": pid}
        if search is not None:
            params["searchCaseId"] = str(search)
        what = f"completed cases of project {pid}"

        def no_end_case_rule(response: requests.Response) -> None:
            # The service answers this case with a body that is not JSON (its KNIME nodes rely on that).
            if response.status_code != 404 and "END CASE" in response.text[:500] and _not_json(response):
                raise HTTPError(
                    f"{what}: the service cannot list completed cases: {response.text.strip()[:200]!r}.",
                    status=response.status_code,
                    body=response.text,
                    hint="Set an END CASE business rule in the project's settings (it defines which cases "
                    "are complete), and check that the project's filters do not remove every case end.",
                    url=response.url,
                )

        raw = self._project_pages(
            path,
            params,
            what=what,
            keys=("caseIds", "cases"),
            pid=pid,
            page_size=page_size,
            check=no_end_case_rule,
        )
        out = []
        for item in raw:
            value = _text(item, "caseId", "caseid", "id") if isinstance(item, Mapping) else item
            if not isinstance(value, (str, int)):
                raise self._shape_error(what, "case ids", item)
            out.append(str(value))
        return out

    def graph(self, project: Project | str, mode: str = "simplified") -> ProcessGraph:
        """*project*'s model graph (``GET .../graph?mode=``): ``"simplified"`` or ``"gateways"``.

        :raises ConfigurationError: *mode* is neither.
        :raises NotFound: the project does not exist or this workgroup may not see it.
        """
        if mode not in ("simplified", "gateways"):
            raise ConfigurationError(f"graph mode must be 'simplified' or 'gateways', got {mode!r}.")
        pid, path = self._project_route(project, "graph")
        what = f"graph of project {pid}"
        data = self._get(path, what=what, not_found=lambda: self.unknown_project(pid), params={"mode": mode})
        if not isinstance(data, Mapping) or not isinstance(data.get("vertices"), list):
            raise self._shape_error(what, "a JSON object with vertices and edges", data)
        vertices = tuple(
            GraphVertex(id=str(v["id"]), name=_text(v, "name"), category=_text(v, "category"))
            for v in data["vertices"]
            if isinstance(v, Mapping) and "id" in v
        )
        edges = tuple(
            GraphEdge(id=_text(e, "id"), source=str(e["source"]), destination=str(e["destination"]))
            for e in data.get("edges") or []
            if isinstance(e, Mapping) and "source" in e and "destination" in e
        )
        return ProcessGraph(project_id=pid, mode=mode, vertices=vertices, edges=edges)

    def graph_instance(self, project: Project | str, process_key: str) -> GraphInstance:
        """One process variant's instance graph (``GET .../graphInstance?processId=<processkey>``).

        :raises NotFound: no such project, or no such process key in it.
        """
        if not isinstance(process_key, str) or not process_key.strip():
            raise ConfigurationError(
                f"process_key must be a non-empty processkey string, got {process_key!r}; "
                'find them with SELECT DISTINCT processkey FROM "<project id>".'
            )
        pid, path = self._project_route(project, "graphInstance")
        what = f"instance graph of process {process_key} in project {pid}"

        def not_found() -> tuple[str, str]:
            return (
                f"Process {process_key!r} was not found in project {pid!r} (or the project is not visible).",
                'List the process keys with SELECT DISTINCT processkey FROM "<project id>".',
            )

        data = self._get(path, what=what, not_found=not_found, params={"processId": process_key})
        if not isinstance(data, Mapping) or not isinstance(data.get("vertexInstances"), list):
            raise self._shape_error(what, "a JSON object with vertexInstances and edgeInstances", data)
        vertices = tuple(
            VertexInstance(
                id=str(v.get("id")),
                name=_text(v, "name"),
                event_instance=_int(v.get("eventInstance")),
                concurrent=tuple(
                    (_text(c, "name"), _int(c.get("eventInstance")))
                    for c in v.get("concurrentVertices") or []
                    if isinstance(c, Mapping)
                ),
            )
            for v in data["vertexInstances"]
            if isinstance(v, Mapping)
        )
        edges = []
        for e in data.get("edgeInstances") or []:
            src, dst = (e.get("source"), e.get("destination")) if isinstance(e, Mapping) else (None, None)
            if not isinstance(src, Mapping) or not isinstance(dst, Mapping):
                raise self._shape_error(what, "edge instances with source and destination objects", e)
            edges.append(
                EdgeInstance(
                    source_id=str(src.get("id")),
                    source_name=_text(src, "name"),
                    source_event=_int(src.get("eventInstance")),
                    destination_id=str(dst.get("id")),
                    destination_name=_text(dst, "name"),
                    destination_event=_int(dst.get("eventInstance")),
                )
            )
        rate = data.get("concurrencyRate")
        return GraphInstance(
            project_id=pid,
            process_key=process_key,
            vertices=vertices,
            edges=tuple(edges),
            rework_total=_int(data.get("reworkTotal")),
            concurrency_rate=float(rate) if isinstance(rate, (int, float)) else None,
        )

    def column_mapping_exists(self, project: Project | str) -> bool:
        """Whether *project* has a column mapping (``GET .../column-mapping-exists``)."""
        pid, path = self._project_route(project, "column-mapping-exists")
        what = f"column mapping of project {pid}"
        data = self._get(path, what=what, not_found=lambda: self.unknown_project(pid))
        if not isinstance(data, Mapping) or not isinstance(data.get("exists"), bool):
            raise self._shape_error(what, '{"exists": true|false}', data)
        exists: bool = data["exists"]
        return exists

    def column_mapping(self, project: Project | str) -> ColumnMapping:
        """*project*'s column mapping (``GET .../column-mapping``), columns in source-file order.

        :raises NotFound: no such project, or it has no column mapping yet.
        """
        pid, path = self._project_route(project, "column-mapping")
        what = f"column mapping of project {pid}"
        data = self._get(path, what=what, not_found=lambda: self._no_mapping(pid))
        if not isinstance(data, Mapping):
            raise self._shape_error(what, "a JSON object", data)
        columns = []
        roles = {"caseId": "case_id", "activity": "activity", "dateColumn": "time", "otherDateColumn": "time"}
        for key, value in data.items():
            if key in roles and isinstance(value, Mapping):
                columns.append(
                    MappedColumn(
                        kind=roles[key],
                        index=_int(value.get("columnIndex")),
                        name=_text(value, "name") or key,
                        time_format=_text(value, "format"),
                    )
                )
            elif key in ("dimensions", "metrics") and isinstance(value, list):
                columns.extend(_mapped(item, key[:-1]) for item in value if isinstance(item, Mapping))
        columns.sort(key=lambda c: (c.index is None, c.index or 0))
        return ColumnMapping(project_id=pid, columns=tuple(columns))

    def mapping_infos(self, project: Project | str) -> list[MappingInfo]:
        """Each dimension and metric of *project* with its Druid column (``GET .../mappingInfos``).

        Use ``database_column_name`` in SQL: current projects name mapped columns like
        ``detail_7_lpkr_destination``, older ones ``destination_lpkr``.

        :raises NotFound: no such project, or it has no column mapping yet.
        """
        pid, path = self._project_route(project, "mappingInfos")
        what = f"mapping infos of project {pid}"
        data = self._get(path, what=what, not_found=lambda: self._no_mapping(pid))
        if not isinstance(data, Mapping):
            raise self._shape_error(what, "a JSON object of categories", data)
        out = []
        for category, items in data.items():
            if not isinstance(items, list):
                continue
            for item in items:
                if not isinstance(item, Mapping) or not item.get("databaseColumnName"):
                    raise self._shape_error(what, "items with name and databaseColumnName", item)
                scope = item.get("isCaseScope")
                out.append(
                    MappingInfo(
                        name=_text(item, "name") or str(item["databaseColumnName"]),
                        database_column_name=str(item["databaseColumnName"]),
                        category=str(category).removesuffix("s"),
                        column_index=_int(item.get("columnIndex")),
                        aggregation=_text(item, "aggregation"),
                        case_scope=scope if isinstance(scope, bool) else None,
                        unit=_text(item, "unit"),
                    )
                )
        return out

    def _no_mapping(self, pid: str) -> tuple[str, str]:
        return (
            f"Project {pid!r} has no column mapping, was not found, or workgroup "
            f"{self._settings.client_id!r} may not see it.",
            "Check conn.projects(); a new project gets its column mapping with its first file.",
        )

    def _shape_error(self, what: str, expected: str, data: Any) -> HTTPError:
        return HTTPError(
            f"{what}: expected {expected} from {self._settings.api_url}, got {type(data).__name__}.",
            hint="Check that base_url points to the process-mining API.",
            url=self._settings.api_url,
        )


def _first(data: Mapping[str, Any], *keys: str) -> Any:
    return next((data[k] for k in keys if data.get(k) is not None), None)


def _int(value: Any) -> int | None:
    """An int from a JSON number or numeric string (the SDK's own samples quote column indexes)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _not_json(response: requests.Response) -> bool:
    try:
        response.json()
    except ValueError:
        return True
    return False


def _page_items(data: Any, keys: tuple[str, ...]) -> tuple[list[Any] | None, int | None]:
    """``(items, total)`` of one page: a bare list, or an object holding one of *keys* (or one list)."""
    if isinstance(data, list):
        return data, None
    if not isinstance(data, Mapping):
        return None, None
    total = _first(data, "totalItems", "total", "totalElements")
    total = total if isinstance(total, int) and not isinstance(total, bool) else None
    for key in (*keys, "content", "items", "data"):
        if isinstance(data.get(key), list):
            return data[key], total
    lists = [v for v in data.values() if isinstance(v, list)]
    return (lists[0], total) if len(lists) == 1 else (None, None)


def _mapped(item: Mapping[str, Any], kind: str) -> MappedColumn:
    scope = item.get("isCaseScope")
    return MappedColumn(
        kind=kind,
        index=_int(item.get("columnIndex")),
        name=_text(item, "name"),
        aggregation=_text(item, "aggregation", "caseAggregation"),
        case_scope=scope if isinstance(scope, bool) else None,
        unit=_text(item, "unit"),
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
