"""Cross-workgroup starvation, measured: another workgroup's latency while one workgroup is saturated.

Usage: ``.venv/bin/python bench/bench_starvation.py [--load 60] [--probes 50]``

Starts a sandbox, holds ``second``'s SQL statements (the sandbox's hold switch: each keeps its query slot
and worker thread, as a long query would), sends ``--load`` concurrent Druid SQL queries of ``second``,
then times ``--probes`` rounds of ``demo``'s ``GET /pub/projects``, Druid ``SELECT 1`` and an Avatica
``SELECT 1`` while they are held, and the same with nothing held. Prints p50/p95/max per call in ms.
(The quick, timing-free form is ``tests/security/test_starvation.py``.)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import statistics
import time
import uuid

import requests


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _probe(sb, token: str, rounds: int) -> dict[str, list[float]]:
    demo = sb.workgroups["demo"]
    auth = (demo.client_id, demo.client_secret)
    avatica = sb.sql_url + "/druid/v2/sql/avatica/"
    cid = str(uuid.uuid4())
    with requests.Session() as s:
        s.post(
            avatica,
            json={
                "request": "openConnection",
                "connectionId": cid,
                "info": {"user": auth[0], "password": auth[1]},
            },
            timeout=60,
        )
        calls = {
            "GET /pub/projects": lambda: s.get(
                sb.base_url + "/pub/projects", headers={"Authorization": f"Bearer {token}"}, timeout=60
            ),
            "druid SELECT 1": lambda: s.post(
                sb.sql_url + "/druid/v2/sql/", json={"query": "SELECT 1"}, auth=auth, timeout=60
            ),
            "avatica SELECT 1": lambda: s.post(
                avatica,
                json={
                    "request": "prepareAndExecute",
                    "connectionId": cid,
                    "statementId": 1,
                    "sql": "SELECT 1",
                    "maxRowsInFirstFrame": -1,
                },
                timeout=60,
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(rounds):
            for name, call in calls.items():
                t0 = time.perf_counter()
                r = call()
                assert r.status_code == 200, (name, r.status_code, r.text[:200])
                times[name].append((time.perf_counter() - t0) * 1000)
        s.post(avatica, json={"request": "closeConnection", "connectionId": cid}, timeout=60)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--load", type=int, default=60)
    parser.add_argument("--probes", type=int, default=50)
    args = parser.parse_args()
    from pm_sandbox import start

    with start(cases=300) as sb:
        demo, second = sb.workgroups["demo"], sb.workgroups["second"]
        token = requests.post(
            sb.auth_url + "/protocol/openid-connect/token",
            data={
                "grant_type": "client_credentials",
                "client_id": demo.client_id,
                "client_secret": demo.client_secret,
            },
            timeout=60,
        ).json()["access_token"]
        idle = _probe(sb, token, args.probes)
        sb.hold(second.client_id)
        pool = concurrent.futures.ThreadPoolExecutor(args.load)
        try:
            load = [
                pool.submit(
                    requests.post,
                    sb.sql_url + "/druid/v2/sql/",
                    json={"query": "SELECT 1"},
                    auth=(second.client_id, second.client_secret),
                    timeout=300,
                )
                for _ in range(args.load)
            ]
            while sb.held()["statements"]["by_workgroup"].get(second.client_id, 0) < 8:
                time.sleep(0.05)
            busy = _probe(sb, token, args.probes)
            still_held = sum(not f.done() for f in load)
        finally:
            sb.release()
        statuses = [f.result().status_code for f in load]
        pool.shutdown()
    print(
        f"{args.load} queries of 'second' held during the probes ({still_held} still unanswered at the end)"
    )
    print(f"{'call':<20}{'idle p50':>10}{'p95':>8}{'max':>8}{'held p50':>10}{'p95':>8}{'max':>8}  (ms)")
    for name in idle:
        a, b = idle[name], busy[name]
        print(
            f"{name:<20}{statistics.median(a):>10.1f}{_pct(a, 0.95):>8.1f}{max(a):>8.1f}"
            f"{statistics.median(b):>10.1f}{_pct(b, 0.95):>8.1f}{max(b):>8.1f}"
        )
    print(f"'second' after release: {statuses.count(200)}/{len(statuses)} answered 200")


if __name__ == "__main__":
    main()
