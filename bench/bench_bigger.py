"""Results bigger than memory: ``to_parquet`` and ``query_chunks`` of 10,000,000 rows × 8 columns on every
transport, with the client's peak RSS measured against its chunk size.

Usage::

    .venv/bin/python bench/bench_bigger.py                        # 10M rows, chunks of 50k and 200k rows
    .venv/bin/python bench/bench_bigger.py --rows 1000000 --paths druid --chunks 20000,80000   # quick

One sandbox is started with a large project (``--large-project-cases``, sized from ``--rows``); the time
it takes to generate is reported. Then each (transport, mode, chunk size) runs in a fresh Python process,
which connects and warms up (JVM start and driver load for jdbc), then samples its own RSS every few ms while
it runs ``to_parquet`` (mode ``parquet``) or consumes and discards ``query_chunks`` (mode ``chunks``) of the
big query. "peak − base" is the highest RSS seen minus the RSS just before the query (after warming up).
"chunk MB" is one chunk's size as Arrow (bytes per row measured on a sample of the same columns × chunk
rows), and "k = (peak − base) / chunk MB" relates the growth to it: a few chunks plus a constant, following
the chunk size, not the result. Every run checks the row count and ``SUM(duration)`` (of the Parquet file
as written, or of the chunks) against the sandbox's own answer to a ``COUNT(*)``/``SUM`` of the same rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _measure import PeakSampler, connect_env, current_rss_mb, workgroup_env  # noqa: E402  (bench/ is on sys.path)

BIG_COLUMNS = (
    "__time, enddate, duration, caseid, vertex_name, vertex_id, total_occurences_by_caseid, order_amount_lpkr"
)
VERTEX_ROWS_PER_CASE = 9.27  # the p2p template, measured (10,008,711 rows from 1,080,000 cases)
PATHS = ("druid", "avatica", "jdbc")
MODES = ("parquet", "chunks")


def big_sql(table: str, rows: int) -> str:
    """8 columns × *rows* rows of the large project's ``_vertex`` table."""
    return f'SELECT {BIG_COLUMNS} FROM "{table}" LIMIT {rows}'


# --- worker side (one transport, mode and chunk size per process)
def worker(args: argparse.Namespace) -> None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    env = json.loads(Path(args.env_json).read_text())
    conn = connect_env(env)
    transport, mode, chunk = args.worker, args.mode, args.chunk
    sql = big_sql(env["BENCH_TABLE"], args.rows)
    # Warm up (JVM start, driver load, the transport's connection) and measure the Arrow bytes of a row.
    sample = conn.query_arrow(big_sql(env["BENCH_TABLE"], 20_000), transport=transport)
    bytes_per_row = sample.nbytes / sample.num_rows
    del sample
    gc.collect()
    base = current_rss_mb()
    rows = 0
    total = 0
    with tempfile.TemporaryDirectory(dir=args.scratch) as folder:
        path = Path(folder) / "big.parquet"
        started = time.perf_counter()
        with PeakSampler() as peak:
            if mode == "parquet":
                conn.to_parquet(sql, path, transport=transport, chunk_rows=chunk)
            else:
                for frame in conn.query_chunks(sql, chunk_rows=chunk, transport=transport):
                    rows += len(frame)
                    total += int(frame["duration"].sum())
                    del frame
        seconds = time.perf_counter() - started
        if mode == "parquet":  # checked after the measure, a row group at a time
            parquet = pq.ParquetFile(path)
            rows = parquet.metadata.num_rows
            total = sum(
                pc.sum(parquet.read_row_group(i, columns=["duration"]).column(0)).as_py() or 0
                for i in range(parquet.num_row_groups)
            )
            file_mb = path.stat().st_size / 2**20
        else:
            file_mb = 0.0
    conn.close()
    result = {
        "path": transport,
        "mode": mode,
        "chunk_rows": chunk,
        "chunk_mb": chunk * bytes_per_row / 2**20,
        "seconds": seconds,
        "base_mb": base,
        "peak_mb": peak.peak_mb,
        "rows": rows,
        "sum": total,
        "file_mb": file_mb,
    }
    print("RESULT " + json.dumps(result), flush=True)


# --- parent side
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the big query (default 10M)")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated subset of {PATHS}")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {MODES}")
    parser.add_argument(
        "--chunks", default="50000,200000", help="comma-separated chunk sizes in rows (default 50000,200000)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--chunk", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--env-json", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    from pm_sandbox import start

    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    chunks = [int(c) for c in args.chunks.split(",") if c.strip()]
    cases = int(args.rows / VERTEX_ROWS_PER_CASE * 1.01) + 1
    print(f"Starting a sandbox with a large project of {cases:,} cases ...", flush=True)
    t0 = time.perf_counter()
    extra = [
        "--large-project-cases",
        str(cases),
        "--sql-max-rows",
        str(max(args.rows * 2, 5_000_000)),
        "--sql-query-timeout",
        "3600",
        "--log-level",
        "info",
    ]
    results = []
    with start(extra_args=extra, timeout=900) as sb:
        ready = time.perf_counter() - t0
        found = re.search(r"sandbox data ready in ([0-9.]+)s", Path(sb.log_path).read_text(errors="replace"))
        generated = float(found.group(1)) if found else float("nan")
        print(f"  data generated in {generated:.1f} s, sandbox ready in {ready:.1f} s", flush=True)
        demo = sb.workgroups["demo"]
        table = f"{demo.project_ids[-1]}_vertex"
        env = workgroup_env(sb, demo, BENCH_TABLE=table)
        env_json = Path(sb.env_file).with_name("bench-bigger-env.json")
        env_json.write_text(json.dumps(env))
        answer = sandbox_answer(sb, demo, table, args.rows)
        print(f"  the sandbox's answer: {answer['rows']:,} rows, SUM(duration) {answer['sum']:,}", flush=True)
        scratch = Path(sb.env_file).parent
        for path, mode, chunk in ((p, m, c) for p in paths for m in modes for c in chunks):
            cmd = [sys.executable, __file__, "--worker", path, "--mode", mode, "--chunk", str(chunk)]
            cmd += ["--rows", str(args.rows), "--env-json", str(env_json), "--scratch", str(scratch)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if proc.returncode or line is None:
                print(f"  {path} {mode} {chunk}: FAILED\n{proc.stderr[-3000:]}", flush=True)
                continue
            r = json.loads(line[len("RESULT ") :])
            r["ok"] = r["rows"] == answer["rows"] and r["sum"] == answer["sum"]
            results.append(r)
            print(
                f"  {path:8s} {mode:8s} chunk {chunk:>7,}: {r['rows']:,} rows in {r['seconds']:.1f} s, "
                f"peak − base {r['peak_mb'] - r['base_mb']:.0f} MB, {'ok' if r['ok'] else 'WRONG'}",
                flush=True,
            )
        env_json.unlink()
    print(
        "RESULTS " + json.dumps({"rows": args.rows, "generated": generated, "cases": cases, "runs": results})
    )
    report(results, args.rows, generated, cases)
    return 0 if results and all(r["ok"] for r in results) else 1


def sandbox_answer(sb, demo, table: str, rows: int) -> dict:
    """The row count and ``SUM(duration)`` of the big query's rows, computed by the sandbox itself."""
    import requests

    url = sb.env["PM_JDBC_URL"].split("url=", 1)[1].split("/druid/", 1)[0] + "/druid/v2/sql/"
    sql = f'SELECT COUNT(*) AS n, SUM(duration) AS s FROM (SELECT duration FROM "{table}" LIMIT {rows})'
    response = requests.post(
        url,
        json={"query": sql, "resultFormat": "array"},
        auth=(demo.client_id, demo.client_secret),
        timeout=600,
    )
    response.raise_for_status()
    n, s = response.json()[0]
    return {"rows": int(n), "sum": int(s)}


def report(results: list[dict], rows: int, generated: float, cases: int) -> None:
    load = os.getloadavg()
    print()
    print(
        f"{rows:,} rows × 8 columns; sandbox data ({cases:,} cases) generated in {generated:.1f} s; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores"
    )
    print()
    print(
        "| transport | mode | chunk rows | chunk MB | time s | base MB | peak − base MB | k = growth / chunk "
        "| rows checked |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        growth = r["peak_mb"] - r["base_mb"]
        check = f"{r['rows']:,} ✓ sum" if r["ok"] else f"{r['rows']:,} ✗"
        print(
            f"| {r['path']} | {r['mode']} | {r['chunk_rows']:,} | {r['chunk_mb']:.1f} | {r['seconds']:.1f} | "
            f"{r['base_mb']:.0f} | {growth:.0f} | {growth / r['chunk_mb']:.1f} | {check} |"
        )
    fits = bound_fits(results)
    if fits:
        print()
        print("Growth = C + k × chunk MB, through the smallest and largest chunk of each transport and mode:")
        for (path, mode), (c, k) in fits.items():
            print(f"  {path:8s} {mode:8s} C = {c:.0f} MB, k = {k:.1f}")
        print(
            f"  bound over all: peak − base ≤ {max(c for c, _ in fits.values()):.0f} MB + "
            f"{max(k for _, k in fits.values()):.1f} × chunk MB"
        )


def bound_fits(results: list[dict]) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (transport, mode) with two chunk sizes or more: the constant C (MB) and slope k of the growth."""
    fits = {}
    for key in dict.fromkeys((r["path"], r["mode"]) for r in results):
        runs = sorted((r for r in results if (r["path"], r["mode"]) == key), key=lambda r: r["chunk_mb"])
        if len(runs) < 2 or runs[-1]["chunk_mb"] == runs[0]["chunk_mb"]:
            continue
        small, large = runs[0], runs[-1]
        grow = [r["peak_mb"] - r["base_mb"] for r in (small, large)]
        k = max(0.0, (grow[1] - grow[0]) / (large["chunk_mb"] - small["chunk_mb"]))
        fits[key] = (max(grow[0] - k * small["chunk_mb"], 0.0), k)
    return fits


if __name__ == "__main__":
    sys.exit(main())
