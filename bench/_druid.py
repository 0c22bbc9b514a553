"""What the benches share about a real Druid: a cluster of their own (``druid/cluster.py``), the stand-in's
large project published to it once, and the CPU time its JVMs have used (the engine's share).

    .venv/bin/python bench/_druid.py publish --dir .druid-bench --cases 107000
        # starts the cluster in that folder if it is not running (and leaves it running: `python
        # druid/cluster.py stop --dir .druid-bench` stops it), publishes the large project unless Druid
        # already counts its rows
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cluster_module() -> Any:
    """``druid/cluster.py`` loaded by path (it is a script, not a package)."""
    if "pm_druid_cluster" in sys.modules:
        return sys.modules["pm_druid_cluster"]
    spec = importlib.util.spec_from_file_location("pm_druid_cluster", ROOT / "druid" / "cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pm_druid_cluster"] = module
    spec.loader.exec_module(module)
    return module


def read_env(folder: Path) -> dict[str, str]:
    values = {}
    for line in (folder / "env").read_text().splitlines():
        key, _, value = line.partition("=")
        values[key] = value
    return values


def ensure_cluster(folder: Path, *, watch_pid: int | None = None) -> tuple[dict[str, str], Any | None]:
    """The cluster in *folder*: the running one (returned with ``None``: the caller leaves it running), else
    one started now (returned with its :class:`Cluster`, which the caller stops)."""
    cluster = cluster_module().Cluster(folder)
    if cluster.running():
        return read_env(folder), None
    return cluster.start(watch_pid=watch_pid), cluster


def engine_pids(folder: Path) -> dict[str, int]:
    """The cluster's JVMs by service (ZooKeeper and the coordinator included: they run during a query too)."""
    return {svc: int(pid) for svc, pid in json.loads((folder / "pids").read_text())["pids"].items()}


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) process *pid* has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cluster_config(folder: Path) -> dict[str, dict[str, str]]:
    """Each service's processing settings as written to its runtime.properties (for the report)."""
    out: dict[str, dict[str, str]] = {}
    for props in sorted((folder / "run" / "conf").glob("*/runtime.properties")):
        keep = {}
        for line in props.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.startswith(("druid.processing.", "druid.server.http.numThreads", "druid.query.")):
                keep[key.removeprefix("druid.")] = value
        out[props.parent.name] = keep
    return out


def large_project(cases: int) -> tuple[Any, Any, Any]:
    """(store, workgroup database, project record) of the stand-in's large project of *cases* cases, built
    in-process exactly as ``python -m pm_sandbox --large-project-cases`` builds it."""
    from pm_sandbox.data.store import LARGE_PROJECT_NAME, build_store

    store = build_store(cases=5, seal=False, large_cases=cases)
    wg = next(w for w in store.workgroups() if w.key == "demo")
    record = next(p for p in wg.projects if p.name == LARGE_PROJECT_NAME)
    return store, store.database(wg.id), record


def publish_large(cases: int, broker: str, coordinator: str, **options: Any) -> dict[str, int]:
    """Publish the large project of *cases* cases unless Druid already counts every row of its tables;
    returns the tables' row counts."""
    from pm_sandbox.druid_publish import _count, _quote, publish_tables

    store, db, record = large_project(cases)
    try:
        rows = dict(record.rows)
        if all(_count(broker, f"SELECT COUNT(*) FROM {_quote(n)}") == r for n, r in rows.items()):
            return rows
        tables = {n: db.sql(f"SELECT * FROM druid.{_quote(n)}").to_arrow_table() for n in record.tables}
        lookups = {
            n: {str(k): str(v) for k, v in db.execute(f"SELECT k, v FROM lookup.{_quote(n)}").fetchall()}
            for n in record.lookups
        }
        t0 = time.monotonic()
        publish_tables(tables, lookups, coordinator_url=coordinator, broker_url=broker, **options)
        print(f"published {cases:,} cases ({rows}) in {time.monotonic() - t0:.0f} s", flush=True)
        return rows
    finally:
        store.close()


def _sql(broker: str, sql: str) -> list[list[Any]]:
    import urllib.request

    request = urllib.request.Request(
        broker + "/druid/v2/sql",
        data=json.dumps({"query": sql, "resultFormat": "array"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        rows: list[list[Any]] = json.loads(answer.read())
        return rows


def vertex_tables(broker: str) -> list[str]:
    """The task tables Druid holds."""
    sql = (
        "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'druid' "
        "AND TABLE_NAME LIKE '%\\_vertex' ESCAPE '\\'"
    )
    return [str(r[0]) for r in _sql(broker, sql)]


def segments(broker: str, table: str) -> list[tuple[str, int]]:
    """The table's segments as (interval start, rows), from Druid's sys.segments."""
    sql = (
        'SELECT "start", num_rows FROM sys.segments WHERE datasource = '
        f"'{table}' AND is_active = 1 ORDER BY \"start\""
    )
    return [(str(s), int(n)) for s, n in _sql(broker, sql)]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["publish", "segments"])
    parser.add_argument("--dir", type=Path, default=ROOT / ".druid-bench")
    parser.add_argument("--cases", type=int, default=107_000)
    args = parser.parse_args()
    env, _ = ensure_cluster(args.dir)
    broker, coordinator = env["PM_DRUID_URL"], env["PM_DRUID_COORDINATOR_URL"]
    if args.command == "publish":
        rows = publish_large(args.cases, broker, coordinator)
        print(json.dumps(rows))
    else:
        _, _, record = large_project(args.cases)
        for name in record.tables:
            segs = segments(broker, name)
            print(name, len(segs), "segments, rows", [n for _, n in segs])


if __name__ == "__main__":
    main()
