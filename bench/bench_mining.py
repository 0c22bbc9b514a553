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


#: the environment variable giving the children the engine's process ids, comma-separated: the stand-in's
#: process, or every JVM of the Druid cluster (their CPU time: the engine's share)
SANDBOX_PID_ENV = "PM_BENCH_SANDBOX_PID"
#: set for the children that run on a real Druid: its broker's URL (SQL there; the project list and its column
#: mapping from the stand-in, which holds the same project)
DRUID_URL_ENV = "PM_BENCH_DRUID_URL"


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) process *pid* has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _engine_cpu_s() -> float:
    pids = os.environ.get(SANDBOX_PID_ENV, "")
    return sum(_cpu_s(int(p)) for p in pids.split(",") if p)


def _measure(results: dict, name: str, fn: Callable[[], Any], counter: list[int] | None = None) -> Any:
    """Run *fn*, record its time, peak memory rise, this process's CPU time and (ours) statements and the
    engine's CPU time meanwhile (the stand-in's or Druid's processes, on the same cores); returns its
    value."""
    import gc

    gc.collect()
    _reset_hwm()
    base = current_rss_mb()
    before = counter[0] if counter else 0
    s0 = _engine_cpu_s()
    c0 = time.process_time()
    t0 = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - t0
    client_cpu = time.process_time() - c0
    service_cpu = _engine_cpu_s() - s0
    entry = results.setdefault(
        name,
        {"times": [], "mem": [], "statements": None, "client_cpu": [], "service_cpu": [], "load": []},
    )
    entry["times"].append(elapsed)
    entry["mem"].append(max(0.0, _hwm_mb() - base))
    entry["client_cpu"].append(client_cpu)
    entry["service_cpu"].append(service_cpu)
    entry["load"].append(os.getloadavg()[0])
    if counter is not None:
        entry["statements"] = counter[0] - before
    return value


class Counting:
    """The connection as the log's source, counting the statements the log sends (everything else passes).
    With *rest*, the project list and column mapping come from that connection (the stand-in) and only the
    SQL goes to *conn* (a real Druid's broker)."""

    def __init__(self, conn: Any, rest: Any = None) -> None:
        self._conn, self._rest, self.count = conn, rest or conn, [0]

    def query(self, *args: Any, **kw: Any) -> Any:
        self.count[0] += 1
        return self._conn.query(*args, **kw)

    def query_chunks(self, *args: Any, **kw: Any) -> Any:
        self.count[0] += 1
        return self._conn.query_chunks(*args, **kw)

    def project(self, project_id: Any) -> Any:
        return self._rest.project(project_id)

    def projects(self) -> Any:
        return self._rest.projects()

    def column_names(self, project: Any) -> Any:
        return self._rest.column_names(project)

    def close(self) -> None:
        self._conn.close()
        if self._rest is not self._conn:
            self._rest.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _source() -> Counting:
    """The children's source: the stand-in's connection, or (``PM_BENCH_DRUID_URL``) a connection straight
    to Druid's broker for the SQL beside the stand-in's for the REST."""
    rest = connect_env(dict(os.environ))
    broker = os.environ.get(DRUID_URL_ENV)
    if not broker:
        return Counting(rest)
    import pm_notebook

    druid = pm_notebook.connect(
        "http://127.0.0.1:9",
        "http://127.0.0.1:9/realms/none",
        "druid",
        "druid",
        f"jdbc:avatica:remote:url={broker}/druid/v2/sql/avatica/",
        use_keyring=False,
    )
    return Counting(druid, rest)


def _s(td: Any) -> float | None:
    import pandas as pd

    return None if td is None or pd.isna(td) else pd.Timedelta(td).total_seconds()


# --- ours: conn.mining ------------------------------------------------------------------------------------
def side_ours(project: str, repeat: int) -> dict:
    from pm_notebook.mining import ProcessLog

    source = _source()
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
    transport = source.resolve_transport(None)
    source.close()
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

    from pm_notebook.mining import ProcessLog

    conn = _source()
    log = ProcessLog.open(conn, project)
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
    side_arg = "ours" if side == "druid" else side  # the same answers, its environment points at Druid
    done = subprocess.run(
        [sys.executable, __file__, "--side", side_arg, "--project", project, "--repeat", str(repeat)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"{side} side on {project!r} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_project(project: str, args: argparse.Namespace, envs: dict[str, dict[str, str]]) -> dict:
    """``--rounds`` interleaved rounds of every side (*envs*: side -> its environment) on *project*; the
    figures, the load average around each child and the comparison of ours (Druid's when there) with
    pm4py's."""
    rounds: dict[str, list[dict]] = {side: [] for side in envs}
    loads: list[tuple[str, int, float, float]] = []
    for n in range(1, args.rounds + 1):
        for side, env in envs.items():
            before = os.getloadavg()[0]
            t0 = time.perf_counter()
            rounds[side].append(_child(side, project, args.repeat, env))
            after = os.getloadavg()[0]
            loads.append((side, n, before, after))
            print(
                f"  round {n} {side}: {time.perf_counter() - t0:.1f} s (load average {before:.2f} -> "
                f"{after:.2f})",
                flush=True,
            )
    main_side = "druid" if "druid" in envs else "ours"
    last_ours, last_pm4py = rounds[main_side][-1], rounds["pm4py"][-1]
    result = {
        "rounds": rounds,
        "loads": loads,
        "same": compare(last_ours["values"], last_pm4py["values"], last_pm4py["pandas"]),
    }
    if "druid" in envs:
        result["same_standin"] = same_engines(last_ours["values"], rounds["ours"][-1]["values"])
    return result


def _numbers(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _numbers(value[k])]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [float(value)] if isinstance(value, int | float) else []


def same_engines(druid: dict, standin: dict) -> dict[str, str]:
    """Per question, Druid's answer against the stand-in's: "same", or (questions 3 and 6, whose durations
    are ``APPROX_QUANTILE_DS``: a sketch on Druid, exact on the stand-in) the largest relative difference of a
    duration with everything else equal."""
    out = {}
    for q in QUESTIONS:
        a, b = druid[q], standin[q]
        if a == b:
            out[q] = "same"
        elif q in (QUESTIONS[2], QUESTIONS[5]) and len(_numbers(a)) == len(_numbers(b)):
            keys_a = [x[:3] for x in a] if q == QUESTIONS[5] else []
            keys_b = [x[:3] for x in b] if q == QUESTIONS[5] else []
            worst = max(
                abs(x - y) / max(abs(x), abs(y), 1e-9) for x, y in zip(_numbers(a), _numbers(b), strict=True)
            )
            out[q] = f"{'same' if keys_a == keys_b else 'other'} transitions, durations within {worst:.1%}"
        else:
            out[q] = "DIFFERS"
    return out


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


def report_druid(project: str, result: dict, info: dict) -> list[dict]:
    """The table of a ``--druid`` run: per question our answer on Druid (wall, first run, Druid's CPU, the
    client's CPU), on the stand-in (wall, DuckDB's CPU), pm4py in memory, the ratios and the checks."""
    rounds = result["rounds"]
    dr, sr, pr = rounds["druid"], rounds["ours"], rounds["pm4py"]

    def med(side: list[dict], q: str, f: Callable[[dict], float]) -> float:
        return statistics.median(f(r["answers"][q]) for r in side)

    pull = med(pr, "event pull + format", lambda e: e["times"][0])
    pull_cli = med(pr, "event pull + format", lambda e: e["client_cpu"][0])
    pull_mem = max(r["answers"]["event pull + format"]["mem"][0] for r in pr)
    cases = dr[-1]["values"][QUESTIONS[0]]["cases"]
    print(
        f"\n{project!r} on Druid {info['version']} (own cluster) and on the stand-in: "
        f"{pr[-1]['rows']:,} events, {cases:,} cases; transport {dr[-1]['transport']} (Druid) / "
        f"{sr[-1]['transport']} (stand-in); "
        f"{len(dr)} rounds x {len(dr[0]['answers'][QUESTIONS[0]]['times'])} runs, medians of the later runs"
    )
    print(
        f"pm4py's pull of the events from Druid (to_pm4py + format_dataframe): {pull:.2f} s "
        f"(client CPU {pull_cli:.2f} s), +{pull_mem:.0f} MB"
    )
    head = (
        f"{'question':<36}{'druid s':>8}{'(1st)':>7}{'eng cpu':>8}{'cli cpu':>8}{'stmts':>6}"
        f"{'standin':>8}{'eng cpu':>8}{'sb/dr':>6}{'pm4py s':>8}{'cli cpu':>8}{'vs pm':>7}{'+pull':>7}"
        f"{'cli %':>6}  Druid = stand-in? / = pm4py?"
    )
    print(head)
    rows = []
    tot = dict.fromkeys(("d", "dsvc", "dcli", "s", "ssvc", "p", "pcli"), 0.0)
    for q in QUESTIONS:
        d = med(dr, q, _later)
        d1 = med(dr, q, lambda e: e["times"][0])
        dsvc = med(dr, q, lambda e: _later(e, "service_cpu"))
        dcli = med(dr, q, lambda e: _later(e, "client_cpu"))
        s_ = med(sr, q, _later)
        ssvc = med(sr, q, lambda e: _later(e, "service_cpu"))
        p = med(pr, q, _later)
        pcli = med(pr, q, lambda e: _later(e, "client_cpu"))
        stm = dr[-1]["answers"][q]["statements"]
        for k, v in zip(tot, (d, dsvc, dcli, s_, ssvc, p, pcli), strict=True):
            tot[k] += v
        print(
            f"{q:<36}{d:>8.3f}{d1:>7.2f}{dsvc:>8.2f}{dcli:>8.3f}{stm:>6}{s_:>8.3f}{ssvc:>8.2f}"
            f"{s_ / d:>6.2f}{p:>8.3f}{pcli:>8.2f}{p / d:>6.1f}x{(p + pull) / d:>6.0f}x"
            f"{100 * dcli / pcli:>5.1f}%"
            f"  {result['same_standin'][q]} / {result['same'][q]}"
        )
        rows.append(
            {
                "q": q,
                "druid": d,
                "druid_first": d1,
                "druid_engine_cpu": dsvc,
                "druid_client_cpu": dcli,
                "statements": stm,
                "standin": s_,
                "standin_engine_cpu": ssvc,
                "pm4py": p,
                "pm4py_cpu": pcli,
                "same_standin": result["same_standin"][q],
                "same_pm4py": result["same"][q],
            }
        )
    print(
        f"{'all ten':<36}{tot['d']:>8.3f}{'':>7}{tot['dsvc']:>8.2f}{tot['dcli']:>8.3f}{'':>6}{tot['s']:>8.3f}"
        f"{tot['ssvc']:>8.2f}{tot['s'] / tot['d']:>6.2f}{tot['p']:>8.3f}{tot['pcli']:>8.2f}"
        f"{tot['p'] / tot['d']:>6.1f}x{(tot['p'] + pull) / tot['d']:>6.1f}x"
        f"{100 * tot['dcli'] / tot['pcli']:>5.1f}%"
    )
    print(
        f"goals: ten on Druid vs pm4py with its pull {(tot['p'] + pull) / tot['d']:.1f}x (>= 10x); slowest "
        f"answer on Druid {max(r['druid'] for r in rows):.2f} s (<= 1 s); the client's CPU on Druid "
        f"{tot['dcli']:.2f} s = {100 * tot['dcli'] / tot['pcli']:.1f}% of pm4py's in memory "
        f"({100 * tot['dcli'] / (tot['pcli'] + pull_cli):.1f}% with its pull's) (<= 5%: the goal judges the "
        "client's CPU, not Druid's)"
    )
    per_round = [
        (
            sum(_later(x["answers"][q]) for q in QUESTIONS),
            sum(_later(y["answers"][q]) for q in QUESTIONS),
            sum(_later(z["answers"][q]) for q in QUESTIONS),
            z["answers"]["event pull + format"]["times"][0],
        )
        for x, y, z in zip(dr, sr, pr, strict=True)
    ]
    print(
        "rounds (Druid s / stand-in s / pm4py s / pull s): "
        + ", ".join(f"{a:.2f} / {b:.2f} / {c:.2f} / {e:.2f}" for a, b, c, e in per_round)
    )
    print(
        "load average (1 min) before -> after each child: "
        + ", ".join(f"{side}{n} {a:.1f}->{b:.1f}" for side, n, a, b in result["loads"])
    )
    print(f"Druid's configuration: {json.dumps(info['config'])}; segments: {json.dumps(info['segments'])}")
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
    parser.add_argument(
        "--druid",
        type=Path,
        metavar="DIR",
        help="also on a real Druid: the cluster of druid/cluster.py in DIR (started, and stopped at the end, "
        "when it is not running), the large project published to it; pm4py pulls its events from Druid",
    )
    parser.add_argument(
        "--cases", type=int, help="cases of the generated project (instead of --events; 107000: ~1M tasks)"
    )
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

    cases = args.cases or max(1000, round(args.events / VERTEX_ROWS_PER_CASE))
    druid_env: dict[str, str] = {}
    cluster = None
    info: dict = {}
    if args.druid is not None:
        import _druid  # bench/ is on sys.path

        args.no_receipt = args.no_check = True  # only the large project is published to Druid
        denv, cluster = _druid.ensure_cluster(args.druid, watch_pid=os.getpid())
        broker = denv["PM_DRUID_URL"]
        rows = _druid.publish_large(cases, broker, denv["PM_DRUID_COORDINATOR_URL"])
        pids = _druid.engine_pids(args.druid)
        druid_env = {DRUID_URL_ENV: broker, SANDBOX_PID_ENV: ",".join(str(p) for p in pids.values())}
        info = {
            "version": json.loads((args.druid / "pids").read_text()).get("version", "?"),
            "config": _druid.cluster_config(args.druid),
            "segments": {name: [n for _, n in _druid.segments(broker, name)] for name in rows},
        }
    t0 = time.perf_counter()
    sb = start(cases=5, extra_args=["--large-project-cases", str(cases)], timeout=3600)
    print(f"sandbox: {LARGE!r} of {cases:,} cases ready in {time.perf_counter() - t0:.1f} s", flush=True)
    out: dict = {}
    try:
        env = {**os.environ, **sb.env, "PYTHONPATH": str(ROOT), SANDBOX_PID_ENV: str(sb.pid)}
        envs = {"ours": env, "pm4py": env}
        if druid_env:  # Druid first in each round, the stand-in, then pm4py pulling from Druid
            envs = {"druid": {**env, **druid_env}, "ours": env, "pm4py": {**env, **druid_env}}
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
            results[project] = run_project(project, args, envs)
        check = None if args.no_check else _child("check", LARGE, 1, env)
    finally:
        sb.stop()
        if cluster is not None:
            cluster.stop(quiet=True)
    for project, result in results.items():
        out[project] = report_druid(project, result, info) if druid_env else report(project, result)
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
