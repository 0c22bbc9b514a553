"""Fault switches and request counters of the sandbox, on both ports, over real HTTP."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from ._token import client_credentials


@pytest.fixture(scope="module")
def bearer(sandbox) -> dict[str, str]:
    r = client_credentials(sandbox)
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def projects(sb, headers, **kw) -> requests.Response:
    return requests.get(f"{sb.base_url}/pub/projects", headers=headers, timeout=kw.pop("timeout", 60), **kw)


def test_status_fault_with_retry_after_then_recovers(sandbox, bearer):
    sandbox.fault("/pub/projects", status=429, times=2, retry_after=3)
    for _ in range(2):
        r = projects(sandbox, bearer)
        assert r.status_code == 429
        assert r.headers["retry-after"] == "3"
        assert r.json()["error"] == "sandbox_fault"
    assert projects(sandbox, bearer).status_code == 200


def test_401_fault_carries_a_bearer_challenge(sandbox, bearer):
    sandbox.fault("/pub/", status=401)
    r = projects(sandbox, bearer)
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["www-authenticate"]


def test_fault_matches_only_its_prefix(sandbox, bearer):
    sandbox.fault("/pub/datasources", status=503)
    assert projects(sandbox, bearer).status_code == 200
    pid = sandbox.workgroups["demo"].project_ids[0]
    r = requests.get(f"{sandbox.base_url}/pub/datasources/{pid}", headers=bearer, timeout=60)
    assert r.status_code == 503


def test_delay_fault_slows_then_answers_normally(sandbox, bearer):
    sandbox.fault("/pub/projects", status=None, delay=0.6)
    t0 = time.monotonic()
    r = projects(sandbox, bearer)
    assert r.status_code == 200
    assert (
        time.monotonic() - t0 >= 0.55
    )  # a lower bound: the delay never ends early, however fast the machine


def test_hold_fault_keeps_the_request_until_released(sandbox, bearer):
    sandbox.fault("/pub/projects", status=None, hold=True)
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("r", projects(sandbox, bearer, timeout=120)))
    thread.start()
    sandbox.wait_held(requests=True)
    assert thread.is_alive() and "r" not in box  # held: no answer until released, however long that is
    assert sandbox.release() == {"requests": 1, "statements": 0}
    thread.join(90)
    assert box["r"].status_code == 200
    assert sandbox.held()["requests"] == 0


def test_a_held_request_outlasts_the_client_timeout(sandbox, bearer):
    sandbox.fault("/pub/projects", status=None, hold=True)
    with pytest.raises(requests.Timeout):
        projects(sandbox, bearer, timeout=0.5)


def test_hold_then_status(sandbox, bearer):
    sandbox.fault("/pub/projects", status=503, hold=True)
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("r", projects(sandbox, bearer, timeout=120)))
    thread.start()
    sandbox.wait_held(requests=True)
    sandbox.clear_faults()  # releases too
    thread.join(90)
    assert box["r"].status_code == 503


def test_held_statements_wait_until_cancelled_released_or_timed_out(sandbox):
    demo = sandbox.workgroups["demo"]
    url, auth = f"{sandbox.sql_url}/druid/v2/sql/", (demo.client_id, demo.client_secret)
    sandbox.hold_statements("AS held", times=2)
    armed = sandbox.held()["statements"]["armed"]
    assert armed == [{"sql_contains": "AS held", "client_id": None, "times": 2}]
    assert requests.post(url, json={"query": "SELECT 1 AS free"}, auth=auth, timeout=60).json() == [
        {"free": 1}
    ]
    box: dict = {}
    query = {"query": "SELECT 1 AS held", "context": {"sqlQueryId": "held-1"}}
    thread = threading.Thread(
        target=lambda: box.setdefault("r", requests.post(url, json=query, auth=auth, timeout=120))
    )
    thread.start()
    sandbox.wait_held()
    assert sandbox.release() == {"requests": 0, "statements": 1}
    thread.join(90)
    assert box["r"].json() == [{"held": 1}]
    r = requests.post(url, json={**query, "context": {"timeout": 100}}, auth=auth, timeout=60)
    assert r.status_code == 504 and r.json()["category"] == "TIMEOUT"
    held = sandbox.held()["statements"]
    assert held == {"armed": [], "held": 0, "by_workgroup": {}, "ended": {"released": 1, "timed_out": 1}}


@pytest.mark.parametrize(
    "spec",
    [{"sql_contains": ""}, {"sql_contains": "x", "times": 0}, {"sql_contains": 3}, {"colour": "red"}],
)
def test_bad_hold_specs_are_refused_clearly(sandbox, spec):
    from pm_sandbox import SandboxError

    with pytest.raises(SandboxError, match="400"):
        sandbox._admin("POST", "/holds", spec)


def test_drop_fault_closes_the_connection_without_answer(sandbox, bearer):
    sandbox.fault("/pub/projects", drop=True)
    with pytest.raises(requests.ConnectionError):
        projects(sandbox, bearer)
    assert projects(sandbox, bearer).status_code == 200


def test_drop_after_bytes_cuts_the_body_midway(sandbox, bearer):
    whole = projects(sandbox, bearer).content
    assert len(whole) > 20
    sandbox.fault("/pub/projects", drop_after_bytes=10)
    with pytest.raises(requests.exceptions.ChunkedEncodingError) as info:
        projects(sandbox, bearer)
    assert "IncompleteRead" in str(info.value) or "prematurely" in str(info.value)
    assert projects(sandbox, bearer).content == whole


def test_drop_after_bytes_on_a_streamed_sql_answer(sandbox):
    body = {"query": "SELECT 1 AS x", "resultFormat": "arrayLines", "header": True}
    auth = (sandbox.workgroups["demo"].client_id, sandbox.workgroups["demo"].client_secret)
    whole = requests.post(f"{sandbox.sql_url}/druid/v2/sql/", json=body, auth=auth, timeout=10).content
    sandbox.fault("/druid/v2/sql/", drop_after_bytes=len(whole) - 3)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        requests.post(f"{sandbox.sql_url}/druid/v2/sql/", json=body, auth=auth, timeout=10).content  # noqa: B018


def test_faults_apply_on_the_sql_port(sandbox):
    sandbox.fault("/druid/v2/sql", status=503, retry_after=1)
    r = requests.post(f"{sandbox.sql_url}/druid/v2/sql", json={"query": "SELECT 1"}, timeout=60)
    assert r.status_code == 503
    assert r.headers["retry-after"] == "1"


def test_token_endpoint_can_fail_too(sandbox):
    sandbox.fault("/realms/", status=503)
    r = client_credentials(sandbox)
    assert r.status_code == 503


def test_clear_faults(sandbox, bearer):
    sandbox.fault("/pub/projects", status=500, times=5)
    assert sandbox.stats()["faults"][0]["times"] == 5
    sandbox.clear_faults()
    assert sandbox.stats()["faults"] == []
    assert projects(sandbox, bearer).status_code == 200


def test_request_counters_per_endpoint_and_reset(sandbox, bearer):
    sandbox.reset_stats()
    for _ in range(3):
        projects(sandbox, bearer)
    requests.post(f"{sandbox.sql_url}/druid/v2/sql", json={"query": "SELECT 1"}, timeout=60)
    stats = sandbox.stats()
    assert stats["requests"]["GET /pub/projects"] == 3
    assert stats["requests"]["POST /druid/v2/sql"] == 1
    assert not any(k.split()[1].startswith("/_sandbox") for k in stats["requests"])
    sandbox.reset_stats()
    assert sandbox.stats()["requests"] == {}


@pytest.mark.parametrize(
    "spec",
    [
        {"path_prefix": "pub"},
        {"path_prefix": "/pub", "status": 42},
        {"path_prefix": "/pub", "times": 0},
        {"path_prefix": "/pub", "delay": -1},
        {"path_prefix": "/pub", "drop_after_bytes": -1},
        {"path_prefix": "/pub", "drop_after_bytes": 1.5},
        {"path_prefix": "/pub", "drop_after_bytes": True},
        {"path_prefix": "/pub", "colour": "red"},
    ],
)
def test_bad_fault_specs_are_refused_clearly(sandbox, spec):
    from pm_sandbox import SandboxError

    with pytest.raises(SandboxError, match="400"):
        sandbox.fault(**spec) if "colour" not in spec else sandbox._admin("POST", "/faults", spec)
