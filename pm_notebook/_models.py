"""Plain data records shared by the client and the sandbox (stdlib only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "Column",
    "ColumnMapping",
    "EdgeInstance",
    "GraphEdge",
    "GraphInstance",
    "GraphVertex",
    "MappedColumn",
    "MappingInfo",
    "ProcessGraph",
    "Project",
    "Table",
    "VertexInstance",
    "Variant",
    "Workgroup",
    "quote_identifier",
    "table_kind",
]


def quote_identifier(name: str) -> str:
    """*name* as a Druid SQL identifier: double-quoted, an inner ``"`` doubled (ids hold hyphens, so always).

    >>> quote_identifier('we"ird-name')
    '"we""ird-name"'
    """
    return '"' + name.replace('"', '""') + '"'


def table_kind(name: str) -> str:
    """Classify a Druid datasource name the way the service's SDK does: ``vertex``, ``edge`` or ``cases``."""
    if "_edge" in name or name.endswith("_simplifiedEdge"):
        return "edge"
    if "_vertex" in name:
        return "vertex"
    return "cases"


@dataclass(frozen=True)
class Project:
    """A process-mining project of the workgroup (``GET /pub/projects/{id}``)."""

    id: str
    name: str | None = None
    description: str | None = None
    creation_date: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Table:
    """A Druid table (datasource) the workgroup may query (``GET /pub/datasources/{project_id}``)."""

    name: str
    project_id: str
    kind: str = ""  # "cases" | "vertex" | "edge"
    host: str | None = None
    port: int | None = None

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", table_kind(self.name))

    @property
    def sql_name(self) -> str:
        """The name quoted for Druid SQL (see :func:`quote_identifier`)."""
        return quote_identifier(self.name)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Column:
    """A column of a Druid table as INFORMATION_SCHEMA.COLUMNS reports it."""

    name: str
    data_type: str  # Druid SQL type name: TIMESTAMP, BIGINT, DOUBLE, VARCHAR, ...
    ordinal: int  # 1-based, as ORDINAL_POSITION
    nullable: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Workgroup:
    """The workgroup's metadata (``GET /pub/workgroups/{id}``)."""

    id: str
    name: str | None = None
    creation_date: str | None = None
    start_validity_date: str | None = None
    expiration_date: str | None = None
    is_demo_workgroup: bool | None = None
    data_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("extra")
        return d


@dataclass(frozen=True)
class Variant:
    """A model variant of a project (``GET /pub/project/{id}/variants``): its graphkey, name and frequency."""

    id: str
    name: str | None = None
    occurrences: int | None = None
    project_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GraphVertex:
    """A vertex of a project's model graph: a task, or ``START`` / ``END`` (gateways in gateways mode)."""

    id: str
    name: str | None = None
    category: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GraphEdge:
    """A transition of a project's model graph, between two vertex ids."""

    id: str | None
    source: str
    destination: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProcessGraph:
    """A project's model graph (``GET /pub/project/{id}/graph``).

    Turn it into frames with ``to_frame(graph.vertices)`` / ``to_frame(graph.edges)``; :meth:`transitions`
    gives the edges by vertex name.
    """

    project_id: str
    mode: str
    vertices: tuple[GraphVertex, ...] = ()
    edges: tuple[GraphEdge, ...] = ()

    def names(self) -> dict[str, str | None]:
        """Vertex id → vertex name."""
        return {v.id: v.name for v in self.vertices}

    def transitions(self) -> list[tuple[str | None, str | None]]:
        """Each edge as ``(source name, destination name)``, in the service's order."""
        names = self.names()
        return [(names.get(e.source), names.get(e.destination)) for e in self.edges]


@dataclass(frozen=True)
class VertexInstance:
    """One task execution of an instance graph; ``concurrent`` lists ``(name, event_instance)`` pairs."""

    id: str
    name: str | None
    event_instance: int | None
    concurrent: tuple[tuple[str | None, int | None], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EdgeInstance:
    """A transition of an instance graph between two task executions."""

    source_id: str
    source_name: str | None
    source_event: int | None
    destination_id: str
    destination_name: str | None
    destination_event: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GraphInstance:
    """One process variant as an instance graph (``GET /pub/project/{id}/graphInstance?processId=``)."""

    project_id: str
    process_key: str
    vertices: tuple[VertexInstance, ...] = ()
    edges: tuple[EdgeInstance, ...] = ()
    rework_total: int | None = None
    concurrency_rate: float | None = None


@dataclass(frozen=True)
class MappedColumn:
    """One column of a project's column mapping (``GET /pub/project/{id}/column-mapping``).

    ``kind`` is ``case_id``, ``activity``, ``time``, ``dimension`` or ``metric``; ``index`` is the
    column's position in the source file.
    """

    kind: str
    index: int | None
    name: str | None = None
    aggregation: str | None = None
    case_scope: bool | None = None
    unit: str | None = None
    time_format: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ColumnMapping:
    """A project's column mapping: the source columns of case id, activity, times, dimensions, metrics."""

    project_id: str
    columns: tuple[MappedColumn, ...] = ()

    def of_kind(self, kind: str) -> list[MappedColumn]:
        """The mapped columns of one kind (``"dimension"``, ``"metric"``, ``"time"``, ...)."""
        return [c for c in self.columns if c.kind == kind]


@dataclass(frozen=True)
class MappingInfo:
    """A dimension or metric with the Druid column that holds it (``GET /pub/project/{id}/mappingInfos``).

    ``database_column_name`` is what SQL must use (e.g. ``detail_7_lpkr_destination``); ``name`` is the
    user's column name (e.g. ``Destination``).
    """

    name: str
    database_column_name: str
    category: str  # "dimension" | "metric" (the service's category key, singular)
    column_index: int | None = None
    aggregation: str | None = None
    case_scope: bool | None = None
    unit: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
