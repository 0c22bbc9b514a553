"""SQL → DataFrame benchmark: our transports vs the iGrafx SDK's path vs in-process DuckDB, in one run.

Usage::

    .venv/bin/python bench/bench_client.py                 # 1,000,000 rows (the SDK path alone takes ~70 s)
    .venv/bin/python bench/bench_client.py --rows 100000   # quick run
    .venv/bin/python bench/bench_client.py --paths druid,avatica --rows 200000

It starts one sandbox big enough for ``--rows`` rows of a ``_vertex`` table, then measures each path in its
own Python process (fair peak RSS): connect and warm up (JVM start, driver load and first query excluded, as
in the reference measurements), run the 10-row aggregate ``--small-repeat`` times (median latency), then the
big query (``--repeat`` times, median; with more than one, the issue 17 goals also show the first run of
each process apart from the later ones, each against the limit's own). Peak RSS is read from
``getrusage``; "mem ×" is the growth of peak RSS during one more run of the big query after the timed ones,
the previous result still held (as a notebook holds it), divided by the final DataFrame's deep size: what a
query of that size needs once the process has run one. "mem ×1" is the same for the process's first big
query, which also pays one-time costs: the JVM heap's first use (jdbc), the allocators' arenas that later
queries reuse.

Paths: ``druid``, ``avatica``, ``jdbc`` (ours, through ``Connection.query``); ``sdk`` (the SDK's own way, as
its ``Datasource.request`` does: jaydebeapi on the original JDBC URL without fetch_size, ``fetchall()``, then
``pandas.DataFrame(rows)``); ``duckdb`` (the same data in-process, DuckDB → Arrow → pandas: the limit);
``replay`` (our druid path against a tiny server replaying the sandbox's recorded answers: the client's own
cost, apart from the stand-in's query and encoding, which share this machine's cores with the client);
``replay-avatica`` (the same for our avatica path: the sandbox's Avatica frames recorded, then replayed);
``replay-jdbc`` (our jdbc path, the real driver, against the same replayed Avatica frames);
``raw`` (the sandbox's answer received but not parsed: the stand-in's floor); ``raw-avatica`` (the same
for the Avatica protocol: our avatica transport's requests, each frame's body received, its rows counted).
``--sql-compression-level -1`` makes the sandbox gzip its answers as Druid's broker does by default (the
replayed answers stay uncompressed: the replay paths keep measuring the client's parsing alone).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _measure import PeakSampler, connect_env, current_rss_mb, peak_rss_mb, workgroup_env  # noqa: E402  (bench/ is on sys.path)

PATHS = (
    "raw",
    "raw-avatica",
    "druid",
    "avatica",
    "jdbc",
    "sdk",
    "duckdb",
    "replay",
    "replay-avatica",
    "replay-jdbc",
)
BIG_COLUMNS = (
    "__time, enddate, duration, caseid, vertex_name, vertex_id, total_occurences_by_caseid, order_amount_lpkr"
)
VERTEX_ROWS_PER_CASE = 9.0  # p2p template, measured; the sandbox is sized from it with a margin


def big_sql(table: str, rows: int) -> str:
    """8 columns × *rows* rows of a ``_vertex`` table."""
    return f'SELECT {BIG_COLUMNS} FROM "{table}" LIMIT {rows}'


def small_sql(table: str) -> str:
    """A 10-row aggregate."""
    return (
        f'SELECT vertex_name, COUNT(*) AS n, AVG(duration) AS mean_ms FROM "{table}" '
        "GROUP BY vertex_name ORDER BY n DESC LIMIT 10"
    )


class _RawResult:
    """Stands in for a DataFrame for the "raw" path: the row count and nothing else."""

    def __init__(self, lines: int) -> None:
        self.rows = max(0, lines - 3 - 1)  # minus the three header lines and the final empty line

    def __len__(self) -> int:
        return self.rows


# --- Druid SQL requests as our transport sends them (the "raw" and "replay" paths)
def _druid_sql_url(env: dict[str, str]) -> str:
    return env["PM_JDBC_URL"].split("url=", 1)[1].split("/druid/", 1)[0] + "/druid/v2/sql/"


def _druid_request(sql: str) -> dict:
    """The Druid SQL request body our transport sends (arrayLines with the three header lines)."""
    flags = ("header", "typesHeader", "sqlTypesHeader")
    return {"query": sql, "resultFormat": "arrayLines", **dict.fromkeys(flags, True)}


def record_answers(env: dict[str, str], queries: list[str], folder: Path) -> None:
    """Save the sandbox's Druid SQL answer to each query in *folder* (``index.json`` maps query → file)."""
    import requests

    url = _druid_sql_url(env)
    index = {}
    with requests.Session() as session:
        session.auth = (env["PM_CLIENT_ID"], env["PM_CLIENT_SECRET"])
        for i, sql in enumerate(queries):
            response = session.post(url, json=_druid_request(sql))
            response.raise_for_status()
            (folder / f"{i}.body").write_bytes(response.content)
            index[sql] = f"{i}.body"
    (folder / "index.json").write_text(json.dumps(index))


def record_avatica(env: dict[str, str], queries: list[str], folder: Path, frame_rows: int = 5000) -> None:
    """Save the sandbox's Avatica answers to each query (``prepareAndExecute``, then every ``fetch`` by
    offset) in *folder* (``avatica.json`` maps query → {offset: file}), as our avatica transport asks."""
    import uuid

    import orjson
    import requests

    from pm_notebook.sql import avatica_protocol as proto

    url = env["PM_JDBC_URL"].split("url=", 1)[1].split(";", 1)[0]
    index: dict[str, dict[str, str]] = {}
    cid = str(uuid.uuid4())

    def call(session: requests.Session, message: dict) -> bytes:
        response = session.post(url, data=orjson.dumps(message), headers={"Content-Type": "application/json"})
        response.raise_for_status()
        return response.content

    with requests.Session() as session:
        info = {"user": env["PM_CLIENT_ID"], "password": env["PM_CLIENT_SECRET"]}
        call(session, proto.open_connection(cid, info))
        for i, sql in enumerate(queries):
            sid = orjson.loads(call(session, proto.create_statement(cid)))["statementId"]
            body = call(session, proto.prepare_and_execute(cid, sid, sql, max_rows_in_first_frame=frame_rows))
            frame = orjson.loads(body)["results"][0]["firstFrame"]
            files = {"execute": f"a{i}-execute.body"}
            (folder / files["execute"]).write_bytes(body)
            offset = len(frame["rows"])
            while not frame["done"]:
                body = call(session, proto.fetch(cid, sid, offset, frame_rows))
                name = files[str(offset)] = f"a{i}-{offset}.body"
                (folder / name).write_bytes(body)
                frame = orjson.loads(body)["frame"]
                offset += len(frame["rows"])
            index[sql] = files
        call(session, proto.close_connection(cid))
    (folder / "avatica.json").write_text(json.dumps(index))


def serve_replay(folder: Path) -> None:
    """Answer ``POST /druid/v2/sql/`` with the recorded body of the request's query (1 MiB writes); print
    the port, then serve until killed. Nothing is computed: the cost left is the client's."""
    import http.server

    index = json.loads((folder / "index.json").read_text())
    bodies = {sql: (folder / name).read_bytes() for sql, name in index.items()}
    avatica = {
        sql: {key: (folder / name).read_bytes() for key, name in files.items()}
        for sql, files in json.loads((folder / "avatica.json").read_text()).items()
    }
    statements: dict[int, str] = {}  # statement id -> the query it runs
    simple = {
        "openConnection": b'{"response":"openConnection"}',
        "connectionSync": b'{"response":"connectionSync","connProps":{"connProps":"connPropsImpl",'
        b'"autoCommit":null,"readOnly":null,"transactionIsolation":null,"catalog":null,"schema":null,'
        b'"dirty":false}}',
        "closeStatement": b'{"response":"closeStatement"}',
        "closeConnection": b'{"response":"closeConnection"}',
    }

    def avatica_answer(request: dict) -> bytes | None:
        kind = request.get("request")
        if kind in simple:
            return simple[kind]
        if kind == "createStatement":
            sid = len(statements) + 1
            statements[sid] = ""
            return json.dumps(
                {"response": "createStatement", "connectionId": request["connectionId"], "statementId": sid}
            ).encode()
        if kind == "prepareAndExecute":
            statements[request["statementId"]] = request["sql"]
            return avatica.get(request["sql"], {}).get("execute")
        if kind == "fetch":
            return avatica.get(statements.get(request["statementId"], ""), {}).get(str(request["offset"]))
        return None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and a small body go out at once, not after a delayed ACK

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            avatica_path = "/avatica" in self.path
            body = avatica_answer(request) if avatica_path else bodies.get(request.get("query"))
            if body is None:
                self.send_error(404, "no recorded answer for this query")
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            view = memoryview(body)
            for start in range(0, len(view), 1 << 20):
                self.wfile.write(view[start : start + (1 << 20)])

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


# --- worker side (one path per process)
def _runner(path: str, env: dict[str, str], cases: int):
    """Return (run(sql) -> DataFrame, close())."""
    if path in ("druid", "avatica", "jdbc", "replay", "replay-avatica", "replay-jdbc"):
        # replay: our druid path against a server that only replays the sandbox's recorded answers (the
        # client's own cost, without the stand-in's query and JSON encoding on the same cores).
        replay = path.startswith("replay")
        conn = connect_env(env, jdbc_url=env["BENCH_REPLAY_JDBC_URL"] if replay else None)
        transport = {"replay": "druid", "replay-avatica": "avatica", "replay-jdbc": "jdbc"}.get(path, path)
        return (lambda sql: conn.query(sql, transport=transport)), conn.close
    if path == "raw":
        # The sandbox's own cost: the same Druid SQL request, body read but not parsed (no DataFrame).
        import requests

        session = requests.Session()
        session.auth = (env["PM_CLIENT_ID"], env["PM_CLIENT_SECRET"])
        url = _druid_sql_url(env)

        def run_raw(sql: str):
            response = session.post(url, json=_druid_request(sql), stream=True)
            response.raise_for_status()
            # 1 MiB reads, as the druid transport does (response.content reads 10 kB at a time: 4x slower).
            # Only the line ends are counted: joining the 130 MB body into one object would add ~0.2 s of
            # allocation and copying to what is meant to be the sandbox's own cost.
            return _RawResult(sum(chunk.count(b"\n") for chunk in response.iter_content(1 << 20)))

        return run_raw, session.close
    if path == "raw-avatica":
        # The sandbox's own cost for the Avatica protocol: the requests our avatica transport sends
        # (prepareAndExecute with a 5000-row first frame, then each fetch by offset), bodies read in 1 MiB
        # pieces but rows not parsed (a frame's rows are counted by their "],[" separators: no value of
        # this table holds one, and the row count is checked against the other paths).
        import uuid

        import orjson

        from pm_notebook import _http
        from pm_notebook.sql import avatica_protocol as proto

        session = _http.sql_session()
        url = env["PM_JDBC_URL"].split("url=", 1)[1].split(";", 1)[0]
        cid = str(uuid.uuid4())

        def call(message: dict) -> bytes:
            response = session.post(
                url, data=orjson.dumps(message), headers={"Content-Type": "application/json"}, stream=True
            )
            response.raise_for_status()
            return b"".join(response.iter_content(1 << 20))

        def frame_of(body: bytes, key: str) -> tuple[int, bool]:
            rows_at = body.find(b'"rows":[')
            end = body.rfind(b"]]")
            rows = 0 if body[rows_at + 8 : rows_at + 9] == b"]" else body.count(b"],[", rows_at, end) + 1
            return rows, b'"done":true' in body[end:] or b'"done":true' in body[:rows_at]

        call(proto.open_connection(cid, {"user": env["PM_CLIENT_ID"], "password": env["PM_CLIENT_SECRET"]}))

        def run_raw_avatica(sql: str):
            sid = orjson.loads(call(proto.create_statement(cid)))["statementId"]
            rows, done = frame_of(
                call(proto.prepare_and_execute(cid, sid, sql, max_rows_in_first_frame=5000)), "firstFrame"
            )
            total = rows
            while not done:
                rows, done = frame_of(call(proto.fetch(cid, sid, total, 5000)), "frame")
                total += rows
            call(proto.close_statement(cid, sid))
            return _RawResult(total + 4)  # _RawResult counts lines: 3 header lines and the final one

        def close_raw_avatica() -> None:
            call(proto.close_connection(cid))
            session.close()

        return run_raw_avatica, close_raw_avatica
    if path == "sdk":
        import jaydebeapi
        import pandas as pd

        from pm_notebook.sql._jvm import driver_jar

        # As the SDK does it: jaydebeapi starts the JVM with the jar, URL as configured (no fetch_size).
        jconn = jaydebeapi.connect(
            "org.apache.calcite.avatica.remote.Driver",
            env["PM_JDBC_URL"],
            [env["PM_CLIENT_ID"], env["PM_CLIENT_SECRET"]],
            str(driver_jar()),
        )

        def run(sql: str):
            cursor = jconn.cursor()
            try:
                cursor.execute(sql)
                rows = cursor.fetchall()
                names = [d[0] for d in cursor.description]
            finally:
                cursor.close()
            return pd.DataFrame(rows, columns=names)

        return run, jconn.close
    if path == "duckdb":
        from pm_sandbox.data.store import build_store

        store = build_store(cases=cases, seal=False)
        db = store.database(env["PM_CLIENT_ID"]).cursor()
        db.execute("SET search_path = 'druid'")
        import pyarrow as pa

        def run_duck(sql: str):
            table = db.sql(sql).to_arrow_table()
            # The sandbox keeps low-cardinality strings dictionary-encoded (ENUM); every transport returns
            # them as plain strings, so the limit does too (same DataFrame, same dtypes).
            plain = [
                pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f
                for f in table.schema
            ]
            return table.cast(pa.schema(plain)).to_pandas()

        return run_duck, store.close
    raise SystemExit(f"unknown path {path}")


def worker(args: argparse.Namespace) -> None:
    env = json.loads(Path(args.env_json).read_text())
    table = env["BENCH_TABLE"]
    run, close = _runner(args.worker, env, args.cases)
    try:
        run(small_sql(table))  # warm-up: JVM, driver, connection, first plan
        latencies = []
        for _ in range(args.small_repeat):
            t0 = time.perf_counter()
            small = run(small_sql(table))
            latencies.append(time.perf_counter() - t0)
        times, growths = [], []
        frame = None
        # The timed runs, then (paths with a DataFrame) one more for memory only, with the previous result
        # still held as a notebook holds it: see "mem ×" above.
        memory_run = 0 if args.worker in ("raw", "raw-avatica", "sdk") else 1
        kept = None
        for number in range(args.repeat + memory_run):
            kept = frame if number == args.repeat else None
            frame = None
            gc.collect()
            baseline = current_rss_mb()
            with PeakSampler() as sampler:
                t0 = time.perf_counter()
                frame = run(big_sql(table, args.rows))
                if number < args.repeat:
                    times.append(time.perf_counter() - t0)
            growths.append(sampler.peak_mb - baseline)
        del kept
        growth_first = growths[0]
        growth = growths[-1] if memory_run else max(growths)
        assert frame is not None
        if isinstance(frame, _RawResult):
            df_mb, checksum, dtypes = 0.0, [len(frame)], []
        else:
            df_mb = frame.memory_usage(deep=True).sum() / 2**20
            checksum = [
                len(frame),
                int(frame.iloc[:, 2].astype("float64").sum()),
                int(frame.isna().sum().sum()),
            ]
            dtypes = [str(t) for t in frame.dtypes]
        out = {
            "path": args.worker,
            "rows": len(frame),
            "small_rows": len(small),
            "seconds": statistics.median(times),
            "first_seconds": times[0],
            "later_seconds": statistics.median(times[1:]) if len(times) > 1 else None,
            "all_seconds": times,
            "small_ms": statistics.median(latencies) * 1000,
            "peak_rss_mb": peak_rss_mb(),
            "growth_mb": growth,
            "growth_first_mb": growth_first,
            "df_mb": df_mb,
            "dtypes": dtypes,
            "checksum": checksum,
        }
    finally:
        close()
    print("RESULT " + json.dumps(out), flush=True)


# --- parent side
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="rows of the big query (default 1,000,000)"
    )
    parser.add_argument(
        "--paths", default=",".join(PATHS), help=f"comma-separated subset of {','.join(PATHS)}"
    )
    parser.add_argument("--repeat", type=int, default=1, help="big-query runs per path (median)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every path this many times, interleaved (a slow spell of the machine then hits all "
        "paths alike); each figure is the median over the rounds",
    )
    parser.add_argument(
        "--small-repeat", type=int, default=20, help="warm small-query runs per path (median)"
    )
    parser.add_argument(
        "--cases", type=int, default=0, help="sandbox cases per project (default: from --rows)"
    )
    parser.add_argument(
        "--sql-compression-level",
        type=int,
        default=0,
        help="the sandbox gzips its SQL answers at this level, as Druid does by default (-1); 0: none",
    )
    parser.add_argument(
        "--druid",
        type=Path,
        metavar="DIR",
        help="measure against the real Druid of druid/cluster.py in DIR (running, one project published: "
        "bench/_druid.py publish) instead of a sandbox: the big query reads its _vertex table (992,443 "
        "rows at 107,000 cases); the duckdb and sdk paths are left out",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--replay-folder", help=argparse.SUPPRESS)
    parser.add_argument("--env-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.cases:
        args.cases = max(300, int(args.rows / VERTEX_ROWS_PER_CASE * 1.08))
    if args.worker:
        worker(args)
        return 0
    if args.replay_folder:
        serve_replay(Path(args.replay_folder))
        return 0

    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if args.druid is not None:
        paths = [p for p in paths if p not in ("duckdb", "sdk")]
    rounds: dict[str, list[dict]] = {path: [] for path in paths}
    with _engine(args) as (env, scratch):
        table = env["BENCH_TABLE"]
        env_json = scratch / "bench-env.json"
        replay = None
        if any(p.startswith("replay") for p in paths):
            replay, env["BENCH_REPLAY_JDBC_URL"] = start_replay(env, table, args.rows, scratch)
        env_json.write_text(json.dumps(env))
        for number, path in ((n, p) for n in range(1, args.rounds + 1) for p in paths):
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                path,
                "--env-json",
                str(env_json),
                "--rows",
                str(args.rows),
                "--repeat",
                str(args.repeat),
                "--small-repeat",
                str(args.small_repeat),
                "--cases",
                str(args.cases),
            ]
            started = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if proc.returncode or line is None:
                print(f"  {path}: FAILED\n{proc.stderr[-2000:]}", flush=True)
                continue
            r = json.loads(line[len("RESULT ") :])
            r["process_s"] = time.perf_counter() - started
            rounds[path].append(r)
            print(
                f"  round {number} {path:8s} {r['rows']:>9,} rows in {r['seconds']:.2f} s, small "
                f"{r['small_ms']:.1f} ms (process {r['process_s']:.1f} s)",
                flush=True,
            )
        env_json.unlink()
        if replay is not None:
            replay.kill()
            replay.wait()
    results = {path: combine(runs) for path, runs in rounds.items() if runs}
    report(results, args.rows)
    return 0


@contextlib.contextmanager
def _engine(args: argparse.Namespace) -> Iterator[tuple[dict[str, str], Path]]:
    """The workers' ``PM_*`` values and a scratch folder: a sandbox started for the run, or (``--druid``) a
    running Druid's broker (no credentials: its SQL endpoints take none, the workers send Basic ones all the
    same) with the published large project's task table."""
    if args.druid is not None:
        import _druid  # bench/ is on sys.path

        broker = _druid.read_env(args.druid)["PM_DRUID_URL"]
        tables = _druid.vertex_tables(broker)
        if len(tables) != 1:
            sys.exit(f"--druid: the cluster in {args.druid} should hold one _vertex table, it has {tables}")
        table = tables[0]
        env = {
            "PM_BASE_URL": "http://127.0.0.1:9",
            "PM_AUTH_URL": "http://127.0.0.1:9/realms/none",
            "PM_CLIENT_ID": "druid",
            "PM_CLIENT_SECRET": "druid",
            "PM_JDBC_URL": f"jdbc:avatica:remote:url={broker}/druid/v2/sql/avatica/",
            "BENCH_TABLE": table,
        }
        with tempfile.TemporaryDirectory(prefix="pm-bench-client-") as scratch:
            print(f"Druid at {broker}: {table}", flush=True)
            yield env, Path(scratch)
        return
    from pm_sandbox import start

    print(f"Starting a sandbox with {args.cases} cases per project ...", flush=True)
    t0 = time.perf_counter()
    compression = ["--sql-compression-level", str(args.sql_compression_level)]
    with start(cases=args.cases, timeout=900, extra_args=compression) as sb:
        print(f"  ready in {time.perf_counter() - t0:.1f} s", flush=True)
        demo = sb.workgroups["demo"]
        yield workgroup_env(sb, demo, BENCH_TABLE=f"{demo.project_ids[0]}_vertex"), Path(sb.env_file).parent


def combine(runs: list[dict]) -> dict:
    """One path's figures over the rounds: median time and latency, the largest memory growth."""
    out = dict(runs[-1])
    out["seconds"] = statistics.median(r["seconds"] for r in runs)
    out["first_seconds"] = statistics.median(r["first_seconds"] for r in runs)
    later = [r["later_seconds"] for r in runs if r["later_seconds"] is not None]
    out["later_seconds"] = statistics.median(later) if later else None
    out["small_ms"] = statistics.median(r["small_ms"] for r in runs)
    out["growth_mb"] = max(r["growth_mb"] for r in runs)
    out["growth_first_mb"] = max(r["growth_first_mb"] for r in runs)
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    out["checksums"] = {tuple(r["checksum"]) for r in runs}
    out["round_seconds"] = [r["seconds"] for r in runs]
    out["round_small_ms"] = [r["small_ms"] for r in runs]
    return out


def start_replay(env: dict[str, str], table: str, rows: int, scratch: Path) -> tuple[subprocess.Popen, str]:
    """Record the sandbox's answers to the two queries and start the replay server; return it and its
    JDBC URL (the druid transport derives its HTTP URL from it)."""
    folder = scratch / "replay"
    folder.mkdir(exist_ok=True)
    record_answers(env, [small_sql(table), big_sql(table, rows)], folder)
    record_avatica(env, [small_sql(table), big_sql(table, rows)], folder)
    server = subprocess.Popen(
        [sys.executable, __file__, "--replay-folder", str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    port = int(server.stdout.readline().split()[1])
    return server, f"jdbc:avatica:remote:url=http://127.0.0.1:{port}/druid/v2/sql/avatica/"


def report(results: dict[str, dict], rows: int) -> None:
    """Print the table and the ratios against the issue's goals."""
    if not results:
        return
    limit = results.get("duckdb")
    sdk = results.get("sdk")
    print()
    print(f"Big query: {rows:,} rows × 8 columns of a _vertex table; small query: 10-row aggregate (warm).")
    header = (
        f"{'path':14s} {'rows':>9s} {'s':>7s} {'rows/s':>11s} {'vs sdk':>8s} {'/ duckdb':>9s} "
        f"{'small ms':>9s} {'peak MB':>8s} {'df MB':>7s} {'mem ×':>6s} {'mem ×1':>6s}"
    )
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        vs_sdk = f"{sdk['seconds'] / r['seconds']:.1f}x" if sdk else "-"
        vs_limit = f"{r['seconds'] / limit['seconds']:.1f}x" if limit else "-"
        mem = r["growth_mb"] / r["df_mb"] if r["df_mb"] else float("nan")
        mem_first = r["growth_first_mb"] / r["df_mb"] if r["df_mb"] else float("nan")
        if name.startswith("raw"):
            vs_sdk = vs_limit = "-"
        print(
            f"{name:14s} {r['rows']:>9,} {r['seconds']:>7.2f} {r['rows'] / r['seconds']:>11,.0f} "
            f"{vs_sdk:>8s} {vs_limit:>9s} {r['small_ms']:>9.1f} {r['peak_rss_mb']:>8.0f} "
            f"{r['df_mb']:>7.0f} {mem:>6.2f} {mem_first:>6.2f}"
        )
    if any(len(r["round_seconds"]) > 1 for r in results.values()):
        print("\nEach round (big s / small ms), in the order run:")
        for name, r in results.items():
            each = ", ".join(
                f"{t:.2f}/{ms:.1f}" for t, ms in zip(r["round_seconds"], r["round_small_ms"], strict=True)
            )
            print(f"  {name:14s} {each}")
    checks = {c for name, r in results.items() if not name.startswith("raw") for c in r["checksums"]}
    print(f"\nSame rows/sum/null-count on every path: {'yes' if len(checks) == 1 else 'NO: ' + str(checks)}")
    ours = {k: v for k, v in results.items() if k in ("druid", "avatica", "jdbc")}
    print("Goals:")
    if sdk and "jdbc" in results:
        ratio = sdk["seconds"] / results["jdbc"]["seconds"]
        print(f"  JDBC path ≥ 5× the SDK path:           {ratio:6.1f}×  {'PASS' if ratio >= 5 else 'FAIL'}")
    if ours and limit:
        best = min(ours, key=lambda k: ours[k]["seconds"])
        ratio = ours[best]["seconds"] / limit["seconds"]
        print(f"  fastest ({best}) within 3× of DuckDB:  {ratio:6.1f}×  {'PASS' if ratio <= 3 else 'FAIL'}")
    for name, r in ours.items():
        verdict = "PASS" if r["small_ms"] < 20 else "FAIL"
        print(f"  {name:8s} small query < 20 ms warm:     {r['small_ms']:6.1f} ms {verdict}")
    floors = {"raw": ("druid",), "raw-avatica": ("avatica", "jdbc")}
    for floor_name, paths in floors.items():
        raw = results.get(floor_name)
        if raw is None:
            continue
        floor = f"big {raw['seconds']:.2f} s, small {raw['small_ms']:.1f} ms"
        print(f"  engine's floor ({floor_name}: requests sent, bodies unparsed): {floor}")
        for name in (p for p in paths if p in ours):
            r = ours[name]
            big, small = r["seconds"] - raw["seconds"], r["small_ms"] - raw["small_ms"]
            print(
                f"  {name:8s} client-side time (path - {floor_name}): big {big:6.2f} s, small {small:5.1f} ms"
            )
            over = r["seconds"] / raw["seconds"] - 1
            verdict = "PASS" if over <= 0.25 else "FAIL"
            goal = f"(issue 37 goal for druid: <= 25 %) {verdict}" if name == "druid" else ""
            print(f"  {name:8s} adds {over:6.1%} to the bare HTTP read of the same answer {goal}")
    print("Issue 17 goals (1M × 8 rows; the client alone = its replay path):")
    goals = (("replay", "druid client alone", 1.5), ("replay-avatica", "avatica client alone", 4.0))
    for key, label, goal in (*goals, ("jdbc", "jdbc end to end", 10.0)):
        if key in results and limit:
            ratio = results[key]["seconds"] / limit["seconds"]
            verdict = "PASS" if ratio <= goal else "FAIL"
            print(f"  {label:22s} / in-process limit: {ratio:6.2f}×  (goal ≤ {goal}×) {verdict}")
            later, limit_later = results[key]["later_seconds"], limit["later_seconds"]
            if later is not None and limit_later is not None:
                # --repeat > 1: the process's first big query apart from the ones after it, each against
                # the limit's own (one-time costs: first use of the allocators' memory, JIT, JVM heap).
                first = results[key]["first_seconds"] / limit["first_seconds"]
                print(f"  {'':22s}   first big query {first:.2f}×, later ones {later / limit_later:.2f}×")
    for name, r in results.items():
        if name not in ("raw", "raw-avatica", "duckdb", "sdk") and r["df_mb"]:
            mem, first = r["growth_mb"] / r["df_mb"], r["growth_first_mb"] / r["df_mb"]
            verdict = "PASS" if mem <= 2.5 else "FAIL"
            print(
                f"  {name:14s} peak memory / DataFrame: {mem:6.2f}×  {verdict}  "
                f"(first big query of the process: {first:.2f}×)"
            )
    for key in ("replay", "replay-avatica"):
        if key in results:
            print(f"  {key:14s} client's share of a small query: {results[key]['small_ms']:6.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
