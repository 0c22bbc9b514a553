"""``ProcessLog.open_cases``: the cases not yet completed, how long they have been open, and an estimate of
their remaining time from the project's own history (no model), from the rows Druid computes
(:mod:`._sql.open_cases`).

* **Open** and **completed**: by the project's completion lookup (``<pid>_cases_is_completed``), or, given
  ``end_activities``, by the case's last activity. The log's filters choose the cases first: the open cases
  listed *and* the completed cases the estimate learns from are both the filtered log's.
* **Elapsed**: from the case's first event to "now" — the latest event end of the project's current cases
  (every case, whatever the filters: a filter chooses cases, it does not move the clock), or ``as_of``.
* **History**: every task of a completed case is an observation — the case stood at that activity, that
  long after its start (elapsed: first event to the task's end), and then needed the rest (remaining: the
  task's end to the case's last event).
* **Estimate** of an open case at activity *A* after elapsed *E*: the observations at *A* whose elapsed lies
  in *E*'s bin (round durations about doubling from one minute to two years,
  :data:`._sql.open_cases.EDGES_MS`); with fewer than ``min_evidence`` of them, the observations at *A*
  whatever their elapsed; with fewer still, every observation. ``p50_remaining`` and ``p90_remaining`` are
  their quantiles (:data:`._sql._base.QUANTILE`: the ⌈q·n⌉-th smallest on the stand-in, within the sketch's
  rank error on Druid).
* **Late** (with ``sla``): ``p_late`` = P(E + R > sla) = P(R > sla − E) for R the remaining time of the
  evidence: 1 when E already exceeds the sla; else ``1 − F(sla − E)``, F read from the evidence's
  percentiles 5, 10, ..., 95 and maximum (F(x) = the largest level k % whose percentile is ≤ x; 1 at or
  past the maximum): within 0.05 of the evidence's exact share, plus the sketch's rank error on Druid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .._cells import cell_int
from .._checks import positive_int
from ..errors import ConfigurationError
from ._filters import duration_text
from ._runner import Ask
from ._sql import open_cases as sql
from ._sql._base import QUANTILE, qname

__all__ = ["LEVEL_NAMES", "bin_label", "bin_of", "late_share", "open_cases", "parse_sla"]

#: the evidence an estimate rests on, finest first
LEVEL_NAMES = ("activity+elapsed", "activity", "overall")
_GRID = [qname(q) for q in sql.LEVELS] + ["p100"]
#: the level of each column of _GRID
_STEPS = np.array([*sql.LEVELS, 1.0])
_P50, _P90 = _GRID.index("p50"), _GRID.index("p90")
#: the unit words of a short duration ("30d", "12 h", "2 weeks")
_UNITS = {
    **dict.fromkeys(("w", "wk", "week", "weeks"), "weeks"),
    **dict.fromkeys(("d", "day", "days"), "days"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), "hours"),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), "minutes"),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "seconds"),
}
_UNIT_MS = {"weeks": 604_800_000, "days": 86_400_000, "hours": 3_600_000, "minutes": 60_000, "seconds": 1000}
_USAGE = 'sla is a duration: pd.Timedelta(days=30), "30 days", "30d" or "12 h"'


def parse_sla(value: Any) -> int | None:
    """*value* (``None``, a ``Timedelta``/``timedelta`` or text with a unit) in whole ms, > 0."""
    if value is None:
        return None
    bare = isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.timedelta64))
    if (
        bare
        or isinstance(value, bool)
        or (isinstance(value, str) and re.fullmatch(r"\s*[-+]?[\d.]+(?:e[-+]?\d+)?\s*", value, re.I))
    ):
        raise ConfigurationError(f"open_cases(): sla={value!r} has no unit.", hint=_USAGE)
    short = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", value, re.I) if isinstance(value, str) else None
    try:
        if short and short.group(2).lower() in _UNITS:  # "30d", "12 h": pandas deprecates some spellings
            td = pd.Timedelta(float(short.group(1)) * _UNIT_MS[_UNITS[short.group(2).lower()]], unit="ms")
        else:
            td = pd.Timedelta(value)
    except (ValueError, TypeError):
        raise ConfigurationError(f"open_cases(): sla={value!r} is not a duration.", hint=_USAGE) from None
    if pd.isna(td) or td <= pd.Timedelta(0):
        raise ConfigurationError(
            f"open_cases(): sla must be a positive duration, got {value!r}.", hint=_USAGE
        )
    return int(round(td.total_seconds() * 1000))


def _as_of(value: Any) -> int | None:
    if value is None:
        return None
    try:
        ts: Any = pd.Timestamp(value)
    except (ValueError, TypeError):
        ts = pd.NaT
    if pd.isna(ts):
        raise ConfigurationError(
            f"open_cases(): as_of={value!r} is not a timestamp.", hint='e.g. as_of="2025-06-30 18:00"'
        )
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value // 1_000_000)


def bin_of(elapsed_ms: Any) -> np.ndarray:
    """The elapsed bin (0..22) of each value in ms, as :func:`._sql.open_cases.bin_expression` computes it."""
    values = np.asarray(elapsed_ms, dtype="int64")
    return np.searchsorted(np.asarray(sql.EDGES_MS), values, side="right")


def bin_label(b: int) -> str:
    """``[4 min, 8 min)``: the elapsed times of bin *b*."""
    edges = sql.EDGES_MS
    low = 0 if b == 0 else edges[b - 1]
    if b >= len(edges):
        return f"≥ {duration_text(low)}"
    return f"[{duration_text(low)}, {duration_text(edges[b])})"


def late_share(grid: np.ndarray, x: float) -> float:
    """P(R > x) from the percentiles 5..95 and the maximum of R (*grid*, 20 values ascending): 1 − the
    largest level whose value is ≤ x (0 when none is)."""
    if x < 0:
        return 1.0
    below = np.flatnonzero(grid <= x)
    return 1.0 - (0.0 if not len(below) else float(_STEPS[below[-1]]))


def _completion(ask: Ask, end_activities: Iterable[str] | None) -> sql.Completion:
    schema = ask.schema
    if end_activities is None:
        lookup = schema.lookup("_cases_is_completed")
        if lookup is None:
            raise ConfigurationError(
                f"The project has no '{schema.project_id}_cases_is_completed' lookup, so open_cases() "
                "cannot tell open cases from completed ones.",
                hint='Name the activities that end a case: open_cases(end_activities=["Pay Invoice"]).',
            )
        return sql.Completion(lookup=lookup)
    chosen = (end_activities,) if isinstance(end_activities, str) else tuple(end_activities)
    if not chosen or not all(isinstance(a, str) and a for a in chosen):
        raise ConfigurationError(
            f"open_cases(): end_activities must be activity names, got {end_activities!r}.",
            hint='open_cases(end_activities=["Pay Invoice", "Cancel Order"])',
        )
    ask.check_activities(chosen, "open_cases")
    return sql.Completion(end_activities=tuple(dict.fromkeys(chosen)))


def _timestamps(ms: pd.Series) -> pd.Series:
    return pd.to_datetime(ms.astype("int64"), unit="ms", utc=True).astype("datetime64[ms, UTC]")


def open_cases(
    ask: Ask,
    sla: Any = None,
    *,
    as_of: Any = None,
    end_activities: Iterable[str] | None = None,
    min_evidence: int = 30,
) -> pd.DataFrame:
    """The answer of :meth:`ProcessLog.open_cases` (see there and the module docstring)."""
    sla_ms = parse_sla(sla)
    as_of_ms = _as_of(as_of)
    min_evidence = positive_int(min_evidence, "min_evidence")
    schema = ask.schema
    completion = _completion(ask, end_activities)
    if as_of_ms is None:
        value: Any = ask.run(sql.now(schema)).iloc[0, 0]
        now_ms = None if value is None or pd.isna(value) else cell_int(value)
    else:
        now_ms = as_of_ms
    rows = ask.run(sql.open_cases(schema, ask.filters, completion))
    rows = rows.sort_values("case_id", kind="stable").reset_index(drop=True)
    if as_of_ms is not None and len(rows) and int(rows["last_ms"].max()) > as_of_ms:
        late = int((rows["last_ms"].astype("int64") > as_of_ms).sum())
        raise ConfigurationError(
            f"open_cases(): as_of={as_of!r} is before the last event of {late} open case(s); elapsed time "
            "is measured to a 'now' after the data (open_cases() does not cut the log at as_of).",
            hint="Leave as_of out (the project's last event is then 'now'), or give a later time.",
        )
    elapsed = (now_ms - rows["start_ms"].astype("int64")) if now_ms is not None else rows["start_ms"] * 0
    bins = bin_of(elapsed.to_numpy()) if len(rows) else np.zeros(0, dtype="int64")
    history: pd.DataFrame | None = None
    if len(rows):
        history = ask.run(sql.history(schema, ask.filters, completion))
    frame, overall = _estimates(rows, elapsed, bins, history, min_evidence, sla_ms)
    attrs: dict[str, Any] = {
        "now": pd.NaT if now_ms is None else pd.Timestamp(now_ms, unit="ms", tz="UTC"),
        "now_from": "as_of" if as_of_ms is not None else "the project's last event",
        "sla": None if sla_ms is None else pd.Timedelta(milliseconds=sla_ms),
        "completion": (
            f"last activity in {list(completion.end_activities)}"
            if completion.end_activities
            else f"the {completion.lookup} lookup"
        ),
        "open_cases": len(frame),
        "observations": overall,
        "min_evidence": min_evidence,
        "bin_edges": tuple(pd.Timedelta(milliseconds=e) for e in sql.EDGES_MS),
        "levels": {name: int((frame["level"] == name).sum()) for name in LEVEL_NAMES},
        "method": f"remaining time: percentiles ({QUANTILE}) of the completed cases' remaining time "
        "after each task, at the same activity and elapsed bin (bins about doubling from 1 min), falling "
        f"back to the activity, then to every observation, under {min_evidence} observations; p_late = "
        "1 - F(sla - elapsed), F read from the percentiles 5..95 and the maximum",
    }
    return ask.answer(frame, **attrs)


def _estimates(
    rows: pd.DataFrame,
    elapsed: pd.Series,
    bins: np.ndarray,
    history: pd.DataFrame | None,
    min_evidence: int,
    sla_ms: int | None,
) -> tuple[pd.DataFrame, int]:
    """The answer's rows (one per open case) and the number of observations of the whole history."""
    fine: dict[tuple[str, int], tuple[int, np.ndarray]] = {}
    coarse: dict[str, tuple[int, np.ndarray]] = {}
    overall: tuple[int, np.ndarray] = (0, np.full(len(_GRID), np.nan))
    if history is not None:
        grid = history[_GRID].astype("float64").to_numpy()
        counts = history["observations"].astype("int64").to_numpy()
        for i, (act, b, g) in enumerate(
            zip(history["activity"], history["bin"], history["grouping"].astype("int64"), strict=True)
        ):
            key = (
                None
                if act is None or act is pd.NA or (isinstance(act, float) and math.isnan(act))
                else str(act)
            )
            if g == 0 and key is not None:
                fine[(key, int(b))] = (int(counts[i]), grid[i])
            elif g == 1 and key is not None:
                coarse[key] = (int(counts[i]), grid[i])
            elif g == 3:
                overall = (int(counts[i]), grid[i])
    out: dict[str, list[Any]] = {k: [] for k in ("level", "evidence", "p50", "p90", "p_late")}
    for act, b, e in zip(rows["last_activity"], bins, elapsed, strict=True):
        chosen, level = overall, LEVEL_NAMES[2]
        for candidate, name in (
            (fine.get((str(act), int(b))), LEVEL_NAMES[0]),
            (coarse.get(str(act)), LEVEL_NAMES[1]),
        ):
            if candidate is not None and candidate[0] >= min_evidence:
                chosen, level = candidate, name
                break
        n, values = chosen
        out["level"].append(level)
        out["evidence"].append(n)
        out["p50"].append(values[_P50] if n else math.nan)
        out["p90"].append(values[_P90] if n else math.nan)
        late = math.nan
        if sla_ms is not None and n:
            late = late_share(values, sla_ms - int(e))
        out["p_late"].append(late)
    frame = pd.DataFrame(
        {
            "case_id": rows["case_id"].astype(str).astype("string"),
            "last_activity": rows["last_activity"].astype(object).astype("string"),
            "started": _timestamps(rows["start_ms"]),
            "last_event": _timestamps(rows["last_ms"]),
            "elapsed": pd.to_timedelta(elapsed.astype("int64"), unit="ms").astype("timedelta64[ms]"),
            "elapsed_bin": pd.array([bin_label(int(b)) for b in bins], dtype="string"),
            "level": pd.array(out["level"], dtype="string"),
            "evidence": pd.array(out["evidence"], dtype="Int64"),
            "p50_remaining": _ms(out["p50"]),
            "p90_remaining": _ms(out["p90"]),
        }
    )
    if sla_ms is not None:
        frame["p_late"] = np.asarray(out["p_late"], dtype="float64")
        frame = frame.sort_values(
            ["p_late", "elapsed", "case_id"], ascending=[False, False, True], kind="stable"
        )
    else:
        frame = frame.sort_values(["elapsed", "case_id"], ascending=[False, True], kind="stable")
    return frame.reset_index(drop=True), overall[0]


def _ms(values: list[float]) -> pd.Series:
    floats = np.round(np.asarray(values, dtype="float64"))
    out = np.full(len(floats), np.timedelta64("NaT", "ms"))
    known = ~np.isnan(floats)
    out[known] = floats[known].astype("int64").view("m8[ms]")
    return pd.Series(out)
