"""A generated event log for the perspective answers, with the shapes real logs have: NULL resources, one-
event cases, ties in timestamps (instantaneous tasks at the previous one's end, cases starting at the same
instant, two tasks of a case at the same instant), duplicate events (the same case, activity, times and
resource twice), overlapping tasks (one starting before the previous one ends) and an activity twice in a
row; tasks with a start and an end, and a ``Region`` attribute; uploaded to a project of its own."""

from __future__ import annotations

import numpy as np
import pandas as pd

ACTIVITIES = ("Register", "Check", "Approve", "Reject", "Ship", "Archive")
RESOURCES = ("ana", "ben", "cai", "dev", None)


def event_log(cases: int, seed: int = 7) -> pd.DataFrame:
    """*cases* cases: every 17th has one event; in every 5th the second task is instantaneous at the first
    one's end; every 23rd starts at the instant the case before it started; every 7th repeats one of its
    events exactly (a duplicate); in every 11th the third task starts while the second runs (an overlap);
    every 13th has a second task at the first one's start and end (a same-instant pair, another activity
    and resource); every 9th has an activity twice in a row. Rows come case by case, in no task order."""
    rng = np.random.default_rng(seed)
    rows = []
    base = pd.Timestamp("2025-01-01 08:00")
    arrived = base
    for c in range(cases):
        t = base + pd.Timedelta(hours=float(rng.uniform(0, 24 * 120)))
        n = 1 if c % 17 == 0 else int(rng.integers(2, 8))
        region = ("north", "south", "east")[int(rng.integers(0, 3))]
        previous = None
        case_rows: list[dict] = []
        for i in range(n):
            act = ACTIVITIES[0] if i == 0 else ACTIVITIES[int(rng.integers(1, len(ACTIVITIES)))]
            if act == previous and c % 9 != 4:  # every 9th case may keep an activity twice in a row
                act = ACTIVITIES[(ACTIVITIES.index(act) % (len(ACTIVITIES) - 1)) + 1]
            if i == 1 and c % 9 == 4:
                act = case_rows[0]["concept:name"]  # the first activity again, directly after itself
            res = RESOURCES[int(rng.integers(0, len(RESOURCES)))]
            if i == 1 and c % 5 == 0:  # a tie: an instantaneous task at the instant the previous one ends
                start = end = t
            elif i == 2 and c % 11 == 4:  # an overlap: it starts halfway through the task before it
                before = case_rows[-1]
                start = before["start_timestamp"] + (before["time:timestamp"] - before["start_timestamp"]) / 2
                end = start + pd.Timedelta(minutes=float(rng.uniform(1, 480)))
                t = max(t, end)
            else:
                t = t + pd.Timedelta(minutes=float(rng.uniform(0, 3000)))
                if i == 0 and c % 23 == 22:  # a tie of case starts: it arrives when the case before did
                    t = arrived
                arrived = t if i == 0 else arrived
                start = t
                end = t + pd.Timedelta(minutes=float(rng.uniform(1, 240)))
                t = end
            case_rows.append(
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
        if c % 13 == 5:  # a same-instant pair: another activity and resource at the first task's times
            first = case_rows[0]
            other = ACTIVITIES[(ACTIVITIES.index(first["concept:name"]) + 3) % len(ACTIVITIES)]
            twin = RESOURCES[(RESOURCES.index(first["resource"]) + 2) % len(RESOURCES)]
            case_rows.append({**first, "concept:name": other, "resource": twin})
        if c % 7 == 3:  # a duplicate event: the same row twice
            case_rows.append(dict(case_rows[int(rng.integers(0, len(case_rows)))]))
        order = rng.permutation(len(case_rows))  # the file's rows are in no task order
        rows.extend(case_rows[int(k)] for k in order)
    frame = pd.DataFrame(rows)
    for col in ("start_timestamp", "time:timestamp"):
        frame[col] = frame[col].dt.floor("ms")
    return frame


def ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """The events in the documented task order (docs/mining.md): by case, then start, end, activity name and
    resource name (a missing resource as the empty text), written here apart from the package's own."""
    keys = frame.assign(
        _res=frame["resource"].map(lambda r: "" if r is None or r is pd.NA or r != r else str(r))
    )
    by = ["case:concept:name", "start_timestamp", "time:timestamp", "concept:name", "_res"]
    return keys.sort_values(by, kind="stable").drop(columns="_res")
