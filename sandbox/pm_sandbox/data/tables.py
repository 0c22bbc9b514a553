"""Any :class:`~.eventlog.EventLog` → the service's three Druid tables and its lookups, as Arrow tables:
``<pid>`` (cases), ``<pid>_vertex`` (tasks), ``<pid>_edge`` (transitions); the lookups
``<pid>_variant_name`` and its alias ``<pid>_variants`` (graphkey → name), ``<pid>_excluded_cases``,
``<pid>`` (outdated case versions) and ``<pid>_cases_is_completed`` (case_version → completion flag).
The column list is documented in ``docs/sandbox-data.md``. Vectorised: no Python loop runs over cases
or events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .eventlog import EventLog
from .ids import hex32 as _hex32
from .ids import stable_uuid
from .mapping import FileMapping

__all__ = ["LookupDoc", "ProjectTables", "build_tables"]


@dataclass(frozen=True)
class LookupDoc:
    """What ``GET /pub/lookups/{pid}`` says about a lookup: a description and a SQL usage example."""

    description: str
    usage: str


@dataclass
class ProjectTables:
    """The Arrow tables of one project, keyed by their Druid names, with the mapping they follow."""

    tables: dict[str, pa.Table]  # "<pid>", "<pid>_vertex", "<pid>_edge"
    lookups: dict[str, pa.Table]  # see the module docstring (columns k, v)
    mapping: FileMapping | None = None
    lookup_docs: dict[str, LookupDoc] | None = None
    end_activities: tuple[str, ...] | None = None  # the END CASE rule; None: no rule set


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


def _keys_for(hashes: np.ndarray, representative_text: Callable[[int], str], *tag: object) -> pa.Array:
    """Map each case's hash to a UUID of its representative's text (hash collisions cannot merge texts)."""
    uniq, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    ids = pa.array([stable_uuid(*tag, representative_text(i)) for i in first])
    return ids.take(pa.array(inverse.ravel()))


def _timestamps(ms: np.ndarray) -> pa.Array:
    """Epoch milliseconds as a TIMESTAMP column (microsecond unit, DuckDB's plain TIMESTAMP)."""
    return pa.array(np.asarray(ms, dtype=np.int64) * 1000, type=pa.timestamp("us"))


def _list_column(values: pa.Array, offsets: np.ndarray) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values)


def build_tables(
    log: EventLog,
    project_id: str,
    *,
    version: str = "1",
    end_activities: tuple[str, ...] | None = None,
    previous: EventLog | None = None,
    demo_exclusions: bool = False,
) -> ProjectTables:
    """Derive the cases, vertex and edge tables and the lookups of *project_id* from *log*.

    Mapped columns are named by ``log.mapping`` (``<key>_lpkr`` without one).

    :param version: the data version of the rows (``previous`` rows keep it; their cases' current
        rows get the next one).
    :param end_activities: the END CASE rule: a case is completed when its last task is one of these;
        ``None`` means no rule is set (``<pid>_cases_is_completed`` is then empty).
    :param previous: an earlier ingestion of some of *log*'s cases (fewer tasks each); their rows stay in
        the cases table as outdated versions, listed by the ``<pid>`` lookup.
    :param demo_exclusions: put about 1 % of the cases into ``<pid>_excluded_cases`` by a fixed hash, as
        if a user had excluded them (the generated demo projects do, so the lookup has something to
        show); an uploaded or imported log has no excluded case unless its user excluded some.
    """
    mapping = log.mapping or FileMapping.default(list(log.dimensions), list(log.metrics))
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
    versions = np.full(n, version, dtype=object)
    if previous is not None:
        newer = str(int(version) + 1)
        versions[pc.is_in(log.case_ids, previous.case_ids).to_numpy(zero_copy_only=False)] = newer
    version_arr = pa.array(versions, type=pa.string())
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
        # a flag held as Druid holds it: Druid ingests a boolean as a long 1/0 (SQL sees BIGINT)
        "is_predicted": pa.array(predicted.astype(np.int64), type=pa.int64()),
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
        col = mapping.database_name(dim)
        vertex_cols[col] = values
        case_dim_cols[col] = values.take(pa.array(first))
        cases_cols[col] = case_dim_cols[col]
        cases_cols[f"all_{col}"] = _list_column(values, case_offsets)
    for metric, values in log.metrics.items():
        col = mapping.database_name(metric)
        vertex_cols[col] = pa.array(values, type=pa.float64(), from_pandas=True)  # NaN -> NULL
        case_dim_cols[col] = pa.array(values[first], type=pa.float64(), from_pandas=True)
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
    excluded = _excluded_mask(n) if demo_exclusions else np.zeros(n, dtype=bool)
    cases_table = pa.table(cases_cols)
    case_starts = starts
    outdated = _kv(pa.array([], type=pa.string()), [])
    if previous is not None and previous.n_cases:
        old = build_tables(previous, project_id, version=version).tables[project_id]
        cases_table = pa.concat_tables([cases_table, old.cast(cases_table.schema)])
        outdated = _kv(old["case_version"].combine_chunks(), [newer] * old.num_rows)
        old_starts = old["__time"].to_numpy().astype("datetime64[ms]").astype(np.int64)
        case_starts = np.concatenate([starts, old_starts])
    if end_activities is None:
        completed = _kv(pa.array([], type=pa.string()), [])
    else:
        done = np.isin(np.asarray(log.activities, dtype=object)[act[last]], list(end_activities))
        completed = _kv(case_version, np.where(done, "true", "false").tolist())
    lookups = {
        f"{project_id}_variant_name": variant_rank,
        f"{project_id}_variants": variant_rank,  # the name the service's own lookup usage example gives
        f"{project_id}_excluded_cases": _kv(
            case_version.filter(pa.array(excluded)), ["true"] * int(excluded.sum())
        ),
        project_id: outdated,
        f"{project_id}_cases_is_completed": completed,
    }
    # Cases in time order; tasks and transitions stay grouped by case (sorting them costs seconds at scale).
    if len(case_starts) > 1 and (np.diff(case_starts) < 0).any():
        cases_table = cases_table.take(pa.array(np.argsort(case_starts, kind="stable")))
    vertex_table = pa.table(vertex_cols)
    return ProjectTables(
        tables={
            project_id: cases_table,
            f"{project_id}_vertex": vertex_table,
            f"{project_id}_edge": edge_table,
        },
        lookups=lookups,
        mapping=mapping,
        lookup_docs=_lookup_docs(project_id),
        end_activities=end_activities,
    )


def _kv(keys: pa.Array, values: list[str]) -> pa.Table:
    """A lookup table: string keys ``k`` and string values ``v``."""
    return pa.table({"k": keys.cast(pa.string()), "v": pa.array(values, type=pa.string())})


def _lookup_docs(pid: str) -> dict[str, LookupDoc]:
    table = '"' + pid.replace('"', '""') + '"'
    variant = LookupDoc(
        "Model-variant name by graphkey (Variant 1 is the most frequent).",
        f"SELECT LOOKUP(graphkey, '{pid}_variant_name') AS variant, COUNT(*) AS cases FROM {table} "
        f"GROUP BY LOOKUP(graphkey, '{pid}_variant_name')",
    )
    return {
        f"{pid}_variant_name": variant,
        f"{pid}_variants": LookupDoc(
            "Alias of the variant-name lookup: model-variant name by graphkey.",
            f"SELECT LOOKUP(graphkey, '{pid}_variants') FROM {table}",
        ),
        f"{pid}_excluded_cases": LookupDoc(
            "Cases excluded by a business rule, by case_version ('true'); IS NULL keeps the others.",
            f"SELECT COUNT(*) FROM {table} WHERE LOOKUP(case_version, '{pid}_excluded_cases') IS NULL",
        ),
        pid: LookupDoc(
            "Outdated case versions (a later file brought more events of the case), by case_version; "
            "the value is the current version. IS NULL keeps the current row of each case.",
            f"SELECT COUNT(*) FROM {table} WHERE LOOKUP(case_version, '{pid}') IS NULL",
        ),
        f"{pid}_cases_is_completed": LookupDoc(
            "Completion by case_version ('true'/'false') under the project's END CASE rule; "
            "empty when no END CASE rule is set.",
            f"SELECT COUNT(*) FROM {table} WHERE LOOKUP(case_version, '{pid}_cases_is_completed') = 'true'",
        ),
    }


def _running_max_per_case(values: np.ndarray, case: np.ndarray) -> np.ndarray:
    # Offset each case far above the previous one so one global running max restarts at case starts.
    if not len(values):
        return values
    low = values.min()
    offset = case.astype(np.int64) * np.int64(1 << 42)
    out: np.ndarray = np.maximum.accumulate(values - low + offset) - offset + low
    return out


def _sequence_text(
    case: np.ndarray, act: np.ndarray, activities: list[str], first: np.ndarray
) -> Callable[[int, np.ndarray | None], str]:
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


def _edge_columns(
    log: EventLog,
    case: np.ndarray,
    act: np.ndarray,
    names: pa.Array,
    vertex_ids: pa.Array,
    first: np.ndarray,
    last: np.ndarray,
    same_case_prev: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    project_id: str,
) -> dict[str, Any]:
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
    # About 1 % of a demo project's cases are "excluded" (on the service a user's business rule excludes
    # them), picked by a fixed hash so every run excludes the same ones.
    with np.errstate(over="ignore"):
        mixed = (np.arange(1, n_cases + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
    excluded: np.ndarray = mixed % np.uint64(100) == 0
    return excluded


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (numpy's hash-based unique is much slower here)."""
    s = np.sort(values)
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep]
