"""Plays a :class:`~.templates.ProcessTemplate` into an :class:`~.eventlog.EventLog`: variants, loops
(rework), parallel tasks, business-hours timestamps, dimensions and metrics, all drawn from one
``numpy.random.Generator`` (a seed gives the same log). Python loops run over variants and steps only."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .eventlog import EventLog
from .mapping import FileMapping
from .templates import ProcessTemplate

__all__ = ["previous_ingestion", "simulate"]

_MINUTE = 60_000
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_WORK_START = 8 * _HOUR
_WORK_END = 18 * _HOUR
# 2025-01-06 00:00 UTC, a Monday: every generated case starts within the following year.
_EPOCH_START_MS = 1_736_121_600_000
_SPAN_DAYS = 365


def _business_hours(t: np.ndarray, jitter: np.ndarray) -> np.ndarray:
    """Move each instant to the next working time (Mon-Fri 08:00-18:00 UTC); never moves it backwards."""
    day, tod = np.divmod(t, _DAY)
    outside = (tod < _WORK_START) | (tod >= _WORK_END)
    day = day + (tod >= _WORK_END)
    dow = (day + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
    weekend = dow >= 5
    day = day + np.where(dow == 5, 2, np.where(dow == 6, 1, 0))
    moved = outside | weekend
    return np.where(moved, day * _DAY + _WORK_START + jitter, t)


def _zipf_choice(rng: np.random.Generator, n_values: int, size: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, n_values + 1) ** 0.9
    return rng.choice(n_values, size=size, p=weights / weights.sum())


def simulate(
    template: ProcessTemplate, n_cases: int, rng: np.random.Generator, *, project_tag: str = ""
) -> EventLog:
    """Play *template* for *n_cases* cases drawn from *rng* (same generator state → same log)."""
    activities = list(template.activities)
    act_index = {a: i for i, a in enumerate(activities)}
    med_task = np.array([template.activities[a][0] for a in activities]) * _MINUTE
    med_wait = np.array([template.activities[a][1] for a in activities]) * _HOUR

    weights = np.array([w for w, _ in template.variants])
    variant_of_case = rng.choice(len(template.variants), size=n_cases, p=weights / weights.sum())
    case_start = _EPOCH_START_MS + rng.integers(0, _SPAN_DAYS * _DAY, size=n_cases)
    # Sorted, so case numbers follow opening order, as a real system's ids do.
    case_start = np.sort(_business_hours(case_start, rng.integers(0, _HOUR, size=n_cases)))

    parts_case, parts_act, parts_start, parts_end, parts_key = [], [], [], [], []
    max_len = max(len(steps) for _, steps in template.variants)
    for v, (_, steps) in enumerate(template.variants):
        cases = np.flatnonzero(variant_of_case == v)
        n = len(cases)
        if n == 0:
            continue
        length = len(steps)
        codes = np.array([act_index[s.lstrip("+")] for s in steps])
        parallel = [s.startswith("+") for s in steps]
        start = np.empty((n, length), dtype=np.int64)
        end = np.empty((n, length), dtype=np.int64)
        done = case_start.copy()[cases]
        for j in range(length):
            task = (med_task[codes[j]] * rng.lognormal(0.0, 0.6, n)).astype(np.int64) + _MINUTE
            if j == 0:
                begin = done
            elif parallel[j]:
                begin = start[:, j - 1] + rng.integers(0, 30 * _MINUTE, n)
            else:
                wait = (med_wait[codes[j]] * rng.lognormal(0.0, 0.9, n)).astype(np.int64)
                begin = done + wait
            begin = _business_hours(begin, rng.integers(0, _HOUR, n))
            start[:, j] = begin
            end[:, j] = begin + task
            done = np.maximum(done, end[:, j])
        parts_case.append(np.repeat(cases, length))
        parts_act.append(np.tile(codes, n))
        parts_start.append(start.ravel())
        parts_end.append(end.ravel())
        parts_key.append(np.repeat(cases, length) * max_len + np.tile(np.arange(length), n))

    order = np.argsort(np.concatenate(parts_key), kind="stable")
    case = np.concatenate(parts_case)[order]
    activity = np.concatenate(parts_act)[order].astype(np.int32)
    start_ms = np.concatenate(parts_start)[order]
    end_ms = np.concatenate(parts_end)[order]

    dimensions: dict[str, pa.Array] = {}
    for dim, values in template.case_dimensions.items():
        per_case = _zipf_choice(rng, len(values), n_cases)
        dimensions[dim] = pa.array(values).take(pa.array(per_case[case]))
    dimensions["resource"] = pa.array(template.resources).take(
        pa.array(_zipf_choice(rng, len(template.resources), len(case)))
    )
    metrics = {
        m: np.round(med * rng.lognormal(0.0, sigma, n_cases), 2)[case]
        for m, (med, sigma) in template.metrics.items()
    }
    width = len(str(n_cases)) + 1
    case_ids = pa.array([f"{template.case_prefix}{project_tag}-{i + 1:0{width}d}" for i in range(n_cases)])
    return EventLog(
        case_ids=case_ids,
        activities=activities,
        case=case,
        activity=activity,
        start_ms=start_ms,
        end_ms=end_ms,
        dimensions=dimensions,
        metrics=metrics,
        predicted=rng.random(n_cases) < 0.02,
        mapping=FileMapping.default(
            list(dimensions),
            list(metrics),
            case_dimensions=tuple(template.case_dimensions),
            labels=template.labels,
            units=template.units,
        ),
    )


def previous_ingestion(log: EventLog, rng: np.random.Generator, share: float) -> EventLog:
    """The earlier state of about *share* of *log*'s cases: the first tasks only, as a previous file had them.

    The service keeps a case's older row when a later file brings more of its events (the row's
    ``version`` grows; see the ``<pid>`` lookup). Only cases with at least two tasks are picked; each keeps
    between one task and all but its last.
    """
    n = log.n_cases
    first = np.searchsorted(log.case, np.arange(n))
    length = np.bincount(log.case, minlength=n)
    chosen = (rng.random(n) < share) & (length >= 2)
    keep = np.where(chosen, 1 + (rng.random(n) * np.maximum(length - 1, 1)).astype(np.int64), 0)
    pos = np.arange(len(log.case)) - first[log.case]
    events = np.flatnonzero(pos < keep[log.case])
    old_cases = np.flatnonzero(chosen)
    renumber = np.full(n, -1, dtype=np.int64)
    renumber[old_cases] = np.arange(len(old_cases))
    take = pa.array(events)
    return EventLog(
        case_ids=log.case_ids.take(pa.array(old_cases)),
        activities=log.activities,
        case=renumber[log.case[events]],
        activity=log.activity[events],
        start_ms=log.start_ms[events],
        end_ms=log.end_ms[events],
        dimensions={k: v.take(take) for k, v in log.dimensions.items()},
        metrics={k: v[events] for k, v in log.metrics.items()},
        predicted=None if log.predicted is None else log.predicted[old_cases],
        mapping=log.mapping,
    )
