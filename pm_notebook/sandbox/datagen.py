"""Deterministic, numpy-vectorised process-mining data for the sandbox.

Two layers:

* :func:`simulate` plays a :class:`ProcessTemplate` (purchase-to-pay, order-to-cash) into an
  :class:`EventLog`: one row per task execution, with variants, loops (rework), parallel tasks
  (concurrency), business-hours timestamps, case dimensions, a task-level ``resource`` dimension and
  case metrics. Everything is drawn from one ``numpy.random.Generator``, so a seed gives the same log.
* :func:`build_tables` turns *any* event log (simulated, or a user's CSV through
  :func:`read_event_log_csv`) into the service's three Druid tables plus the lookups, as Arrow tables:
  ``<pid>`` (cases), ``<pid>_vertex`` (tasks), ``<pid>_edge`` (transitions), ``<pid>_variant_name`` and
  ``<pid>_excluded_cases``. The column list is documented in ``docs/sandbox-data.md``.

Python loops run over variants and steps only (tens), never over cases or events, which is what
keeps one million task rows well under the one-minute budget.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "TEMPLATES",
    "EventLog",
    "ProcessTemplate",
    "ProjectTables",
    "build_tables",
    "read_event_log_csv",
    "simulate",
    "stable_uuid",
]

_MINUTE = 60_000
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_WORK_START = 8 * _HOUR
_WORK_END = 18 * _HOUR
# 2025-01-06 00:00 UTC, a Monday: every generated case starts within the following year.
_EPOCH_START_MS = 1_736_121_600_000
_SPAN_DAYS = 365
_NAMESPACE = uuid.UUID("6f1d8a52-3c1e-4f59-9a63-0b7c5de0a1e4")


def stable_uuid(*parts: object) -> str:
    """A UUID derived from *parts* only: the sandbox's ids are the same on every run with the same seed."""
    return str(uuid.uuid5(_NAMESPACE, "/".join(str(p) for p in parts)))


def _hex32(*parts: object) -> str:
    return hashlib.md5("/".join(str(p) for p in parts).encode(), usedforsecurity=False).hexdigest()


# --------------------------------------------------------------------------------------------------
# Process templates
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessTemplate:
    """A process to simulate.

    ``activities`` maps a task name to ``(median task minutes, median wait hours before it)``.
    ``variants`` are ``(weight, steps)``; a step written ``"+Name"`` runs in parallel with the step
    before it (it starts shortly after that step starts), which is where concurrency comes from.
    ``case_dimensions`` are drawn once per case with Zipf-like weights; ``resources`` is a task-level
    dimension; ``metrics`` are ``(log-normal median, sigma)`` per case.
    """

    key: str
    name: str
    description: str
    case_prefix: str
    activities: dict[str, tuple[float, float]]
    variants: tuple[tuple[float, tuple[str, ...]], ...]
    case_dimensions: dict[str, tuple[str, ...]]
    resources: tuple[str, ...]
    metrics: dict[str, tuple[float, float]]


_PR, _APR, _PO, _APO = (
    "Create Purchase Requisition",
    "Approve Purchase Requisition",
    "Create Purchase Order",
    "Approve Purchase Order",
)
_CPO, _SPO, _GR, _INV = "Change Purchase Order", "Send Purchase Order", "Receive Goods", "Receive Invoice"
_VER, _PAY, _BLK, _RES = "Verify Invoice", "Pay Invoice", "Block Invoice", "Resolve Price Difference"

P2P = ProcessTemplate(
    key="p2p",
    name="Purchase to Pay",
    description="Procurement: requisition, purchase order, goods receipt, invoice and payment.",
    case_prefix="PO",
    activities={
        _PR: (15, 0.0),
        "Change Purchase Requisition": (10, 6.0),
        _APR: (5, 8.0),
        _PO: (20, 12.0),
        _APO: (5, 6.0),
        _CPO: (12, 10.0),
        _SPO: (3, 2.0),
        _GR: (25, 96.0),
        _INV: (8, 24.0),
        _VER: (15, 16.0),
        _BLK: (5, 4.0),
        _RES: (45, 30.0),
        _PAY: (5, 120.0),
        "Cancel Purchase Order": (5, 24.0),
    },
    variants=(
        (0.33, (_PR, _APR, _PO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.18, (_PO, _APO, _SPO, _GR, "+" + _INV, _VER, _PAY)),
        (0.12, (_PR, _APR, _PO, _APO, _CPO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.04, (_PR, _APR, _PO, _APO, _CPO, _APO, _CPO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.10, (_PR, _APR, _PO, _APO, _SPO, _GR, _INV, _VER, _BLK, _RES, _VER, _PAY)),
        (0.08, (_PR, _APR, _PO, _APO, _SPO, _GR, _GR, "+" + _INV, _VER, _PAY)),
        (0.06, (_PR, "Change Purchase Requisition", _APR, _PO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.05, (_PR, _APR, _PO, "Cancel Purchase Order")),
        (0.04, (_PO, _APO, _SPO, _INV, "+" + _GR, _VER, _BLK, _RES, _VER, _PAY)),
    ),
    case_dimensions={
        "supplier": (
            "Acme Industrial",
            "Globex Supplies",
            "Initech Parts",
            "Umbrella Chemicals",
            "Stark Components",
            "Wayne Logistics",
            "Hooli Hardware",
            "Vandelay Imports",
            "Soylent Foods",
            "Tyrell Electronics",
        ),
        "company_code": ("FR01", "DE01", "US01", "UK01", "ES01"),
        "purchasing_group": ("Direct materials", "Indirect materials", "Services", "IT", "Facilities"),
    },
    resources=(
        "alice",
        "bruno",
        "chen",
        "dora",
        "emil",
        "fatima",
        "goran",
        "hana",
        "ivan",
        "julia",
        "kofi",
        "lea",
    ),
    metrics={"order_amount": (2400.0, 1.1), "quantity": (40.0, 0.9)},
)

_RO, _CC, _CO, _PK = "Receive Order", "Check Credit", "Confirm Order", "Pick Goods"
_PA, _SH, _CI, _SI = "Pack Goods", "Ship Goods", "Create Invoice", "Send Invoice"
_RP, _REM, _CHO = "Receive Payment", "Send Reminder", "Change Order"

O2C = ProcessTemplate(
    key="o2c",
    name="Order to Cash",
    description="Sales: order entry, credit check, fulfilment, invoicing and cash collection.",
    case_prefix="SO",
    activities={
        _RO: (10, 0.0),
        _CC: (8, 3.0),
        _CO: (4, 4.0),
        _CHO: (10, 12.0),
        _PK: (30, 20.0),
        _PA: (20, 2.0),
        _SH: (15, 6.0),
        _CI: (6, 1.0),
        _SI: (2, 2.0),
        _REM: (3, 400.0),
        _RP: (2, 500.0),
        "Cancel Order": (5, 24.0),
        "Return Goods": (30, 120.0),
    },
    variants=(
        (0.36, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _RP)),
        (0.16, (_RO, _CC, _CO, _PK, _PA, _SH, "+" + _CI, _SI, _RP)),
        (0.11, (_RO, _CC, _CO, _CHO, _CO, _PK, _PA, _SH, _CI, _SI, _RP)),
        (0.10, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _REM, _RP)),
        (0.05, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _REM, _REM, _RP)),
        (0.07, (_RO, _CO, _PK, "+" + _CI, _PA, _SH, _SI, _RP)),
        (0.05, (_RO, _CC, "Cancel Order")),
        (0.04, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, "Return Goods")),
        (0.06, (_RO, _CC, _CHO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _RP)),
    ),
    case_dimensions={
        "customer": (
            "Northwind",
            "Contoso",
            "Fabrikam",
            "Adventure Works",
            "Tailspin Toys",
            "Litware",
            "Proseware",
            "Woodgrove Bank",
            "Alpine Ski House",
            "Blue Yonder Airlines",
            "Coho Winery",
            "Lucerne Publishing",
        ),
        "region": ("EMEA", "NA", "APAC", "LATAM"),
        "sales_channel": ("Web shop", "Sales rep", "EDI", "Phone"),
    },
    resources=("amir", "beth", "carlos", "dana", "eli", "freya", "gus", "hiro", "ines", "jon"),
    metrics={"order_value": (850.0, 1.0), "items": (6.0, 0.7)},
)

TEMPLATES: dict[str, ProcessTemplate] = {t.key: t for t in (P2P, O2C)}


# --------------------------------------------------------------------------------------------------
# Event logs
# --------------------------------------------------------------------------------------------------


@dataclass
class EventLog:
    """One row per task execution, sorted by case then start time.

    ``case`` holds 0-based case numbers indexing ``case_ids``; ``activity`` indexes ``activities``.
    ``dimensions`` and ``metrics`` are per event (case-level values are repeated on each event).
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

    @property
    def n_cases(self) -> int:
        return len(self.case_ids)


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
    )


# --------------------------------------------------------------------------------------------------
# CSV event logs
# --------------------------------------------------------------------------------------------------

_NORMALISE = re.compile(r"[^a-z0-9]+")
CASE_ID_HEADERS = ("case_id", "caseid", "case", "case_concept_name", "case_key", "case_number")
ACTIVITY_HEADERS = ("activity", "activity_name", "task", "task_name", "concept_name", "event", "step")
TIMESTAMP_HEADERS = ("timestamp", "start_timestamp", "start_time", "start", "time", "time_timestamp", "date")
END_HEADERS = ("end_timestamp", "end_time", "end", "complete_timestamp", "completed", "end_date")


def _slug(name: str) -> str:
    return _NORMALISE.sub("_", name.strip().lower()).strip("_")


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
    columns = {_slug(c): c for c in frame.columns}
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
    case_codes, case_ids = pd.factorize(frame[case_col], sort=False)
    act_codes, act_names = pd.factorize(frame[act_col], sort=True)
    order = np.lexsort((end, start, case_codes))

    dims: dict[str, pa.Array] = {}
    metrics: dict[str, np.ndarray] = {}
    used = {case_col, act_col, ts_col, end_col}
    for col in frame.columns:
        if col in used or not _slug(col):
            continue
        values = frame[col].to_numpy()[order]
        numeric = pd.to_numeric(pd.Series(values), errors="coerce")
        if numeric.notna().sum() == pd.Series(values).notna().sum() and numeric.notna().any():
            metrics[_slug(col)] = numeric.to_numpy(dtype=float)
        else:
            dims[_slug(col)] = pa.array(values, type=pa.string(), from_pandas=True)
    return EventLog(
        case_ids=pa.array([str(c) for c in case_ids], type=pa.string()),
        activities=[str(a) for a in act_names],
        case=case_codes[order].astype(np.int64),
        activity=act_codes[order].astype(np.int32),
        start_ms=start[order],
        end_ms=end[order],
        dimensions=dims,
        metrics=metrics,
    )


# --------------------------------------------------------------------------------------------------
# Event log -> Druid tables
# --------------------------------------------------------------------------------------------------


@dataclass
class ProjectTables:
    """The Arrow tables of one project, keyed by their Druid names."""

    tables: dict[str, pa.Table]  # "<pid>", "<pid>_vertex", "<pid>_edge"
    lookups: dict[str, pa.Table]  # "<pid>_variant_name", "<pid>_excluded_cases" (columns k, v)


def _seq_hash(case: np.ndarray, codes: np.ndarray, n_cases: int) -> np.ndarray:
    """Order-sensitive uint64 hash of each case's code sequence (wrapping arithmetic is intended)."""
    pos = np.arange(len(case)) - np.searchsorted(case, case)
    mult = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        mixed = (codes.astype(np.uint64) + np.uint64(1)) * mult
        mixed ^= pos.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9)
        mixed *= np.uint64(0x94D049BB133111EB)
    out = np.zeros(n_cases, dtype=np.uint64)
    np.add.at(out, case, mixed)
    return out


def _keys_for(hashes: np.ndarray, representative_text, *tag: object) -> pa.Array:
    """Map each case's hash to a UUID of its representative's text (hash collisions cannot merge texts)."""
    uniq, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    ids = pa.array([stable_uuid(*tag, representative_text(i)) for i in first])
    return ids.take(pa.array(inverse.ravel()))


def _timestamps(ms: np.ndarray) -> pa.Array:
    """Epoch milliseconds as a TIMESTAMP column (microsecond unit, DuckDB's plain TIMESTAMP)."""
    return pa.array(np.asarray(ms, dtype=np.int64) * 1000, type=pa.timestamp("us"))


def _list_column(values: pa.Array, offsets: np.ndarray) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values)


def build_tables(log: EventLog, project_id: str, *, version: str = "1") -> ProjectTables:
    """Derive the cases, vertex and edge tables and the lookups of *project_id* from *log*."""
    n = log.n_cases
    case, act = log.case, log.activity
    n_events = len(case)
    names = pa.array(log.activities, type=pa.string())
    vertex_ids = pa.array([_hex32(project_id, a) for a in log.activities], type=pa.string())
    first = np.searchsorted(case, np.arange(n))
    last = np.searchsorted(case, np.arange(n), side="right") - 1
    tasks_count = (last - first + 1).astype(np.int64)
    starts = np.minimum.reduceat(log.start_ms, first)
    ends = np.maximum.reduceat(log.end_ms, first)
    dur = log.end_ms - log.start_ms

    # Concurrency: an event overlaps the previous event of its case when it starts before that one ends.
    same_case_prev = np.zeros(n_events, dtype=bool)
    same_case_prev[1:] = case[1:] == case[:-1]
    prev_end = np.concatenate([[0], _running_max_per_case(log.end_ms, case)[:-1]])
    overlap = same_case_prev & (log.start_ms < prev_end)
    overlap_ms = np.where(overlap, np.minimum(prev_end, log.end_ms) - log.start_ms, 0)
    in_overlap = overlap.copy()
    in_overlap[:-1] |= overlap[1:]
    concurrency = np.bincount(case, weights=in_overlap, minlength=n) / np.maximum(tasks_count, 1)
    active = np.bincount(case, weights=dur - overlap_ms, minlength=n).astype(np.int64)

    # Occurrences of each task within its case, and rework = executions beyond the first.
    pair = case.astype(np.int64) * len(log.activities) + act
    uniq_pair, pair_inv, pair_counts = np.unique(pair, return_inverse=True, return_counts=True)
    occurrences = pair_counts[pair_inv.ravel()].astype(np.int64)
    distinct_per_case = np.bincount(uniq_pair // len(log.activities), minlength=n)
    rework = tasks_count - distinct_per_case

    # Variant keys: processkey = exact sequence, processsequence = first appearances,
    # graphkey = the set of transitions (so loop repetitions share a model variant).
    is_first_occ = np.zeros(n_events, dtype=bool)
    _, first_idx = np.unique(pair, return_index=True)
    is_first_occ[first_idx] = True
    seq_text = _sequence_text(case, act, log.activities, first)
    processkey = _keys_for(_seq_hash(case, act, n), lambda i: seq_text(i, None), project_id, "process")
    fo_case, fo_act = case[is_first_occ], act[is_first_occ]
    processsequence = _keys_for(
        _seq_hash(fo_case, fo_act, n), lambda i: seq_text(i, is_first_occ), project_id, "sequence"
    )
    src_code = np.where(same_case_prev, np.concatenate([[0], act[:-1]]) + 1, 0)  # 0 = START
    trans = src_code.astype(np.int64) * (len(log.activities) + 2) + act + 1
    end_trans = (act[last].astype(np.int64) + 1) * (len(log.activities) + 2) + len(log.activities) + 1
    all_case = np.concatenate([case, np.arange(n)])
    all_trans = np.concatenate([trans, end_trans])
    uniq_ct = _distinct(all_case * ((len(log.activities) + 2) ** 2) + all_trans)
    ct_case = uniq_ct // ((len(log.activities) + 2) ** 2)
    with np.errstate(over="ignore"):
        th = (uniq_ct % ((len(log.activities) + 2) ** 2)).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        th ^= th >> np.uint64(29)
    graph_hash = np.zeros(n, dtype=np.uint64)
    np.add.at(graph_hash, ct_case, th)
    graphkey = _keys_for(graph_hash, lambda i: seq_text(i, None), project_id, "graph")

    caseid_ev = log.case_ids.take(pa.array(case))
    graphkey_ev = graphkey.take(pa.array(case))
    processkey_ev = processkey.take(pa.array(case))
    ts = _timestamps(log.start_ms)
    version_arr = pa.array(np.full(n, version, dtype=object), type=pa.string())
    case_version = pc.binary_join_element_wise(log.case_ids, version_arr, "-")
    predicted = log.predicted if log.predicted is not None else np.zeros(n, dtype=bool)

    case_offsets = np.concatenate([first, [n_events]])
    distinct_offsets = np.concatenate([[0], np.cumsum(distinct_per_case)])
    cases_cols: dict[str, pa.Array] = {
        "__time": _timestamps(starts),
        "enddate": pa.array(ends, type=pa.int64()),
        "duration": pa.array(ends - starts, type=pa.int64()),
        "graphkey": graphkey,
        "processkey": processkey,
        "processsequence": processsequence,
        "caseid": log.case_ids,
        "version": version_arr,
        "case_version": case_version,
        "active_duration": pa.array(np.minimum(active, ends - starts), type=pa.int64()),
        "concurrency": pa.array(np.round(concurrency, 4), type=pa.float64()),
        "rework": pa.array(rework.astype(np.int64)),
        "tasks_count": pa.array(tasks_count),
        "distinct_vertices": _list_column(names.take(pa.array(act[is_first_occ])), distinct_offsets),
        "is_predicted": pa.array(predicted, type=pa.bool_()),
    }
    vertex_cols: dict[str, pa.Array] = {
        "__time": ts,
        "enddate": pa.array(log.end_ms, type=pa.int64()),
        "duration": pa.array(dur, type=pa.int64()),
        "caseid": caseid_ev,
        "graphkey": graphkey_ev,
        "processkey": processkey_ev,
        "vertex_name": names.take(pa.array(act)),
        "vertex_id": vertex_ids.take(pa.array(act)),
        "concurrent_vertices": _concurrent_names(names, act, overlap),
        "total_occurences_by_caseid": pa.array(occurrences),
    }
    case_dim_cols: dict[str, pa.Array] = {}
    for dim, values in log.dimensions.items():
        col = f"{dim}_lpkr"
        vertex_cols[col] = values
        case_dim_cols[col] = values.take(pa.array(first))
        cases_cols[col] = case_dim_cols[col]
        cases_cols[f"all_{dim}_lpkr"] = _list_column(values, case_offsets)
    for metric, values in log.metrics.items():
        col = f"{metric}_lpkr"
        vertex_cols[col] = pa.array(values, type=pa.float64())
        case_dim_cols[col] = pa.array(values[first], type=pa.float64())
        cases_cols[col] = case_dim_cols[col]

    edges = _edge_columns(
        log, case, act, names, vertex_ids, first, last, same_case_prev, starts, ends, project_id
    )
    edge_case = edges.pop("_case")
    edge_cols = {
        **edges,
        "caseid": log.case_ids.take(edge_case),
        "graphkey": graphkey.take(edge_case),
        "processkey": processkey.take(edge_case),
    }
    for col, values in case_dim_cols.items():
        edge_cols[col] = values.take(edge_case)
    order_edges = ["__time", "enddate", "duration", "caseid", "graphkey", "processkey"]
    edge_table = pa.table(
        {k: edge_cols[k] for k in order_edges + [c for c in edge_cols if c not in order_edges]}
    )

    variant_rank = _variant_names(graphkey)
    excluded = _excluded_mask(n)
    lookups = {
        f"{project_id}_variant_name": variant_rank,
        f"{project_id}_excluded_cases": pa.table(
            {
                "k": case_version.filter(pa.array(excluded)),
                "v": pa.array(np.full(int(excluded.sum()), "true", dtype=object), type=pa.string()),
            }
        ),
    }
    # Cases in time order; tasks and transitions stay grouped by case (sorting them costs seconds at scale).
    cases_table = pa.table(cases_cols)
    if n > 1 and (np.diff(starts) < 0).any():
        cases_table = cases_table.take(pa.array(np.argsort(starts, kind="stable")))
    vertex_table = pa.table(vertex_cols)
    return ProjectTables(
        tables={
            project_id: cases_table,
            f"{project_id}_vertex": vertex_table,
            f"{project_id}_edge": edge_table,
        },
        lookups=lookups,
    )


def _running_max_per_case(values: np.ndarray, case: np.ndarray) -> np.ndarray:
    # Offset each case far above the previous one so one global running max restarts at case starts.
    if not len(values):
        return values
    low = values.min()
    offset = case.astype(np.int64) * np.int64(1 << 42)
    return np.maximum.accumulate(values - low + offset) - offset + low


def _sequence_text(case: np.ndarray, act: np.ndarray, activities: list[str], first: np.ndarray):
    """Return ``text(case_no, mask)``: the case's task names joined by arrows (only events in *mask*)."""

    def text(case_no: int, mask: np.ndarray | None) -> str:
        lo = first[case_no]
        hi = first[case_no + 1] if case_no + 1 < len(first) else len(case)
        codes = act[lo:hi] if mask is None else act[lo:hi][mask[lo:hi]]
        return "\u2192".join(activities[c] for c in codes)

    return text


def _concurrent_names(names: pa.Array, act: np.ndarray, overlap: np.ndarray) -> pa.Array:
    """Name of the task running alongside (previous or next overlapping event), else null."""
    partner = np.full(len(act), -1, dtype=np.int64)
    idx = np.flatnonzero(overlap)
    partner[idx] = act[idx - 1]
    partner[idx - 1] = act[idx]
    mask = partner < 0
    return names.take(pa.array(np.where(mask, 0, partner), mask=mask))


def _edge_columns(log, case, act, names, vertex_ids, first, last, same_case_prev, starts, ends, project_id):
    n = log.n_cases
    start_name = pa.array(["START"], type=pa.string())
    end_name = pa.array(["END"], type=pa.string())
    all_names = pa.concat_arrays([names, start_name, end_name])
    all_ids = pa.concat_arrays(
        [vertex_ids, pa.array([_hex32(project_id, "START"), _hex32(project_id, "END")], type=pa.string())]
    )
    k = len(log.activities)
    inner = np.flatnonzero(same_case_prev)
    src = np.concatenate([np.full(n, k), act[inner - 1], act[last]])
    dst = np.concatenate([act[first], act[inner], np.full(n, k + 1)])
    t_from = np.concatenate([starts, log.end_ms[inner - 1], log.end_ms[last]])
    t_to = np.concatenate([log.start_ms[first], log.start_ms[inner], ends])
    edge_case = np.concatenate([np.arange(n), case[inner], np.arange(n)])
    return {
        "__time": _timestamps(t_from),
        "enddate": pa.array(np.maximum(t_to, t_from), type=pa.int64()),
        "duration": pa.array(np.maximum(t_to - t_from, 0), type=pa.int64()),
        "source_vertex_name": all_names.take(pa.array(src)),
        "source_vertex_id": all_ids.take(pa.array(src)),
        "destination_vertex_name": all_names.take(pa.array(dst)),
        "destination_vertex_id": all_ids.take(pa.array(dst)),
        "_case": pa.array(edge_case),
    }


def _variant_names(graphkey: pa.Array) -> pa.Table:
    counts = graphkey.value_counts().to_pylist()
    counts.sort(key=lambda d: (-d["counts"], d["values"]))
    return pa.table(
        {
            "k": pa.array([d["values"] for d in counts], type=pa.string()),
            "v": pa.array([f"Variant {i + 1}" for i in range(len(counts))], type=pa.string()),
        }
    )


def _excluded_mask(n_cases: int) -> np.ndarray:
    # About 1 % of cases are "excluded" (a business rule in the real service), picked by a fixed hash.
    with np.errstate(over="ignore"):
        mixed = (np.arange(1, n_cases + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
    return mixed % np.uint64(100) == 0


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (numpy's hash-based unique is much slower here)."""
    s = np.sort(values)
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep]
