"""``make demo`` / ``python -m pm_notebook.demo``: start the sandbox, connect, browse, query, stop.

This is the main job a process analyst runs on day one, end to end over real HTTP and SQL:
authenticate, list the workgroup's projects and tables, then answer three classic
process-mining questions in Druid SQL and get typed pandas DataFrames back.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

import pandas as pd

import pm_notebook
from pm_notebook.sandbox import start

QUESTIONS = {
    "Top variants (cases per process variant)": """
        SELECT processkey, COUNT(*) AS cases, AVG(duration) / 3600000.0 AS avg_hours
        FROM {cases} GROUP BY processkey ORDER BY cases DESC LIMIT 5""",
    "Busiest activities and their median duration": """
        SELECT vertex_name, COUNT(*) AS executions,
               APPROX_QUANTILE_DS(duration, 0.5) / 60000.0 AS median_minutes
        FROM {vertex} WHERE vertex_name IS NOT NULL
        GROUP BY vertex_name ORDER BY executions DESC LIMIT 8""",
    "Cases started per week": """
        SELECT TIME_FLOOR(__time, 'P1W') AS week, COUNT(*) AS cases
        FROM {cases} GROUP BY 1 ORDER BY 1 LIMIT 10""",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pm_notebook.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="cases per project in the sandbox")
    parser.add_argument("--transport", default="auto", help="auto | jdbc | avatica | druid")
    parser.add_argument("-v", "--verbose", action="store_true", help="DEBUG logging (secrets are redacted)")
    args = parser.parse_args(argv)
    level = logging.DEBUG if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(name)s: %(message)s")
    pd.set_option("display.width", 140)
    pd.set_option("display.max_columns", 12)

    print(f"pm_notebook {pm_notebook.__version__} demo — starting the local sandbox service ...")
    with start(port=0, sql_port=0, cases=args.cases) as sb:
        print(f"  API  {sb.base_url}/pub\n  auth {sb.auth_url}\n  JDBC {sb.jdbc_url}\n")
        env = sb.env
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
            for title, sql in QUESTIONS.items():
                started = time.perf_counter()
                df = conn.query(sql.format(**names), transport=args.transport)
                ms = (time.perf_counter() - started) * 1000
                print(f"\n{title}  [{len(df)} rows, {ms:.0f} ms via {df.attrs.get('transport')}]")
                print(df.to_string(index=False))
            first = QUESTIONS[next(iter(QUESTIONS))].format(**names)
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
    print("\nSandbox stopped. Next: `jupyter lab notebooks/` and `%load_ext pm_notebook`.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
