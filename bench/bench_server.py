"""Serving throughput of the sandbox's SQL port vs in-process DuckDB → Arrow, on one 1M x 8 ``_vertex`` query.

Usage: ``.venv/bin/python bench/bench_server.py [--rows 1000000] [--frame 5000] [--repeat 3]``

Measured in one run, on the same data and query (median of ``--repeat``):

* ``duckdb->arrow``: the query in-process, ``relation.to_arrow_table()`` (the floor);
* ``avatica (server)``: ``AvaticaService.handle`` for prepareAndExecute + every fetch, i.e. query, frame
  encoding and JSON, without HTTP;
* ``avatica (HTTP, server process)``: the same requests over loopback HTTP to uvicorn running in its own
  process (as the sandbox does), bodies read but not parsed;
* ``druid <format> (server)``: :func:`druid_sql.answer`: query and encoding in one DuckDB pipeline, no HTTP;
* ``druid <format> (HTTP, server process)``: the same over loopback HTTP, streamed body read, not parsed.

Ratios are ``path time / duckdb->arrow time`` (lower is better).
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import socket
import statistics
import sys
import time
import uuid

import numpy as np
import orjson

QUERY = (
    "SELECT __time, enddate, duration, caseid, vertex_name, processkey, resource_lpkr, order_amount_lpkr "
    'FROM "{pid}_vertex" LIMIT {rows}'
)


def build(rows: int):
    """A sealed store holding one workgroup whose project has at least *rows* task rows."""
    from pm_sandbox import data as datagen
    from pm_sandbox.data.store import ProjectRecord, Store, WorkgroupRecord

    store = Store()
    wg = WorkgroupRecord(id="bench-wg", name="bench", secret="bench-secret", licensed=True, key="bench")
    store.add_workgroup(wg)
    template = datagen.TEMPLATES["p2p"]
    cases = max(1000, rows // 8)
    while True:
        log = datagen.simulate(template, cases, np.random.default_rng(7))
        if len(log.case) >= rows:
            break
        cases = int(cases * rows / max(1, len(log.case)) * 1.05) + 1
    pid = "bench-project-0000"
    record = ProjectRecord(id=pid, name="bench", description="bench", created="2025-01-01T00:00:00Z")
    store.add_project(wg.id, record, datagen.build_tables(log, pid))
    store.seal()
    return store, wg, pid


def serve(rows: int, port: int, frame: int) -> None:
    """Child process: the SQL app over the same data on *port* (server and client must not share a GIL)."""
    import uvicorn

    from pm_sandbox.sql.app import SqlOptions, create_sql_app

    store, _, _ = build(rows)
    options = SqlOptions(max_rows_per_frame=max(frame, 100), max_rows=rows + 1, query_timeout=600)
    uvicorn.run(
        create_sql_app(store, options=options),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="none",  # no WebSocket served: none loaded (as the sandbox's own servers)
        lifespan="off",
    )


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def avatica_calls(post, user: str, password: str, sql: str, frame: int) -> int:
    cid = str(uuid.uuid4())
    post({"request": "openConnection", "connectionId": cid, "info": {"user": user, "password": password}})
    sid = orjson.loads(post({"request": "createStatement", "connectionId": cid}))["statementId"]
    res = orjson.loads(
        post(
            {
                "request": "prepareAndExecute",
                "connectionId": cid,
                "statementId": sid,
                "sql": sql,
                "maxRowsInFirstFrame": frame,
                "maxRowCount": -1,
            }
        )
    )["results"][0]
    n, done = len(res["firstFrame"]["rows"]), res["firstFrame"]["done"]
    while not done:
        body = post(
            {
                "request": "fetch",
                "connectionId": cid,
                "statementId": sid,
                "offset": n,
                "fetchMaxRowCount": frame,
            }
        )
        # Not decoded (that is the client's cost): "done" precedes the rows, and every frame but the
        # last holds exactly `frame` rows.
        done = b'"done":true' in body[:160]
        n += frame
    post({"request": "closeConnection", "connectionId": cid})
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--frame", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from pm_sandbox.sql import druid_api as druid_sql
    from pm_sandbox.sql.app import SqlOptions, create_sql_app

    t0 = time.perf_counter()
    store, wg, pid = build(args.rows)
    sql = QUERY.format(pid=pid, rows=args.rows)
    print(f"data: {args.rows:,} rows requested, built in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    options = SqlOptions(max_rows_per_frame=max(args.frame, 100), max_rows=args.rows + 1, query_timeout=600)
    app = create_sql_app(store, options=options)
    avatica, engine = app.state.avatica, app.state.sql_engine

    results: dict[str, float] = {}
    cur = store.database(wg.id).cursor()
    duck_sql = engine.translate(wg.id, sql).sql
    n_rows = cur.sql(duck_sql).to_arrow_table().num_rows
    results["duckdb->arrow (in-process)"] = timed(lambda: cur.sql(duck_sql).to_arrow_table(), args.repeat)

    def post_local(req: dict) -> bytes:
        status, body = avatica.handle(orjson.dumps(req))
        if status != 200:
            raise RuntimeError(body.decode()[:300])
        return body

    results["avatica (server, no HTTP)"] = timed(
        lambda: avatica_calls(post_local, wg.id, wg.secret, sql, args.frame), args.repeat
    )
    for fmt in ("arrayLines", "object", "csv"):

        def druid_local(fmt=fmt) -> None:
            req = druid_sql.parse_request(orjson.dumps({"query": sql, "resultFormat": fmt}))
            answer = druid_sql.answer(engine, wg.id, req)
            for _ in answer.chunks or ():
                pass

        results[f"druid {fmt} (server, no HTTP)"] = timed(druid_local, args.repeat)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    child = multiprocessing.get_context("spawn").Process(
        target=serve, args=(args.rows, port, args.frame), daemon=True
    )
    child.start()
    deadline = time.monotonic() + 300
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or not child.is_alive():
                raise RuntimeError("the benchmark server process did not start") from None
            time.sleep(0.2)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

        def post_http(req: dict) -> bytes:
            conn.request(
                "POST",
                "/druid/v2/sql/avatica/",
                body=orjson.dumps(req),
                headers={"Content-Type": "application/octet-stream"},
            )
            return conn.getresponse().read()

        results["avatica (HTTP, server process)"] = timed(
            lambda: avatica_calls(post_http, wg.id, wg.secret, sql, args.frame), args.repeat
        )
        import base64

        auth = "Basic " + base64.b64encode(f"{wg.id}:{wg.secret}".encode()).decode()
        for fmt in ("arrayLines", "csv"):

            def druid_http(fmt=fmt) -> None:
                conn.request(
                    "POST",
                    "/druid/v2/sql/",
                    body=orjson.dumps({"query": sql, "resultFormat": fmt}),
                    headers={"Content-Type": "application/json", "Authorization": auth},
                )
                resp = conn.getresponse()
                while resp.read(1 << 20):
                    pass

            results[f"druid {fmt} (HTTP, server process)"] = timed(druid_http, args.repeat)
        conn.close()
    finally:
        child.terminate()
        child.join(timeout=10)

    base = results["duckdb->arrow (in-process)"]
    print(
        f"query: {n_rows:,} rows x 8 columns of {pid}_vertex, Avatica frames of {args.frame} rows, "
        f"median of {args.repeat}"
    )
    print(f"{'path':<34} {'seconds':>8} {'rows/s':>12} {'x duckdb':>9}")
    for name, secs in results.items():
        print(f"{name:<34} {secs:8.3f} {n_rows / secs:12,.0f} {secs / base:9.1f}")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
