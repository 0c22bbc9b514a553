"""What we ship works outside the checkout: the sdist and wheel, a fresh venv, Binder's scripts.

One module-scoped fresh virtual environment is filled in the order a user would: the wheel alone first (the
client and ``%%pmsql`` on the JVM-free path, with IPython beside it as in every Jupyter kernel), then the
extras ``postBuild`` installs. uv resolves the wheel's own metadata, constrained to the versions of the venv
this run uses (the lock under ``make test``, a range's end under ``make test-oldest`` / ``make test-latest``),
so the wheel is proven installable and working at exactly the versions the suite tests. Every command runs
outside the checkout, so ``import pm_notebook`` finds the installed package.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900):
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{cmd} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done


def _clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user of *venv*: its bin first, no PM_* values, no PYTHONPATH into the checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PM_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    done = _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    log = out / "build.log"
    log.write_text(done.stdout + done.stderr)
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz")), "log": log}


#: uv, installed in this run's venv by the test extra
UV = str(Path(sys.executable).with_name("uv"))


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The versions of every package in this run's venv, the checkout's own package left out."""
    frozen = _run([UV, "pip", "freeze", "--python", sys.executable, "--exclude-editable"], cwd=ROOT).stdout
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    path.write_text("\n".join(line for line in frozen.splitlines() if not line.startswith("pm-notebook")))
    return path


def _install(venv: Path, constraints: Path, *requirements: str, cwd: Path) -> None:
    """uv installs *requirements* into *venv* (made by the stdlib's venv: pip is there too, as for a user)."""
    cmd = [UV, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "-c", str(constraints)]
    _run([*cmd, *requirements], cwd=cwd, env=_clean_env(venv))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dist: dict[str, Path], constraints: Path) -> Path:
    home = tmp_path_factory.mktemp("venv")
    path = home / "venv"
    _run([sys.executable, "-m", "venv", str(path)], cwd=home)
    _install(path, constraints, str(dist["wheel"]), "ipykernel", cwd=home)
    return path


def test_build_is_clean_and_twine_accepts_it(dist: dict[str, Path]) -> None:
    log = dist["log"].read_text()
    noisy = [line for line in log.splitlines() if "warning" in line.lower() and "byte-compil" not in line]
    assert noisy == [], "the build warns:\n" + "\n".join(noisy)
    done = _run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist["wheel"]), str(dist["sdist"])], cwd=ROOT
    )
    assert done.stdout.count("PASSED") == 2


def test_the_wheel_carries_the_java_helper_the_licence_and_pep639_metadata(dist: dict[str, Path]) -> None:
    with zipfile.ZipFile(dist["wheel"]) as whl:
        names = set(whl.namelist())
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = whl.read(meta).decode()
    assert "pm_notebook/sql/java/pm-columnar.jar" in names and "pm_notebook/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    # every file of the package in the checkout is in the wheel (no data file forgotten)
    tracked = subprocess.run(
        ["git", "ls-files", "pm_notebook"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    missing = sorted(f for f in tracked.stdout.split() if f not in names)
    assert missing == []


def test_the_wheel_alone_gives_the_client_and_pmsql_on_the_jvm_free_path(
    venv: Path, sandbox, tmp_path
) -> None:
    script = textwrap.dedent(
        """
        import json, sys
        import pm_notebook
        from IPython.core.interactiveshell import InteractiveShell
        conn = pm_notebook.connect()
        frame = conn.query("SELECT 1 AS one", transport="druid")
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "pm_notebook")
        ip.run_cell_magic("pmsql", "--transport avatica -o cell", "SELECT 2 AS two")
        cell = ip.user_ns["cell"]
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("jpype", "duckdb", "pygraphviz"))
        print(json.dumps({"file": pm_notebook.__file__, "one": int(frame.one[0]), "two": int(cell.two[0]),
                          "heavy": heavy}))
        """
    )
    env = _clean_env(venv) | sandbox.env
    done = _run([str(venv / "bin" / "python"), "-c", script], cwd=tmp_path, env=env)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["file"].startswith(str(venv)), answer["file"]
    assert (answer["one"], answer["two"], answer["heavy"]) == (1, 2, [])


def test_the_wheel_carries_the_prebuilt_labextension(dist: dict[str, Path]) -> None:
    """The JupyterLab extension's built assets, where JupyterLab looks for prebuilt extensions."""
    share = "pm_notebook-{}.data/data/share/jupyter/labextensions/pm-notebook/"
    with zipfile.ZipFile(dist["wheel"]) as whl:
        names = set(whl.namelist())
        version = next(n for n in names if n.endswith(".dist-info/METADATA")).split("-")[1].split(".dist")[0]
        share = share.format(version)
        package = json.loads(whl.read(share + "package.json"))
        install = json.loads(whl.read(share + "install.json"))
    remote = package["jupyterlab"]["_build"]["load"]  # written by the build: the entry JupyterLab loads
    assert share + remote in names
    assert (package["name"], install["packageName"]) == ("pm-notebook", "pm-notebook")
    # the sources stay in the repository: no TypeScript, no node_modules in the wheel
    assert not [n for n in names if n.endswith(".ts") or "node_modules" in n]


def test_jupyterlab_lists_the_installed_extension_as_prebuilt_and_enabled(
    venv: Path, constraints: Path, tmp_path
) -> None:
    """JupyterLab (at the tested version) beside the wheel finds the extension with no build step."""
    _install(venv, constraints, "jupyterlab", cwd=tmp_path)
    env = {k: v for k, v in _clean_env(venv).items() if not k.startswith("JUPYTER")}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    done = _run([str(venv / "bin" / "jupyter"), "labextension", "list"], cwd=tmp_path, env=env)
    listing = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    # prebuilt extensions are listed under the folder they were installed in: the venv's share/jupyter
    sections = re.split(r"^(?=\S)", listing, flags=re.M)
    prebuilt = next(s for s in sections if s.startswith(str(venv / "share" / "jupyter" / "labextensions")))
    assert re.search(r"^\s+pm-notebook v\S+ enabled\s+OK \(python, pm-notebook\)$", prebuilt, re.M), listing
    assert "pm-notebook" not in listing.replace(prebuilt, ""), listing


@pytest.fixture(scope="module")
def binder_venv(venv: Path, constraints: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv after ``binder/postBuild``'s install (extras, not editable) plus a notebook runner."""
    home = tmp_path_factory.mktemp("binder")
    postbuild = (ROOT / "binder" / "postBuild").read_text()
    assert 'pip install --no-cache-dir ".[jdbc,notebook,sandbox,map]"' in postbuild
    _install(
        venv, constraints, f"pm-notebook[jdbc,notebook,sandbox,map] @ {ROOT.as_uri()}", "nbclient", cwd=home
    )
    return venv


def test_the_demo_runs_from_the_installed_package(binder_venv: Path, tmp_path) -> None:
    env = _clean_env(binder_venv)
    done = _run(
        [str(binder_venv / "bin" / "python"), "-m", "pm_notebook.demo", "--cases", "150"],
        cwd=tmp_path,
        env=env,
    )
    assert "Sandbox stopped." in done.stdout and "Traceback" not in done.stderr


def test_binder_start_serves_every_notebook_with_no_setup_cell(binder_venv: Path, tmp_path) -> None:
    for nb in NOTEBOOKS:
        source = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
        assert "pm_notebook.sandbox" not in source, f"{nb.name} starts a sandbox itself"
    runner = textwrap.dedent(
        """
        import os, sys, nbformat
        from nbclient import NotebookClient
        for path in sys.argv[1:]:
            nb = nbformat.read(path, as_version=4)
            NotebookClient(nb, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": os.path.dirname(path)}}).execute()
            print("ran", os.path.basename(path), flush=True)
        """
    )
    work = tmp_path / "notebooks"
    work.mkdir()
    copies = []
    for nb in NOTEBOOKS:
        copies.append(work / nb.name)
        copies[-1].write_bytes(nb.read_bytes())
    env = _clean_env(binder_venv) | {"PM_SANDBOX_DIR": str(tmp_path / "sandbox")}
    cmd = ["bash", str(ROOT / "binder" / "start"), "python", "-c", runner, *map(str, copies)]
    done = _run(cmd, cwd=tmp_path, env=env, timeout=1500)
    assert [line for line in done.stdout.splitlines() if line.startswith("ran ")] == [
        f"ran {p.name}" for p in copies
    ]
