"""The sandbox process itself: admin routes always keyed, no switch defeats shutdown, disconnects are quiet.

Each test starts its own sandbox (the command line, or :func:`pm_sandbox.start`).
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import requests

from pm_sandbox import read_env_file

from .conftest import AVATICA, DRUID, TOKEN

CLASS = "admin and process"


def _wait_for(path, proc, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sandbox did not become ready"
        time.sleep(0.05)


def test_a_cli_sandbox_without_an_admin_key_makes_one_and_keys_every_admin_route(tmp_path, tally):
    env_file = tmp_path / "sandbox.env"
    env = {k: v for k, v in os.environ.items() if k not in ("PM_SANDBOX_ADMIN_KEY", "PM_SANDBOX_PARENT_PID")}
    cmd = [sys.executable, "-m", "pm_sandbox", "--port", "0", "--sql-port", "0", "--cases", "5"]
    proc = subprocess.Popen(
        [*cmd, "--env-file", str(env_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        _wait_for(env_file, proc)
        values = read_env_file(env_file)
        base, key = values["PM_BASE_URL"], values["PM_SANDBOX_ADMIN_KEY"]
        assert len(key) >= 20
        routes = [
            ("GET", "/_sandbox/workgroups", None),
            ("GET", "/_sandbox/stats", None),
            ("DELETE", "/_sandbox/stats", None),
            ("POST", "/_sandbox/faults", {"path_prefix": "/pub", "status": 500, "times": 1000}),
            ("DELETE", "/_sandbox/faults", None),
            ("POST", "/_sandbox/holds", {"client_id": values["PM_CLIENT_ID"], "times": None}),
            ("GET", "/_sandbox/holds", None),
            ("POST", "/_sandbox/release", None),
            ("GET", "/_sandbox/tokens", None),
        ]
        for method, path, body in routes:
            for headers in (
                {},
                {"X-Sandbox-Admin": "guess"},
                {"X-Sandbox-Admin": key[:-1]},
                {"X-Sandbox-Admin": "é"},
            ):
                r = tally.send(CLASS, method, base + path, json=body, headers=headers)
                assert r is not None and r.status_code == 403, (method, path, headers, r.status_code)
                assert values["PM_CLIENT_SECRET"] not in r.text
        assert requests.get(base + "/_sandbox/stats", timeout=30).status_code == 403
        r = requests.get(base + "/_sandbox/workgroups", headers={"X-Sandbox-Admin": key}, timeout=30)
        assert r.status_code == 200 and values["PM_CLIENT_SECRET"] in r.text
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert key not in out and f"PM_SANDBOX_ADMIN_KEY=*** (in {env_file})" in out  # kept in the env file


def test_without_an_env_file_the_generated_admin_key_is_printed(tally):
    env = {k: v for k, v in os.environ.items() if k not in ("PM_SANDBOX_ADMIN_KEY", "PM_SANDBOX_PARENT_PID")}
    cmd = [sys.executable, "-m", "pm_sandbox", "--port", "0", "--sql-port", "0", "--cases", "5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        printed: dict[str, str] = {}
        assert proc.stdout is not None
        for line in proc.stdout:  # the banner ends with "sandbox ready"
            if "=" in line and not line.startswith("#"):
                key, _, value = line.strip().partition("=")
                printed[key] = value
            if "sandbox ready" in line:
                break
        base, key = printed["PM_BASE_URL"], printed["PM_SANDBOX_ADMIN_KEY"]
        assert requests.get(base + "/_sandbox/stats", timeout=30).status_code == 403
        r = requests.get(base + "/_sandbox/stats", headers={"X-Sandbox-Admin": key}, timeout=30)
        assert r.status_code == 200
        tally.record(CLASS, "refused")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_no_switch_defeats_shutdown(sandbox_factory, tally):
    sb = sandbox_factory(cases=5)
    second = sb.workgroups["second"]
    sb.fault("/pub", status=None, delay=600)  # the longest delay a switch accepts
    sb.hold(second.client_id)
    calls = [
        lambda: requests.get(sb.base_url + "/pub/version", timeout=120),
        lambda: requests.post(
            sb.sql_url + DRUID,
            json={"query": "SELECT 1"},
            auth=(second.client_id, second.client_secret),
            timeout=120,
        ),
    ]
    outcomes: list[object] = []
    threads = [threading.Thread(target=lambda c=c: outcomes.append(_outcome(c))) for c in calls]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while sb.held()["statements"]["by_workgroup"].get(second.client_id, 0) < 1 or not sb.stats()[
        "requests"
    ].get("GET /pub/version"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert sb.stop(timeout=30) == 0  # SIGTERM was enough: no SIGKILL needed
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    tally.record(CLASS, "refused")


def _outcome(call) -> object:
    try:
        return call().status_code
    except requests.RequestException as exc:
        return type(exc).__name__


def test_a_thousand_client_disconnects_log_no_error(sandbox_factory, tally):
    sb = sandbox_factory(cases=5)
    wg = sb.workgroups["demo"]
    auth = base64.b64encode(f"{wg.client_id}:{wg.client_secret}".encode()).decode()
    targets = [(sb.sql_port, DRUID), (sb.sql_port, AVATICA), (sb.port, TOKEN), (sb.port, "/_sandbox/faults")]
    n = 1000
    for i in range(n):
        port, path = targets[i % len(targets)]
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            )
            s.sendall(head.encode() + b'{"query": "SEL')  # then leave before the body is complete
        tally.record("client disconnects", "accepted")
    deadline = time.monotonic() + 120
    while sum(v for k, v in sb.stats()["requests"].items() if k.startswith("POST")) < n * 3 // 4:
        assert time.monotonic() < deadline, sb.stats()["requests"]
        time.sleep(0.1)
    # the server is still answering, and said nothing alarming about the clients that left
    r = requests.post(
        sb.sql_url + DRUID, json={"query": "SELECT 1 AS x"}, auth=(wg.client_id, wg.client_secret), timeout=60
    )
    assert r.json() == [{"x": 1}]
    log = sb.log_path.read_text()
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
