"""The ten analyst questions of issue 28, both ways: pushed down as Druid SQL (``conn.mining``) vs pm4py in
memory on the pulled events; on a generated project of about ``--events`` tasks (> 100,000 cases) and on
the 4TU receipt log (tests/data/receipt.csv.gz), under Druid's default ``maxSubqueryRows`` (the sandbox
enforces it).

One sandbox; for each project, ``--rounds`` interleaved rounds, each of two child processes measured on their
own: ``ours`` (the answers through ``conn.mining``; each answer's Druid statements counted) and ``pm4py``
(``log.to_pm4py()`` pulls the same events once, ``pm4py.format_dataframe``, then pm4py's functions — pandas
where pm4py has none). Each answer runs ``--repeat`` times in each process: the first run (a fresh notebook
kernel's) is reported beside the later ones; figures are medians of the later runs, then over the rounds. The
client's peak memory per answer is the rise of the process's high-water mark (``VmHWM``, reset before each
answer through ``/proc/self/clear_refs``) above its resident memory before the answer. Beside each of our
answers' wall time: the CPU time of the ``ours`` process (the client's own share) and of the sandbox process
meanwhile (the service's share: the stand-in's Druid SQL on DuckDB, on the same two cores).

The parent compares the numbers (counts exactly; durations within 1 %: Druid's quantiles are ``inverted_cdf``,
pm4py's medians interpolate) and prints one table per project. ``--check`` also runs every answer and every
filter of ``ProcessLog`` on the generated project at the default limit and says which run, and which are
refused with the error naming ``large_subqueries``. Not a test: nothing here asserts a speed.

    nice .venv/bin/python bench/bench_mining.py                    # 1,000,000 events, 3 rounds, --check
    .venv/bin/python bench/bench_mining.py --events 100000 --rounds 1 --no-receipt
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _measure import connect_env, current_rss_mb  # noqa: E402  (bench/ is on sys.path)

LARGE = "Purchase to Pay (large)"  # the sandbox's --large-project-cases project
RECEIPT = "receipt (4TU)"
RECEIPT_CSV = ROOT / "tests" / "data" / "receipt.csv.gz"
VERTEX_ROWS_PER_CASE = 9.3  # the large project's tasks per case (sandbox generator)
QUESTIONS = (
    "1 cases, events, activities, span",
    "2 top-10 variants",
    "3 case duration median, p90",
    "4 top-5 activities, case coverage",
    "5 directly-follows counts",
    "6 5 slowest transitions (median)",
    "7 rework: cases, most repeated",
    "8 cases started per month",
    "9 events per resource, handovers",
    "10 start and end activities",
)
KEYS = {
    "case_id_key": "case:concept:name",
    "activity_key": "concept:name",
    "timestamp_key": "start_timestamp",
}


# --- measuring one answer ---------------------------------------------------------------------------------
def _hwm_mb() -> float:
    """The process's resident high-water mark (VmHWM), MiB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _reset_hwm() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current RSS (Linux 4.0+)


#: the environment variable giving the children the sandbox's process id (its CPU time: the service's share)
SANDBOX_PID_ENV = "PM_BENCH_SANDBOX_PID"


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) process *pid* has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(results: dict, name: str, fn: Callable[[], Any], counter: list[int] | None = None) -> Any:
    """Run *fn*, record its time, peak memory rise, this process's CPU time and (ours) statements and the
    sandbox's CPU time meanwhile (the service's share, which runs on the same cores); returns its value."""
    import gc

    gc.collect()
    _reset_hwm()
    base = current_rss_mb()
    before = counter[0] if counter else 0
    service = int(os.environ[SANDBOX_PID_ENV]) if counter is not None else None
    s0 = _cpu_s(service) if service else 0.0
    c0 = time.process_time()
    t0 = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - t0
    client_cpu = time.process_time() - c0
    service_cpu = _cpu_s(service) - s0 if service else 0.0
    entry = results.setdefault(
        name, {"times": [], "mem": [], "statements": None, "client_cpu": [], "service_cpu": []}
    )
    entry["times"].append(elapsed)
    entry["mem"].append(max(0.0, _hwm_mb() - base))
    entry["client_cpu"].append(client_cpu)
    entry["service_cpu"].append(service_cpu)
    if counter is not None:
        entry["statements"] = counter[0] - before
    return value


class Counting:
    """The connection as the log's source, counting the statements the log sends (everything else passes)."""

    def __init__(self, conn: Any) -> None:
        self._conn, self.count = conn, [0]

    def query(self, *args: Any, **kw: Any) -> Any:
        self.count[0] += 1
        return self._conn.query(*args, **kw)

    def query_chunks(self, *args: Any, **kw: Any) -> Any:
        self.count[0] += 1
        return self._conn.query_chunks(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _s(td: Any) -> float | None:
    import pandas as pd

    return None if td is None or pd.isna(td) else pd.Timedelta(td).total_seconds()


# --- ours: conn.mining ------------------------------------------------------------------------------------
def side_ours(project: str, repeat: int) -> dict:
    from pm_notebook.mining import ProcessLog

    conn = connect_env(dict(os.environ))
    source = Counting(conn)
    log = ProcessLog.open(source, project)  # what conn.mining(project) opens, with the statements counted
    # the handover joins inline the task table: past maxSubqueryRows tasks only with the option (docs)
    wide = ProcessLog.open(source, project, large_subqueries=True)
    log.schema  # noqa: B018 - read once, like a notebook's first cell
    wide.schema  # noqa: B018
    r: dict = {}
    out: dict = {}

    def q1():
        s = log.summary().iloc[0]
        return {
            "cases": int(s["cases"]),
            "events": int(s["events"]),
            "activities": int(s["activities"]),
            "first": str(s["first_event"]),
            "last": str(s["last_event"]),
            "cases_with_rework": int(s["cases_with_rework"]),
        }

    def q2():
        v = log.variants(top=10)
        return [
            [a, int(n), round(float(sh), 6)]
            for a, n, sh in zip(v["activities"], v["cases"], v["share"], strict=True)
        ]

    def q3():
        t = log.throughput(quantiles=(0.5, 0.9)).iloc[0]
        return [_s(t["p50"]), _s(t["p90"])]

    def q4():
        a = log.activities().sort_values(["executions", "activity"], ascending=[False, True]).head(5)
        return [[x.activity, int(x.executions), int(x.cases)] for x in a.itertuples(index=False)]

    def q5():
        t = log.transitions()
        return {f"{x.source}\t{x.target}": int(x.frequency) for x in t.itertuples(index=False)}

    def q6():
        b = log.bottlenecks(k=5, metric="median", min_count=5)
        return [[x.source, x.target, int(x.frequency), _s(x.median)] for x in b.itertuples(index=False)]

    def q7():
        w = log.rework(by="activity")
        top = w.sort_values(["rework_executions", "activity"], ascending=[False, True]).iloc[0]
        return {
            "per_activity": {x.activity: int(x.cases_with_rework) for x in w.itertuples(index=False)},
            "most_repeated": [top["activity"], int(top["rework_executions"])],
        }

    def q8():
        a = log.arrivals("P1M", quantiles=())
        return {str(p.date()): int(n) for p, n in zip(a["period"], a["started"], strict=True) if n}

    def q9():
        res = log.resources()
        hand = wide.handovers()
        return {
            "events": {_key(x.resource): int(x.events) for x in res.itertuples(index=False)},
            "handovers": {
                f"{_key(x.from_resource)}\t{_key(x.to_resource)}": int(x.handovers)
                for x in hand.itertuples(index=False)
            },
        }

    def q10():
        e = log.endpoints()
        return {f"{x.kind}\t{x.activity}": int(x.cases) for x in e.itertuples(index=False)}

    for _ in range(repeat):
        for name, fn in zip(QUESTIONS, (q1, q2, q3, q4, q5, q6, q7, q8, q9, q10), strict=True):
            out[name] = _measure(r, name, fn, source.count)
    transport = conn.resolve_transport(None)
    conn.close()
    return {"answers": r, "values": out, "transport": transport}


def _key(value: Any) -> str:
    import pandas as pd

    return (
        "<NULL>"
        if value is None or value is pd.NA or (isinstance(value, float) and value != value)
        else str(value)
    )


# --- pm4py: the events pulled, then pm4py in memory -------------------------------------------------------
def side_pm4py(project: str, repeat: int) -> dict:
    warnings.simplefilter("ignore")
    import numpy as np
    import pm4py
    from pm4py.algo.discovery.dfg.adapters.pandas import df_statistics

    conn = connect_env(dict(os.environ))
    log = conn.mining(project)
    log.schema  # noqa: B018
    r: dict = {}
    out: dict = {}

    def pull():
        df = log.to_pm4py()  # every dimension, pm4py's names (org:resource), as an analyst pulls a log
        df = pm4py.format_dataframe(
            df, case_id="case:concept:name", activity_key="concept:name", timestamp_key="time:timestamp"
        )
        # the service orders a case's tasks by start; pm4py follows the frame's order for its sequences
        return df.sort_values(["case:concept:name", "start_timestamp"], kind="stable").reset_index(drop=True)

    df = _measure(r, "event pull + format", pull)
    case, act = "case:concept:name", "concept:name"

    def q1():
        return {
            "cases": int(df[case].nunique()),
            "events": len(df),
            "activities": len(pm4py.get_event_attribute_values(df, act)),
            "first": str(df["start_timestamp"].min()),
            "last": str(df["time:timestamp"].max()),
        }

    def q2():
        variants = pm4py.get_variants(df, **KEYS)
        n = df[case].nunique()
        top = sorted(variants.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        return [[" → ".join(k), int(c), round(c / n, 6)] for k, c in top]

    def q3():
        # pm4py's case durations run from the first event's completion; the service's from the first
        # task's start: pandas on the pulled events, the documented quantile definition
        per = df.groupby(case).agg(start=("start_timestamp", "min"), end=("time:timestamp", "max"))
        dur = (per["end"] - per["start"]).dt.total_seconds().to_numpy()
        return [float(np.quantile(dur, q, method="inverted_cdf")) for q in (0.5, 0.9)]

    def q4():
        counts = pm4py.get_event_attribute_values(df, act)
        cases = df.groupby(act)[case].nunique()
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        return [[a, int(n), int(cases[a])] for a, n in top]

    def q5():
        dfg, starts, ends = pm4py.discover_dfg(df, **KEYS)
        edges = {f"{a}\t{b}": int(n) for (a, b), n in dfg.items()}
        edges.update({f"START\t{a}": int(n) for a, n in starts.items()})
        edges.update({f"{a}\tEND": int(n) for a, n in ends.items()})
        return edges

    def q6():
        common = {
            "activity_key": act,
            "case_id_glue": case,
            "start_timestamp_key": "start_timestamp",
            "timestamp_key": "time:timestamp",
        }
        freq, perf = df_statistics.get_dfg_graph(df, measure="both", perf_aggregation_key="median", **common)
        kept = [(a, b, int(n), float(perf[(a, b)])) for (a, b), n in freq.items() if n >= 5]
        return [list(x) for x in sorted(kept, key=lambda x: -x[3])[:5]]

    def q7():
        per = pm4py.get_rework_cases_per_activity(df, **KEYS)
        n = df.groupby([act, case]).size()
        rework = (n - 1).groupby(level=0).sum()
        top = sorted(rework.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        return {
            "per_activity": {a: int(c) for a, c in per.items() if c},
            "most_repeated": [top[0], int(top[1])],
        }

    def q8():
        first = df.groupby(case)["start_timestamp"].min().dt.tz_convert(None)
        months = first.dt.to_period("M").dt.start_time
        return {str(k.date()): int(n) for k, n in months.value_counts().sort_index().items()}

    def q9():
        res = df["org:resource"].astype(object).where(df["org:resource"].notna(), "<NULL>")
        frame = df.assign(**{"org:resource": res})  # pm4py's handover fails on a NULL resource
        events = pm4py.get_event_attribute_values(frame, "org:resource")
        net = pm4py.discover_handover_of_work_network(
            frame, beta=0, resource_key="org:resource", timestamp_key="start_timestamp", case_id_key=case
        )
        # pm4py gives each pair's share of all handovers; the total is the consecutive pairs of tasks
        total = len(frame) - frame[case].nunique()
        return {
            "events": {str(k): int(v) for k, v in events.items()},
            "handovers": {f"{a}\t{b}": round(s * total) for (a, b), s in net.connections.items()},
        }

    def q10():
        starts = pm4py.get_start_activities(df, **KEYS)
        ends = pm4py.get_end_activities(df, **KEYS)
        return {
            **{f"start\t{a}": int(n) for a, n in starts.items()},
            **{f"end\t{a}": int(n) for a, n in ends.items()},
        }

    fns = (q1, q2, q3, q4, q5, q6, q7, q8, q9, q10)
    for _ in range(repeat):
        for name, fn in zip(QUESTIONS, fns, strict=True):
            out[name] = _measure(r, name, fn)
    conn.close()
    return {"answers": r, "values": out, "rows": len(df), "pandas": _pandas_checks(df)}


def _pandas_checks(df: Any) -> dict:
    """Untimed: where pm4py's definitions differ from the documented ones, the documented answer from the
    same events in pandas — medians by ``inverted_cdf`` (question 6) and handovers between a task and the
    next one of its case that starts no earlier than it ends (question 9; docs/mining.md)."""
    import numpy as np

    case, act = "case:concept:name", "concept:name"
    nxt = df.shift(-1)
    same = df[case] == nxt[case]
    wait = (nxt["start_timestamp"] - df["time:timestamp"]).dt.total_seconds()
    pairs = df.assign(target=nxt[act], wait=wait, to=nxt["org:resource"])[same]
    medians = [
        [a, b, len(w), float(np.quantile(w.to_numpy(), 0.5, method="inverted_cdf"))]
        for (a, b), w in pairs.groupby([act, "target"])["wait"]
        if len(w) >= 5
    ]
    slowest = sorted(medians, key=lambda x: -x[3])[:5]
    later = pairs[pairs["wait"] >= 0]
    res = later["org:resource"].astype(object).where(later["org:resource"].notna(), "<NULL>")
    to = later["to"].astype(object).where(later["to"].notna(), "<NULL>")
    counts = later.assign(f=res, t=to).groupby(["f", "t"]).size()
    return {
        "slowest": slowest,
        "handovers": {f"{a}\t{b}": int(n) for (a, b), n in counts.items()},
        "concurrent": int((pairs["wait"] < 0).sum()),
    }


# --- every answer and filter at the default limit ---------------------------------------------------------
def side_check(project: str) -> dict:
    import pandas as pd

    from pm_notebook.errors import PMError

    conn = connect_env(dict(os.environ))
    log = conn.mining(project)
    acts = log.activities()["activity"].tolist()
    a, b = acts[0], acts[1]
    first = log.summary()["first_event"].iloc[0]
    key = log.variants(1)["variant"].iloc[0]
    answers: dict[str, Callable[[Any], Any]] = {
        "summary": lambda x: x.summary(),
        "variants": lambda x: x.variants(),
        "throughput": lambda x: x.throughput(),
        "distribution": lambda x: x.distribution(),
        "activities": lambda x: x.activities(),
        "processing_and_waiting": lambda x: x.processing_and_waiting(),
        "transitions": lambda x: x.transitions(),
        "bottlenecks": lambda x: x.bottlenecks(),
        "rework": lambda x: x.rework(),
        "cases_over_time": lambda x: x.cases_over_time(),
        "conformance": lambda x: x.conformance([(a, b)]),
        "process_map": lambda x: x.process_map(),
        "endpoints": lambda x: x.endpoints(),
        "trace_lengths": lambda x: x.trace_lengths(),
        "resources": lambda x: x.resources(),
        "resources(by=activity)": lambda x: x.resources(by="activity"),
        "handovers": lambda x: x.handovers(),
        "resource_map": lambda x: x.resource_map(),
        "arrivals": lambda x: x.arrivals(),
        "arrivals(quantiles=())": lambda x: x.arrivals(quantiles=()),
        "work_in_progress": lambda x: x.work_in_progress(),
        "dotted_data": lambda x: x.dotted_data("P1W"),
        "performance_spectrum": lambda x: x.performance_spectrum(a, b),
    }
    filters: dict[str, Callable[[Any], Any]] = {
        "where": lambda x: x.where("duration > ?", pd.Timedelta(0)),
        "between": lambda x: x.between(first, pd.Timestamp("2100-01-01", tz="UTC")),
        "variants_in": lambda x: x.variants_in(key),
        "with_activity": lambda x: x.with_activity(a),
        "completed_only": lambda x: x.completed_only(),
        "with_excluded": lambda x: x.with_excluded(),
        "directly_follows": lambda x: x.directly_follows(a, b),
        "eventually_follows": lambda x: x.eventually_follows(a, b),
        "starts_with": lambda x: x.starts_with(a),
        "ends_with": lambda x: x.ends_with(*acts),
        "without_activity": lambda x: x.without_activity("no such activity"),
        "case_duration": lambda x: x.case_duration(min=pd.Timedelta(0)),
        "attribute": lambda x: x.attribute("resource", ["alice", "bruno"]),
        "with_resource": lambda x: x.with_resource("alice", "bruno"),
        "top_variants": lambda x: x.top_variants(0.8),
    }

    def verdict(fn: Callable[[], Any]) -> str:
        try:
            fn()
        except PMError as exc:
            hint = getattr(exc, "hint", "") or ""
            if "large_subqueries=True" in hint and "maxSubqueryRows" in str(exc):
                return "refused, names large_subqueries"
            return f"FAILED: {type(exc).__name__}: {str(exc)[:160]}"
        return "runs"

    out: dict[str, dict[str, str]] = {"answers": {}, "filters": {}}
    for name, ask in answers.items():
        out["answers"][name] = verdict(lambda ask=ask: ask(log))
    for name, make in filters.items():
        # a filtered log answered over each table: cases (summary), tasks (activities), transitions
        out["filters"][name] = "; ".join(
            f"{what} {verdict(lambda ask=ask, make=make: ask(make(log)))}"
            for what, ask in (
                ("summary", lambda x: x.summary()),
                ("activities", lambda x: x.activities()),
                ("transitions", lambda x: x.transitions()),
            )
        )
    conn.close()
    return out


# --- the parent: sandbox, rounds, comparison, report ------------------------------------------------------
def _close(x: float | None, y: float | None, rel: float = 0.01) -> bool:
    if x is None or y is None:
        return x is y
    return abs(x - y) <= rel * max(abs(x), abs(y)) + 1e-3


def compare(ours: dict, theirs: dict, pandas: dict) -> dict[str, str]:
    """Per question: "same" or what differs (and whether the documented answer, *pandas*, agrees)."""
    out = {}
    o, t = ours[QUESTIONS[0]], theirs[QUESTIONS[0]]
    same = all(o[k] == t[k] for k in ("cases", "events", "activities"))
    same_span = o["first"][:19] == t["first"][:19] and o["last"][:19] == t["last"][:19]
    out[QUESTIONS[0]] = "same" if same and same_span else f"differs: {o} vs {t}"
    o, t = ours[QUESTIONS[1]], theirs[QUESTIONS[1]]
    out[QUESTIONS[1]] = (
        "same"
        if [x[1] for x in o] == [x[1] for x in t] and {tuple(x) for x in o} == {tuple(x) for x in t}
        else "differs (counts or sequences)"
    )
    o, t = ours[QUESTIONS[2]], theirs[QUESTIONS[2]]
    out[QUESTIONS[2]] = (
        "same" if all(_close(x, y) for x, y in zip(o, t, strict=True)) else f"differs: {o} vs {t}"
    )
    out[QUESTIONS[3]] = "same" if ours[QUESTIONS[3]] == theirs[QUESTIONS[3]] else "differs"
    o, t = ours[QUESTIONS[4]], theirs[QUESTIONS[4]]
    out[QUESTIONS[4]] = "same" if o == t else f"differs on {len(set(o.items()) ^ set(t.items()))} edges"
    o, t = ours[QUESTIONS[5]], theirs[QUESTIONS[5]]
    same = [x[:3] for x in o] == [x[:3] for x in t] and all(
        _close(x[3], y[3]) for x, y in zip(o, t, strict=True)
    )
    documented = [x[:3] for x in o] == [x[:3] for x in pandas["slowest"]] and all(
        _close(x[3], y[3], 0) for x, y in zip(o, pandas["slowest"], strict=True)
    )
    out[QUESTIONS[5]] = (
        "same (medians within 1 %)"
        if same
        else "pandas' inverted_cdf medians: same; pm4py's interpolated ones rank others"
        if documented
        else f"differs: {o} vs {t}"
    )
    out[QUESTIONS[6]] = "same" if ours[QUESTIONS[6]] == theirs[QUESTIONS[6]] else "differs"
    out[QUESTIONS[7]] = "same" if ours[QUESTIONS[7]] == theirs[QUESTIONS[7]] else "differs"
    o, t = ours[QUESTIONS[8]], theirs[QUESTIONS[8]]
    if o["events"] != t["events"]:
        out[QUESTIONS[8]] = "differs: events per resource"
    elif o["handovers"] == t["handovers"]:
        out[QUESTIONS[8]] = "same"
    elif o["handovers"] == pandas["handovers"]:
        out[QUESTIONS[8]] = (
            f"events same; handovers = pm4py's less the {pandas['concurrent']:,} into a task started "
            "before the previous one ended (not counted, docs)"
        )
    else:
        out[QUESTIONS[8]] = "differs: handovers"
    out[QUESTIONS[9]] = "same" if ours[QUESTIONS[9]] == theirs[QUESTIONS[9]] else "differs"
    return out


def _child(side: str, project: str, repeat: int, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--side", side, "--project", project, "--repeat", str(repeat)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"{side} side on {project!r} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_project(project: str, args: argparse.Namespace, env: dict[str, str]) -> dict:
    """``--rounds`` interleaved rounds of both sides on *project*; the figures and the comparison."""
    rounds: dict[str, list[dict]] = {"ours": [], "pm4py": []}
    for n in range(1, args.rounds + 1):
        for side in ("ours", "pm4py"):
            t0 = time.perf_counter()
            rounds[side].append(_child(side, project, args.repeat, env))
            print(f"  round {n} {side}: {time.perf_counter() - t0:.1f} s", flush=True)
    last_ours, last_pm4py = rounds["ours"][-1], rounds["pm4py"][-1]
    return {
        "rounds": rounds,
        "same": compare(last_ours["values"], last_pm4py["values"], last_pm4py["pandas"]),
    }


def _later(entry: dict, key: str = "times") -> float:
    times = entry[key]
    return statistics.median(times[1:] if len(times) > 1 else times)


def report(project: str, result: dict) -> list[dict]:
    """Print the table of one project; return its rows (for --json)."""
    rounds = result["rounds"]
    ours_r, pm_r = rounds["ours"], rounds["pm4py"]

    def med(side: list[dict], q: str, f: Callable[[dict], float]) -> float:
        return statistics.median(f(r["answers"][q]) for r in side)

    pull = med(pm_r, "event pull + format", lambda e: e["times"][0])
    pull_mem = max(r["answers"]["event pull + format"]["mem"][0] for r in pm_r)
    cases = ours_r[-1]["values"][QUESTIONS[0]]["cases"]
    print(
        f"\n{project!r}: {pm_r[-1]['rows']:,} events, {cases:,} cases (excluded cases left out); "
        f"our transport {ours_r[-1]['transport']}; {len(ours_r)} rounds × "
        f"{len(ours_r[0]['answers'][QUESTIONS[0]]['times'])} runs"
    )
    print(f"pm4py's pull of the events (log.to_pm4py + format_dataframe): {pull:.2f} s, +{pull_mem:.0f} MB")
    head = (
        f"{'question':<36}{'ours s':>8}{'(1st)':>8}{'svc cpu':>8}{'cli cpu':>8}{'pm4py s':>9}{'(1st)':>8}"
        f"{'ratio':>8}{'+pull':>8}{'stmts':>6}{'MB ours':>8}{'MB pm4py':>9}  same numbers?"
    )
    print(head)
    rows = []
    tot_o = tot_p = tot_svc = tot_cli = 0.0
    for q in QUESTIONS:
        o = med(ours_r, q, _later)
        o1 = med(ours_r, q, lambda e: e["times"][0])
        svc = med(ours_r, q, lambda e: _later(e, "service_cpu"))
        cli = med(ours_r, q, lambda e: _later(e, "client_cpu"))
        p = med(pm_r, q, _later)
        p1 = med(pm_r, q, lambda e: e["times"][0])
        stm = ours_r[-1]["answers"][q]["statements"]
        mo = max(max(r["answers"][q]["mem"]) for r in ours_r)
        mp = max(max(r["answers"][q]["mem"]) for r in pm_r)
        tot_o += o
        tot_p += p
        tot_svc += svc
        tot_cli += cli
        same = result["same"][q]
        print(
            f"{q:<36}{o:>8.3f}{o1:>8.3f}{svc:>8.3f}{cli:>8.3f}{p:>9.3f}{p1:>8.3f}{p / o:>7.1f}x"
            f"{(p + pull) / o:>7.0f}x{stm:>6}{mo:>8.1f}{mp:>9.1f}  {same}"
        )
        rows.append(
            {
                "q": q,
                "ours": o,
                "ours_first": o1,
                "service_cpu": svc,
                "client_cpu": cli,
                "pm4py": p,
                "pm4py_first": p1,
                "statements": stm,
                "mem_ours": mo,
                "mem_pm4py": mp,
                "same": same,
            }
        )
    print(
        f"{'all ten':<36}{tot_o:>8.3f}{'':>8}{tot_svc:>8.3f}{tot_cli:>8.3f}{tot_p:>9.3f}{'':>8}"
        f"{tot_p / tot_o:>7.1f}x{(tot_p + pull) / tot_o:>7.1f}x"
    )
    print(
        f"the client's own share: {tot_cli:.3f} CPU-s for all ten (pm4py in memory "
        f"{tot_p / tot_cli:.0f}x that, with its pull {(tot_p + pull) / tot_cli:.0f}x); "
        f"the sandbox's: {tot_svc:.3f} CPU-s on the same cores"
    )
    per_round = [
        (
            sum(_later(r["answers"][q]) for q in QUESTIONS),
            sum(_later(s["answers"][q]) for q in QUESTIONS),
            s["answers"]["event pull + format"]["times"][0],
        )
        for r, s in zip(ours_r, pm_r, strict=True)
    ]
    print(
        "rounds (ours s / pm4py s / pull s): "
        + ", ".join(f"{a:.2f} / {b:.2f} / {c:.2f}" for a, b, c in per_round)
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=1_000_000, help="tasks wanted in the generated project")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of both sides")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each answer per process (1st apart)")
    parser.add_argument("--no-receipt", action="store_true", help="leave the receipt log out")
    parser.add_argument("--no-check", action="store_true", help="skip every answer and filter at the limit")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--side", choices=["ours", "pm4py", "check"], help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        if args.side == "check":
            result = side_check(args.project)
        else:
            result = (side_ours if args.side == "ours" else side_pm4py)(args.project, args.repeat)
        print(json.dumps(result, default=str))
        return

    import pandas as pd

    from pm_sandbox import start

    cases = max(1000, round(args.events / VERTEX_ROWS_PER_CASE))
    t0 = time.perf_counter()
    sb = start(cases=5, extra_args=["--large-project-cases", str(cases)], timeout=3600)
    print(f"sandbox: {LARGE!r} of {cases:,} cases ready in {time.perf_counter() - t0:.1f} s", flush=True)
    out: dict = {}
    try:
        env = {**os.environ, **sb.env, "PYTHONPATH": str(ROOT), SANDBOX_PID_ENV: str(sb.pid)}
        projects = [LARGE]
        if not args.no_receipt:
            conn = connect_env(sb.env)
            frame = pd.read_csv(RECEIPT_CSV, dtype=str, keep_default_na=False)
            frame["time:timestamp"] = pd.to_datetime(frame["time:timestamp"], utc=True)
            conn.upload(conn.create_project(RECEIPT), frame, progress=False)
            conn.close()
            projects.append(RECEIPT)
        results = {}
        for project in projects:
            print(f"{project}:", flush=True)
            results[project] = run_project(project, args, env)
        check = None if args.no_check else _child("check", LARGE, 1, env)
    finally:
        sb.stop()
    for project, result in results.items():
        out[project] = report(project, result)
    if check is not None:
        print(f"\nevery answer and filter on {LARGE!r} at Druid's default maxSubqueryRows:")
        for kind in ("answers", "filters"):
            for name, verdict in check[kind].items():
                print(f"  {kind[:-1]:<7}{name:<26}{verdict}")
        out["check"] = check
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
