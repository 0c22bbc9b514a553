"""Process-mining answers: pushed down as Druid SQL (pm_notebook.mining) vs pulled and computed by pm4py.

One sandbox with a "Purchase to Pay" project of about ``--tasks`` task rows; then two child processes,
each measured on its own (time per question, peak RSS above its baseline after imports and connecting):

* ``ours``: ``conn.mining(...)`` — summary, top-20 variants, throughput quantiles, activities, top-10
  bottlenecks (by total waiting, the statistic pm4py's performance DFG also has), weekly cases and the
  frequency process map, each through the default transport;
* ``pm4py``: the way its users work — one full event pull (the same filtered events, through the same
  connection), ``pm4py.format_dataframe``, then pm4py's own functions (pandas where pm4py has none:
  rework share, weekly cases, case durations from the first task's start).

The parent compares the numbers (counts exactly; durations equal, or within 1 % where Druid's
approximate quantiles are involved) and prints one table. Not a test: nothing here asserts a speed.

    python bench/bench_mining.py --tasks 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

PROJECT = "Purchase to Pay"
TASKS_PER_CASE = 9.6  # the P2P template's mean (sandbox generator), to size the project
QS = (0.1, 0.25, 0.5, 0.75, 0.9)


def _rss_mb() -> float:
    """Current resident set size (Linux /proc), MB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux


def _connect():
    import pm_notebook

    return pm_notebook.connect(use_keyring=False)


def _timed(results: dict, name: str, fn):
    t0 = time.perf_counter()
    value = fn()
    results["times"][name] = time.perf_counter() - t0
    return value


def _seconds(td) -> float | None:
    import pandas as pd

    return None if td is None or pd.isna(td) else pd.Timedelta(td).total_seconds()


def side_ours() -> dict:
    conn = _connect()
    log = conn.mining(PROJECT)
    log.schema  # noqa: B018 - the schema is read once, like a notebook's first cell
    base = _rss_mb()
    r: dict = {"times": {}}
    s = _timed(r, "summary", log.summary).iloc[0]
    r["summary"] = {
        "cases": int(s["cases"]),
        "events": int(s["events"]),
        "variants": int(s["variants"]),
        "median": _seconds(s["median_throughput"]),
        "p90": _seconds(s["p90_throughput"]),
        "rework_share": float(s["rework_share"]),
    }
    v = _timed(r, "top-20 variants", lambda: log.variants(top=20))
    r["variants"] = [[a, int(n)] for a, n in zip(v["activities"], v["cases"], strict=True)]
    t = _timed(r, "throughput quantiles", lambda: log.throughput(quantiles=QS)).iloc[0]
    r["throughput"] = [_seconds(t[f"p{int(q * 100)}"]) for q in QS]
    a = _timed(r, "activities", log.activities)
    r["activities"] = {
        row.activity: [int(row.executions), int(row.cases_with_rework), _seconds(row.median_service)]
        for row in a.itertuples(index=False)
    }
    b = _timed(r, "top-10 bottlenecks", lambda: log.bottlenecks(k=10, metric="total"))
    r["bottlenecks"] = [[x.source, x.target, _seconds(x.total)] for x in b.itertuples(index=False)]
    w = _timed(r, "weekly cases", lambda: log.cases_over_time("P1W"))
    r["weekly"] = {str(p.date()): int(n) for p, n in zip(w["period"], w["started"], strict=True) if n}
    m = _timed(r, "frequency map", lambda: log.process_map(metric="frequency", paths=1.0))
    dfg, starts, ends = m.to_pm4py()
    r["map"] = {"dfg": [[a, b, n] for (a, b), n in dfg.items()], "starts": starts, "ends": ends}
    r["transport"] = w.attrs.get("transport")
    r["peak_mb"] = _peak_mb() - base
    conn.close()
    return r


def side_pm4py() -> dict:
    warnings.simplefilter("ignore")
    import numpy as np
    import pm4py
    from pm4py.algo.discovery.dfg.adapters.pandas import df_statistics

    conn = _connect()
    log = conn.mining(PROJECT)
    sql, params = log.event_sql(dimensions=None)
    base = _rss_mb()
    r: dict = {"times": {}}
    keys = {
        "case_id_key": "case:concept:name",
        "activity_key": "concept:name",
        "timestamp_key": "start_timestamp",
    }

    def pull():
        df = conn.query(sql, list(params))
        # pm4py's own columns and order (by completion); then sorted by task start, as the service reads a
        # case's sequence (pm4py's get_variants follows the frame's row order, whatever timestamp_key says)
        df = pm4py.format_dataframe(
            df, case_id="case:concept:name", activity_key="concept:name", timestamp_key="time:timestamp"
        )
        return df.sort_values(["case:concept:name", "start_timestamp"], kind="stable")

    df = _timed(r, "event pull + format", pull)
    r["pull_rows"] = len(df)

    def durations():
        # pm4py's case durations (get_all_case_durations / case_statistics) run from the first event's
        # *completion*; the service's run from the first task's start, so this one is pandas on the pull
        per_case = df.groupby("case:concept:name").agg(
            start=("start_timestamp", "min"), end=("time:timestamp", "max")
        )
        return (per_case["end"] - per_case["start"]).dt.total_seconds().to_numpy()

    def summary():
        dur = durations()
        per = df.groupby(["case:concept:name", "concept:name"]).size()
        rework_cases = per[per > 1].index.get_level_values(0).nunique()
        n = df["case:concept:name"].nunique()
        return {
            "cases": int(n),
            "events": len(df),
            "variants": len(pm4py.get_variants(df, **keys)),
            "median": float(np.quantile(dur, 0.5, method="lower")),
            "p90": float(np.quantile(dur, 0.9, method="lower")),
            "rework_share": rework_cases / n,
        }

    r["summary"] = _timed(r, "summary", summary)
    variants = _timed(r, "top-20 variants", lambda: pm4py.get_variants(df, **keys))
    top = sorted(variants.items(), key=lambda kv: -kv[1])[:20]
    r["variants"] = [[" → ".join(k), int(n)] for k, n in top]
    dur = _timed(r, "throughput quantiles", durations)
    r["throughput"] = [float(np.quantile(dur, q, method="lower")) for q in QS]

    def activities():
        counts = pm4py.get_event_attribute_values(df, "concept:name")
        rework = pm4py.get_rework_cases_per_activity(df, **keys)
        service = pm4py.get_service_time(
            df,
            aggregation_measure="median",
            activity_key="concept:name",
            timestamp_key="time:timestamp",
            start_timestamp_key="start_timestamp",
            case_id_key="case:concept:name",
        )
        return {a: [int(n), int(rework.get(a, 0)), float(service[a])] for a, n in counts.items()}

    r["activities"] = _timed(r, "activities", activities)

    def bottlenecks():
        perf = df_statistics.get_dfg_graph(
            df,
            measure="performance",
            activity_key="concept:name",
            case_id_glue="case:concept:name",
            start_timestamp_key="start_timestamp",
            timestamp_key="time:timestamp",
            perf_aggregation_key="sum",
        )
        return sorted(([a, b, float(v)] for (a, b), v in perf.items()), key=lambda x: -x[2])[:10]

    r["bottlenecks"] = _timed(r, "top-10 bottlenecks", bottlenecks)

    def weekly():
        first = df.groupby("case:concept:name")["start_timestamp"].min()
        weeks = first.dt.tz_convert(None).dt.to_period("W-SUN").dt.start_time
        return {str(k.date()): int(n) for k, n in weeks.value_counts().sort_index().items()}

    r["weekly"] = _timed(r, "weekly cases", weekly)
    dfg, starts, ends = _timed(r, "frequency map", lambda: pm4py.discover_dfg(df, **keys))
    r["map"] = {"dfg": [[a, b, int(n)] for (a, b), n in dfg.items()], "starts": starts, "ends": ends}
    r["peak_mb"] = _peak_mb() - base
    conn.close()
    return r


def _close(a: float | None, b: float | None, rel: float) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-3


def compare(ours: dict, theirs: dict) -> dict[str, str]:
    """Per question: "same" or what differs."""
    out = {}
    s, t = ours["summary"], theirs["summary"]
    exact = all(s[k] == t[k] for k in ("cases", "events", "variants"))
    near = all(_close(s[k], t[k], 0.01) for k in ("median", "p90", "rework_share"))
    out["summary"] = "same" if exact and near else f"differs: {s} vs {t}"
    ov, tv = ours["variants"], theirs["variants"]
    same_counts = [n for _, n in ov] == [n for _, n in tv]
    same_seqs = {tuple(x) for x in ov} == {tuple(x) for x in tv}
    out["top-20 variants"] = "same" if same_counts and same_seqs else "differs (counts or sequences)"
    thr = all(_close(a, b, 0.01) for a, b in zip(ours["throughput"], theirs["throughput"], strict=True))
    out["throughput quantiles"] = (
        "same" if thr else f"differs: {ours['throughput']} vs {theirs['throughput']}"
    )
    oa, ta = ours["activities"], theirs["activities"]
    bad = [
        a
        for a in set(oa) | set(ta)
        if a not in oa or a not in ta or oa[a][:2] != ta[a][:2] or not _close(oa[a][2], ta[a][2], 0.01)
    ]
    out["activities"] = "same" if not bad else f"differs for {sorted(bad)}"
    ob = {(a, b): v for a, b, v in ours["bottlenecks"]}
    tb = {(a, b): v for a, b, v in theirs["bottlenecks"]}
    out["top-10 bottlenecks"] = (
        "same"
        if list(ob) == list(tb) and all(_close(ob[k], tb[k], 0.01) for k in ob)
        else f"differs: {ours['bottlenecks'][:3]} vs {theirs['bottlenecks'][:3]}"
    )
    out["weekly cases"] = "same" if ours["weekly"] == theirs["weekly"] else "differs"
    om, tm = ours["map"], theirs["map"]
    same_map = (
        {tuple(x) for x in om["dfg"]} == {tuple(x) for x in tm["dfg"]}
        and om["starts"] == tm["starts"]
        and om["ends"] == tm["ends"]
    )
    out["frequency map"] = "same" if same_map else "differs"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=1_000_000, help="task rows wanted in the project")
    parser.add_argument("--side", choices=["ours", "pm4py"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        result = side_ours() if args.side == "ours" else side_pm4py()
        print(json.dumps(result))
        return

    from pm_notebook.sandbox import start

    cases = max(100, round(args.tasks / TASKS_PER_CASE))
    t0 = time.perf_counter()
    sb = start(cases=cases)
    print(f"sandbox: {cases:,} cases per project, ready in {time.perf_counter() - t0:.1f}s", flush=True)
    try:
        env = {**os.environ, **sb.env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        results = {}
        for side in ("ours", "pm4py"):
            done = subprocess.run(
                [sys.executable, __file__, "--side", side],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                sys.exit(f"{side} side failed:\n{done.stderr[-3000:]}")
            results[side] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        sb.stop()
    ours, theirs = results["ours"], results["pm4py"]
    verdict = compare(ours, theirs)
    print(
        f"\nproject {PROJECT!r}: {theirs['pull_rows']:,} task rows (excluded cases left out), "
        f"{ours['summary']['cases']:,} cases; our transport: {ours['transport']}\n"
    )
    print(f"{'question':<24}{'pm_notebook (s)':>16}{'pm4py (s)':>12}{'ratio':>9}  same numbers?")
    pull = theirs["times"]["event pull + format"]
    print(f"{'event pull + format':<24}{'-':>16}{pull:>12.2f}{'':>9}  (pm4py's starting point)")
    total_ours = total_theirs = 0.0
    for q, ok in verdict.items():
        a, b = ours["times"][q], theirs["times"][q]
        total_ours += a
        total_theirs += b
        print(f"{q:<24}{a:>16.3f}{b:>12.2f}{b / a:>8.1f}x  {ok}")
    total_theirs += pull
    ratio = total_theirs / total_ours
    print(f"{'all (pm4py incl. pull)':<24}{total_ours:>16.2f}{total_theirs:>12.2f}{ratio:>8.1f}x")
    print(
        f"\npeak memory above baseline: pm_notebook {ours['peak_mb']:.0f} MB, "
        f"pm4py path {theirs['peak_mb']:.0f} MB ({theirs['peak_mb'] / max(ours['peak_mb'], 1):.0f}x)"
    )


if __name__ == "__main__":
    main()
