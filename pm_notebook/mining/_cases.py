"""The case answers of :class:`~pm_notebook.mining.ProcessLog`: ``summary``, ``variants``, ``throughput``,
``distribution`` and ``rework``, each a plain function of an :class:`~._runner.Ask` (see :mod:`._runner`)
over the statements of :mod:`._sql.cases`, :mod:`._sql.variants` and :mod:`._sql.rework`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._cells import cell_int
from .._checks import positive_int
from ..errors import ConfigurationError
from ._filtering import _variant_by
from ._runner import Ask
from ._shaping import _ms, _rounded, in_task_order
from ._sql import cases as cases_sql
from ._sql import rework as rework_sql
from ._sql import variants as variants_sql
from ._sql._base import check_quantiles, period, period_ms, qname

__all__ = ["distribution", "rework", "summary", "throughput", "variants"]


def summary(ask: Ask) -> pd.DataFrame:
    """The answer of ``ProcessLog.summary()`` (documented there)."""
    sql_cases, sql_events = cases_sql.summary(ask.schema, ask.filters)
    c = ask.run(sql_cases)
    e = ask.run(sql_events)
    variants = cell_int(c["variants"].iloc[0])
    activities = cell_int(e["activities"].iloc[0])
    events = cell_int(e["events"].iloc[0]) if activities else 0  # SUM over no activity is NULL
    n = cell_int(c["cases"].iloc[0])
    rework_cases = cell_int(c["rework_cases"].iloc[0]) if n else 0
    row = {
        "cases": n,
        "events": events,
        "variants": variants,
        "activities": activities,
        "mean_throughput": _ms(c["mean_throughput"]).iloc[0],
        "median_throughput": _ms(c["median_throughput"]).iloc[0],
        "p90_throughput": _ms(c["p90_throughput"]).iloc[0],
        "cases_with_rework": rework_cases,
        "rework_share": (rework_cases / n) if n else math.nan,
        "first_event": c["first_event"].iloc[0] if n else pd.NaT,
        "last_event": pd.to_datetime(c["last_event_ms"].astype("float64"), unit="ms", utc=True).iloc[0]
        if n
        else pd.NaT,
    }
    ints = ("cases", "events", "variants", "activities", "cases_with_rework")
    frame = pd.DataFrame([row]).astype(dict.fromkeys(ints, "Int64"))
    for col in ("first_event", "last_event"):
        frame[col] = pd.to_datetime(frame[col], utc=True).astype("datetime64[ms, UTC]")
    frame["span"] = (frame["last_event"] - frame["first_event"]).astype("timedelta64[ms]")
    frame["excluded_cases"] = pd.array([ask.excluded_cases], dtype="Int64")
    return ask.answer(frame)


def variants(ask: Ask, top: int | None = 20, by: str = "process") -> pd.DataFrame:
    """The answer of ``ProcessLog.variants()`` (documented there)."""
    limit = _top(top)
    statement = variants_sql.variants(ask.schema, ask.filters, limit, _variant_by(by))
    frame = ask.run(statement)
    total = cell_int(frame["total_cases"].iloc[0]) if len(frame) else 0  # no variant: no case
    frame = frame.drop(columns="total_cases")
    frame = frame.sort_values(["cases", "variant"], ascending=[False, True], na_position="first")
    frame = frame.reset_index(drop=True)
    sequences = example_sequences(ask, [str(x) for x in frame["example_case"].dropna()])
    frame.insert(
        2 if "name" in frame.columns else 1,
        "activities",
        # pandas-stubs: insert() refuses an ExtensionArray, which pandas accepts as a column
        pd.array([sequences.get(str(x), "") for x in frame["example_case"]], dtype="string"),  # type: ignore[arg-type]
    )
    frame["cases"] = frame["cases"].astype("Int64")
    share = frame["cases"].astype("float64") / total if total else frame["cases"].astype("float64") * np.nan
    frame.insert(_after(frame, "cases"), "share", share)
    frame.insert(_after(frame, "share"), "cumulative_share", share.cumsum())
    frame["median_duration"] = _ms(frame["median_duration"])
    frame["p90_duration"] = _ms(frame["p90_duration"])
    return ask.answer(frame, total_cases=total)


def example_sequences(ask: Ask, case_ids: list[str]) -> dict[str, str]:
    """``caseid -> "A → B → C"`` for a few example cases (their tasks in the task order: start, end, then
    the activity's name)."""
    if not case_ids:
        return {}
    statement = variants_sql.sequences(ask.schema, case_ids)
    rows = in_task_order(ask.run(statement), "case_id", "started", "ended", "activity")
    out = {str(k): " → ".join(g["activity"].astype(str)) for k, g in rows.groupby("case_id", sort=False)}
    return out


def throughput(
    ask: Ask, by: str | None = None, quantiles: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9)
) -> pd.DataFrame:
    """The answer of ``ProcessLog.throughput()`` (documented there)."""
    qs = list(check_quantiles(quantiles, none_ok=False))
    statement = cases_sql.throughput(ask.schema, ask.filters, by, qs)
    frame = ask.run(statement)
    frame["cases"] = frame["cases"].astype("Int64")
    for col in ["mean", "min", *(qname(q) for q in qs), "max"]:
        frame[col] = _ms(frame[col])
    if by is None and int(frame["cases"].iloc[0]) == 0:
        frame = frame.iloc[0:0]
    return ask.answer(frame)


def distribution(ask: Ask, bucket: str = "P1D") -> pd.DataFrame:
    """The answer of ``ProcessLog.distribution()`` (documented there)."""
    iso = period(bucket)
    width = period_ms(iso)
    statement = cases_sql.distribution(ask.schema, ask.filters, iso)
    frame = ask.run(statement)
    out = pd.DataFrame(
        {
            "from": _ms(frame["bucket"].astype("float64") * width),
            "to": _ms((frame["bucket"].astype("float64") + 1) * width),
            "cases": frame["cases"].astype("Int64"),
        }
    )
    return ask.answer(out, bucket=iso)


def rework(ask: Ask, by: str = "activity", top: int | None = 50) -> pd.DataFrame:
    """The answer of ``ProcessLog.rework()`` (documented there)."""
    if by == "activity":
        statement = rework_sql.rework_by_activity(ask.schema, ask.filters)
        frame = ask.run(statement)
        frame["executions"] = frame["executions"].astype("Int64")
        for col in ("rework_executions", "cases", "cases_with_rework"):
            frame[col] = _rounded(frame[col])
        frame["rework_share"] = frame["cases_with_rework"].astype("float64") / frame["cases"].astype(
            "float64"
        )
        return ask.answer(frame)
    if by == "case":
        statement = rework_sql.rework_by_case(ask.schema, ask.filters, _top(top))
        frame = ask.run(statement)
        frame["rework"] = frame["rework"].astype("Int64")
        frame["duration"] = _ms(frame["duration"])
        return ask.answer(frame)
    raise ConfigurationError(f"rework(by=...) must be 'activity' or 'case', got {by!r}.")


def _top(top: Any) -> int | None:
    """A ``top=`` argument: a positive integer, or ``None`` for every row."""
    return None if top is None else positive_int(top, "top")


def _after(frame: pd.DataFrame, column: str) -> int:
    """The position just after *column* (a name the frame holds once)."""
    position = frame.columns.get_loc(column)
    if not isinstance(position, int):  # a repeated name: these frames never have one
        raise TypeError(f"column {column!r} is not unique")
    return position + 1
