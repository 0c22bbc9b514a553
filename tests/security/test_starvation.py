"""One workgroup's load cannot starve another's, shown by construction with the sandbox's hold switch.

``second``'s statements are held (each keeps its query slot and worker thread until released), then 60
concurrent Druid SQL queries of ``second`` are sent — more than its slots and its thread budget. While
every one of them is still unanswered, ``demo``'s ``/pub/projects``, Druid ``SELECT 1`` and Avatica query
are answered. No timing threshold: if ``demo`` were starved, its calls would wait for the release, which
only comes after them. Then ``second``'s 60 queries all complete once released.

Also by construction: the gate comes before translation (a statement that cannot be translated still
waits for its workgroup's slot and is refused as over capacity at its time limit, not parsed first).
"""

from __future__ import annotations

import concurrent.futures
import time

import requests

from .conftest import AVATICA, DRUID, Avatica, bearer

CLASS = "starvation"
N = 60
SLOTS = 8  # SqlOptions.max_concurrent_queries


def _wait_held(sandbox, client_id: str, n: int) -> None:
    deadline = time.monotonic() + 60
    while sandbox.held()["statements"]["by_workgroup"].get(client_id, 0) < n:
        assert time.monotonic() < deadline, f"fewer than {n} statements of {client_id} got held"
        time.sleep(0.05)


def test_sixty_held_queries_of_one_workgroup_do_not_delay_another(sandbox, tally):
    demo, second = sandbox.workgroups["demo"], sandbox.workgroups["second"]
    url = sandbox.sql_url + DRUID
    token = bearer(sandbox)
    sandbox.hold(second.client_id)
    pool = concurrent.futures.ThreadPoolExecutor(N)
    try:
        futures = [
            pool.submit(
                requests.post,
                url,
                json={"query": "SELECT 1 AS x"},
                auth=(second.client_id, second.client_secret),
                timeout=120,
            )
            for _ in range(N)
        ]
        _wait_held(sandbox, second.client_id, SLOTS)
        # demo, while all of second's queries are held
        r = tally.send(
            CLASS, "GET", sandbox.base_url + "/pub/projects", headers={"Authorization": f"Bearer {token}"}
        )
        assert r is not None and r.status_code == 200 and len(r.json()) == len(demo.project_ids)
        for _ in range(3):
            r = tally.send(
                CLASS, "POST", url, json={"query": "SELECT 1 AS x"}, auth=(demo.client_id, demo.client_secret)
            )
            assert r is not None and r.status_code == 200 and r.json() == [{"x": 1}]
        conn = Avatica(sandbox.sql_url + AVATICA, demo.client_id, demo.client_secret)
        assert conn.query("SELECT 2 AS y")["results"][0]["firstFrame"]["rows"] == [[2]]
        conn.call("closeConnection")
        tally.record(CLASS, "accepted")
        assert not any(f.done() for f in futures)  # second's were held all along
        assert sandbox.held()["statements"]["by_workgroup"][second.client_id] == SLOTS
    finally:
        sandbox.release()
    answers = [f.result(timeout=120) for f in futures]
    pool.shutdown()
    assert [a.status_code for a in answers] == [200] * N
    assert all(a.json() == [{"x": 1}] for a in answers)


def test_the_gate_comes_before_translation_and_waiting_counts_against_the_limit(sandbox, tally):
    second = sandbox.workgroups["second"]
    url = sandbox.sql_url + DRUID
    auth = (second.client_id, second.client_secret)
    sandbox.hold(second.client_id)
    pool = concurrent.futures.ThreadPoolExecutor(SLOTS)
    try:
        held = [
            pool.submit(requests.post, url, json={"query": "SELECT 1"}, auth=auth, timeout=120)
            for _ in range(SLOTS)
        ]
        _wait_held(sandbox, second.client_id, SLOTS)
        # Not valid SQL, with a 1 s limit: it waits for a slot that cannot free up, and is refused for that.
        r = tally.send(
            CLASS, "POST", url, json={"query": "SELEC nonsense (((", "context": {"timeout": 1000}}, auth=auth
        )
        assert r is not None and r.status_code == 429, r.text
        assert r.json()["errorCode"] == "capacityExceeded"
    finally:
        sandbox.release()
    assert [f.result(timeout=120).status_code for f in held] == [200] * SLOTS
    pool.shutdown()
    # and once free, the same text is refused as the invalid SQL it is
    r = tally.send(CLASS, "POST", url, json={"query": "SELEC nonsense ((("}, auth=auth)
    assert r is not None and r.status_code == 400 and r.json()["errorCode"] == "invalidInput"


def test_a_held_statement_ends_at_its_own_time_limit(sandbox, tally):
    second = sandbox.workgroups["second"]
    sandbox.hold(second.client_id)
    try:
        r = tally.send(
            CLASS,
            "POST",
            sandbox.sql_url + DRUID,
            json={"query": "SELECT 1", "context": {"timeout": 500}},
            auth=(second.client_id, second.client_secret),
        )
        assert r is not None and r.status_code == 504 and r.json()["errorCode"] == "timeout"
    finally:
        sandbox.release()
