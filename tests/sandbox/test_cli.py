"""The sandbox command-line contract: env file, printed values, clean stop, errors, CSV import, lifetime."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from pm_sandbox import read_env_file
from pm_sandbox.server import ENV_KEYS

CMD = [sys.executable, "-m", "pm_sandbox"]


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "sandbox not ready"
        time.sleep(0.05)


def _token(env: dict[str, str]) -> str:
    r = requests.post(
        f"{env['PM_AUTH_URL']}/protocol/openid-connect/token",
        data={
            "grant_type": "client_credentials",
            "client_id": env["PM_CLIENT_ID"],
            "client_secret": env["PM_CLIENT_SECRET"],
        },
        timeout=60,
    )
    assert r.status_code == 200
    return r.json()["access_token"]


def test_env_file_printed_values_and_sigterm(tmp_path):
    env_file = tmp_path / "out" / "sandbox.env"
    proc = subprocess.Popen(
        [*CMD, "--port", "0", "--sql-port", "0", "--env-file", str(env_file), "--cases", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(env_file, proc)
        env = read_env_file(env_file)
        assert env_file.stat().st_mode & 0o777 == 0o600  # it holds the demo secret
        assert list(env) == list(ENV_KEYS)
        assert env["PM_BASE_URL"].startswith("http://127.0.0.1:")
        assert env["PM_AUTH_URL"].startswith(env["PM_BASE_URL"] + "/realms/")
        jdbc = env["PM_JDBC_URL"]
        assert jdbc.startswith("jdbc:avatica:remote:url=http://127.0.0.1:") and jdbc.endswith(
            "/druid/v2/sql/avatica/"
        )
        assert jdbc.split(":")[-1].split("/")[0] != env["PM_BASE_URL"].rsplit(":", 1)[1]
        token = _token(env)
        r = requests.get(f"{env['PM_BASE_URL']}/pub/projects", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and len(r.json()) == 2
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    for key, value in env.items():
        if key not in ("PM_CLIENT_SECRET", "PM_SANDBOX_ADMIN_KEY"):
            assert f"{key}={value}" in out  # printed too
    # the secret and the admin key went to the env file (owner-only): the output, often a log file, names it
    assert env["PM_CLIENT_SECRET"] not in out + err
    assert env["PM_SANDBOX_ADMIN_KEY"] not in out + err
    assert f"PM_CLIENT_SECRET=*** (in {env_file})" in out
    assert not env_file.exists()  # removed on a clean stop: a stale file never looks like a live sandbox
    assert "Traceback" not in err


def test_sigint_also_stops_cleanly(tmp_path):
    env_file = tmp_path / "sandbox.env"
    proc = subprocess.Popen(
        [*CMD, "--port", "0", "--sql-port", "0", "--env-file", str(env_file), "--cases", "5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(env_file, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err


def test_port_in_use_is_a_clear_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = subprocess.run(
            [*CMD, "--port", str(port), "--sql-port", "0", "--cases", "5"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 2
    assert f"127.0.0.1:{port}" in r.stderr and "--port" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cases", "0"], "--cases must be at least 1"),
        (["--port", "x"], "invalid int value"),
        (["--fair-turns", "-1"], "--fair-turns must be 0 (two per processor) or more"),
        (["--fair-slice", "0"], "--fair-slice must be a positive number of seconds"),
        (["--fair-slice", "nan"], "--fair-slice must be a positive number of seconds"),
        (["--large-project-cases", "0"], "--large-project-cases must be at least 1"),
    ],
)
def test_bad_arguments(args, message):
    r = subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stderr


def test_the_pm_sandbox_command():
    """The stand-in's distribution installs a ``pm-sandbox`` command: the same contract under its own name."""
    command = Path(sys.executable).with_name("pm-sandbox")
    r = subprocess.run([str(command), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: pm-sandbox")
    for option in ("--port", "--sql-port", "--env-file", "--data", "--cases", "--token-lifetime", "--host"):
        assert option in r.stdout
    r = subprocess.run([str(command), "--cases", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--cases must be at least 1" in r.stderr


def test_data_dir_csv_becomes_a_demo_project(tmp_path, sandbox_factory):
    data = tmp_path / "logs"
    data.mkdir()
    (data / "claims.csv").write_text(
        "case id,activity,timestamp\n1,Open,2024-05-06 09:00\n"
        "1,Close,2024-05-06 10:00\n2,Open,2024-05-07 09:00\n"
    )
    sb = sandbox_factory(cases=5, data=data)
    demo = sb.workgroups["demo"]
    assert len(demo.project_ids) == 3
    token = _token(sb.env)
    pid = demo.project_ids[2]
    r = requests.get(f"{sb.base_url}/pub/projects/{pid}", headers={"Authorization": f"Bearer {token}"})
    assert r.json()["name"] == "claims"
    r = requests.get(f"{sb.base_url}/pub/datasources/{pid}", headers={"Authorization": f"Bearer {token}"})
    assert [d["name"] for d in r.json()] == [pid, f"{pid}_vertex", f"{pid}_edge"]


def test_bad_csv_in_data_dir_fails_with_file_and_column(tmp_path):
    data = tmp_path / "logs"
    data.mkdir()
    (data / "broken.csv").write_text("case id,when\n1,2024-01-01\n")
    r = subprocess.run(
        [*CMD, "--port", "0", "--sql-port", "0", "--cases", "5", "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "broken.csv" in r.stderr and "activity" in r.stderr and "timestamp" in r.stderr
    assert "Traceback" not in r.stderr


def test_sandbox_stops_by_itself_when_its_parent_dies(tmp_path):
    pid_file = tmp_path / "pid"
    script = (
        "import sys, time\n"
        "from pm_sandbox import start\n"
        "sb = start(cases=5)\n"
        f"open({str(pid_file)!r}, 'w').write(str(sb.pid))\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert parent.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        child = int(pid_file.read_text())
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 60  # it looks every 0.5 s, then shuts down: a hang guard
        while _alive(child):
            assert time.monotonic() < deadline, "sandbox outlived its parent"
            time.sleep(0.1)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) counts as stopped.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
