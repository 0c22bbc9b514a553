"""The column mapping of an upload, by name: which column is the case id, the activity, the timestamps, and
which are dimensions or metrics. Pure: no I/O, nothing sent (the write client posts what this builds).

Columns are always named, never numbered: :func:`infer_mapping` finds the case id, activity and
timestamps by their usual (pm4py or plain) names, and every other column becomes a dimension (text,
booleans, dates) or a metric (numbers). The service's column mapping (:meth:`LogMapping.service_json`) is
built from the resulting order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import MappingError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "LogMapping",
    "column_kinds",
    "guess_time_format",
    "infer_mapping",
    "parse_dates",
]

#: the time format of every CSV we write (Java SimpleDateFormat, as the service expects)
TIME_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS"
_NORMALISE = re.compile(r"[^a-z0-9]+")
CASE_NAMES = ("case_id", "caseid", "case_concept_name", "case", "case_key", "case_number")
ACTIVITY_NAMES = ("activity", "activity_name", "concept_name", "task", "task_name", "event", "step")
START_NAMES = (
    *("start_timestamp", "start_time", "start_date", "start", "timestamp"),
    *("time_timestamp", "time", "date"),
)
END_NAMES = (
    "end_timestamp",
    "end_time",
    "end_date",
    "complete_timestamp",
    "completed",
    "end",
    "time_timestamp",
)
# Candidate formats for files we did not write (Java pattern, strptime twin), most precise first.
_FILE_TIME_FORMATS = (
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "%Y-%m-%dT%H:%M:%S.%f%z"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSS", "%Y-%m-%dT%H:%M:%S.%f"),
    ("yyyy-MM-dd'T'HH:mm:ssXXX", "%Y-%m-%dT%H:%M:%S%z"),
    ("yyyy-MM-dd'T'HH:mm:ss", "%Y-%m-%dT%H:%M:%S"),
    ("yyyy-MM-dd HH:mm:ss.SSS", "%Y-%m-%d %H:%M:%S.%f"),
    ("yyyy-MM-dd HH:mm:ss", "%Y-%m-%d %H:%M:%S"),
    ("yyyy/MM/dd HH:mm:ss", "%Y/%m/%d %H:%M:%S"),
    ("dd/MM/yyyy HH:mm:ss", "%d/%m/%Y %H:%M:%S"),
    ("yyyy-MM-dd", "%Y-%m-%d"),
)


def _slug(name: object) -> str:
    return _NORMALISE.sub("_", str(name).strip().lower()).strip("_")


@dataclass(frozen=True)
class LogMapping:
    """Which named column is what. Give it to :meth:`Connection.upload` or let it be inferred.

    :param case_id: the case id column.
    :param activity: the activity (task) column.
    :param start: the (start) timestamp column.
    :param end: the end timestamp column, if any.
    :param dimensions: text-like columns to keep as dimensions.
    :param metrics: numeric columns to keep as metrics.
    :param time_format: Java date pattern of the time columns in a *file* (a DataFrame's are written by us).
    :param units: unit per metric name.
    """

    case_id: str
    activity: str
    start: str
    end: str | None = None
    dimensions: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    time_format: str = TIME_FORMAT
    units: Mapping[str, str] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        """Every mapped column, in the order the uploaded CSV carries them."""
        times = [self.start] + ([self.end] if self.end else [])
        return [self.case_id, self.activity, *times, *self.dimensions, *self.metrics]

    def service_json(
        self, indexes: Mapping[str, int] | None = None, *, header: bool = True
    ) -> dict[str, Any]:
        """The body of ``POST /pub/project/{id}/column-mapping`` for a CSV whose columns sit at *indexes*
        (default: :attr:`columns` in order)."""
        at = dict(indexes) if indexes is not None else {c: i for i, c in enumerate(self.columns)}
        times = [self.start] + ([self.end] if self.end else [])
        return {
            "fileStructure": {
                "fileType": "csv",
                "charset": "UTF-8",
                "delimiter": ",",
                "quoteChar": '"',
                "escapeChar": '"',
                "eolChar": "\\n",
                "header": header,
                "commentChar": "",
            },
            "columnMapping": {
                "caseIdMapping": {"columnIndex": at[self.case_id]},
                "activityMapping": {"columnIndex": at[self.activity]},
                "timeMappings": [{"columnIndex": at[t], "format": self.time_format} for t in times],
                "dimensionsMappings": [
                    {"name": d, "columnIndex": at[d], "isCaseScope": False, "aggregation": "FIRST"}
                    for d in self.dimensions
                ],
                "metricsMappings": [
                    {
                        "name": m,
                        "columnIndex": at[m],
                        "unit": self.units.get(m, ""),
                        "isCaseScope": False,
                        "aggregation": "FIRST",
                    }
                    for m in self.metrics
                ],
            },
        }


def _pick(columns: Sequence[str], accepted: Sequence[str], taken: set[str]) -> str | None:
    by_slug: dict[str, str] = {}
    for c in columns:
        by_slug.setdefault(_slug(c), c)
    for name in accepted:
        col = by_slug.get(name)
        if col is not None and col not in taken:
            return col
    return None


def infer_mapping(
    columns: Sequence[Any],
    kinds: Mapping[str, str] | None = None,
    mapping: LogMapping | Mapping[str, Any] | None = None,
) -> LogMapping:
    """The :class:`LogMapping` of a table with these *columns*.

    :param kinds: per column ``"number"`` (→ metric) or anything else (→ dimension); default all dimensions.
    :param mapping: explicit choices by column *name*: a :class:`LogMapping`, or a dict with any of
        ``case_id, activity, start, end, dimensions, metrics, time_format, units``. Roles not given are
        inferred; when neither ``dimensions`` nor ``metrics`` is given, every other column is kept.
    :raises MappingError: a column index instead of a name, an unknown or repeated column, a role not found.
    """
    names = [str(c) for c in columns]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise MappingError(f"Column names must be unique; repeated: {', '.join(twice)}.")
    if isinstance(mapping, LogMapping):
        explicit: dict[str, Any] = {
            "case_id": mapping.case_id,
            "activity": mapping.activity,
            "start": mapping.start,
            "end": mapping.end,
            "dimensions": mapping.dimensions,
            "metrics": mapping.metrics,
            "time_format": mapping.time_format,
            "units": mapping.units,
        }
    elif mapping is None:
        explicit = {}
    elif isinstance(mapping, Mapping):
        explicit = dict(mapping)
    else:
        raise MappingError(f"mapping must be a LogMapping or a dict, got {type(mapping).__name__}.")
    allowed = {"case_id", "activity", "start", "end", "dimensions", "metrics", "time_format", "units"}
    unknown = sorted(set(explicit) - allowed)
    if unknown:
        raise MappingError(
            f"Unknown mapping key(s) {', '.join(unknown)}; use {', '.join(sorted(allowed))}.",
            hint="e.g. mapping={'case_id': 'Order', 'activity': 'Step', 'start': 'When'}",
        )

    def check(value: Any, role: str) -> str:
        if isinstance(value, bool) or not isinstance(value, str):
            raise MappingError(
                f"mapping[{role!r}] must be a column name, got {type(value).__name__} {value!r}.",
                hint="Columns are mapped by name, never by position: use the DataFrame's column label.",
            )
        if value not in names:
            raise MappingError(
                f"mapping[{role!r}] names column {value!r}, which is not among: {', '.join(names)}."
            )
        return value

    taken: set[str] = set()
    roles: dict[str, str | None] = {}
    for role, accepted in (("case_id", CASE_NAMES), ("activity", ACTIVITY_NAMES), ("start", START_NAMES)):
        value = explicit.get(role)
        col = check(value, role) if value is not None else _pick(names, accepted, taken)
        if col is None:
            raise MappingError(
                f"No {role.replace('_', ' ')} column among: {', '.join(names) or 'none'}.",
                hint=f"Name it one of {', '.join(accepted)} (any case, spaces or punctuation), "
                f"or pass mapping={{{role!r}: '<column name>'}}.",
            )
        roles[role] = col
        taken.add(col)
    if "end" in explicit:
        roles["end"] = check(explicit["end"], "end") if explicit["end"] is not None else None
    else:
        roles["end"] = _pick(names, END_NAMES, taken)
    if roles["end"]:
        taken.add(roles["end"])
    kinds = kinds or {}
    if "dimensions" in explicit or "metrics" in explicit:
        dims = [check(c, "dimensions") for c in explicit.get("dimensions") or ()]
        metrics = [check(c, "metrics") for c in explicit.get("metrics") or ()]
    else:
        rest = [c for c in names if c not in taken]
        dims = [c for c in rest if kinds.get(c) != "number"]
        metrics = [c for c in rest if kinds.get(c) == "number"]
    named = [roles["case_id"], roles["activity"], roles["start"], roles["end"], *dims, *metrics]
    used = [c for c in named if c]
    if len(set(used)) != len(used):
        twice = sorted({c for c in used if used.count(c) > 1})
        raise MappingError(f"Column(s) {', '.join(twice)} mapped to two roles; give each column one role.")
    slugs: dict[str, str] = {}
    for c in [*dims, *metrics]:
        s = _slug(c)
        if not s:
            raise MappingError(
                f"Column {c!r} needs a letter or digit in its name to become a dimension/metric."
            )
        if s in slugs:
            raise MappingError(
                f"Columns {slugs[s]!r} and {c!r} would become the same service column; rename one."
            )
        slugs[s] = c
    return LogMapping(
        case_id=str(roles["case_id"]),
        activity=str(roles["activity"]),
        start=str(roles["start"]),
        end=roles["end"],
        dimensions=tuple(dims),
        metrics=tuple(metrics),
        time_format=explicit.get("time_format") or TIME_FORMAT,
        units=dict(explicit.get("units") or {}),
    )


def column_kinds(frame: pd.DataFrame) -> dict[str, str]:
    """Per column of *frame*: ``"number"`` (numeric, not boolean: a metric) or ``"text"`` (a dimension)."""
    import pandas as pd

    out = {}
    for c in frame.columns:
        dtype = frame[c].dtype
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        out[str(c)] = "number" if numeric else "text"
    return out


def parse_dates(series: Any, column: str) -> pd.Series:
    """*series* as UTC timestamps; a clear :class:`MappingError` when a value is not a date/time."""
    import pandas as pd

    try:
        parsed: pd.Series = pd.to_datetime(series, utc=True, format="mixed", errors="raise")
    except (ValueError, TypeError) as exc:
        raise MappingError(
            f"Column {column!r} holds a value that is not a date/time ({exc}).",
            hint="Convert it with pandas.to_datetime first, or map another column as the timestamp.",
        ) from None
    return parsed


def guess_time_format(sample: pd.DataFrame, columns: list[str]) -> str:
    """The Java date pattern that reads every sampled value of the time *columns* (most precise first).

    :raises MappingError: no candidate pattern reads them all.
    """
    import pandas as pd

    values = pd.concat([sample[c].dropna().astype(str).head(200) for c in columns])
    for java, py in _FILE_TIME_FORMATS:
        if values.empty or pd.to_datetime(values, format=py, errors="coerce").notna().all():
            return java
    raise MappingError(
        f"Cannot tell the date format of column(s) {', '.join(columns)} (e.g. {values.iloc[0]!r}).",
        hint="Pass mapping={'time_format': \"yyyy-MM-dd HH:mm:ss\"} (a Java date pattern), "
        "or upload a DataFrame.",
    )
