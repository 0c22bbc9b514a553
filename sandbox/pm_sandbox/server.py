"""The sandbox process: both ports in one process, one event loop, two uvicorn servers.

We bind the sockets ourselves (so ``--port 0`` yields a free port we can report), build the data,
start both servers, and only once both accept connections write the env file — its appearance is
the readiness signal :func:`pm_sandbox.start` waits for. SIGINT/SIGTERM stop both servers;
when started by :func:`~pm_sandbox.start`, the process also stops by itself if its parent dies.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.types import Scope

from . import DEFAULT_CASES, DEFAULT_SEED

if TYPE_CHECKING:  # pragma: no cover
    from .data.store import Store

__all__ = ["ENV_KEYS", "build_parser", "cli", "main"]

log = logging.getLogger(__name__)

PARENT_ENV = "PM_SANDBOX_PARENT_PID"
ADMIN_KEY_ENV = "PM_SANDBOX_ADMIN_KEY"
#: the keys of the env file, in order: the client's connection values, then the admin routes' key
ENV_KEYS = ("PM_BASE_URL", "PM_AUTH_URL", "PM_CLIENT_ID", "PM_CLIENT_SECRET", "PM_JDBC_URL", ADMIN_KEY_ENV)


def build_parser(prog: str = "python -m pm_sandbox") -> argparse.ArgumentParser:
    """The command-line contract of the sandbox (other tools depend on it exactly)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run a local stand-in of the process-mining service: identity provider, public API "
        "and SQL endpoints (Avatica JDBC + Druid SQL) over generated data.",
    )
    p.add_argument(
        "--port", type=int, default=8080, help="main port: /realms and /pub (default 8080; 0 = free)"
    )
    p.add_argument(
        "--sql-port", type=int, default=8082, help="SQL port: Avatica + Druid SQL (default 8082; 0 = free)"
    )
    p.add_argument("--env-file", type=Path, default=None, help="write PM_* connection values here once ready")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--data", type=Path, default=None, help="folder of CSV event logs to import as demo projects"
    )
    p.add_argument(
        "--cases",
        type=int,
        default=DEFAULT_CASES,
        help=f"cases per generated project (default {DEFAULT_CASES}; ~9 tasks per case)",
    )
    p.add_argument(
        "--large-project-cases",
        type=int,
        default=None,
        metavar="CASES",
        help="also give the demo workgroup a project 'Purchase to Pay (large)' of this many cases (~9.3 "
        "_vertex rows each; 1,080,000 cases give 10 million rows), for results larger than memory",
    )
    p.add_argument(
        "--token-lifetime", type=int, default=300, help="access-token lifetime, seconds (default 300)"
    )
    p.add_argument(
        "--refresh-lifetime", type=int, default=1800, help="refresh-token lifetime, seconds (default 1800)"
    )
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="data and id seed (deterministic)")
    p.add_argument(
        "--max-upload-bytes", type=int, default=None, help="largest file /pub accepts (default 1 GiB)"
    )
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--fair-turns",
        type=int,
        default=0,
        help="requests in progress at once on both ports, handed out fairly among workgroups "
        "(default 0: two per processor)",
    )
    p.add_argument(
        "--fair-slice",
        type=float,
        default=0.05,
        help="seconds after which a request in progress stops holding its turn (default 0.05)",
    )
    p.add_argument(
        "--druid",
        default=None,
        metavar="BROKER_URL",
        help="forward every checked SQL request to this Apache Druid broker (e.g. http://127.0.0.1:8082), "
        "after publishing the projects there; ready once they are queryable on Druid",
    )
    p.add_argument(
        "--druid-coordinator",
        default=None,
        metavar="URL",
        help="the Druid coordinator (running the overlord) that ingests the projects (default: the one the "
        "broker's sys.servers names)",
    )
    from .sql.app import add_sql_arguments  # the SQL port's limits (--sql-query-timeout, ...)

    add_sql_arguments(p)
    return p


def main(argv: list[str] | None = None, prog: str = "python -m pm_sandbox") -> int:
    """Run the sandbox until SIGINT/SIGTERM; returns the exit code."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    for name in ("cases", "token_lifetime", "refresh_lifetime", "large_project_cases"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.fair_turns < 0:
        parser.error("--fair-turns must be 0 (two per processor) or more")
    if args.druid is not None:
        from .forward import Broker

        try:
            Broker(args.druid)
        except ValueError as exc:
            parser.error(str(exc))
    if not 0 < args.fair_slice < float("inf"):
        parser.error("--fair-slice must be a positive number of seconds")
    if args.sql_compression_level is not None and not -1 <= args.sql_compression_level <= 9:
        parser.error("--sql-compression-level must be -1 (zlib's default), 0 (none) or 1 to 9")
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # The server stack is imported only now, so --help and argument errors answer fast.
    from .data.store import build_store

    try:
        main_sock = _bind(args.host, args.port, "--port")
        sql_sock = _bind(args.host, args.sql_port, "--sql-port")
    except OSError as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 2
    try:
        store = build_store(
            cases=args.cases, seed=args.seed, data_dir=args.data, large_cases=args.large_project_cases
        )
    except ValueError as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(args, store, main_sock, sql_sock))
    finally:
        store.close()
    return 0


def cli() -> int:
    """Entry point of the ``pm-sandbox`` console script: :func:`main` on ``sys.argv``."""
    return main(prog="pm-sandbox")


def _bind(host: str, port: int, option: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another {option}, or 0 for a free port"
        ) from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _url_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else (f"[{host}]" if ":" in host else host)


async def _serve(
    args: argparse.Namespace, store: Store, main_sock: socket.socket, sql_sock: socket.socket
) -> None:
    import uvicorn

    from .app import create_app
    from .fair import FairAdmission, FairTurns, workgroup_of
    from .faults import ADMIN_PREFIX, FaultBoard, FaultMiddleware, _Connections, tracking_protocol
    from .oidc import REALM, IdentityProvider
    from .sql.app import create_sql_app, sql_options_from_args

    class _Server(uvicorn.Server):
        # Two servers share one process: signals are handled once, below, for both.
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    host = _url_host(args.host)
    port, sql_port = main_sock.getsockname()[1], sql_sock.getsockname()[1]
    base_url = f"http://{host}:{port}"
    auth_url = f"{base_url}/realms/{REALM}"
    idp = IdentityProvider(
        store,
        auth_url,
        base_url=base_url,
        access_lifetime=args.token_lifetime,
        refresh_lifetime=args.refresh_lifetime,
    )
    publisher = None
    if args.druid:
        from .forward import Broker, Publisher, coordinator_of

        broker = Broker(args.druid)
        coordinator = args.druid_coordinator or await asyncio.to_thread(coordinator_of, broker)
        publisher = Publisher(store, broker, coordinator)
    sql_port_app = create_sql_app(store, options=sql_options_from_args(args), druid=args.druid)
    # One event loop serves both ports: its requests take turns, shared fairly among workgroups.
    turns = FairTurns(args.fair_turns, args.fair_slice)
    board = FaultBoard(
        extra_stats=lambda: {"tokens_issued": idp.tokens_issued, "fair_turns": turns.state()},
        holds=sql_port_app.state.sql_engine.holds,
    )
    connections = _Connections()
    protocol = tracking_protocol(connections)
    # The admin routes serve every secret and the fault switches: never open. Without a key from the
    # environment, a fresh one is printed and written to the env file.
    admin_key = os.environ.get(ADMIN_KEY_ENV) or secrets.token_urlsafe(24)
    avatica = sql_port_app.state.avatica

    def identify(scope: Scope, body: bytes | None) -> str | None:
        return workgroup_of(scope, body, lambda cid: avatica.owner({"connectionId": cid}))

    main_app = FaultMiddleware(
        FairAdmission(
            create_app(
                store,
                idp,
                board,
                sql_port=sql_port,
                admin_key=admin_key,
                max_upload_bytes=args.max_upload_bytes,
                after_ingest=publisher.publish_project if publisher is not None else None,
            ),
            turns,
            identify,
            exempt=(ADMIN_PREFIX,),
        ),
        board,
        connections,
    )
    sql_app = FaultMiddleware(
        FairAdmission(sql_port_app, turns, identify, peek_paths=("/druid/v2/sql/avatica",)),
        board,
        connections,
    )
    # ws="none": neither port serves a WebSocket, so uvicorn loads no WebSocket implementation (older uvicorns
    # load the one on websockets' deprecated legacy API)
    servers = [
        _Server(
            uvicorn.Config(
                app, http=protocol, ws="none", lifespan="off", log_config=None, timeout_graceful_shutdown=2
            )
        )
        for app in (main_app, sql_app)
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tasks = [
        asyncio.create_task(servers[0].serve(sockets=[main_sock])),
        asyncio.create_task(servers[1].serve(sockets=[sql_sock])),
    ]
    demo = store.by_key("demo")
    values = {
        "PM_BASE_URL": base_url,
        "PM_AUTH_URL": auth_url,
        "PM_CLIENT_ID": demo.id,
        "PM_CLIENT_SECRET": demo.secret,
        "PM_JDBC_URL": f"jdbc:avatica:remote:url=http://{host}:{sql_port}/druid/v2/sql/avatica/",
        ADMIN_KEY_ENV: admin_key,
    }
    env_written = False
    try:
        while not all(s.started for s in servers):
            if any(t.done() for t in tasks):
                raise RuntimeError("a sandbox server failed to start; see the log above")
            await asyncio.sleep(0.02)
        if publisher is not None:  # ready once every project is queryable on Druid
            await asyncio.to_thread(publisher.publish_all)
        if args.env_file:
            _write_env(args.env_file, values)
            env_written = True
        _banner(values, store, sql_port, env_file=args.env_file if env_written else None)
        parent = os.environ.get(PARENT_ENV)
        while not stop.is_set() and not any(t.done() for t in tasks):
            if parent and os.getppid() != int(parent):
                log.warning("parent process %s is gone: stopping", parent)
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=0.5)
    finally:
        board.clear()  # a held statement or request must not keep a worker thread through shutdown
        for s in servers:
            s.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        if env_written:
            with contextlib.suppress(OSError):
                args.env_file.unlink()
        log.info("sandbox stopped")


def _write_env(path: Path, values: dict[str, str]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    # Owner-only from the first byte: the file holds the demo workgroup's secret.
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
        handle.write("".join(f"{k}={v}\n" for k, v in values.items()))
    os.replace(tmp, path)


def _banner(values: dict[str, str], store: Store, sql_port: int, *, env_file: Path | None = None) -> None:
    from .data.store import summarize

    # A CLI's output, not logging: the user asked for the connection values (the sandbox's own demo secret).
    # The admin key opens every secret, and this output often ends up in a log file: when both went to
    # an env file, they stay there.
    shown = dict(values)
    if env_file is not None:
        shown[ADMIN_KEY_ENV] = f"*** (in {env_file})"
        shown["PM_CLIENT_SECRET"] = f"*** (in {env_file})"
    lines = [f"{k}={v}" for k, v in shown.items()]
    lines.append(
        f"# admin routes ({values['PM_BASE_URL']}/_sandbox/...): send X-Sandbox-Admin: <{ADMIN_KEY_ENV}>"
    )
    lines.append(
        f"# public API: {values['PM_BASE_URL']}/pub  (OpenAPI: {values['PM_BASE_URL']}/pub/openapi.json)"
    )
    lines.append(
        f"# SQL port {sql_port}: Avatica {values['PM_JDBC_URL'].split('url=')[1]}  Druid SQL /druid/v2/sql"
    )
    lines.extend(f"# {line}" for line in summarize(store))
    lines.append("# sandbox ready; stop with Ctrl+C")
    print("\n".join(lines), flush=True)
