"""One statement shape against another, on a real Druid and on the stand-in, over the same 1M-task project.

Issue 37, point 3: each change to how an answer's SQL is shaped is measured on both engines. A shape is a way
of opening the log (``SHAPES``); every answer of ``ANSWERS`` runs under each shape, interleaved (answer by
answer, shape by shape, ``--rounds`` times), and the table gives each one's median wall time and the engine's
CPU time (Druid's JVMs or the stand-in's process, from /proc) per engine, with the load average of the
machine. The answers of both shapes are compared (the same frame), so a faster shape is also a correct one.

    nice .venv/bin/python bench/bench_shapes.py --druid .druid-bench --cases 107000 --rounds 3

Shapes today: ``excluded as subquery`` (the excluded cases left out of the task and transition tables by
``caseid NOT IN (SELECT caseid FROM <cases> WHERE LOOKUP(...) IS NOT NULL)``, which Druid plans as a join) and
``excluded as list`` (their ids, read once when the log opens, as ``NOT IN (?, ...)``: a filter). Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _druid  # noqa: E402  (bench/ is on sys.path)
from _measure import connect_env  # noqa: E402

LARGE = "Purchase to Pay (large)"

ANSWERS: dict[str, Callable[[Any], Any]] = {
    "activities": lambda log: log.activities(),
    "transitions": lambda log: log.transitions(),
    "bottlenecks": lambda log: log.bottlenecks(k=5, metric="median", min_count=5),
    "rework": lambda log: log.rework(by="activity"),
    "endpoints": lambda log: log.endpoints(),
    "resources": lambda log: log.resources(),
    "summary": lambda log: log.summary(),
}


def _as_subquery(log: Any) -> Any:
    return log._with(log._filters.with_excluded_ids(None))  # the shape before issue 37


SHAPES: dict[str, Callable[[Any], Any]] = {
    "excluded as subquery": _as_subquery,
    "excluded as list": lambda log: log,
}


class _Source:
    """SQL to *sql*, the project list to *rest* (the stand-in holds the same project as Druid)."""

    def __init__(self, sql: Any, rest: Any) -> None:
        self.sql, self.rest = sql, rest

    def query(self, *args: Any, **kw: Any) -> Any:
        return self.sql.query(*args, **kw)

    def query_chunks(self, *args: Any, **kw: Any) -> Any:
        return self.sql.query_chunks(*args, **kw)

    def resolve_transport(self, name: str | None = None) -> str:
        return str(self.sql.resolve_transport(name))

    def projects(self) -> Any:
        return self.rest.projects()

    def column_names(self, project: Any) -> Any:
        return self.rest.column_names(project)


def _same(a: Any, b: Any) -> bool:
    import pandas as pd

    try:
        pd.testing.assert_frame_equal(
            a.reset_index(drop=True), b.reset_index(drop=True), check_exact=False, rtol=1e-9
        )
    except AssertionError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--druid", type=Path, required=True, help="the folder of a running druid/cluster.py")
    parser.add_argument("--cases", type=int, default=107_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--answers", default=",".join(ANSWERS))
    args = parser.parse_args()
    import pm_notebook
    from pm_notebook.mining import ProcessLog
    from pm_notebook.sandbox import start

    denv = _druid.read_env(args.druid)
    broker = denv["PM_DRUID_URL"]
    _druid.publish_large(args.cases, broker, denv["PM_DRUID_COORDINATOR_URL"])
    druid_pids = list(_druid.engine_pids(args.druid).values())
    names = [a for a in args.answers.split(",") if a]
    with start(cases=5, extra_args=["--large-project-cases", str(args.cases)], timeout=3600) as sb:
        rest = connect_env(sb.env)
        druid = pm_notebook.connect(
            "http://127.0.0.1:9",
            "http://127.0.0.1:9/realms/none",
            "druid",
            "druid",
            f"jdbc:avatica:remote:url={broker}/druid/v2/sql/avatica/",
            use_keyring=False,
        )
        engines = {
            "druid": (ProcessLog.open(_Source(druid, rest), LARGE), druid_pids),
            "stand-in": (ProcessLog.open(rest, LARGE), [sb.pid]),
        }
        logs = {(e, s): make(log) for e, (log, _) in engines.items() for s, make in SHAPES.items()}
        times: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
        answers: dict[tuple[str, str, str], Any] = {}
        for _ in range(args.rounds):
            for name in names:
                for engine, (_, pids) in engines.items():
                    for shape in SHAPES:
                        cpu0 = sum(_druid.cpu_s(p) for p in pids)
                        t0 = time.perf_counter()
                        answers[engine, shape, name] = ANSWERS[name](logs[engine, shape])
                        wall = time.perf_counter() - t0
                        cpu = sum(_druid.cpu_s(p) for p in pids) - cpu0
                        times.setdefault((engine, shape, name), []).append((wall, cpu, os.getloadavg()[0]))
        druid.close()
        rest.close()
    shapes = list(SHAPES)
    print(f"\n{args.rounds} interleaved rounds, medians; engine CPU = Druid's JVMs / the stand-in's process")
    head = f"{'answer':<14}{'engine':<10}" + "".join(f"{s + ' s':>24}{'cpu':>7}" for s in shapes)
    print(head + f"{'ratio':>8}{'load':>6}  same answer?")
    for name in names:
        for engine in engines:
            cells, walls = "", []
            loads = []
            for shape in shapes:
                runs = times[engine, shape, name]
                wall = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                loads += [r[2] for r in runs]
                walls.append(wall)
                cells += f"{wall:>24.3f}{cpu:>7.2f}"
            same = _same(answers[engine, shapes[0], name], answers[engine, shapes[1], name])
            print(
                f"{name:<14}{engine:<10}{cells}{walls[0] / walls[1]:>7.2f}x{statistics.median(loads):>6.1f}"
                f"  {'yes' if same else 'NO'}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
