"""A generated event log for the perspective answers: NULL resources, one-event cases, ties in timestamps
(instantaneous tasks of one resource at the same instant, cases starting at the same instant), tasks with a
start and an end, and a ``Region`` attribute; uploaded to a project of its own."""

from __future__ import annotations

import numpy as np
import pandas as pd

ACTIVITIES = ("Register", "Check", "Approve", "Reject", "Ship", "Archive")
RESOURCES = ("ana", "ben", "cai", "dev", None)


def event_log(cases: int, seed: int = 7) -> pd.DataFrame:
    """*cases* cases (every 17th has one event; in every 5th the second task is instantaneous at the
    first one's end; every 23rd starts at the instant the case before it started), no two tasks of a case
    overlapping and no activity twice in a row."""
    rng = np.random.default_rng(seed)
    rows = []
    base = pd.Timestamp("2025-01-01 08:00")
    arrived = base
    for c in range(cases):
        t = base + pd.Timedelta(hours=float(rng.uniform(0, 24 * 120)))
        n = 1 if c % 17 == 0 else int(rng.integers(2, 8))
        region = ("north", "south", "east")[int(rng.integers(0, 3))]
        previous = None
        for i in range(n):
            act = ACTIVITIES[0] if i == 0 else ACTIVITIES[int(rng.integers(1, len(ACTIVITIES)))]
            if act == previous:
                act = ACTIVITIES[(ACTIVITIES.index(act) % (len(ACTIVITIES) - 1)) + 1]
            res = RESOURCES[int(rng.integers(0, len(RESOURCES)))]
            if i == 1 and c % 5 == 0:  # a tie: an instantaneous task at the instant the previous one ends
                start = end = t
            else:
                t = t + pd.Timedelta(minutes=float(rng.uniform(0, 3000)))
                if i == 0 and c % 23 == 22:  # a tie of case starts: it arrives when the case before did
                    t = arrived
                arrived = t if i == 0 else arrived
                start = t
                end = t + pd.Timedelta(minutes=float(rng.uniform(1, 240)))
                t = end
            rows.append(
                {
                    "case:concept:name": f"case-{c:05d}",
                    "concept:name": act,
                    "start_timestamp": start,
                    "time:timestamp": end,
                    "resource": res,
                    "Region": region,
                }
            )
            previous = act
    frame = pd.DataFrame(rows)
    for col in ("start_timestamp", "time:timestamp"):
        frame[col] = frame[col].dt.floor("ms")
    return frame


def ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """The events in case order (by start, then end), as the transitions table links them."""
    return frame.sort_values(["case:concept:name", "start_timestamp", "time:timestamp"], kind="stable")
