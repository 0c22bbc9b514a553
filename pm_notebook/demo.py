"""``make demo`` / ``python -m pm_notebook.demo``: start the sandbox, connect, browse, analyse, stop.

This is the main job a process analyst runs on day one, end to end over real HTTP and SQL: authenticate, list
the workgroup's projects and tables, then the first answers an analyst wants — the named variants, how long
cases take, the busiest activities, where cases wait — each computed by Druid SQL, a process map written to a
file, and one query through the real JDBC driver to show every path gives the same DataFrame.

The sandbox is the local stand-in of the service, the ``pm-sandbox`` distribution (``pip install
"pm-notebook[sandbox]"``): the demo runs it as a child process (``python -m pm_sandbox``), never imports
it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
from dotenv import dotenv_values

import pm_notebook
from pm_notebook.errors import MissingDependency, PMError

#: the last line the stand-in prints once both its ports serve (its env file is written just before)
_READY = "# sandbox ready"


@contextlib.contextmanager
def stand_in(cases: int, *, seed: int | None = None, druid: str | None = None) -> Iterator[dict[str, str]]:
    """Run the stand-in (``python -m pm_sandbox`` on free ports, *cases* per project, its data from *seed*,
    in front of the Druid broker *druid* if given) as a child process; yields its connection values
    (``PM_*``) once it serves — in front of Druid, once its projects are queryable there (minutes on a
    fresh Druid) — and stops it on leaving.

    :raises MissingDependency: the stand-in is not installed.
    :raises PMError: it exited before it served (the end of its log is quoted).
    """
    if importlib.util.find_spec("pm_sandbox") is None:
        raise MissingDependency(
            "The demo runs the local stand-in of the service, which is not installed.",
            hint='pip install "pm-notebook[sandbox]"',
        )
    with tempfile.TemporaryDirectory(prefix="pm-demo-") as folder:
        env_file, log_file = Path(folder) / "sandbox.env", Path(folder) / "sandbox.log"
        command = [sys.executable, "-m", "pm_sandbox", "--port", "0", "--sql-port", "0"]
        command += ["--cases", str(cases), "--env-file", str(env_file)]
        command += ["--seed", str(seed)] if seed is not None else []
        command += ["--druid", druid] if druid else []
        # the stand-in stops by itself if this process dies first (it watches the process named here)
        child_env = {**os.environ, "PM_SANDBOX_PARENT_PID": str(os.getpid())}
        with (
            open(log_file, "wb") as log,
            subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                env=child_env,
                text=True,
            ) as proc,
        ):
            try:
                assert proc.stdout is not None
                # its banner ends with the ready line; the end of its output before it means it exited
                if not any(line.startswith(_READY) for line in proc.stdout):
                    proc.wait()
                    tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-20:])
                    raise PMError(
                        f"The local stand-in of the service exited with code {proc.returncode}:\n{tail}",
                        hint="run `python -m pm_sandbox --port 0 --sql-port 0` to see it fail",
                    )
                values = dotenv_values(env_file)
                yield {key: value for key, value in values.items() if value is not None}
            finally:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _show(title: str, frame: pd.DataFrame, *, index: bool = False) -> None:
    """Print an answer with durations to the second and long sequences cut, under its provenance."""
    sql = frame.attrs.get("sql", "")
    statements = sql.count(";") + 1 if sql else 0
    print(f"\n{title}  [{statements} Druid SQL statement(s) via {frame.attrs.get('transport')}]")
    shown = frame.copy()
    for name, column in shown.items():
        if pd.api.types.is_timedelta64_dtype(column):
            shown[name] = column.dt.round("s")
        elif name == "activities":
            shown[name] = column.str.slice(0, 70) + column.map(lambda s: " …" if len(s) > 70 else "")
    print(shown.to_string(index=index))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pm_notebook.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="cases per project in the sandbox")
    parser.add_argument("--transport", default="auto", help="auto | jdbc | avatica | druid")
    parser.add_argument("--map", default="process-map.svg", help="where to write the process map (.svg/.png)")
    parser.add_argument("--seed", type=int, default=None, help="the sandbox's data seed (default: its own)")
    parser.add_argument(
        "--druid",
        default=None,
        metavar="BROKER_URL",
        help="run the sandbox in front of this Apache Druid broker (make demo DRUID=1): its projects are "
        "published there and every query runs on Druid",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="DEBUG logging (secrets are redacted)")
    args = parser.parse_args(argv)
    level = logging.DEBUG if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(name)s: %(message)s")
    pd.set_option("display.width", 140)
    pd.set_option("display.max_columns", 12)

    where = f" in front of the Druid at {args.druid} (publishing its projects first)" if args.druid else ""
    print(f"pm_notebook {pm_notebook.__version__} demo — starting the local sandbox service{where} ...")
    with stand_in(args.cases, seed=args.seed, druid=args.druid) as env:
        print(f"  API  {env['PM_BASE_URL']}/pub\n  auth {env['PM_AUTH_URL']}\n  JDBC {env['PM_JDBC_URL']}\n")
        with pm_notebook.connect(
            base_url=env["PM_BASE_URL"],
            auth_url=env["PM_AUTH_URL"],
            client_id=env["PM_CLIENT_ID"],
            client_secret=env["PM_CLIENT_SECRET"],
            jdbc_url=env["PM_JDBC_URL"],
        ) as conn:
            print(repr(conn))
            wg = conn.workgroup()
            print(f"\nWorkgroup: {wg.name} ({wg.id})")
            projects = conn.projects()
            print("\nProjects:")
            print(pd.DataFrame([p.as_dict() for p in projects])[["id", "name"]].to_string(index=False))
            project = projects[0]
            tables = {t.kind: t for t in conn.tables(project)}
            print(f"\nTables of {project.name!r}:")
            for kind, table in sorted(tables.items()):
                print(f"  {kind:6} {table.sql_name}")
            names = {kind: table.sql_name for kind, table in tables.items()}
            log = conn.mining(project)
            conn.sql_transport = args.transport
            summary = log.summary().iloc[0].map(lambda v: v.round("s") if isinstance(v, pd.Timedelta) else v)
            _show("Summary", summary.to_frame("").rename(index=str).astype(str).rename_axis(None), index=True)
            variants = log.variants(top=5, by="model")
            _show("Top variants", variants[["name", "cases", "share", "median_duration", "activities"]])
            _show("Throughput (case duration)", log.throughput()[["cases", "p10", "p50", "p90", "max"]])
            busiest = log.activities()[["activity", "executions", "cases", "median_service"]]
            _show("Busiest activities", busiest.head(8))
            waits = log.bottlenecks(k=5, metric="p90")[["source", "target", "frequency", "median", "p90"]]
            _show("Where cases wait longest (p90 between activities)", waits)
            pmap = log.process_map(metric="frequency", activities=1.0, paths=0.3)
            map_path = Path(args.map).resolve()
            pmap.save(map_path)
            shape = f"{len(pmap.nodes)} activities, {len(pmap.edges)} paths"
            print(f"\nProcess map ({shape}) written to {map_path}")
            first = (
                f"SELECT processkey, COUNT(*) AS n FROM {names['cases']} GROUP BY 1 ORDER BY 2 DESC LIMIT 5"
            )
            try:
                via_jdbc = conn.query(first, transport="jdbc")
            except pm_notebook.PMError as exc:  # no Java here: say why, the other paths still work
                print(f"\nJDBC path unavailable: {exc}")
            else:
                same = via_jdbc.equals(conn.query(first, transport=args.transport))
                print(f"\nThe real Avatica JDBC driver gives the same top variants: {same}")
            print("\nColumn types as pandas sees them (vertex table):")
            sample = conn.query(f"SELECT * FROM {names['vertex']} LIMIT 3", transport=args.transport)
            print(sample.dtypes.to_string())
    print("\nSandbox stopped. Next: `make lab` opens the notebooks with a sandbox already connected.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
