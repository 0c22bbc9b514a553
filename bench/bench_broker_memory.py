"""Does any answer exhaust Druid's broker? Every answer of docs/mining.md with ``large_subqueries=True`` on a
large generated project published to a real Druid 33, and after each one the broker's health.

Issue 35, point 5: with ``large_subqueries=True`` raising ``maxSubqueryRows`` to 10,000,000, a broker with a
512 MB heap died (``OutOfMemoryError``) on a 107,000-case project (1M tasks). ``large_subqueries=True`` now
sends ``maxSubqueryBytes: "auto"`` (a budget the broker derives from its heap); this bench shows that every
answer either runs or is refused with a ``QueryError`` naming what to raise, and counts
broker deaths (goal: 0).

The proof (not to be run on the shared Druid the tests use; it starts its own cluster with a 512 MB broker):

    nice .venv/bin/python bench/bench_broker_memory.py --cases 107000 --own-cluster /tmp/druid-bench
        # starts druid/cluster.py there with PM_DRUID_BROKER_HEAP_MB=512 (--broker-heap-mb), publishes the
        # sandbox's large project (1M tasks), asks every answer, stops the cluster

At a small size against a running cluster (``PM_DRUID_URL``, ``PM_DRUID_COORDINATOR_URL``; ``make druid``):

    .venv/bin/python bench/bench_broker_memory.py --cases 2000
        # publishes the large project's three tables and lookups, asks, then drops the tables again

The large project is the sandbox's ``--large-project-cases`` project, rebuilt in-process
(:func:`pm_sandbox.data.store.build_store`) and published with
:mod:`pm_sandbox.druid_publish`. Nothing here asserts a speed; the exit status is 1 when the broker
died or an answer failed otherwise than by a refusal naming ``large_subqueries`` or the broker heap.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: a shared cluster is not asked to hold a project larger than this (the 1M-task proof needs its own)
SHARED_MAX_CASES = 20_000


def _cluster_module() -> Any:
    spec = importlib.util.spec_from_file_location("pm_druid_cluster", ROOT / "druid" / "cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pm_druid_cluster"] = module
    spec.loader.exec_module(module)
    return module


def _healthy(broker: str) -> bool:
    try:
        with urllib.request.urlopen(f"{broker}/status/health", timeout=30) as answer:
            return answer.read().strip() == b"true"
    except OSError:
        return False


def _drop(coordinator: str, names: list[str]) -> None:
    """Mark the bench's datasources unused (a shared cluster is left as it was found)."""
    for name in names:
        request = urllib.request.Request(
            f"{coordinator}/druid/coordinator/v1/datasources/{urllib.parse.quote(name)}", method="DELETE"
        )
        try:
            urllib.request.urlopen(request, timeout=60).close()
        except OSError as exc:
            print(f"  could not drop {name}: {exc}")


def answers(log: Any) -> dict[str, Callable[[], Any]]:
    """Every answer of docs/mining.md's table, plus the ones that inline (a case filter on the task table)."""
    acts = log.activities()
    first, second = (str(a) for a in acts.sort_values("executions", ascending=False)["activity"][:2])
    wide = log.case_duration(min="0 s")  # every case, through a semi-join: the largest inlined subquery
    return {
        "summary": log.summary,
        "variants": log.variants,
        "throughput": lambda: log.throughput(by="P1M"),
        "distribution": log.distribution,
        "activities": log.activities,
        "processing_and_waiting": log.processing_and_waiting,
        "transitions": log.transitions,
        "bottlenecks": log.bottlenecks,
        "rework": log.rework,
        "cases_over_time": log.cases_over_time,
        "conformance": lambda: log.conformance([(first, second)]),
        "process_map": log.process_map,
        "endpoints": log.endpoints,
        "trace_lengths": log.trace_lengths,
        "resources": log.resources,
        "resources_by_activity": lambda: log.resources(by="activity"),
        "handovers": log.handovers,
        "resource_map": log.resource_map,
        "arrivals": log.arrivals,
        "work_in_progress": log.work_in_progress,
        "dotted_data": log.dotted_data,
        "performance_spectrum": lambda: log.performance_spectrum(first, second),
        "case_duration>activities (semi-join)": wide.activities,
        "case_duration>transitions (semi-join)": wide.transitions,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", type=int, default=2_000, help="cases of the large project (107000: 1M tasks)"
    )
    parser.add_argument(
        "--own-cluster", type=Path, help="start a Druid of its own in this folder, then stop it"
    )
    parser.add_argument("--broker-heap-mb", type=int, default=512, help="its broker's heap (--own-cluster)")
    args = parser.parse_args()

    import pm_notebook
    from pm_notebook._models import Project
    from pm_notebook.errors import QueryError
    from pm_sandbox.data.store import LARGE_PROJECT_NAME, build_store
    from pm_sandbox.druid_publish import publish_tables

    cluster = None
    if args.own_cluster is not None:
        os.environ["PM_DRUID_BROKER_HEAP_MB"] = str(args.broker_heap_mb)
        cluster = _cluster_module().Cluster(args.own_cluster)
        env = cluster.start(watch_pid=os.getpid())
        broker, coordinator = env["PM_DRUID_URL"], env["PM_DRUID_COORDINATOR_URL"]
    else:
        if args.cases > SHARED_MAX_CASES:
            parser.error(f"more than {SHARED_MAX_CASES:,} cases needs --own-cluster (a Druid of its own)")
        broker, coordinator = os.environ["PM_DRUID_URL"], os.environ["PM_DRUID_COORDINATOR_URL"]

    store = build_store(cases=5, seal=False, large_cases=args.cases)
    names: list[str] = []
    deaths = failures = 0
    try:
        wg = next(w for w in store.workgroups() if w.key == "demo")
        record = next(p for p in wg.projects if p.name == LARGE_PROJECT_NAME)
        db = store.database(wg.id)
        tables = {n: db.sql(f'SELECT * FROM druid."{n}"').to_arrow_table() for n in record.tables}
        lookups = {
            n: {str(k): str(v) for k, v in db.execute(f'SELECT k, v FROM lookup."{n}"').fetchall()}
            for n in record.lookups
        }
        names = list(tables)
        started = time.monotonic()
        publish_tables(tables, lookups, coordinator_url=coordinator, broker_url=broker)
        tasks = tables[f"{record.id}_vertex"].num_rows
        print(f"published {args.cases:,} cases, {tasks:,} tasks in {time.monotonic() - started:.0f} s")
        del tables

        conn = pm_notebook.connect(
            "http://127.0.0.1:9",
            "http://127.0.0.1:9/realms/none",
            "druid",
            "druid",
            f"jdbc:avatica:remote:url={broker}/druid/v2/sql/avatica/",
            use_keyring=False,
        )
        log = conn.mining(Project(id=record.id, name=record.name), large_subqueries=True).with_excluded()
        for name, ask in answers(log).items():
            t0 = time.monotonic()
            try:
                ask()
                outcome = "runs"
            except QueryError as exc:
                hint = exc.hint or ""
                named = any(w in hint for w in ("large_subqueries", "heap", "numMergeBuffers"))
                outcome = f"refused ({str(exc).splitlines()[0][:90]})" + ("" if named else " [names nothing]")
                failures += not named
            alive = _healthy(broker)
            deaths += not alive
            print(
                f"  {name:40s} {time.monotonic() - t0:7.1f} s  {outcome}  broker {'up' if alive else 'DOWN'}"
            )
            if not alive:
                break
        # issue 36: with the default settings (no large_subqueries) the two window answers split the log in
        # parts of at most maxSubqueryRows / 2 tasks and run far past 100,000 tasks
        plain = conn.mining(Project(id=record.id, name=record.name))
        for name, ask in {
            "handovers (default)": plain.handovers,
            "resource_map (default)": plain.resource_map,
        }.items():
            t0 = time.monotonic()
            try:
                got = ask()
                parts = got.attrs.get("parts", "") if hasattr(got, "attrs") else ""
                outcome = f"runs{f' in {parts} parts' if parts else ''}"
            except QueryError as exc:
                outcome = f"refused ({str(exc).splitlines()[0][:90]})"
                failures += 1
            alive = _healthy(broker)
            deaths += not alive
            print(
                f"  {name:40s} {time.monotonic() - t0:7.1f} s  {outcome}  broker {'up' if alive else 'DOWN'}"
            )
        conn.close()
    finally:
        if cluster is not None:
            cluster.stop(quiet=True)
        elif names:
            _drop(coordinator, names)
        store.close()
    print(f"broker deaths: {deaths}; answers failed without naming what to raise: {failures}")
    return 1 if deaths or failures else 0


if __name__ == "__main__":
    sys.exit(main())
