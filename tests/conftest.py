"""Shared fixtures: a real sandbox service on free 127.0.0.1 ports, and a clean ``PM_*`` environment.

* ``sandbox`` (session): one started sandbox (``SANDBOX_CASES`` cases per project), log in the
  session's tmp folder; faults are cleared after every test that used it. With ``PM_TEST_DRUID=1`` it runs in
  front of a real Apache Druid (``--druid``: its projects published there, every SQL request forwarded to the
  broker of ``druid_cluster``), so the client's tests run against Druid's engine; a test of a behaviour of the
  stand-in itself is marked ``@pytest.mark.standin_only("why")`` and skipped then with that reason; so is,
  without a marker, a test that holds a statement in the stand-in's engine (``hold_statements``,
  ``interrupt_when_held``: a forwarded query never reaches it).
* ``druid_cluster`` (session): a real Druid's broker and coordinator URLs: ``PM_DRUID_URL`` and
  ``PM_DRUID_COORDINATOR_URL`` from the environment, else from ``.druid/env`` (``make druid``), else a
  cluster the session starts with ``druid/cluster.py`` and stops at its end.
* ``sandbox_factory`` (function): ``sandbox_factory(**start_kwargs)`` starts extra sandboxes (e.g. with a
  short ``token_lifetime``), all stopped at teardown.
* ``sandbox_store`` (session): the same deterministic data built in-process (unsealed DuckDB per
  workgroup), for computing expected values: ``sandbox_store.database(client_id)``.
* ``connect_workgroup`` (session): ``connect_workgroup(sb, key="demo", **options)`` opens a pm_notebook
  connection to one workgroup of sandbox *sb* (no keyring); the caller closes it.
* ``serve_app`` (session): ``with serve_app(app) as url: ...`` serves an ASGI app (the SQL app alone, say)
  with uvicorn on a free 127.0.0.1 port in a thread, configured as the sandbox's servers; stopped on leaving.
* ``interrupt_when_held`` (function): ``with interrupt_when_held(sb): ...`` sends the main thread a Ctrl-C as
  soon as *sb* holds a statement (see :meth:`Sandbox.hold_statements`), however long that takes: the Ctrl-C
  always lands while the query runs on the server, never before it was sent nor after it finished.
* ``sigint_ignored`` (session): an argv prefix, ``[*sigint_ignored, *cmd]``, that starts *cmd* as a
  non-interactive shell starts a background job (``nohup cmd &``): with SIGINT ignored, which its children
  inherit.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SANDBOX_CASES = 300
#: the switch: the session's sandbox forwards its SQL to a real Druid (see the module docstring)
TEST_DRUID = os.environ.get("PM_TEST_DRUID", "") == "1"
ROOT = Path(__file__).resolve().parents[1]
SDK_REQUIREMENT = "igrafx-mining-sdk==2.38.1"
PM_ENV_KEYS = ("PM_BASE_URL", "PM_AUTH_URL", "PM_CLIENT_ID", "PM_CLIENT_SECRET", "PM_JDBC_URL")
CACHE_ENV_KEYS = ("PM_CACHE", "PM_REPLAY", "PM_CACHE_DIR")


@pytest.fixture(autouse=True)
def _clean_pm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's own PM_* connection values."""
    for key in PM_ENV_KEYS + CACHE_ENV_KEYS:  # a developer's PM_REPLAY must not turn every test offline
        monkeypatch.delenv(key, raising=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "standin_only(reason): checks a behaviour of the stand-in itself (its fault switches, statement "
        "holds, DuckDB engine or error wording); skipped with PM_TEST_DRUID=1, naming the reason",
    )


#: what makes a test stand-in only without a marker: it holds a statement inside the stand-in's own engine
#: (Sandbox.hold_statements, directly or through interrupt_when_held), which a query forwarded to Druid never
#: reaches; the hold would wait for ever
_ENGINE_HOLDS = ("hold_statements", "interrupt_when_held")
_HOLDS_REASON = (
    "holds a statement in the stand-in's DuckDB engine (Sandbox.hold_statements), which a query forwarded to "
    "Druid never reaches"
)


def _stand_in_only(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("standin_only")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("reason", ""))
    function = getattr(item, "function", None)
    try:
        source = inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return None
    return _HOLDS_REASON if any(name in source for name in _ENGINE_HOLDS) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not TEST_DRUID:
        return
    for item in items:
        reason = _stand_in_only(item)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"stand-in only (PM_TEST_DRUID=1): {reason}"))


@dataclass(frozen=True)
class DruidCluster:
    broker: str
    coordinator: str


def _env_cluster() -> DruidCluster | None:
    values = {k: v for k, v in os.environ.items() if k.startswith("PM_DRUID_")}
    env_file = ROOT / ".druid" / "env"
    if "PM_DRUID_URL" not in values and env_file.exists():
        for line in env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            values[key] = value
    if "PM_DRUID_URL" in values and "PM_DRUID_COORDINATOR_URL" in values:
        return DruidCluster(values["PM_DRUID_URL"], values["PM_DRUID_COORDINATOR_URL"])
    return None


@pytest.fixture(scope="session")
def druid_cluster(tmp_path_factory: pytest.TempPathFactory):
    given = _env_cluster()
    if given is not None:
        yield given
        return
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"a real Druid needs {' and '.join(missing)} (make system-deps installs them)")
    sys.path.insert(0, str(ROOT / "tests" / "druid"))
    try:
        from _cluster import load
    finally:
        sys.path.remove(str(ROOT / "tests" / "druid"))
    cluster = load().Cluster(tmp_path_factory.mktemp("druid"))
    env = cluster.start(watch_pid=os.getpid())
    try:
        yield DruidCluster(env["PM_DRUID_URL"], env["PM_DRUID_COORDINATOR_URL"])
    finally:
        cluster.stop(quiet=True)


@pytest.fixture(scope="session")
def sandbox(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A running sandbox shared by the whole session (in front of a real Druid with PM_TEST_DRUID=1)."""
    from pm_sandbox import start

    log_path = tmp_path_factory.mktemp("sandbox") / "sandbox.log"
    if TEST_DRUID:
        cluster = request.getfixturevalue("druid_cluster")
        # publishing every workgroup's projects takes minutes on a fresh Druid (none when it holds them)
        sb = start(
            cases=SANDBOX_CASES,
            log_path=log_path,
            druid=cluster.broker,
            extra_args=["--druid-coordinator", cluster.coordinator],
            timeout=3600,
        )
    else:
        sb = start(cases=SANDBOX_CASES, log_path=log_path)
    yield sb
    sb.stop()


@pytest.fixture(scope="session")
def gzip_sandbox(tmp_path_factory: pytest.TempPathFactory):
    """A second sandbox with the same data that gzips its SQL answers, as Druid's broker does by default."""
    from pm_sandbox import start

    log_path = tmp_path_factory.mktemp("gzip-sandbox") / "sandbox.log"
    sb = start(cases=SANDBOX_CASES, log_path=log_path, extra_args=["--sql-compression-level", "-1"])
    yield sb
    sb.stop()


@pytest.fixture(scope="session")
def connect_workgroup():
    """``connect_workgroup(sb, key="demo", *, secret=None, **options)``: a new connection to workgroup *key*
    of sandbox *sb*, with its own secret unless *secret* is given, never through the keyring; the caller
    closes it (``with connect_workgroup(sandbox) as conn: ...``)."""
    import pm_notebook

    def connect(sb, key: str = "demo", *, secret: str | None = None, **options):
        wg = sb.workgroups[key]
        options.setdefault("use_keyring", False)
        client_secret = wg.client_secret if secret is None else secret
        return pm_notebook.connect(
            sb.base_url, sb.auth_url, wg.client_id, client_secret, sb.jdbc_url, **options
        )

    return connect


@pytest.fixture(autouse=True)
def _clear_sandbox_faults(request: pytest.FixtureRequest):
    """Faults armed by a test never leak into the next one."""
    yield
    if "sandbox" in request.fixturenames:
        request.getfixturevalue("sandbox").clear_faults()


@pytest.fixture
def interrupt_when_held():
    """A context manager: Ctrl-C the main thread once the sandbox holds *count* statements (or requests).

    ``how="signal"`` sends SIGINT (a terminal's Ctrl-C); ``how="interrupt_main"`` is what a Jupyter kernel
    interrupt does. With *until* (a predicate), it also waits for that to hold after the sandbox holds (e.g.
    for the client to have written part of a file). The waiting thread gives up after 60 s (a hang guard)
    and then sends nothing.
    """

    @contextlib.contextmanager
    def interrupt(sb, *, how: str = "signal", requests: bool = False, count: int = 1, until=None):
        import _thread
        import signal

        main = threading.main_thread().ident
        stop = threading.Event()

        def run() -> None:
            with contextlib.suppress(Exception):  # the test's own verdict reports what went wrong
                sb.wait_held(count, requests=requests)
                deadline = time.monotonic() + 60
                while until is not None and not until() and time.monotonic() < deadline:
                    if stop.wait(0.02):
                        return
                if not stop.is_set():
                    if how == "signal":
                        signal.pthread_kill(main, signal.SIGINT)
                    else:
                        _thread.interrupt_main()

        thread = threading.Thread(target=run, name="interrupt-when-held", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(70)

    return interrupt


@pytest.fixture(scope="session")
def sigint_ignored() -> list[str]:
    """``[*sigint_ignored, *cmd]`` runs *cmd* (found on ``PATH`` unless a path) with SIGINT ignored, as a
    background job of a non-interactive shell gets it; the process keeps the launcher's pid (exec)."""
    launcher = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "os.execvp(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", launcher]


@pytest.fixture
def sandbox_factory(tmp_path):
    """Start extra sandboxes with custom options; each is stopped when the test ends."""
    from pm_sandbox import start

    started = []

    def factory(**kwargs):
        kwargs.setdefault("cases", SANDBOX_CASES)
        kwargs.setdefault("log_path", tmp_path / f"sandbox-{len(started)}.log")
        sb = start(**kwargs)
        started.append(sb)
        return sb

    yield factory
    for sb in started:
        sb.stop()


@pytest.fixture(scope="session")
def sandbox_store():
    """The fixture sandbox's data, rebuilt in-process from the same seed (for expected values)."""
    from pm_sandbox.data.store import build_store

    store = build_store(cases=SANDBOX_CASES, seal=False)
    yield store
    store.close()


@pytest.fixture(scope="session")
def sdk_wheel(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The vendor SDK's wheel (``igrafx-mining-sdk==2.38.1``), downloaded once with pip (never installed) into
    pytest's cache; its code is read by the tests that run it unchanged against the sandbox."""
    import subprocess
    import sys
    from pathlib import Path

    cache = getattr(request.config, "cache", None)
    folder = Path(cache.mkdir("igrafx-sdk")) if cache is not None else tmp_path_factory.mktemp("igrafx-sdk")
    pattern = "igrafx_mining_sdk-2.38.1-*.whl"
    if not sorted(folder.glob(pattern)):
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version=3.11",  # the wheel's Requires-Python; it is read, never installed
            "-q",
            "-d",
            str(folder),
        ]
        try:
            subprocess.run([*cmd, SDK_REQUIREMENT], check=True, capture_output=True, timeout=120)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            pytest.fail(
                f"could not download the {SDK_REQUIREMENT} wheel (is the package index reachable?): {exc}"
            )
    return sorted(folder.glob(pattern))[0]


@pytest.fixture
def memory_keyring():
    """An empty in-process keyring backend for the test, so no test touches the developer's OS keyring."""
    import keyring
    from keyring.backend import KeyringBackend

    class MemoryKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def __init__(self) -> None:
            super().__init__()
            self.store: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.store.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.store[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            self.store.pop((service, username), None)

    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


#: rows of the ``numbers`` table of ``numbers_sql`` (one more than Druid's default ``maxSubqueryRows``)
NUMBERS_ROWS = 100_001


@dataclass(frozen=True)
class NumbersSql:
    """A SQL port (both protocols) over a small store whose demo workgroup also has a table ``numbers`` of
    :data:`NUMBERS_ROWS` rows (``n`` = 0 … 100,000, ``__time`` one second apart from 2024-03-30 22:00 UTC),
    the smallest data that makes a subquery Druid would refuse under its default ``maxSubqueryRows``."""

    url: str
    client_id: str
    client_secret: str
    engine: Any  # the SqlEngine (its ``holds`` switch makes a statement wait until its time limit)
    avatica: Any  # the AvaticaService (its open connections)
    rows: int = NUMBERS_ROWS

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:avatica:remote:url={self.url}/druid/v2/sql/avatica/"

    def target(self) -> Any:
        from pm_notebook.sql.base import Target

        return Target.from_jdbc_url(self.jdbc_url, self.client_id, self.client_secret)


@contextlib.contextmanager
def _served(app: Any) -> Iterator[str]:
    """*app* served by uvicorn on a free loopback port in a thread; yields its base URL, stops on leaving.

    The socket is bound and listening before uvicorn starts (as the sandbox's own servers are): a request
    sent at once waits in the listen queue until the server accepts it, so nothing polls for the start."""
    import socket

    import uvicorn

    sock = socket.create_server(("127.0.0.1", 0))  # port 0: the OS picks a free one
    # ws="none" as the sandbox's servers: no WebSocket served, none loaded
    config = uvicorn.Config(app, log_level="warning", ws="none", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


@pytest.fixture(scope="session")
def serve_app():
    """``serve_app(app)``: a context manager serving *app* on a free loopback port; yields its base URL."""
    return _served


@pytest.fixture(scope="session")
def numbers_sql(serve_app):
    """The SQL app over the ``numbers`` store, served by uvicorn on a free loopback port in a thread."""
    import datetime as dt

    import pyarrow as pa

    from pm_sandbox.data.store import ProjectRecord, build_store
    from pm_sandbox.data.tables import ProjectTables
    from pm_sandbox.sql.app import SqlOptions, create_sql_app

    store = build_store(cases=5, seal=False)
    demo = store.by_key("demo")
    start = dt.datetime(2024, 3, 30, 22, 0, 0)
    table = pa.table(
        {
            "__time": pa.array(
                [start + dt.timedelta(seconds=i) for i in range(NUMBERS_ROWS)], pa.timestamp("ms")
            ),
            "n": pa.array(range(NUMBERS_ROWS), pa.int64()),
        }
    )
    record = ProjectRecord(
        id="numbers", name="numbers", description="numbers", created="2024-01-01T00:00:00Z"
    )
    store.add_project(demo.id, record, ProjectTables(tables={"numbers": table}, lookups={}))
    store.seal()
    app = create_sql_app(store, options=SqlOptions())
    with serve_app(app) as url:
        yield NumbersSql(url, demo.id, demo.secret, app.state.sql_engine, app.state.avatica)
    store.close()


class Wire:
    """The REST paths and the SQL statements one connection sends, as they leave it: a ``requests`` response
    hook on the connection's REST session and on its ``druid`` transport's session (so open the connection
    with ``transport="druid"``)."""

    def __init__(self, conn: Any) -> None:
        self.rest: list[str] = []
        self.sql: list[str] = []
        conn._session.hooks["response"].append(self._rest)
        conn._sql().get("druid")._session.hooks["response"].append(self._sql)

    def _rest(self, response: Any, *args: Any, **kwargs: Any) -> None:
        if "/pub/" in response.request.url:
            self.rest.append(response.request.path_url)

    def _sql(self, response: Any, *args: Any, **kwargs: Any) -> None:
        self.sql.append(json.loads(response.request.body)["query"])

    def clear(self) -> None:
        self.rest.clear()
        self.sql.clear()


@pytest.fixture(scope="session")
def wire_of():
    """``wire_of(conn)``: a :class:`Wire` recording what *conn* sends from now on."""
    return Wire
