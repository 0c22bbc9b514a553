"""Upload benchmark: a DataFrame of N events to queryable tables, ours vs the vendor SDK's way.

Usage::

    .venv/bin/python bench/bench_upload.py                    # 1,000,000 events
    .venv/bin/python bench/bench_upload.py --events 200000    # quicker

It starts one sandbox (uploads up to 4 GiB), warms it with a 1,000-event upload, then runs each path in its
own Python process so peak memory is per path. Each worker first builds the same deterministic DataFrame (N
events, 10 per case, 20 activities, a text dimension and a numeric metric) and notes its RSS; then, timed,
until ``COUNT(*)`` of the new project's task table answers N:

* ``ours``: ``conn.create_project`` + ``conn.upload(frame)`` (mapping inferred by name, the frame streamed as
  CSV slices, polling with backoff), then the COUNT query.
* ``sdk``: the vendor SDK 2.38.1's way (its modules from the wheel): ``Workgroup.create_project``, a
  ``ColumnMapping`` built by column index, ``frame.to_csv(path)``, ``Project.add_file(path)``, then
  ``get_file_ingestion_status`` polled every 0.25 s, then the same COUNT query.

"upload +MiB" is the growth of the worker's peak RSS (VmHWM, reset once the frame exists) over its RSS then,
read as soon as the file is ingested (what the upload costs the client); "peak +MiB" the same at the end,
after the COUNT query (which loads the SQL transport). The sandbox (another process) shares this machine's
cores.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SDK = "igrafx-mining-sdk==2.38.1"
SDK_FILES = (
    "api_connector.py",
    "workgroup.py",
    "project.py",
    "datasource.py",
    "graph.py",
    "column_mapping.py",
)


MARKS: dict[str, float] = {}


def _status_mib(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def _rss_mib() -> float:
    return _status_mib("VmRSS")


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS, so building the frame does not count."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:  # not Linux: the peak then includes building the frame (over-estimates both paths)
        pass


def _peak_mib() -> float:
    return _status_mib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_frame(events: int):
    """N events, 10 per case, whole-second timestamps (so the SDK's to_csv and format agree)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    case = np.arange(events) // 10
    start = pd.Timestamp("2025-01-01") + pd.to_timedelta(
        case * 3600 + (np.arange(events) % 10) * 60, unit="s"
    )
    return pd.DataFrame(
        {
            "case_id": pd.Series(case).map("case-{:07d}".format),
            "activity": pd.Categorical.from_codes(
                rng.integers(0, 20, events), [f"Task {i:02d}" for i in range(20)]
            ),
            "timestamp": start,
            "resource": pd.Categorical.from_codes(
                rng.integers(0, 50, events), [f"user{i}" for i in range(50)]
            ),
            "cost": rng.random(events).round(2) * 100,
        }
    )


def _connect(env: dict):
    from pm_notebook import connect

    conn = connect(
        env["base_url"],
        env["auth_url"],
        env["client_id"],
        env["client_secret"],
        env["jdbc_url"],
        use_keyring=False,
    )
    conn.sql_transport = "druid"
    return conn


def _count(conn, pid: str) -> int:
    return int(conn.query(f'SELECT COUNT(*) AS n FROM "{pid}_vertex"')["n"].iloc[0])


def run_ours(env: dict, frame) -> str:
    conn = _connect(env)
    project = conn.create_project("bench ours")
    conn.upload(project, frame, progress=False)
    MARKS["uploaded_peak"] = _peak_mib()
    assert _count(conn, project.id) == len(frame)
    conn.close()
    return project.id


def _load_sdk(folder: Path) -> None:
    wheels = sorted(folder.glob("igrafx_mining_sdk-2.38.1-*.whl"))
    if not wheels:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                "-d",
                str(folder),
                SDK,
            ],
            check=True,
        )
        wheels = sorted(folder.glob("igrafx_mining_sdk-2.38.1-*.whl"))
    root = Path(tempfile.mkdtemp(prefix="sdk-"))
    (root / "igrafx_mining_sdk").mkdir()
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in SDK_FILES:
            (root / "igrafx_mining_sdk" / name).write_bytes(wheel.read(f"igrafx_mining_sdk/{name}"))
    (root / "igrafx_mining_sdk" / "__init__.py").write_text("")
    sys.modules["networkx"] = types.ModuleType("networkx")  # graph.py only
    sys.path.insert(0, str(root))


def run_sdk(env: dict, frame) -> str:
    from igrafx_mining_sdk.column_mapping import Column, ColumnMapping, ColumnType, FileStructure, FileType
    from igrafx_mining_sdk.workgroup import Workgroup

    sdk = Workgroup(
        env["client_id"],
        env["client_secret"],
        env["base_url"],
        env["auth_url"] + "/protocol/openid-connect/token",
    )
    project = sdk.create_project("bench sdk")
    columns = [
        Column("case_id", 0, ColumnType.CASE_ID),
        Column("activity", 1, ColumnType.TASK_NAME),
        Column("timestamp", 2, ColumnType.TIME, time_format="yyyy-MM-dd HH:mm:ss"),
        Column("resource", 3, ColumnType.DIMENSION),
        Column("cost", 4, ColumnType.METRIC),
    ]
    project.add_column_mapping(FileStructure(FileType.CSV), ColumnMapping(columns))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.csv"
        frame.to_csv(path, index=False)
        added = project.add_file(str(path))
    while (status := project.get_file_ingestion_status(added["id"])) not in ("DONE", "FAILED"):
        time.sleep(0.25)
    assert status == "DONE", project.get_file_metadata(added["id"])
    MARKS["uploaded_peak"] = _peak_mib()
    conn = _connect(env)
    assert _count(conn, project.id) == len(frame)
    conn.close()
    return project.id


def worker(path: str, env: dict, events: int, sdk_cache: Path) -> dict:
    if path == "sdk":
        _load_sdk(sdk_cache)
    frame = make_frame(events)
    frame_mib = frame.memory_usage(deep=True).sum() / 2**20
    _reset_peak()
    base = _rss_mib()
    started = time.perf_counter()
    (run_ours if path == "ours" else run_sdk)(env, frame)
    seconds = time.perf_counter() - started
    return {
        "path": path,
        "seconds": seconds,
        "upload_growth_mib": max(0.0, MARKS["uploaded_peak"] - base),
        "peak_growth_mib": max(0.0, _peak_mib() - base),
        "frame_mib": frame_mib,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--paths", default="ours,sdk")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--env", default=None, help=argparse.SUPPRESS)
    p.add_argument("--sdk-cache", type=Path, default=Path(tempfile.gettempdir()) / "pm-bench-sdk")
    args = p.parse_args()
    args.sdk_cache.mkdir(parents=True, exist_ok=True)
    if args.worker:
        print(json.dumps(worker(args.worker, json.loads(args.env), args.events, args.sdk_cache)))
        return 0

    sys.path.insert(0, str(HERE.parent))
    from pm_sandbox import start

    sb = start(cases=10, extra_args=("--max-upload-bytes", str(4 << 30)))
    wg = sb.workgroups["demo"]
    env = {
        "base_url": sb.base_url,
        "auth_url": sb.auth_url,
        "client_id": wg.client_id,
        "client_secret": wg.client_secret,
        "jdbc_url": sb.jdbc_url,
    }
    results = []
    try:
        # one small upload first (not reported): the sandbox's first ingestion and query pay one-off costs
        for path in ["warmup", *args.paths.split(",")]:
            events = 1000 if path == "warmup" else args.events
            name = "ours" if path == "warmup" else path
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                name,
                "--env",
                json.dumps(env),
                "--events",
                str(events),
            ]
            cmd += ["--sdk-cache", str(args.sdk_cache)]
            out = subprocess.run(
                cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(HERE.parent)}
            )
            if out.returncode != 0:
                print(f"{path}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
                continue
            if path != "warmup":
                results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        sb.stop()
    print(f"{args.events:,} events, DataFrame → queryable tables")
    print(f"{'path':<6} {'seconds':>8} {'upload +MiB':>12} {'peak +MiB':>10} {'frame MiB':>10}")
    for r in results:
        print(
            f"{r['path']:<6} {r['seconds']:>8.1f} {r['upload_growth_mib']:>12.0f} "
            f"{r['peak_growth_mib']:>10.0f} {r['frame_mib']:>10.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
