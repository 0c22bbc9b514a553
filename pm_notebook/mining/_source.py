"""What a :class:`~pm_notebook.mining.ProcessLog` needs of the service: the :class:`Source` protocol.

:class:`pm_notebook.Connection` implements it (``conn.mining(project)`` hands itself over); so can anything
else that runs Druid SQL, which is how the mining package stays free of the connection (no import of it,
not even for typing).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .._models import Project

__all__ = ["Source"]


class Source(Protocol):
    """Runs Druid SQL and finds the workgroup's projects."""

    def query(
        self, sql: str, params: Any = None, *, context: Mapping[str, Any] | None = None
    ) -> pd.DataFrame:
        """Run *sql* with its ``?`` *params* (and Druid's query *context*) and return a typed DataFrame."""
        ...

    def query_chunks(
        self,
        sql: str,
        params: Any = None,
        *,
        chunk_rows: int = ...,
        context: Mapping[str, Any] | None = None,
    ) -> Iterator[pd.DataFrame]:
        """Run *sql* (with Druid's query *context*) and yield DataFrames of at most *chunk_rows* rows as
        they are fetched."""
        ...

    def resolve_transport(self, name: str | None = None) -> str:
        """The transport the statements go through (for ``df.attrs["transport"]``)."""
        ...

    def project(self, project_id: str) -> Project:
        """One project by its id (one REST call); :class:`~pm_notebook.errors.NotFound` when no project
        this workgroup sees has that id."""
        ...

    def projects(self) -> list[Project]:
        """The workgroup's projects (to find a project by name, when no project has it as its id)."""
        ...

    def column_names(self, project: Project | str) -> dict[str, str]:
        """The user's dimension/metric names → their Druid columns (the project's mapping), so exported
        events carry the names the log was uploaded with."""
        ...
