"""Load: N notebook-like clients of two workgroups against one sandbox, for a fixed time.

Usage::

    .venv/bin/python bench/load.py                           # 50 "demo" + 5 "second", 45 s per run
    .venv/bin/python bench/load.py --seconds 30 --busy 50 --quiet 5 --processes 4
    .venv/bin/python bench/load.py --transports druid        # one SQL transport only
    .venv/bin/python bench/load.py --rounds 3 --seconds 20   # alone/mixed interleaved 3 times, medians
    .venv/bin/python bench/load.py --sandbox-args="--sql-cpu-turns 1000"   # without fair CPU turns

It starts one sandbox, computes the expected answers once (a reference run per workgroup), then runs two
configurations for ``--seconds`` each, ``--rounds`` times in turn (alone, mixed, alone, mixed, ...: a slow
spell of the machine falls on both):

1. **alone**: the ``--quiet`` clients of the second workgroup by themselves;
2. **mixed**: ``--busy`` clients of the first workgroup plus the same ``--quiet`` clients of the second.

A client is what a notebook does: its own :class:`pm_notebook.Connection`, then, until time is up, a random
mix of a REST listing (``projects()``), a small parameterised SQL query (one case's task count) and a large
one (every task row of a project), each answer checked against the reference (a wrong row count or sum is a
*wrong result*, an exception an *error*). Clients are threads: the first workgroup's spread over
``--processes`` worker processes, the second's in a process of their own — two teams' notebooks are never
one Python process (``--shared-processes`` mixes them, as a stress of the client's GIL rather than of the
service). Clients alternate over ``--transports``.

Printed per round, configuration and workgroup: operations, throughput, p50/p95/p99 latency, errors, wrong
results (with the first error texts); then the second workgroup's p99 ratio mixed/alone, from the medians
over the rounds. Goal (issue #15): zero errors, zero wrong results, ratio ≤ 3. Exit code 0 when the goal is
met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import shlex
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from _measure import connect_env, workgroup_env  # bench/ is on sys.path (the script's folder)

OPS = (("rest", 0.25), ("small", 0.55), ("large", 0.20))


@dataclass
class Reference:
    """The expected answers of one workgroup (computed once, before any load)."""

    key: str
    env: dict[str, str]
    pid: str
    project_ids: frozenset[str]
    tasks_per_case: dict[str, int]
    large_rows: int
    large_duration_sum: int


@dataclass
class Sample:
    """One operation of one client: which, how long, and how it ended."""

    workgroup: str
    op: str
    seconds: float
    outcome: str  # "ok" | "error" | "wrong"
    detail: str = ""


@dataclass
class ClientSpec:
    """What one client does: whose connection values, which SQL transport, which random seed."""

    ref: Reference
    transport: str
    seed: int


@dataclass
class RunResult:
    """Every sample of one configuration, and its wall-clock length."""

    samples: list[Sample] = field(default_factory=list)
    seconds: float = 0.0


def _large_sql(pid: str) -> str:
    return f'SELECT caseid, vertex_name, duration FROM "{pid}_vertex"'


def _small_sql(pid: str) -> str:
    return f'SELECT COUNT(*) AS n FROM "{pid}_vertex" WHERE caseid = ?'


def reference(sb: Any, key: str) -> Reference:
    """Expected answers for workgroup *key*, from one unhurried client."""
    import pm_notebook

    wg = sb.workgroups[key]
    env = workgroup_env(sb, wg)
    pid = wg.project_ids[0]
    with connect_env(env) as conn:
        ids = frozenset(p.id for p in conn.projects())
        per_case = conn.query(f'SELECT caseid, COUNT(*) AS n FROM "{pid}_vertex" GROUP BY caseid')
        large = conn.query(_large_sql(pid))
    assert isinstance(conn, pm_notebook.Connection)
    return Reference(
        key=key,
        env=env,
        pid=pid,
        project_ids=ids,
        tasks_per_case={str(c): int(n) for c, n in zip(per_case["caseid"], per_case["n"], strict=True)},
        large_rows=len(large),
        large_duration_sum=int(large["duration"].sum()),
    )


def _one_op(conn: Any, spec: ClientSpec, op: str, rng: random.Random) -> tuple[str, str]:
    """Run one operation; ``("ok" | "wrong", detail)``. Exceptions propagate (counted as errors)."""
    ref = spec.ref
    if op == "rest":
        got = frozenset(p.id for p in conn.rest.projects())
        return ("ok", "") if got == ref.project_ids else ("wrong", f"projects {sorted(got)}")
    if op == "small":
        case = rng.choice(sorted(ref.tasks_per_case))
        frame = conn.query(_small_sql(ref.pid), [case], transport=spec.transport)
        got = int(frame["n"].iloc[0])
        want = ref.tasks_per_case[case]
        return ("ok", "") if got == want else ("wrong", f"case {case}: {got} tasks, expected {want}")
    frame = conn.query(_large_sql(ref.pid), transport=spec.transport)
    rows, total = len(frame), int(frame["duration"].sum())
    if rows != ref.large_rows or total != ref.large_duration_sum:
        return (
            "wrong",
            f"large: {rows} rows / sum {total}, expected {ref.large_rows} / {ref.large_duration_sum}",
        )
    return "ok", ""


def _client(
    spec: ClientSpec, start_at: float, stop_at: float, out: list[Sample], lock: threading.Lock
) -> None:
    rng = random.Random(spec.seed)
    names = [name for name, _ in OPS]
    weights = [w for _, w in OPS]
    samples: list[Sample] = []
    try:
        conn = connect_env(spec.ref.env)
    except Exception as exc:  # counted, never fatal: the run goes on
        samples.append(Sample(spec.ref.key, "connect", 0.0, "error", f"{type(exc).__name__}: {exc}"[:300]))
        conn = None
    if conn is not None:
        time.sleep(max(0.0, start_at - time.time()))
        while time.time() < stop_at:
            op = rng.choices(names, weights)[0]
            t0 = time.perf_counter()
            try:
                outcome, detail = _one_op(conn, spec, op, rng)
            except Exception as exc:
                outcome, detail = "error", f"{type(exc).__name__}: {exc}"[:300]
            samples.append(Sample(spec.ref.key, op, time.perf_counter() - t0, outcome, detail))
        conn.close()
    with lock:
        out.extend(samples)


def _worker(specs: list[ClientSpec], start_at: float, stop_at: float) -> list[Sample]:
    """One process: its clients as threads; returns their samples."""
    out: list[Sample] = []
    lock = threading.Lock()
    threads = [
        threading.Thread(target=_client, args=(s, start_at, stop_at, out, lock), daemon=True) for s in specs
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(60.0, stop_at - time.time() + 600))
    return out


def run(
    specs: list[ClientSpec], seconds: float, processes: int, own: list[ClientSpec] | None = None
) -> RunResult:
    """Run *specs* as threads over *processes* worker processes, and *own* in one more process, for
    *seconds*; collect every sample."""
    groups: list[list[ClientSpec]] = [[] for _ in range(max(1, processes))]
    for i, spec in enumerate(specs):
        groups[i % len(groups)].append(spec)
    groups = [g for g in groups if g]
    if own:
        groups.append(list(own))
    start_at = time.time() + 5.0 + 0.5 * len(groups)  # every process imported and connected first
    stop_at = start_at + seconds
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(len(groups)) as pool:
        parts = pool.starmap(_worker, [(g, start_at, stop_at) for g in groups])
    result = RunResult(seconds=seconds)
    for part in parts:
        result.samples.extend(part)
    return result


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(title: str, result: RunResult) -> dict[str, dict[str, Any]]:
    """Print one configuration's table; return ``{workgroup: {"p99": ..., "errors": ..., ...}}``."""
    by_wg: dict[str, list[Sample]] = defaultdict(list)
    for s in result.samples:
        by_wg[s.workgroup].append(s)
    print(f"\n== {title} ({result.seconds:.0f} s) ==")
    print(
        f"{'workgroup':10} {'ops':>6} {'ops/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'errors':>7} {'wrong':>6}"
    )
    summary: dict[str, dict[str, Any]] = {}
    for wg, samples in sorted(by_wg.items()):
        timed = sorted(s.seconds * 1000 for s in samples if s.op != "connect")
        outcomes = Counter(s.outcome for s in samples)
        row = {
            "ops": len(timed),
            "rate": len(timed) / result.seconds,
            "p50": _pct(timed, 50),
            "p95": _pct(timed, 95),
            "p99": _pct(timed, 99),
            "errors": outcomes["error"],
            "wrong": outcomes["wrong"],
        }
        summary[wg] = row
        print(
            f"{wg:10} {row['ops']:6d} {row['rate']:7.1f} {row['p50']:8.1f} {row['p95']:8.1f} "
            f"{row['p99']:8.1f} "
            f"{row['errors']:7d} {row['wrong']:6d}"
        )
        per_op = defaultdict(list)
        for s in samples:
            per_op[s.op].append(s.seconds * 1000)
        print(
            "           "
            + "  ".join(
                f"{op}: n={len(v)} p50={_pct(sorted(v), 50):.0f} p99={_pct(sorted(v), 99):.0f}"
                for op, v in sorted(per_op.items())
            )
        )
        problems = Counter(s.detail for s in samples if s.outcome != "ok")
        for detail, n in problems.most_common(3):
            print(f"           {n} × {detail}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=45.0, help="length of each configuration's run")
    parser.add_argument("--busy", type=int, default=50, help="clients of the first workgroup (mixed run)")
    parser.add_argument("--quiet", type=int, default=5, help="clients of the second workgroup (both runs)")
    parser.add_argument("--processes", type=int, default=4, help="worker processes (clients are threads)")
    parser.add_argument("--transports", default="druid,avatica", help="SQL transports, alternated by client")
    parser.add_argument("--cases", type=int, default=300, help="cases per project in the sandbox")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=1, help="alone/mixed pairs, run in turn (medians)")
    parser.add_argument(
        "--shared-processes",
        action="store_true",
        help="put the second workgroup's clients in the first's processes (default: a process of their own)",
    )
    parser.add_argument(
        "--sandbox-args", default="", help='extra sandbox flags, e.g. "--sql-cpu-turns 1000" (fairness off)'
    )
    args = parser.parse_args(argv)
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]

    from pm_sandbox import start

    print(f"starting a sandbox ({args.cases} cases per project) {args.sandbox_args} ...", flush=True)
    with start(cases=args.cases, extra_args=shlex.split(args.sandbox_args)) as sb:
        busy_ref, quiet_ref = reference(sb, "demo"), reference(sb, "second")
        print(
            f"reference: demo large query {busy_ref.large_rows} rows, second {quiet_ref.large_rows} rows; "
            f"transports {', '.join(transports)}; {args.processes} processes",
            flush=True,
        )
        quiet = [
            ClientSpec(quiet_ref, transports[i % len(transports)], args.seed + i) for i in range(args.quiet)
        ]
        busy = [
            ClientSpec(busy_ref, transports[i % len(transports)], args.seed + 1000 + i)
            for i in range(args.busy)
        ]
        alone: list[dict[str, dict[str, Any]]] = []
        mixed: list[dict[str, dict[str, Any]]] = []
        for r in range(1, args.rounds + 1):
            alone.append(report(f"round {r}, alone: {args.quiet} second", run(quiet, args.seconds, 1)))
            if args.shared_processes:
                both = run(busy + quiet, args.seconds, args.processes)
            else:
                both = run(busy, args.seconds, args.processes, own=quiet)
            mixed.append(report(f"round {r}, mixed: {args.busy} demo + {args.quiet} second", both))
    p99_alone = statistics.median(a["second"]["p99"] for a in alone)
    p99_mixed = statistics.median(m["second"]["p99"] for m in mixed)
    ratio = p99_mixed / p99_alone
    every = [row for part in (*alone, *mixed) for row in part.values()]
    errors = sum(row["errors"] for row in every)
    wrong = sum(row["wrong"] for row in every)
    met = errors == 0 and wrong == 0 and ratio <= 3.0
    rounds = ", ".join(
        f"{a['second']['p99']:.1f}/{m['second']['p99']:.1f}" for a, m in zip(alone, mixed, strict=True)
    )
    print(
        f"\nsecond workgroup p99 (median of {args.rounds} round(s); alone/mixed per round: {rounds}): "
        f"alone {p99_alone:.1f} ms, mixed {p99_mixed:.1f} ms, "
        f"ratio {ratio:.2f} (goal ≤ 3); errors {errors}, wrong results {wrong} (goal 0 each) → "
        f"{'GOAL MET' if met else 'GOAL NOT MET'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
