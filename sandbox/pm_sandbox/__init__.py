"""``pm_sandbox``: a faithful local stand-in of the process-mining service.

One process serves the identity provider (Keycloak-style realm), the public REST API under ``/pub``
on the main port, and the SQL endpoints (Avatica JSON for the JDBC driver, Druid SQL over HTTP) on the
SQL port, all over generated, deterministic process-mining data.

>>> from pm_sandbox import start
>>> with start(cases=300) as sb:                      # doctest: +SKIP
...     print(sb.base_url, sb.workgroups["demo"].client_id)

From a shell: ``python -m pm_sandbox --port 8080 --sql-port 8082 --env-file .env`` (or ``pm-sandbox ...``).
Importing this package is cheap: the server stack is only imported by the sandbox process itself.

Its own distribution, ``pm-sandbox`` (``pip install "pm-notebook[sandbox]"`` brings it): it imports nothing of
the client ``pm_notebook``, and the client never imports it (the demo runs it as a child process).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._version import __version__

__all__ = [
    "DEFAULT_CASES",
    "DEFAULT_SEED",
    "Sandbox",
    "SandboxError",
    "SandboxWorkgroup",
    "read_env_file",
    "__version__",
    "start",
]

DEFAULT_CASES = 2000  # cases per generated project when --cases is not given (about 18,000 task rows)
DEFAULT_SEED = 20240917

_ADMIN_HEADER = "X-Sandbox-Admin"
_ADMIN_KEY_ENV = "PM_SANDBOX_ADMIN_KEY"


class SandboxError(RuntimeError):
    """The sandbox process could not be started or controlled (its log is quoted in the message)."""


@dataclass(frozen=True)
class SandboxWorkgroup:
    """Credentials and projects of one sandbox workgroup (``demo``, ``second``, ``unlicensed``)."""

    key: str
    client_id: str
    client_secret: str = field(repr=False)
    name: str = ""
    licensed: bool = True
    project_ids: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """Alias of ``client_id`` (the workgroup id)."""
        return self.client_id


class Sandbox:
    """Handle on a running sandbox process; stop it with :meth:`stop` or a ``with`` block."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        env: dict[str, str],
        *,
        env_file: Path,
        log_path: Path,
        admin_key: str,
        workdir: Path | None,
        log_handle: Any,
    ) -> None:
        self._proc = proc
        # the client's connection values only: notebooks do os.environ.update(sb.env)
        self.env = {k: v for k, v in env.items() if k != _ADMIN_KEY_ENV}
        self.env_file = env_file
        self.log_path = log_path
        self._admin_key = admin_key
        self._workdir = workdir
        self._log_handle = log_handle
        self.base_url = env["PM_BASE_URL"]
        self.auth_url = env["PM_AUTH_URL"]
        self.jdbc_url = env["PM_JDBC_URL"]
        self.port = int(urlsplit(self.base_url).port or 80)
        sql = urlsplit(self.jdbc_url.split("url=", 1)[1])
        self.sql_url = f"{sql.scheme}://{sql.netloc}"
        self.sql_port = int(sql.port or 80)
        self.workgroups: dict[str, SandboxWorkgroup] = {
            w["key"]: SandboxWorkgroup(
                key=w["key"],
                client_id=w["client_id"],
                client_secret=w["client_secret"],
                name=w["name"],
                licensed=w["licensed"],
                project_ids=tuple(w["project_ids"]),
            )
            for w in self._admin("GET", "/workgroups")
        }

    @property
    def admin_key(self) -> str:
        """The key of the admin routes (header ``X-Sandbox-Admin``), for tools that call them directly."""
        return self._admin_key

    @property
    def pid(self) -> int:
        """The sandbox process id."""
        return self._proc.pid

    def __repr__(self) -> str:
        state = "running" if self._proc.poll() is None else f"exited {self._proc.returncode}"
        return f"<Sandbox {self.base_url} sql={self.sql_url} {state}>"

    def _admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.base_url}/_sandbox{path}",
            data=data,
            method=method,
            headers={_ADMIN_HEADER: self._admin_key, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise SandboxError(
                f"sandbox admin {method} {path} failed: {exc.code} {exc.read()[:500]!r}"
            ) from None
        except OSError as exc:
            raise SandboxError(f"sandbox admin {method} {path} failed: {exc}") from None

    def stats(self) -> dict[str, Any]:
        """Counters: ``{"requests": {"<METHOD> <path>": n}, "tokens_issued": n, "faults": [...]}``.

        Admin calls (``/_sandbox/...``) are not counted.
        """
        answer: dict[str, Any] = self._admin("GET", "/stats")
        return answer

    def issued_tokens(self) -> list[str]:
        """The access and refresh tokens this sandbox issued (the latest 10,000), to check none leaked."""
        return list(self._admin("GET", "/tokens")["tokens"])

    def reset_stats(self) -> None:
        """Zero the request counters."""
        self._admin("DELETE", "/stats")

    def hold_ingestion(self, on: bool = True) -> bool:
        """Hold (or release) every file ingestion just before its tables are swapped in; returns whether
        one is waiting at the hold now (poll it to know an upload reached that point)."""
        return bool(self._admin("POST", "/ingest-hold", {"hold": on})["waiting"])

    def ingestion_waiting(self) -> bool:
        """Whether an ingestion is waiting at the hold (see :meth:`hold_ingestion`)."""
        return bool(self._admin("POST", "/ingest-hold", {})["waiting"])

    def fault(
        self,
        path_prefix: str,
        status: int | None = 503,
        times: int = 1,
        retry_after: float | None = None,
        delay: float = 0.0,
        drop: bool = False,
        drop_after_bytes: int | None = None,
        hold: bool = False,
    ) -> None:
        """Make the next *times* requests whose path starts with *path_prefix* (either port) misbehave.

        :param status: answer this status (JSON body; 401 adds ``WWW-Authenticate``); ``None`` = answer
            normally after *delay*.
        :param retry_after: add ``Retry-After: <seconds>``.
        :param delay: wait this many seconds first.
        :param drop: close the connection without answering.
        :param drop_after_bytes: answer normally but drop the connection after this many body bytes.
        :param hold: first keep the request waiting until :meth:`release` or :meth:`clear_faults` (a slow
            answer by construction; :meth:`wait_held` tells when it has arrived).
        """
        self._admin(
            "POST",
            "/faults",
            {
                "path_prefix": path_prefix,
                "status": status,
                "times": times,
                "retry_after": retry_after,
                "delay": delay,
                "drop": drop,
                "drop_after_bytes": drop_after_bytes,
                "hold": hold,
            },
        )

    def hold_statements(
        self, sql_contains: str, times: int = 1, *, client_id: str | None = None, after_rows: int = 0
    ) -> None:
        """Hold the next *times* SQL statements whose text contains *sql_contains* until they are interrupted.

        A held statement is admitted like any other (a query slot, its time limit, cancellable) and then
        waits inside the engine until its time limit or a cancel (Druid ``DELETE``, Avatica
        ``closeStatement``/``closeConnection``) interrupts it, or :meth:`release` lets it run on: a
        statement that runs until it is interrupted by construction, whatever the machine's speed.

        With *after_rows*, the hold comes mid-result instead: once the statement's streamed result (Druid SQL
        API; an Avatica result larger than one block of 50,000 rows) has produced that many rows, so the
        client is interrupted with part of the result in hand.
        """
        spec = {"sql_contains": sql_contains, "times": times, "client_id": client_id}
        if after_rows:
            spec["after_rows"] = after_rows
        self._admin("POST", "/holds", spec)

    def held(self) -> dict[str, Any]:
        """What the holds hold: ``{"requests": n, "statements": {"armed", "held", "ended"}}``.

        ``armed`` lists the statement holds still armed, ``held`` counts the statements waiting now and
        ``ended`` counts the held ones that ended, by outcome (``cancelled``, ``timed_out``, ``released``,
        ``failed``) since the last :meth:`clear_faults`.
        """
        answer: dict[str, Any] = self._admin("GET", "/holds")
        return answer

    def wait_held(self, count: int = 1, *, requests: bool = False, timeout: float = 60.0) -> None:
        """Wait until *count* statements (or, with *requests*, HTTP requests) are being held.

        :raises SandboxError: not so after *timeout* seconds (a guard against hangs, not a measure).
        """
        deadline = time.monotonic() + timeout
        while True:
            now = self.held()
            n = now["requests"] if requests else now["statements"]["held"]
            if n >= count:
                return
            if time.monotonic() > deadline:
                raise SandboxError(f"expected {count} held, found {n} after {timeout:g} s: {now}")
            time.sleep(0.02)

    def wait_ended(self, outcome: str, count: int = 1, *, timeout: float = 60.0) -> dict[str, Any]:
        """Wait until no statement is held any more and *count* held ones ended with *outcome*.

        :returns: the final :meth:`held` state.
        :raises SandboxError: not so after *timeout* seconds (with the state found).
        """
        deadline = time.monotonic() + timeout
        while True:
            now: dict[str, Any] = self.held()["statements"]
            if now["held"] == 0 and now["ended"].get(outcome, 0) >= count:
                return now
            if time.monotonic() > deadline:
                raise SandboxError(f"expected {count} held statements {outcome} after {timeout:g} s: {now}")
            time.sleep(0.02)

    def release(self) -> dict[str, int]:
        """Let every held request and statement go on, and end the workgroup holds of :meth:`hold`;
        returns ``{"requests": n, "statements": n}``."""
        answer: dict[str, int] = self._admin("POST", "/release")
        return answer

    def clear_faults(self) -> None:
        """Disarm every fault and hold, and release what they hold."""
        self._admin("DELETE", "/faults")

    def hold(self, client_id: str) -> None:
        """Hold every SQL statement of workgroup *client_id* (either SQL route) until :meth:`release`.

        A held statement has taken its workgroup's query slot and a worker thread and waits there (at most
        until its time limit): a long-running query by construction. ``held()["statements"]["by_workgroup"]``
        counts the waiting statements by workgroup.
        """
        self._admin("POST", "/holds", {"client_id": client_id, "times": None})

    def running(self) -> bool:
        """Whether the process is still alive."""
        return self._proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int:
        """Stop the process (SIGTERM, then SIGKILL after *timeout*); returns its exit code. Idempotent."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        return self._proc.returncode

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def read_env_file(path: str | Path) -> dict[str, str]:
    """Parse a ``KEY=value`` file as the sandbox writes it."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def start(
    port: int = 0,
    sql_port: int = 0,
    *,
    cases: int | None = None,
    token_lifetime: int | None = None,
    refresh_lifetime: int | None = None,
    seed: int | None = None,
    data: str | Path | None = None,
    host: str = "127.0.0.1",
    extra_args: Sequence[str] = (),
    log_path: str | Path | None = None,
    env_file: str | Path | None = None,
    timeout: float = 120.0,
    druid: str | None = None,
) -> Sandbox:
    """Start ``python -m pm_sandbox`` as a subprocess and wait until it serves.

    Ports default to 0 (free ports). The process stops when :meth:`Sandbox.stop` is called, at
    interpreter exit, or by itself if this process dies.

    :param log_path: where the sandbox's output goes (default: a temporary folder removed on stop).
    :param druid: a Druid broker's URL (``--druid``): the projects are published there and the SQL port
        forwards to it; *timeout* then also covers the publishing (give it minutes).
    :raises SandboxError: if it exits or does not become ready within *timeout* seconds.
    """
    workdir = Path(tempfile.mkdtemp(prefix="pm-sandbox-"))
    env_path = Path(env_file) if env_file else workdir / "sandbox.env"
    log_file = Path(log_path) if log_path else workdir / "sandbox.log"
    with contextlib.suppress(FileNotFoundError):
        env_path.unlink()
    cmd = [
        sys.executable,
        "-m",
        "pm_sandbox",
        "--host",
        host,
        "--port",
        str(port),
        "--sql-port",
        str(sql_port),
        "--env-file",
        str(env_path),
    ]
    for flag, value in (
        ("--cases", cases),
        ("--token-lifetime", token_lifetime),
        ("--refresh-lifetime", refresh_lifetime),
        ("--seed", seed),
        ("--data", data),
        ("--druid", druid),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    cmd += list(extra_args)
    admin_key = secrets.token_urlsafe(16)
    child_env = {**os.environ, "PM_SANDBOX_PARENT_PID": str(os.getpid()), _ADMIN_KEY_ENV: admin_key}
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handle = open(log_file, "ab")  # noqa: SIM115 - closed by Sandbox.stop
    proc = subprocess.Popen(
        cmd, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env
    )
    deadline = time.monotonic() + timeout
    try:
        while not env_path.exists():
            if proc.poll() is not None:
                raise SandboxError(f"the sandbox exited with code {proc.returncode}:\n{_tail(log_file)}")
            if time.monotonic() > deadline:
                raise SandboxError(f"the sandbox was not ready after {timeout:.0f}s:\n{_tail(log_file)}")
            time.sleep(0.05)
        sb = Sandbox(
            proc,
            read_env_file(env_path),
            env_file=env_path,
            log_path=log_file,
            admin_key=admin_key,
            workdir=workdir,
            log_handle=handle,
        )
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        handle.close()
        if log_path is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    atexit.register(sb.stop)
    return sb


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
