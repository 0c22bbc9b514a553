"""The event log: one row per task execution, the shape every project's tables are built from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .mapping import FileMapping

__all__ = ["EventLog", "assemble"]


@dataclass
class EventLog:
    """One row per task execution, sorted by case, start, end, then activity name.

    ``case`` holds 0-based case numbers indexing ``case_ids``; ``activity`` indexes ``activities``.
    ``dimensions`` and ``metrics`` are per event (case-level values are repeated on each event).
    ``mapping`` is the column mapping of the file the log came from (``None``: the default layout).
    """

    case_ids: pa.Array
    activities: list[str]
    case: np.ndarray
    activity: np.ndarray
    start_ms: np.ndarray
    end_ms: np.ndarray
    dimensions: dict[str, pa.Array] = field(default_factory=dict)
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    predicted: np.ndarray | None = None  # per case
    mapping: FileMapping | None = None

    @property
    def n_cases(self) -> int:
        return len(self.case_ids)


def assemble(
    case: Any,
    activity: Any,
    start_ms: np.ndarray,
    end_ms: np.ndarray,
    dimensions: Mapping[str, Any],
    metrics: Mapping[str, Any],
    mapping: FileMapping | None = None,
) -> EventLog:
    """The :class:`EventLog` of per-event columns in any order: cases numbered by first appearance, activities
    by name, events sorted by case, start, end, then activity name (a read CSV and an ingested upload both
    end here).

    :param dimensions: per key, the events' text values (missing as ``None``/NaN).
    :param metrics: per key, the events' numbers.
    """
    import pandas as pd

    case_codes, case_ids = pd.factorize(case, sort=False)
    act_codes, act_names = pd.factorize(activity, sort=True)
    # the client's one task order (pm_notebook.mining._sql._base.task_order): start, end, activity name;
    # then the file's order (a stable sort), which only tasks equal in all three keep
    order = np.lexsort((act_codes, end_ms, start_ms, case_codes))
    return EventLog(
        case_ids=pa.array([str(c) for c in case_ids], type=pa.string()),
        activities=[str(a) for a in act_names],
        case=case_codes[order].astype(np.int64),
        activity=act_codes[order].astype(np.int32),
        start_ms=start_ms[order],
        end_ms=end_ms[order],
        dimensions={
            key: pa.array(np.asarray(values, dtype=object)[order], type=pa.string(), from_pandas=True)
            for key, values in dimensions.items()
        },
        metrics={key: np.asarray(values, dtype=float)[order] for key, values in metrics.items()},
        mapping=mapping,
    )
