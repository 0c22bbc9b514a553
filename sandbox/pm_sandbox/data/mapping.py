"""A project's column mapping: which column of the source file is the case id, the activity, the times,
and which are dimensions and metrics, with the Druid column each one becomes.

Two namings of mapped columns exist on the service. Older projects (and the service's older table
documentation) use ``<slug>_lpkr``; current projects use ``detail_<n>_lpkr_<slug>`` (the vendor SDK's
how-to queries ``detail_7_lpkr_destination``), where we take ``<n>`` to be the column's index in the
source file and ``<slug>`` the lower-cased user name (an inference: the rule is not public). The
``/pub/project/{id}/column-mapping`` and ``/mappingInfos`` routes are rendered from this one record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["NAMINGS", "FileMapping", "SourceColumn", "slug"]

#: "lpkr": ``<slug>_lpkr`` (older projects); "detail": ``detail_<index>_lpkr_<slug>`` (current ones)
NAMINGS = ("lpkr", "detail")
ROLES = ("CASE_ID", "TASK_NAME", "TIME", "DIMENSION", "METRIC")

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def slug(name: str) -> str:
    """``"Weight (kg)"`` → ``"weight_kg"``: lower case, runs of other characters as one underscore."""
    return _NOT_WORD.sub("_", name.strip().lower()).strip("_")


@dataclass(frozen=True)
class SourceColumn:
    """One mapped column of the source file.

    ``key`` is the dimension/metric key of the :class:`~.eventlog.EventLog` (empty for the case id,
    activity and time columns); ``aggregation`` is how the case-level value is derived.
    """

    name: str
    index: int
    role: str
    key: str = ""
    case_scope: bool = False
    aggregation: str | None = None
    unit: str | None = None
    time_format: str | None = None


@dataclass(frozen=True)
class FileMapping:
    """The column mapping of a project and the naming its Druid columns follow."""

    columns: tuple[SourceColumn, ...]
    naming: str = "lpkr"

    def __post_init__(self) -> None:
        if self.naming not in NAMINGS:
            raise ValueError(f"unknown column naming {self.naming!r}; use one of {', '.join(NAMINGS)}")

    @classmethod
    def default(
        cls,
        dimensions: Iterable[str],
        metrics: Iterable[str],
        *,
        case_dimensions: Iterable[str] = (),
        labels: Mapping[str, str] | None = None,
        units: Mapping[str, str] | None = None,
        time_format: str = "yyyy-MM-dd'T'HH:mm:ss",
    ) -> FileMapping:
        """Case id, activity, start and end at 0-3, then *dimensions* and *metrics* (keys) in order.

        :param labels: the user's column name per key (default: the key in title case).
        :param units: the unit per metric key.
        """
        labels, units = labels or {}, units or {}

        def label(key: str) -> str:
            return labels.get(key) or key.replace("_", " ").title()

        cols = [
            SourceColumn("Case ID", 0, "CASE_ID"),
            SourceColumn("Activity", 1, "TASK_NAME"),
            SourceColumn("Start Date", 2, "TIME", time_format=time_format),
            SourceColumn("End Date", 3, "TIME", time_format=time_format),
        ]
        for key in dimensions:
            scope = key in case_dimensions
            cols.append(SourceColumn(label(key), len(cols), "DIMENSION", key, scope, aggregation="FIRST"))
        for key in metrics:
            cols.append(
                SourceColumn(label(key), len(cols), "METRIC", key, True, "FIRST", unit=units.get(key))
            )
        return cls(tuple(cols))

    def with_naming(self, naming: str) -> FileMapping:
        """The same mapping with its Druid columns named the *naming* way."""
        return replace(self, naming=naming)

    def column(self, key: str) -> SourceColumn:
        """The dimension or metric column with EventLog key *key*."""
        for col in self.columns:
            if col.key == key and col.role in ("DIMENSION", "METRIC"):
                return col
        raise KeyError(f"no mapped dimension or metric {key!r}")

    def database_name(self, key: str) -> str:
        """The Druid column of dimension/metric *key*: ``<key>_lpkr`` or ``detail_<n>_lpkr_<slug>``."""
        if self.naming == "lpkr":
            return f"{key}_lpkr"
        col = self.column(key)
        return f"detail_{col.index}_lpkr_{slug(col.name) or key}"

    def _role(self, role: str) -> list[SourceColumn]:
        return [c for c in self.columns if c.role == role]

    def service_json(self) -> dict[str, Any]:
        """The body of ``GET /pub/project/{id}/column-mapping`` (the keys the vendor SDK parses)."""
        out: dict[str, Any] = {}
        for key, role in (("caseId", "CASE_ID"), ("activity", "TASK_NAME")):
            cols = self._role(role)
            if cols:
                out[key] = {"columnIndex": cols[0].index}
        for key, col in zip(("dateColumn", "otherDateColumn"), self._role("TIME"), strict=False):
            out[key] = {"columnIndex": col.index, "format": col.time_format}
        out["dimensions"] = [self._item(c) for c in self._role("DIMENSION")]
        out["metrics"] = [self._item(c) for c in self._role("METRIC")]
        return out

    def mapping_infos(self) -> dict[str, Any]:
        """The body of ``GET /pub/project/{id}/mappingInfos``: user names ↔ Druid column names."""
        return {
            "dimensions": [
                {**self._item(c), "databaseColumnName": self.database_name(c.key)}
                for c in self._role("DIMENSION")
            ],
            "metrics": [
                {**self._item(c), "databaseColumnName": self.database_name(c.key)}
                for c in self._role("METRIC")
            ],
        }

    @staticmethod
    def _item(col: SourceColumn) -> dict[str, Any]:
        item = {
            "name": col.name,
            "columnIndex": col.index,
            "isCaseScope": col.case_scope,
            "aggregation": col.aggregation,
        }
        if col.unit is not None:
            item["unit"] = col.unit
        return item
