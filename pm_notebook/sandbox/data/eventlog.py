"""The event log: one row per task execution, the shape every project's tables are built from."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .mapping import FileMapping

__all__ = ["EventLog"]


@dataclass
class EventLog:
    """One row per task execution, sorted by case then start time.

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
