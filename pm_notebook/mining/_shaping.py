"""What the answer mixins of :class:`~._log.ProcessLog` share: the parts of the log they use (declared here
for mypy, implemented by ``ProcessLog``), the one construction of a :class:`~._map.ProcessMap` answer and the
conversions of result columns to pandas types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import numpy as np
import pandas as pd

from ._map import ProcessMap
from ._sql import cases as cases_sql

if TYPE_CHECKING:  # pragma: no cover
    from .._models import Project
    from ._filters import CaseFilter, Filters
    from ._schema import Schema
    from ._sql._base import Statement

#: a log type: the filter methods return a new log of the type they are called on
LogT = TypeVar("LogT", bound="LogParts")


class MapView(TypedDict):
    """How a :class:`~._map.ProcessMap` answer is first shown: the arguments of ``process_map()``."""

    metric: str
    stat: str
    activities: float
    paths: float


class LogParts:
    """The parts of a ``ProcessLog`` its mixins use; ``ProcessLog`` implements them."""

    if TYPE_CHECKING:  # pragma: no cover - declarations only
        _project: Project
        _filters: Filters
        _resource_name: str | None
        _context: dict[str, Any] | None
        _max_subquery_rows: int

        def _schema(self) -> Schema: ...
        def _excluded_cases(self) -> int: ...
        def _run(self, statement: Statement) -> pd.DataFrame: ...
        def _answer(
            self, frame: pd.DataFrame, statements: Sequence[Statement], **attrs: Any
        ) -> pd.DataFrame: ...
        def _node_frame(self, statement: Statement) -> pd.DataFrame: ...
        def _edge_frame(self, statement: Statement) -> pd.DataFrame: ...
        def _resource(self) -> str: ...
        def _add(self: LogT, case_filter: CaseFilter) -> LogT: ...
        def _with(self: LogT, filters: Filters) -> LogT: ...

    def _started_finished(self, iso: str) -> tuple[pd.DataFrame, list[Statement]]:
        """Cases ``started`` and ``finished`` per *iso* period (both columns filled, periods ascending) and
        the two statements of :func:`._sql.cases.cases_over_time` that counted them."""
        statements = list(cases_sql.cases_over_time(self._schema(), self._filters, iso))
        started, finished = (self._run(s) for s in statements)
        frame = pd.merge(started, finished, on="period", how="outer").sort_values("period")
        for col in ("started", "finished"):
            frame[col] = frame[col].fillna(0).astype("Int64")
        return frame, statements

    def _process_map(
        self,
        nodes: pd.DataFrame,
        edges: pd.DataFrame,
        statements: Sequence[Statement],
        view: MapView,
        *,
        of: str = "",
    ) -> ProcessMap:
        """The :class:`~._map.ProcessMap` of *nodes* and *edges*, shown as *view* (its ``metric``, ``stat``,
        ``activities`` and ``paths``), titled after the project (and what its nodes are *of*, when they are
        not activities) and carrying the *statements* that fetched it."""
        title = self._project.name or self._project.id
        return ProcessMap(
            nodes,
            edges,
            **view,
            sql=";\n\n".join(s.sql for s in statements),
            title=f"{title} ({of})" if of else title,
        )


def in_task_order(
    frame: pd.DataFrame, case: str, start: str, end: str, activity: str, resource: str | None = None
) -> pd.DataFrame:
    """*frame*'s rows (one per task) grouped by *case* and each case's tasks in the one task order of
    :func:`._sql._base.task_order`: start, end, activity name, resource name (a missing name as the empty
    text); a stable sort, so rows equal in all of them keep the frame's order."""

    def text(column: str) -> np.ndarray:
        values = frame[column].astype("object")
        return np.asarray(values.where(values.notna(), "").astype(str), dtype=object)

    keys = {"_c": frame[case].to_numpy(), "_s": frame[start].to_numpy(), "_e": frame[end].to_numpy()}
    keys["_a"] = text(activity)
    if resource is not None and resource in frame.columns:
        keys["_r"] = text(resource)
    order = pd.DataFrame(keys).sort_values(list(keys), kind="stable").index.to_numpy()
    return frame.iloc[order]


def _ms(values: pd.Series) -> pd.Series:
    """Milliseconds (BIGINT or DOUBLE, NULLs kept) as a ``timedelta64[ms]`` Series.

    Built at millisecond resolution directly: pandas 2's ``to_timedelta(unit="ms")`` passes through
    nanoseconds, whose range (about 292 years) a total over a large log exceeds (100,000 cases waiting a week
    each are 2,000 years)."""
    floats = pd.to_numeric(values, errors="coerce").astype("float64").round().to_numpy()
    known = ~np.isnan(floats)
    ms = np.full(len(floats), np.timedelta64("NaT", "ms"))
    ms[known] = floats[known].astype("int64").view("m8[ms]")
    return pd.Series(ms, index=values.index, name=values.name)


def _rounded(values: pd.Series) -> pd.Series:
    return pd.to_numeric(values, errors="coerce").astype("float64").round().astype("Int64")
