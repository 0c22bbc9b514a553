"""First answer fast: ``%load_ext pm_notebook`` → first DataFrame, in a fresh process, against a sandbox.

Usage::

    .venv/bin/python bench/bench_first_answer.py              # JVM-free (auto) and jdbc, 3 processes each
    .venv/bin/python bench/bench_first_answer.py --importtime # also the slowest imports of the first run

Each run is a new Python process that first builds an IPython shell (a notebook kernel has one before the
user types anything: not timed), then times ``%load_ext pm_notebook`` plus ``%pmsql SELECT ...`` up to the
DataFrame in hand: imports, token, connection, the transport's start (the JVM's included for ``jdbc``) and
the query. Goals (issue 17): < 1 s JVM-free, < 3 s with JDBC.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOALS = {"auto": 1.0, "avatica": 1.0, "druid": 1.0, "jdbc": 3.0}

CHILD = r"""
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
c = Config()
c.HistoryAccessor.enabled = False
shell = InteractiveShell(config=c)
sql = sys.argv[1]
transport = sys.argv[2]
t0 = time.perf_counter()
shell.run_line_magic("load_ext", "pm_notebook")
loaded = time.perf_counter()
if transport != "auto":
    shell.run_line_magic("config", f"PmSql.transport = {transport!r}")
frame = shell.run_line_magic("pmsql", sql)
done = time.perf_counter()
served = frame.attrs.get("transport")
out = {"load_ext": loaded - t0, "total": done - t0, "rows": len(frame), "via": served}
print("RESULT " + json.dumps(out))
"""


def run_child(env: dict[str, str], sql: str, transport: str, importtime: bool) -> dict:
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", CHILD, sql, transport]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        raise SystemExit(f"{transport}: the child failed\n{proc.stderr[-3000:]}")
    out = json.loads(line[len("RESULT ") :])
    if importtime:
        out["imports"] = slowest_imports(proc.stderr)
    return out


def slowest_imports(stderr: str, top: int = 15) -> list[tuple[int, str]]:
    """The top-level packages with the largest cumulative import time (µs) in ``-X importtime`` output."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        if not name.startswith(" ") and "." not in name.strip():
            rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per transport (median)")
    parser.add_argument(
        "--transports", default="auto,jdbc", help="comma-separated: auto, druid, avatica, jdbc"
    )
    parser.add_argument("--importtime", action="store_true", help="print the slowest imports of one run")
    args = parser.parse_args(argv)

    from pm_sandbox import start

    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    with start(cases=300) as sb:
        demo = sb.workgroups["demo"]
        env = {**os.environ, **sb.env, "PM_CLIENT_ID": demo.client_id, "PM_CLIENT_SECRET": demo.client_secret}
        env["PYTHONPATH"] = str(ROOT)
        sql = f'SELECT vertex_name, COUNT(*) AS n FROM "{demo.project_ids[0]}_vertex" GROUP BY vertex_name'
        results: dict[str, list[dict]] = {t: [] for t in transports}
        for number in range(args.runs):  # interleaved: a slow spell of the machine hits every transport
            for transport in transports:
                r = run_child(env, sql, transport, args.importtime and number == 0)
                results[transport].append(r)
                print(
                    f"  run {number + 1} {transport:8s} load_ext {r['load_ext']:.2f} s, first DataFrame "
                    f"{r['total']:.2f} s ({r['rows']} rows via {r['via']})",
                    flush=True,
                )
                for micros, name in r.get("imports", []):
                    print(f"      import {name:28s} {micros / 1e6:6.3f} s")
    print(
        f"\n%load_ext pm_notebook → first DataFrame, fresh process, median of {args.runs} (load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):"
    )
    for transport, runs in results.items():
        total = statistics.median(r["total"] for r in runs)
        load = statistics.median(r["load_ext"] for r in runs)
        goal = GOALS[transport]
        verdict = "PASS" if total < goal else "FAIL"
        print(f"  {transport:8s} {total:5.2f} s (load_ext {load:.2f} s)   goal < {goal:.0f} s  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
