"""The issue's proof: a notebook run once against the sandbox with ``PM_CACHE=1``, then re-run by nbval with
``PM_REPLAY=1``, the sandbox stopped and no ``PM_*`` connection value, gives the same outputs.

The notebook is written here (a ``.ipynb`` under ``tests/`` would be collected by the suite's ``--nbval``)
and, like the shipped ones, has no setup cell: it connects from the environment. nbval runs in a child
pytest in the notebook's folder, so the kernel's working directory holds the ``.pm_cache`` it made.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

REPO = Path(__file__).resolve().parents[2]
SANITIZE = Path(__file__).with_name("sanitize.cfg")  # the elapsed time in a result's footer
CONNECTION_VARS = ("PM_BASE_URL", "PM_AUTH_URL", "PM_CLIENT_ID", "PM_CLIENT_SECRET", "PM_JDBC_URL")

CELLS = [
    "import pm_notebook\nfrom pm_notebook.api import to_frame\n\n"
    'conn = pm_notebook.connect()\nto_frame(conn.projects())[["name"]]',
    'project = next(p for p in conn.projects() if p.name == "Purchase to Pay")\n'
    "[t.kind for t in conn.tables(project)]",
    "typed = conn.query(\n"
    '    "SELECT __time, caseid, duration, duration > ? AS long_case, "\n'
    '    "CASE WHEN MOD(duration, 3) = 0 THEN NULL ELSE concurrency END AS concurrency, distinct_vertices "\n'
    "    f'FROM \"{project.id}\" ORDER BY __time LIMIT 6',\n"
    "    [10**9],\n"
    ")\ntyped.dtypes",
    "typed",
    "typed.attrs",
    "%load_ext pm_notebook",
    '%pmsql --project "Purchase to Pay"',
    "%%pmsql --limit 4\nSELECT vertex_name, COUNT(*) AS executions\nFROM {vertex}\n"
    "GROUP BY vertex_name\nORDER BY executions DESC, vertex_name",
    'activity = "Pay Invoice"\nn = %pmsql SELECT COUNT(*) AS n FROM {vertex} WHERE vertex_name = :activity\n'
    'int(n["n"].iloc[0])',
    "%pmsql --columns edge",
]
FAILING = "%%pmsql\nSELECT caseid,\n       durration\nFROM {cases}"


def _notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell("# Replay proof\n\nNo setup cell: the `PM_*` values come from the environment.")
    ]
    cells += [new_code_cell(source) for source in CELLS]
    cells.append(new_code_cell(FAILING, metadata={"tags": ["raises-exception"]}))
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return new_notebook(cells=cells, metadata={"kernelspec": kernelspec})


def _texts(nb) -> list[list[str]]:
    out = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            out.append(
                [
                    o.get("text") or o.get("data", {}).get("text/plain", "") or o.get("ename", "")
                    for o in cell.outputs
                ]
            )
    return out


@pytest.mark.slow
def test_a_notebook_replays_with_nbval_after_the_sandbox_stopped(
    sandbox_factory, tmp_path, monkeypatch
) -> None:
    from nbclient import NotebookClient

    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "analysis.ipynb"
    sb = sandbox_factory(cases=80)
    for key, value in {**sb.env, "PM_CACHE": "1"}.items():  # the kernel inherits this environment
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    nb = _notebook()
    client = NotebookClient(
        nb,
        timeout=180,
        kernel_name="python3",
        allow_errors=False,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    nbformat.write(nb, path)
    texts = _texts(nb)
    assert "Purchase to Pay" in texts[0][0] and "'transport': " in texts[4][0]
    assert "4 rows × 2 columns" in texts[7][0] and "durration" in texts[-1][-1] + str(nb.cells[-1].outputs)
    assert (folder / ".pm_cache").is_dir()
    sb.stop()
    assert not sb.running()

    env = {k: v for k, v in os.environ.items() if k not in CONNECTION_VARS and k != "PM_CACHE"}
    env.update({"PM_REPLAY": "1", "PYTHONPATH": str(REPO)})
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "--nbval-sanitize-with",
            str(SANITIZE),
            str(path),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert f"{len(CELLS) + 1} passed" in run.stdout, run.stdout[-3000:]
