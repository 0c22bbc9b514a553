"""A local Apache Druid 33.0.0 for pm_notebook's test loop: ``make druid`` / ``make druid-stop``.

    python druid/cluster.py start [--dir .druid]   # resolve the jars, start five JVMs, wait, write DIR/env
    python druid/cluster.py stop  [--dir .druid]   # stop every process start started (by pid), services first
    python druid/cluster.py jars                   # only resolve and check the jars (prints their folder)
    python druid/cluster.py lock                   # rewrite druid/jars.sha256 from a fresh resolution

The jars come from Maven Central by ``druid/pom.xml`` (Druid's root pom imported as a BOM, ``druid-services``
and ``druid-datasketches``), copied into a cache folder (``$PM_DRUID_CACHE``, else
``$XDG_CACHE_HOME/pm_notebook`` or ``~/.cache/pm_notebook``, then ``druid-<version>/lib``) and checked against
``druid/jars.sha256`` on every start: a jar that differs, is missing or is extra stops the start, as a Python
lock would.

The cluster: ZooKeeper and the Derby metadata store from the same jars; a coordinator that is also the
overlord (and runs Derby's network server); a broker, a historical and an indexer (tasks as threads).
Everything binds 127.0.0.1, every port is chosen free at start (two clusters — a developer's and CI's — run
side by side), and every run starts from an empty ``DIR/var``. Broker limits stay Druid's defaults (2 merge
buffers, ``maxSubqueryRows`` 100,000, ``maxSubqueryBytes`` disabled): what a small service has. Readiness is
each service's health endpoint, the broker's readiness, the overlord listing the indexer and the broker
answering SQL — never a sleep.

``DIR/env`` then holds ``PM_DRUID_URL`` (the broker) and ``PM_DRUID_COORDINATOR_URL`` (coordinator and
overlord); ``DIR/pids`` the processes. Standard library only: this runs before the project's venv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = "33.0.0"
LOCK = HERE / "jars.sha256"
SERVICES = ("coordinator", "broker", "historical", "indexer")
# Druid refuses to start on Java without these (docs/operations/java.md: "strong encapsulation")
JAVA_FLAGS = (
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
)
# heap (MiB) of each JVM; processing pools as (buffer MiB, merge buffers, threads). The broker keeps Druid's
# default of 2 merge buffers (what a small service has; the answers are shaped to fit them); the historical
# scans a query's segments with one thread per core (Druid's default is cores - 1, which on this project's
# 2-core machines leaves one segment at a time), at most 4 so that CI's larger runners keep the same heap
# and direct memory sizes. The broker's one thread merges the historicals' results.
HEAP_MB = {"zookeeper": 128, "coordinator": 384, "broker": 512, "historical": 512, "indexer": 512}
CORES = max(2, min(os.cpu_count() or 2, 4))
POOLS = {"broker": (64, 2, 1), "historical": (64, 2, CORES), "indexer": (32, 2, 1)}
DIRECT_HEADROOM_MB = 64
START_DEADLINE_S = 600.0


def heap_mb(svc: str) -> int:
    """The heap of *svc*'s JVM: ``HEAP_MB``, or ``PM_DRUID_<SVC>_HEAP_MB`` (e.g. ``PM_DRUID_BROKER_HEAP_MB``
    for bench/bench_broker_memory.py's broker)."""
    given = os.environ.get(f"PM_DRUID_{svc.upper()}_HEAP_MB", "").strip()
    if not given:
        return HEAP_MB[svc]
    if not given.isdigit() or int(given) < 64:
        raise DruidError(
            f"PM_DRUID_{svc.upper()}_HEAP_MB must be a number of MiB (64 or more), got {given!r}."
        )
    return int(given)


class DruidError(RuntimeError):
    """The local Druid could not be assembled, started or stopped; the message says why and where to look."""


# --- the jars -----------------------------------------------------------------------------------------------


def cache_root() -> Path:
    if os.environ.get("PM_DRUID_CACHE"):
        return Path(os.environ["PM_DRUID_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pm_notebook"


def lib_dir() -> Path:
    return cache_root() / f"druid-{VERSION}" / "lib"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: _sha256(p) for p in sorted(folder.iterdir()) if p.is_file()}


def _read_lock() -> dict[str, str]:
    if not LOCK.exists():
        raise DruidError(f"{LOCK} is missing: run `python druid/cluster.py lock` once and commit it")
    pinned = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            pinned[name] = digest
    return pinned


def _mismatch(found: dict[str, str], pinned: dict[str, str]) -> list[str]:
    problems = [f"missing {n}" for n in sorted(pinned.keys() - found.keys())]
    problems += [f"not in the lock: {n}" for n in sorted(found.keys() - pinned.keys())]
    problems += [
        f"checksum differs: {n}" for n in sorted(pinned.keys() & found.keys()) if pinned[n] != found[n]
    ]
    return problems


def _resolve(into: Path) -> None:
    """Run Maven: the pom's runtime closure copied into ``into`` (Central only; the local repository
    caches)."""
    if shutil.which("mvn") is None:
        raise DruidError(
            "Maven (mvn) is not installed: `make system-deps` installs it (Debian package maven)"
        )
    with tempfile.TemporaryDirectory(prefix="pm-druid-empty-repo-") as empty:
        env = {**os.environ, "PM_DRUID_EMPTY_REPO": empty}
        cmd = [
            "mvn",
            "-q",
            "-B",
            "-s",
            str(HERE / "maven-settings.xml"),
            "-f",
            str(HERE / "pom.xml"),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={into}",
        ]
        done = subprocess.run(
            cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise DruidError(f"Maven could not resolve Druid {VERSION}'s jars:\n{tail}")


def ensure_jars() -> Path:
    """The checked jar folder: the cached one if it matches the lock, else resolved anew and checked."""
    pinned = _read_lock()
    lib = lib_dir()
    if lib.is_dir() and not _mismatch(_digests(lib), pinned):
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix="lib-", dir=lib.parent))
    try:
        _resolve(fresh)
        problems = _mismatch(_digests(fresh), pinned)
        if problems:
            shown = "\n  ".join(problems[:20])
            raise DruidError(
                f"Druid's jars do not match druid/jars.sha256 ({len(problems)} problems):\n  {shown}\n"
                "If druid/pom.xml changed on purpose, run `python druid/cluster.py lock`."
            )
        if lib.exists():
            shutil.rmtree(lib)
        fresh.rename(lib)
    finally:
        if fresh.exists():
            shutil.rmtree(fresh)
    return lib


def write_lock() -> None:
    with tempfile.TemporaryDirectory(prefix="pm-druid-lock-") as tmp:
        _resolve(Path(tmp))
        found = _digests(Path(tmp))
    lines = [f"# sha256 of every jar `python druid/cluster.py jars` copies (Druid {VERSION}, druid/pom.xml)"]
    lines += [f"{digest}  {name}" for name, digest in found.items()]
    LOCK.write_text("\n".join(lines) + "\n")
    print(f"{LOCK}: {len(found)} jars")


# --- configuration ------------------------------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free right now (bound together, then released)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _props(values: dict[str, object]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


LOG4J2 = """<?xml version="1.0" encoding="UTF-8" ?>
<Configuration status="WARN"> <Appenders>
    <File name="file" fileName="${sys:pm.druid.log}">
      <PatternLayout pattern="%d{ISO8601} %p [%t] %c - %m%n"/>
    </File>
  </Appenders> <Loggers>
    <Root level="info"><AppenderRef ref="file"/></Root>
    <Logger name="org.apache.druid.jetty.RequestLog" additivity="false" level="warn"><AppenderRef
    ref="file"/></Logger>
  </Loggers> </Configuration>
"""


def write_conf(run: Path, ports: dict[str, int]) -> None:
    var = run / "var"
    for sub in ("zk", "derby", "segments", "segment-cache", "task", "indexing-logs", "tmp"):
        (var / sub).mkdir(parents=True, exist_ok=True)
    conf = run / "conf"
    (conf / "zk").mkdir(parents=True, exist_ok=True)
    (conf / "zk" / "zoo.cfg").write_text(
        _props(
            {
                "tickTime": 2000,
                "initLimit": 5,
                "syncLimit": 2,
                "dataDir": var / "zk",
                "clientPort": ports["zookeeper"],
                "clientPortAddress": "127.0.0.1",
                "admin.enableServer": "false",
                "4lw.commands.whitelist": "ruok",
            }
        )
    )
    common = {
        "druid.host": "localhost",
        "druid.bindOnHost": "true",
        "druid.extensions.loadList": "[]",
        "druid.zk.service.host": f"127.0.0.1:{ports['zookeeper']}",
        "druid.zk.paths.base": "/druid",
        "druid.metadata.storage.type": "derby",
        "druid.metadata.storage.connector.connectURI": (
            f"jdbc:derby://localhost:{ports['derby']}/{var / 'derby' / 'metadata'};create=true"
        ),
        "druid.metadata.storage.connector.host": "localhost",
        "druid.metadata.storage.connector.port": ports["derby"],
        "druid.storage.type": "local",
        "druid.storage.storageDirectory": var / "segments",
        "druid.indexer.logs.type": "file",
        "druid.indexer.logs.directory": var / "indexing-logs",
        "druid.selectors.indexing.serviceName": "druid/overlord",
        "druid.selectors.coordinator.serviceName": "druid/coordinator",
        "druid.emitter": "noop",
        "druid.monitoring.monitors": "[]",
        "druid.sql.enable": "true",
        "druid.lookup.enableLookupSyncOnStartup": "false",
        "druid.worker.ip": "localhost",
    }
    (conf / "_common").mkdir(parents=True, exist_ok=True)
    (conf / "_common" / "common.runtime.properties").write_text(_props(common))
    (conf / "_common" / "log4j2.xml").write_text(LOG4J2)
    per_service: dict[str, dict[str, object]] = {
        "coordinator": {
            "druid.service": "druid/coordinator",
            "druid.plaintextPort": ports["coordinator"],
            "druid.coordinator.startDelay": "PT2S",
            "druid.coordinator.period": "PT1S",
            "druid.manager.segments.pollDuration": "PT1S",
            "druid.coordinator.asOverlord.enabled": "true",
            "druid.coordinator.asOverlord.overlordService": "druid/overlord",
            "druid.indexer.queue.startDelay": "PT1S",
            "druid.indexer.storage.type": "metadata",
            "druid.indexer.runner.type": "httpRemote",
        },
        "broker": {
            "druid.service": "druid/broker",
            "druid.plaintextPort": ports["broker"],
            "druid.server.http.numThreads": 12,
            "druid.broker.http.numConnections": 6,
            "druid.broker.cache.useCache": "false",
            "druid.broker.cache.populateCache": "false",
            "druid.sql.planner.metadataRefreshPeriod": "PT1S",
            "druid.sql.planner.metadataSegmentPollPeriod": 1000,
        },
        "historical": {
            "druid.service": "druid/historical",
            "druid.plaintextPort": ports["historical"],
            "druid.server.http.numThreads": 12,
            "druid.server.maxSize": "100g",
            "druid.segmentCache.locations": json.dumps(
                [{"path": str(var / "segment-cache"), "maxSize": "100g"}]
            ),
            "druid.historical.cache.useCache": "false",
            "druid.historical.cache.populateCache": "false",
        },
        "indexer": {
            "druid.service": "druid/indexer",
            "druid.plaintextPort": ports["indexer"],
            "druid.worker.capacity": 3,
            "druid.worker.baseTaskDirs": json.dumps([str(var / "task")]),
            "druid.server.http.numThreads": 12,
        },
    }
    for svc, values in per_service.items():
        if svc in POOLS:
            buf, merge, threads = POOLS[svc]
            values.update(
                {
                    "druid.processing.buffer.sizeBytes": buf * 1024 * 1024,
                    "druid.processing.numMergeBuffers": merge,
                    "druid.processing.numThreads": threads,
                }
            )
        (conf / svc).mkdir(parents=True, exist_ok=True)
        (conf / svc / "runtime.properties").write_text(_props(values))


def java_command(run: Path, lib: Path, svc: str) -> list[str]:
    java = os.environ.get("PM_DRUID_JAVA") or "java"
    heap = heap_mb(svc)
    cmd = [
        java,
        f"-Xms{heap}m",
        f"-Xmx{heap}m",
        "-XX:+ExitOnOutOfMemoryError",
        "-Duser.timezone=UTC",
        "-Dfile.encoding=UTF-8",
        "-Djava.net.preferIPv4Stack=true",
        f"-Djava.io.tmpdir={run / 'var' / 'tmp'}",
        f"-Dpm.druid.log={run / 'logs' / (svc + '.log')}",
        "-Dlog4j.configurationFile=" + str(run / "conf" / "_common" / "log4j2.xml"),
        f"-Dpm.druid.run={run}",
    ]
    if svc == "zookeeper":
        return [
            *cmd,
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            f"{lib}/*",
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(run / "conf" / "zk" / "zoo.cfg"),
        ]
    cmd += list(JAVA_FLAGS)
    cmd.append("-Djava.util.logging.manager=org.apache.logging.log4j.jul.LogManager")
    if svc in POOLS:
        buf, merge, threads = POOLS[svc]
        cmd.append(f"-XX:MaxDirectMemorySize={buf * (merge + threads + 1) + DIRECT_HEADROOM_MB}m")
    if svc == "coordinator":
        cmd += [
            f"-Dderby.system.home={run / 'var' / 'derby'}",
            f"-Dderby.stream.error.file={run / 'logs' / 'derby.log'}",
        ]
    classpath = f"{run / 'conf' / svc}:{run / 'conf' / '_common'}:{lib}/*"
    return [*cmd, "-cp", classpath, "org.apache.druid.cli.Main", "server", svc]


# --- processes ----------------------------------------------------------------------------------------------


def _alive(pid: int, run: Path) -> bool:
    """Whether ``pid`` is still one of this cluster's JVMs (its command line names this run folder)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    with contextlib.suppress(OSError):
        if "State:\tZ" in Path(f"/proc/{pid}/status").read_text():  # exited, not yet reaped
            return False
    return f"-Dpm.druid.run={run}".encode() in cmdline


def _http(url: str, body: object | None = None, timeout: float = 10.0) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({})
    )  # loopback never goes through a proxy
    try:
        with opener.open(request, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def _zk_ok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.run = self.root / "run"
        self.pids_file = self.root / "pids"
        self.env_file = self.root / "env"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.watcher: subprocess.Popen[bytes] | None = None  # see start(watch_pid=)

    # the recorded processes of the last start: {service: pid}
    def recorded(self) -> dict[str, int]:
        if not self.pids_file.exists():
            return {}
        return {k: int(v) for k, v in json.loads(self.pids_file.read_text())["pids"].items()}

    def running(self) -> dict[str, int]:
        return {svc: pid for svc, pid in self.recorded().items() if _alive(pid, self.run)}

    def spawn(self, svc: str, lib: Path) -> None:
        with (self.run / "logs" / f"{svc}.out").open("wb") as out:  # the JVM keeps its own descriptor
            self.procs[svc] = subprocess.Popen(
                java_command(self.run, lib, svc),
                cwd=self.run,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # not in the caller's process group: no Ctrl-C
            )
        self._record()

    def _record(self) -> None:
        state = {"pids": {svc: p.pid for svc, p in self.procs.items()}}
        self.pids_file.write_text(json.dumps(state))

    def wait(self, what: str, check: Callable[[], bool], deadline: float) -> None:
        """Poll ``check`` until it holds; a JVM that exited or the deadline passing stops the start."""
        pause = 0.1
        while not check():
            for svc, proc in self.procs.items():
                if proc.poll() is not None:
                    raise DruidError(
                        f"Druid's {svc} exited (code {proc.returncode}) while waiting for {what}:\n"
                        + self.tail(svc)
                    )
            if time.monotonic() > deadline:
                raise DruidError(f"timed out waiting for {what}; logs in {self.run / 'logs'}")
            time.sleep(pause)
            pause = min(pause * 1.5, 1.0)

    def tail(self, svc: str, lines: int = 30) -> str:
        texts = []
        for name in (f"{svc}.log", f"{svc}.out"):
            path = self.run / "logs" / name
            if path.exists():
                texts.append(
                    f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
                )
        return "\n".join(texts)

    def start(self, watch_pid: int | None = None) -> dict[str, str]:
        """Start the cluster; with ``watch_pid``, a watcher stops it as soon as that process ends (a test
        session that dies never leaves five JVMs behind)."""
        if self.running():
            raise DruidError(f"a Druid started from {self.root} is still running: `make druid-stop` first")
        lib = ensure_jars()
        _check_java()
        if self.run.exists():
            shutil.rmtree(self.run)
        (self.run / "logs").mkdir(parents=True)
        self.env_file.unlink(missing_ok=True)
        names = ["zookeeper", "derby", *SERVICES]
        ports = dict(zip(names, free_ports(len(names)), strict=True))
        write_conf(self.run, ports)
        url = {svc: f"http://127.0.0.1:{ports[svc]}" for svc in SERVICES}
        deadline = time.monotonic() + START_DEADLINE_S
        began = time.monotonic()
        try:
            self.spawn("zookeeper", lib)
            self.wait("ZooKeeper", lambda: _zk_ok(ports["zookeeper"]), deadline)
            self.spawn("coordinator", lib)  # first: it starts Derby, which the others connect to
            self.wait(
                "the coordinator",
                lambda: _http(url["coordinator"] + "/status/health")[1] == b"true",
                deadline,
            )
            for svc in ("broker", "historical", "indexer"):
                self.spawn(svc, lib)
            for svc in ("broker", "historical", "indexer"):
                self.wait(
                    f"the {svc}", lambda s=svc: _http(url[s] + "/status/health")[1] == b"true", deadline
                )
            self.wait(
                "the broker's readiness",
                lambda: _http(url["broker"] + "/druid/broker/v1/readiness")[0] == 200,
                deadline,
            )
            self.wait("the overlord to list the indexer", lambda: _workers(url["coordinator"]) > 0, deadline)
            # one replica (one historical): the default rule asks for two and load status would never settle
            rule = [{"type": "loadForever", "tieredReplicants": {"_default_tier": 1}}]
            self.wait(
                "the default load rule",
                lambda: _http(url["coordinator"] + "/druid/coordinator/v1/rules/_default", rule)[0] == 200,
                deadline,
            )
            self.wait("the broker to answer SQL", lambda: _sql_ok(url["broker"]), deadline)
        except BaseException:
            self.stop(quiet=True)
            raise
        if watch_pid is not None:
            self.watcher = subprocess.Popen(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "watch",
                    "--pid",
                    str(watch_pid),
                    "--dir",
                    str(self.root),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        env = {"PM_DRUID_URL": url["broker"], "PM_DRUID_COORDINATOR_URL": url["coordinator"]}
        self.env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        state = json.loads(self.pids_file.read_text())
        state.update(
            {
                "ports": ports,
                "started_s": round(time.monotonic() - began, 1),
                "version": VERSION,
                "pools": {
                    svc: dict(zip(("buffer_mb", "merge_buffers", "threads"), pool, strict=True))
                    for svc, pool in POOLS.items()
                },
            }
        )
        self.pids_file.write_text(json.dumps(state))
        return env

    def stop(self, quiet: bool = False) -> list[str]:
        """Stop this cluster's JVMs: Druid's services first (TERM, then KILL after 45 s), ZooKeeper last."""
        pids = self.recorded()
        stopped = []
        for group in (SERVICES, ("zookeeper",)):
            alive = {svc: pids[svc] for svc in group if svc in pids and _alive(pids[svc], self.run)}
            for pid in alive.values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 45
            for svc, pid in alive.items():
                while _alive(pid, self.run) and time.monotonic() < deadline:  # a zombie counts as ended
                    time.sleep(0.1)
                if _alive(pid, self.run):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                stopped.append(svc)
        for proc in self.procs.values():  # the JVMs this object started: each one waited for (never a zombie,
            if proc.poll() is None:  # nor a Popen dropped while running), whatever state it was found in
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            proc.wait()
        self.procs.clear()
        self.pids_file.unlink(missing_ok=True)
        self.env_file.unlink(missing_ok=True)
        if self.watcher is not None:  # stopped by its owner: the watcher has nothing left to do
            self.watcher.kill()
            self.watcher.wait()
            self.watcher = None
        if not quiet:
            print("stopped: " + (", ".join(stopped) or "nothing was running"))
        return stopped

    def rss_mb(self) -> dict[str, float]:
        """Each running JVM's peak resident memory (VmHWM), in MiB."""
        out = {}
        for svc, pid in self.running().items():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out[svc] = int(line.split()[1]) / 1024
        return out


def describe_pools() -> str:
    """The processing pools, as ``make druid`` reports them."""
    return (
        "; ".join(
            f"{svc} {threads} thread{'s' if threads > 1 else ''}, {merge} merge buffers, buffers of {buf} MiB"
            for svc, (buf, merge, threads) in POOLS.items()
        )
        + " (broker limits: Druid's defaults, maxSubqueryRows 100,000)"
    )


def _workers(coordinator: str) -> int:
    status, body = _http(coordinator + "/druid/indexer/v1/workers")
    try:
        return len(json.loads(body)) if status == 200 else 0
    except ValueError:
        return 0


def _sql_ok(broker: str) -> bool:
    status, body = _http(broker + "/druid/v2/sql", {"query": "SELECT 1", "resultFormat": "array"})
    return status == 200 and json.loads(body) == [[1]]


def _check_java() -> None:
    java = os.environ.get("PM_DRUID_JAVA") or "java"
    if shutil.which(java) is None:
        raise DruidError("no Java: Druid 33 needs a Java 17 or 21 runtime (`make system-deps` installs one)")
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    first = (done.stderr or done.stdout).splitlines()[0] if (done.stderr or done.stdout) else ""
    if '"17' not in first and '"21' not in first:
        raise DruidError(
            f"Druid 33 runs on Java 17 or 21; `{java} -version` says: {first} (set PM_DRUID_JAVA)"
        )


def _wait_for_exit(pid: int) -> None:
    """Block until process ``pid`` has ended (a pidfd becomes readable then: no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except DruidError as err:
        print(f"druid: {err}", file=sys.stderr)
        raise SystemExit(1) from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="druid/cluster.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "jars", "lock", "status", "watch"])
    parser.add_argument("--pid", type=int, help="watch: stop the cluster when this process ends")
    parser.add_argument(
        "--dir", default=os.environ.get("PM_DRUID_DIR", ".druid"), help="state folder (.druid)"
    )
    args = parser.parse_args(argv)
    cluster = Cluster(Path(args.dir))
    with _errors():
        if args.command == "start":
            began = time.monotonic()
            env = cluster.start()
            rss = cluster.rss_mb()
            print(
                f"Druid {VERSION}: broker {env['PM_DRUID_URL']}, "
                f"coordinator {env['PM_DRUID_COORDINATOR_URL']}; "
                f"ready in {time.monotonic() - began:.1f} s; {sum(rss.values()):.0f} MiB resident "
                f"({', '.join(f'{k} {v:.0f}' for k, v in rss.items())}); values in {cluster.env_file}"
            )
            print("processing: " + describe_pools())
        elif args.command == "stop":
            cluster.stop()
        elif args.command == "watch":
            _wait_for_exit(args.pid)
            cluster.stop(quiet=True)
        elif args.command == "jars":
            print(ensure_jars())
        elif args.command == "lock":
            write_lock()
        else:
            running = cluster.running()
            print(json.dumps({"running": running, "env": cluster.env_file.read_text() if running else None}))


if __name__ == "__main__":
    main()
