"""A user's CSV event log read into an :class:`~.eventlog.EventLog` (columns found by common names)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .eventlog import EventLog, assemble
from .mapping import FileMapping, SourceColumn, slug

__all__ = ["read_event_log_csv"]

CASE_ID_HEADERS = ("case_id", "caseid", "case", "case_concept_name", "case_key", "case_number")
ACTIVITY_HEADERS = ("activity", "activity_name", "task", "task_name", "concept_name", "event", "step")
TIMESTAMP_HEADERS = ("timestamp", "start_timestamp", "start_time", "start", "time", "time_timestamp", "date")
END_HEADERS = ("end_timestamp", "end_time", "end", "complete_timestamp", "completed", "end_date")


def _find(columns: dict[str, str], accepted: tuple[str, ...]) -> str | None:
    return next((columns[a] for a in accepted if a in columns), None)


def read_event_log_csv(path: str | Path) -> EventLog:
    """Read a user's event log: one row per event with a case id, an activity and a timestamp.

    Headers are matched case-insensitively, ignoring spaces and punctuation: case id as one of
    ``case id, caseid, case, case:concept:name, case key, case number``; activity as one of ``activity,
    activity name, task, task name, concept:name, event, step``; start time as one of ``timestamp, start
    timestamp, start time, start, time, time:timestamp, date``; optional end time as one of ``end timestamp,
    end time, end, complete timestamp, completed, end date``. Other columns become dimensions (text) or
    metrics (numbers). Timestamps without a zone are read as UTC.

    :raises ValueError: naming the file and what is missing or unreadable.
    """
    import pandas as pd

    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read event log {path}: {exc}") from exc
    columns = {slug(c): c for c in frame.columns}
    found = {
        "case id": _find(columns, CASE_ID_HEADERS),
        "activity": _find(columns, ACTIVITY_HEADERS),
        "timestamp": _find(columns, TIMESTAMP_HEADERS),
    }
    missing = [k for k, v in found.items() if v is None]
    if missing:
        raise ValueError(
            f"Event log {path} has no {' / '.join(missing)} column "
            f"(found: {', '.join(frame.columns) or 'none'}). "
            f"Rename a column to one of: case id -> {', '.join(CASE_ID_HEADERS)}; activity -> "
            f"{', '.join(ACTIVITY_HEADERS)}; timestamp -> {', '.join(TIMESTAMP_HEADERS)}."
        )
    case_col, act_col, ts_col = found["case id"], found["activity"], found["timestamp"]
    assert case_col is not None and act_col is not None and ts_col is not None  # refused above if missing
    end_col = _find({k: v for k, v in columns.items() if v != ts_col}, END_HEADERS)
    frame = frame.dropna(subset=[case_col, act_col, ts_col])
    if frame.empty:
        raise ValueError(f"Event log {path} has no complete row (case id, activity and timestamp all set).")

    def to_ms(col: str) -> np.ndarray:
        try:
            stamps = pd.to_datetime(frame[col], utc=True, format="mixed")
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"Event log {path}: column {col!r} has a value that is not a date/time: {exc}"
            ) from exc
        return stamps.dt.tz_localize(None).to_numpy(dtype="datetime64[ms]").astype(np.int64)

    start = to_ms(ts_col)
    end = to_ms(end_col) if end_col else start.copy()
    end = np.where(np.isnan(end.astype(float)) | (end < start), start, end)
    dims: dict[str, Any] = {}
    metrics: dict[str, Any] = {}
    index = {col: i for i, col in enumerate(frame.columns)}
    # The format the service would have been told; pandas read the values whatever their format.
    time_format = "yyyy-MM-dd HH:mm:ss"
    mapped = [
        SourceColumn(str(case_col), index[case_col], "CASE_ID"),
        SourceColumn(str(act_col), index[act_col], "TASK_NAME"),
        SourceColumn(str(ts_col), index[ts_col], "TIME", time_format=time_format),
    ]
    if end_col:
        mapped.append(SourceColumn(str(end_col), index[end_col], "TIME", time_format=time_format))
    used = {case_col, act_col, ts_col, end_col}
    for col in frame.columns:
        if col in used or not slug(col):
            continue
        values = frame[col]
        numeric = pd.to_numeric(values, errors="coerce")
        if numeric.notna().sum() == values.notna().sum() and numeric.notna().any():
            metrics[slug(col)] = numeric.to_numpy(dtype=float)
            role = "METRIC"
        else:
            dims[slug(col)] = values.to_numpy(dtype=object)
            role = "DIMENSION"
        mapped.append(SourceColumn(str(col), index[col], role, slug(col), aggregation="FIRST"))
    return assemble(
        frame[case_col], frame[act_col], start, end, dims, metrics, mapping=FileMapping(tuple(mapped))
    )
