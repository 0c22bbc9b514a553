"""Issue 39's goals: the *why* and *what next* answers (``drivers``, ``compare``, ``open_cases``) on the
stand-in's large project (``--cases``, default 107,000: ~1M tasks, > 100,000 cases) under Druid's default
``maxSubqueryRows`` (the stand-in enforces it), against the same statistics in pandas on the pulled events.

The four answers: ``log.drivers("slow")``, ``log.drivers("rework")``, ``a.compare(b)`` (two periods of the
log: ``log.between`` twice) and ``log.open_cases(sla="30 days")``. Per round, each answer runs in a fresh
child process of its own (``ours``): the first run at the default limit (if refused with the error naming
``large_subqueries=True``, the refusal is recorded and the answer runs on a log opened with it), its
statements counted, the rise of the process's resident high-water mark (``VmHWM`` reset through
``/proc/self/clear_refs``) above its RSS before the answer, then ``--repeat`` - 1 timed runs and one last run
under ``tracemalloc`` (its peak: the Python allocations of one answer). Beside the wall time: the child's CPU
(the client's share) and the stand-in's process CPU meanwhile (the engine's share, on the same cores). Then a
``pandas`` child pulls the events once (``log.to_pm4py()``, timed) and computes the same counts with pandas
groupbys (the statistics on the counts by the same numpy functions), each answer timed; the ratio is pandas
(pull included) over ours. Figures are medians of the later runs, then over the interleaved rounds.

The parent checks on the last round that both sides give the same counts: per (dimension, value) the cases
and outcome cases of both ``drivers``; per period the cases and the variants' counts of ``compare``; the open
cases (ids, last activity) of ``open_cases``. Not a test: nothing here asserts a speed.

    nice .venv/bin/python bench/bench_why.py                      # 107,000 cases, 2 rounds
    .venv/bin/python bench/bench_why.py --cases 3000 --rounds 1   # small: proves it works
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _measure import connect_env, current_rss_mb  # noqa: E402  (bench/ is on sys.path)
from bench_mining import LARGE, SANDBOX_PID_ENV, Counting, _engine_cpu_s, _hwm_mb, _reset_hwm  # noqa: E402

#: the large project's every case ends at an end activity of the completion lookup (no open case): the last
#: answer makes one of its two end activities count, so the ~6 % cancelled cases are open and estimated
ENDS = ["Pay Invoice"]
ANSWERS = (
    "drivers(slow)",
    "drivers(rework)",
    "compare(a, b)",
    "open_cases(sla=30 days)",
    "open_cases(.., end=Pay Invoice)",
)
SLA_MS = 30 * 86_400_000


def _periods(first: Any, last: Any) -> tuple[Any, Any, Any]:
    """Two periods of equal length splitting the project's span: a = [p0, p1), b = [p1, p2)."""
    import pandas as pd

    first, last = pd.Timestamp(first), pd.Timestamp(last)
    mid = first + (last - first) / 2
    return first.floor("D"), mid.floor("D"), (last + pd.Timedelta(days=1)).floor("D")


# --- ours: one answer in a fresh child ---------------------------------------------------------------------
def _ask(log: Any, answer: str, periods: tuple[Any, Any, Any]) -> dict:
    """Run *answer* on *log*; its counts, comparable with the pandas side."""
    if answer.startswith("drivers"):
        d = log.drivers("slow" if "slow" in answer else "rework")
        return {
            "counts": sorted(
                [str(x.dimension), str(x.value), int(x.cases), int(x.outcome_cases)]
                for x in d.itertuples(index=False)
            ),
            "cases": int(d.attrs["cases"]),
            "outcome_cases": int(d.attrs["outcome_cases"]),
            "statements": len(d.attrs.get("sql") or []),
        }
    if answer.startswith("compare"):
        p0, p1, p2 = periods
        c = log.between(p0, p1).compare(log.between(p1, p2), top=None)
        s = c.summary
        v = c.variants
        return {
            "cases": [int(s["cases"].iloc[0]), int(s["cases"].iloc[1])],
            "variants": sorted(
                [str(x.activities), int(x.cases_a or 0), int(x.cases_b or 0)]
                for x in v.itertuples(index=False)
            )
            if {"cases_a", "cases_b", "variant"} <= set(v.columns)
            else None,
            "variant_columns": list(v.columns),
        }
    o = log.open_cases(sla="30 days", end_activities=ENDS if "end=" in answer else None)
    return {
        "open": sorted([str(x.case_id), str(x.last_activity)] for x in o.itertuples(index=False))
        if {"case_id", "last_activity"} <= set(o.columns)
        else None,
        "n_open": len(o),
        "columns": list(o.columns),
    }


def side_ours(project: str, answer: str, repeat: int) -> dict:
    import gc
    import tracemalloc

    from pm_notebook.errors import PMError
    from pm_notebook.mining import ProcessLog

    source = Counting(connect_env(dict(os.environ)))
    log = ProcessLog.open(source, project)
    s = log.summary().iloc[0]  # a notebook's first cell; not measured
    periods = _periods(s["first_event"], s["last_event"])
    gc.collect()
    _reset_hwm()
    base = current_rss_mb()
    n0 = source.count[0]
    e0, c0, t0 = _engine_cpu_s(), time.process_time(), time.perf_counter()
    verdict = "runs"
    try:
        value = _ask(log, answer, periods)
    except PMError as exc:
        hint = getattr(exc, "hint", "") or ""
        if "large_subqueries=True" not in hint + str(exc):
            raise
        verdict = "refused, names large_subqueries=True"
        log = ProcessLog.open(source, project, large_subqueries=True)
        n0 = source.count[0]
        value = _ask(log, answer, periods)
    first = time.perf_counter() - t0
    statements = source.count[0] - n0
    mem = max(0.0, _hwm_mb() - base)
    times, cli, eng = [first], [time.process_time() - c0], [_engine_cpu_s() - e0]
    for _ in range(repeat - 1):
        gc.collect()
        e0, c0, t0 = _engine_cpu_s(), time.process_time(), time.perf_counter()
        _ask(log, answer, periods)
        times.append(time.perf_counter() - t0)
        cli.append(time.process_time() - c0)
        eng.append(_engine_cpu_s() - e0)
    gc.collect()
    tracemalloc.start()
    _ask(log, answer, periods)
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    source.close()
    return {
        "times": times,
        "client_cpu": cli,
        "engine_cpu": eng,
        "statements": statements,
        "rss_mb": mem,
        "traced_mb": traced,
        "verdict": verdict,
        "value": value,
        "periods": [str(p) for p in periods],
    }


# --- pandas: the events pulled once, then the same counts ------------------------------------------------
def _drivers_pandas(per: Any, outcome: Any) -> dict:
    """Per dimension value: cases and outcome cases (numeric dimensions cut at their quartiles, the
    ⌈q·n⌉-th smallest), values with < 30 cases or every case left out; then the same statistics."""
    import numpy as np
    import pandas as pd

    from pm_notebook.mining._drivers import value_statistics

    n, k = len(per), int(outcome.sum())
    rows = []
    for dim in per.columns.drop(["duration", "rework"]):
        col = per[dim]
        if pd.api.types.is_float_dtype(col) or pd.api.types.is_integer_dtype(col):
            vals = col.dropna().to_numpy()
            edges = sorted({float(np.quantile(vals, q, method="inverted_cdf")) for q in (0.25, 0.5, 0.75)})
            labels = {1: f"≤ {edges[0]:g}"}
            for i in range(1, len(edges)):
                labels[i + 1] = f"({edges[i - 1]:g}, {edges[i]:g}]"
            labels[len(edges) + 1] = f"> {edges[-1]:g}"
            b = np.searchsorted(np.array(edges), col.to_numpy(dtype="float64"), side="left") + 1
            key = pd.Series(b, index=col.index).where(col.notna()).map(labels)
        else:
            key = col
        g = pd.DataFrame({"v": key, "o": outcome}).groupby("v", dropna=False)["o"].agg(["size", "sum"])
        for value, (cases, hits) in g.iterrows():
            if cases < 30 or cases >= n:
                continue
            rows.append(
                [_dim_name(str(dim)), "<NA>" if pd.isna(value) else str(value), int(cases), int(hits)]
            )
    frame = pd.DataFrame(rows, columns=["dimension", "value", "cases", "outcome_cases"])
    value_statistics(frame["outcome_cases"].to_numpy(), frame["cases"].to_numpy(), k, n)
    return {"counts": sorted(rows), "cases": n, "outcome_cases": k}


def _dim_name(column: str) -> str:
    """The answer's name of a pulled dimension (``Company Code`` -> ``company_code``, ``org:resource`` ->
    ``resource``)."""
    return column.removeprefix("org:").lower().replace(" ", "_")


def side_pandas(project: str) -> dict:
    import numpy as np
    import pandas as pd

    from pm_notebook.mining import ProcessLog
    from pm_notebook.mining._sql.open_cases import EDGES_MS

    conn = connect_env(dict(os.environ))
    log = ProcessLog.open(conn, project)
    s = log.summary().iloc[0]
    periods = _periods(s["first_event"], s["last_event"])
    case, act = "case:concept:name", "concept:name"
    out: dict = {"times": {}, "client_cpu": {}, "value": {}}

    def timed(name: str, fn: Any) -> Any:
        c0, t0 = time.process_time(), time.perf_counter()
        value = fn()
        out["times"][name] = time.perf_counter() - t0
        out["client_cpu"][name] = time.process_time() - c0
        return value

    def pull() -> Any:
        df = log.to_pm4py()
        return df.sort_values([case, "start_timestamp"], kind="stable").reset_index(drop=True)

    _reset_hwm()
    base = current_rss_mb()
    df = timed("pull", pull)
    out["pull_mb"] = _hwm_mb() - base
    out["rows"] = len(df)
    dims = [c for c in df.columns if c not in (case, act, "time:timestamp", "start_timestamp")]

    def cases_frame() -> Any:
        g = df.groupby(case, sort=False)
        per = g[dims].first()
        per["duration"] = (g["time:timestamp"].max() - g["start_timestamp"].min()).dt.total_seconds() * 1000
        per["rework"] = df.groupby([case, act], sort=False).size().gt(1).groupby(level=0).any()
        return per

    def slow() -> dict:
        per = cases_frame()
        limit = np.quantile(per["duration"].to_numpy(), 0.75, method="inverted_cdf")
        return _drivers_pandas(per, per["duration"] > limit)

    def rework() -> dict:
        per = cases_frame()
        return _drivers_pandas(per, per["rework"])

    def compare() -> dict:
        p0, p1, p2 = periods
        starts = df.groupby(case, sort=False)["start_timestamp"].transform("min")
        sides = []
        for lo, hi in ((p0, p1), (p1, p2)):
            part = df[(starts >= lo) & (starts < hi)]
            g = part.groupby(case, sort=False)
            dur = (g["time:timestamp"].max() - g["start_timestamp"].min()).dt.total_seconds()
            seqs = g[act].agg(" → ".join)
            nxt = part.shift(-1)
            same = part[case] == nxt[case]
            wait = (nxt["start_timestamp"] - part["time:timestamp"]).dt.total_seconds()
            trans = part.assign(t=nxt[act], w=wait)[same].groupby([act, "t"])["w"].agg(["size", "median"])
            sides.append(
                {
                    "cases": len(seqs),
                    "durations": [float(np.quantile(dur, q, method="inverted_cdf")) for q in (0.5, 0.9)]
                    if len(dur)
                    else [],
                    "rework": int(part.groupby([case, act]).size().gt(1).groupby(level=0).any().sum()),
                    "variants": seqs.value_counts(),
                    "activities": part.groupby(act).agg(n=(case, "size"), cases=(case, "nunique")),
                    "transitions": trans,
                }
            )
        a, b = sides
        joined = pd.concat([a["variants"].rename("a"), b["variants"].rename("b")], axis=1).fillna(0)
        return {
            "cases": [a["cases"], b["cases"]],
            "variants": sorted([str(k), int(x.a), int(x.b)] for k, x in joined.iterrows()),
        }

    def open_cases(ends: set[str]) -> dict:
        g = df.groupby(case, sort=False)
        first, last_end = g["start_timestamp"].min(), g["time:timestamp"].max()
        last_act = g[act].last()
        now = df["time:timestamp"].max()
        done = last_act.isin(ends)
        hist = df[df[case].map(done)]
        el = (hist["time:timestamp"] - hist[case].map(first)).dt.total_seconds() * 1000
        rem = (hist[case].map(last_end) - hist["time:timestamp"]).dt.total_seconds() * 1000
        obs = pd.DataFrame({"a": hist[act].to_numpy(), "b": np.searchsorted(EDGES_MS, el, "right"), "r": rem})

        def quant(g: Any) -> Any:  # p50, p90 and the evidence behind them
            q = g["r"].quantile([0.5, 0.9], interpolation="lower").unstack()
            q.columns = ["p50", "p90"]
            return q.assign(n=g.size())

        fine, coarse = quant(obs.groupby(["a", "b"])), quant(obs.groupby("a"))
        overall = obs["r"].quantile([0.5, 0.9], interpolation="lower")
        elapsed = (now - first[~done]).dt.total_seconds() * 1000
        opened = pd.DataFrame(
            {"a": last_act[~done], "b": np.searchsorted(EDGES_MS, elapsed, "right"), "e": elapsed}
        )
        est = opened.join(fine, on=["a", "b"]).join(coarse, on="a", rsuffix="_a")
        p90 = est["p90"].where(est["n"] >= 30, est["p90_a"].where(est["n_a"] >= 30, overall[0.9]))
        late = (est["e"] + p90 > SLA_MS).sum()
        return {
            "open": sorted([str(c), str(a)] for c, a in last_act[~done].items()),
            "late_by_p90": int(late),
        }

    lookup = {str(x) for x in json.loads(os.environ.get("PM_BENCH_ENDS", "[]"))}
    fns = (slow, rework, compare, lambda: open_cases(lookup), lambda: open_cases(set(ENDS)))
    for name, fn in zip(ANSWERS, fns, strict=True):
        out["value"][name] = timed(name, fn)
    conn.close()
    return out


# --- the parent --------------------------------------------------------------------------------------------
def _child(args: list[str], env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"{args} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _same(answer: str, ours: dict, theirs: dict) -> str:
    if answer.startswith("drivers"):
        if ours["counts"] == theirs["counts"] and ours["cases"] == theirs["cases"]:
            return f"same ({len(ours['counts'])} values, {ours['outcome_cases']:,}/{ours['cases']:,} cases)"
        diff = {tuple(x) for x in ours["counts"]} ^ {tuple(x) for x in theirs["counts"]}
        return (
            f"DIFFERS: cases {ours['cases']}/{theirs['cases']}, outcome {ours['outcome_cases']}/"
            f"{theirs['outcome_cases']}, {len(diff)} rows differ e.g. {sorted(diff)[:2]}"
        )
    if answer.startswith("compare"):
        ok = ours["cases"] == theirs["cases"]
        okv = ours["variants"] is not None and ours["variants"] == theirs["variants"]
        return (
            f"cases {'same' if ok else 'DIFFER'} {ours['cases']} / {theirs['cases']}; variants' counts "
            + ("same" if okv else f"DIFFER (ours' columns {ours.get('variant_columns')})")
        )
    if ours["open"] == theirs["open"]:
        return f"same {ours['n_open']:,} open cases and last activities"
    return f"DIFFERS: {ours['n_open']} vs {len(theirs['open'])} open cases (ours' columns {ours['columns']})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=107_000, help="cases of the generated project")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each answer in its child (1st apart)")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--side", choices=["ours", "pandas"], help=argparse.SUPPRESS)
    parser.add_argument("--answer", help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        result = (
            side_ours(args.project, args.answer, args.repeat)
            if args.side == "ours"
            else side_pandas(args.project)
        )
        print(json.dumps(result, default=str))
        return

    from pm_sandbox import start

    load0 = os.getloadavg()
    t0 = time.perf_counter()
    sb = start(cases=5, extra_args=["--large-project-cases", str(args.cases)], timeout=3600)
    print(f"sandbox: {LARGE!r} of {args.cases:,} cases ready in {time.perf_counter() - t0:.1f} s", flush=True)
    rounds: dict[str, list[dict]] = {a: [] for a in (*ANSWERS, "pandas")}
    loads = []
    try:
        env = {**os.environ, **sb.env, "PYTHONPATH": str(ROOT), SANDBOX_PID_ENV: str(sb.pid)}
        conn = connect_env(sb.env)
        e = conn.mining(LARGE).endpoints()
        conn.close()
        # the pandas side's completion: the end activities of the cases the completion lookup calls completed
        env["PM_BENCH_ENDS"] = json.dumps(sorted(e[e["kind"] == "end"]["activity"].astype(str)))
        for n in range(1, args.rounds + 1):
            for a in ANSWERS:
                t = time.perf_counter()
                rounds[a].append(
                    _child(
                        ["--side", "ours", "--answer", a, "--project", LARGE, "--repeat", str(args.repeat)],
                        env,
                    )
                )
                loads.append(os.getloadavg()[0])
                print(f"  round {n} {a}: {time.perf_counter() - t:.1f} s (load {loads[-1]:.2f})", flush=True)
            t = time.perf_counter()
            rounds["pandas"].append(_child(["--side", "pandas", "--project", LARGE], env))
            loads.append(os.getloadavg()[0])
            print(f"  round {n} pandas: {time.perf_counter() - t:.1f} s (load {loads[-1]:.2f})", flush=True)
    finally:
        sb.stop()
    pr = rounds["pandas"]
    pull = statistics.median(r["times"]["pull"] for r in pr)
    cases = pr[-1]["value"][ANSWERS[0]]["cases"]
    print(
        f"\n{LARGE!r}: {pr[-1]['rows']:,} events, {cases:,} cases; {args.rounds} rounds x {args.repeat} "
        f"runs; {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; load average (1 min) "
        f"at start {load0[0]:.2f}, during {min(loads):.2f}-{max(loads):.2f}"
    )
    print(f"pandas' pull of the events (log.to_pm4py): {pull:.2f} s, +{max(r['pull_mb'] for r in pr):.0f} MB")
    print(
        f"{'answer':<32}{'at default limit':<38}{'stmts':>6}{'ours s':>8}{'(1st)':>7}{'cli cpu':>8}"
        f"{'eng cpu':>8}{'RSS MB':>7}{'tm MB':>7}{'pandas s':>9}{'+pull':>8}{'ratio':>7}  same counts?"
    )
    rows = []
    for a in ANSWERS:
        r = rounds[a]

        def later(k: str, r: list[dict] = r) -> float:
            return statistics.median(statistics.median(x[k][1:] if len(x[k]) > 1 else x[k]) for x in r)

        o, cli, eng = later("times"), later("client_cpu"), later("engine_cpu")
        o1 = statistics.median(x["times"][0] for x in r)
        p = statistics.median(x["times"][a] for x in pr)
        rss, tm = max(x["rss_mb"] for x in r), max(x["traced_mb"] for x in r)
        same = _same(a, r[-1]["value"], pr[-1]["value"][a])
        print(
            f"{a:<32}{r[-1]['verdict']:<38}{r[-1]['statements']:>6}{o:>8.3f}{o1:>7.2f}{cli:>8.3f}{eng:>8.2f}"
            f"{rss:>7.1f}{tm:>7.1f}{p:>9.3f}{p + pull:>8.2f}{(p + pull) / o:>6.1f}x  {same}"
        )
        rows.append(
            {
                "answer": a,
                "verdict": r[-1]["verdict"],
                "statements": r[-1]["statements"],
                "ours": o,
                "ours_first": o1,
                "client_cpu": cli,
                "engine_cpu": eng,
                "rss_mb": rss,
                "traced_mb": tm,
                "pandas": p,
                "pandas_with_pull": p + pull,
                "same": same,
            }
        )
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "rounds": rounds, "pull": pull, "loads": loads}, default=str)
        )


if __name__ == "__main__":
    main()
