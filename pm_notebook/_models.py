"""Plain data records shared by the client and the sandbox (stdlib only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["Column", "Project", "Table", "Workgroup", "table_kind"]


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

    def as_dict(self) -> dict:
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
        """The name quoted for Druid SQL (names contain hyphens: always double-quote)."""
        return '"' + self.name.replace('"', '""') + '"'

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Column:
    """A column of a Druid table as INFORMATION_SCHEMA.COLUMNS reports it."""

    name: str
    data_type: str  # Druid SQL type name: TIMESTAMP, BIGINT, DOUBLE, VARCHAR, ...
    ordinal: int  # 1-based, as ORDINAL_POSITION
    nullable: bool = True

    def as_dict(self) -> dict:
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
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("extra")
        return d
