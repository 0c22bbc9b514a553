"""What the answers share: the conversions of result columns to pandas types, the periods of the time
answers, the one task order on pandas' side, the view a map opens on; and the parts of a
:class:`~._log.ProcessLog` its filter methods (:mod:`._filtering`) use, declared for mypy."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, TypeVar

import numpy as np
import pandas as pd

from ..errors import ConfigurationError

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
    """The parts of a ``ProcessLog`` its filter methods use; ``ProcessLog`` implements them."""

    if TYPE_CHECKING:  # pragma: no cover - declarations only
        _project: Project
        _filters: Filters
        _resource_name: str | None
        #: a task column (quoted) -> its distinct values over the project (``None``: too many to hold),
        #: shared by a log and every log filtered from it
        _values: dict[str, frozenset[str] | None]

        def _schema(self) -> Schema: ...
        def _run(self, statement: Statement) -> pd.DataFrame: ...
        def _resource(self) -> str: ...
        def _add(self: LogT, case_filter: CaseFilter) -> LogT: ...
        def _with(self: LogT, filters: Filters) -> LogT: ...
        def _check_activities(self, names: Sequence[str], fn: str, also: Sequence[str] = ()) -> None: ...
        def _check_named(self, column: str, names: Sequence[str], what: str, fn: str) -> None: ...


def periods(first: pd.Timestamp, last: pd.Timestamp, iso: str) -> pd.DatetimeIndex:
    """Every period start of the ISO period *iso* from *first* to *last* (both already floored by Druid's
    ``TIME_FLOOR``, in UTC), as ``datetime64[ms, UTC]``.

    Adding the period to a floored start gives the next floored start, for every period ``TIME_FLOOR``
    takes: calendar months and years, weeks (Mondays), and days, hours, minutes or seconds, which Druid
    counts from 1970-01-01."""
    m = _ISO.match(iso)
    if m is None:  # period() checked it already
        raise ConfigurationError(f"{iso!r} is not an ISO-8601 period.")
    years, months, weeks, days, hours, minutes, seconds = (int(g[:-1]) if g else 0 for g in m.groups())
    step = pd.DateOffset(
        years=years, months=months, weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds
    )
    return pd.DatetimeIndex(pd.date_range(first, last, freq=step).astype("datetime64[ms, UTC]"))


def dense(frame: pd.DataFrame, iso: str) -> pd.DataFrame:
    """*frame* (a ``period`` column of ``datetime64[ms, UTC]`` starts, ascending, one row each) with a row
    for every period from its first to its last, as pandas' ``resample`` gives: the added rows hold NA
    (the caller fills what a period without rows means: zero cases, no interval)."""
    if not len(frame):
        return frame.reset_index(drop=True)
    index = periods(frame["period"].iloc[0], frame["period"].iloc[-1], iso)
    out = frame.set_index("period").reindex(index)
    out.index.name = "period"
    return out.reset_index()


#: an ISO-8601 period, split into its parts (``_sql._base.period`` has checked it)
_ISO = re.compile(r"^P(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(?:T(\d+H)?(\d+M)?(\d+S)?)?$")


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
