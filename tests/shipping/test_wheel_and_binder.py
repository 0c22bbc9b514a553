"""What we ship works outside the checkout: the sdists and wheels, fresh venvs, Binder's scripts.

Two distributions: the client (``pm-notebook``) and the local stand-in of the service (``pm-sandbox``, from
``sandbox/``), which the client's ``sandbox`` extra brings. One module-scoped fresh virtual environment is
filled in the order a user would: the client's wheel alone first (the client and ``%%pmsql`` on the JVM-free
path, with IPython beside it as in every Jupyter kernel; no server package installed or loaded), then the
extras ``postBuild`` installs. Another fresh one gets both wheels (``pm-notebook[sandbox]``) and runs the
stand-in. uv resolves the wheels' own metadata, constrained to the versions of the venv this run uses (the
lock under ``make test``, a range's end under ``make test-oldest`` / ``make test-latest``), so the wheels are
proven installable and working at exactly the versions the suite tests. Every command runs outside the
checkout, so ``import pm_notebook`` finds the installed package.
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
RECEIPT = ROOT / "tests" / "data" / "receipt.csv.gz"  # read by notebook 06

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


#: the server packages the stand-in needs and the client never installs nor loads
SERVER = ("duckdb", "fastapi", "sqlglot", "uvicorn", "starlette", "pm_sandbox")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The client's sdist and wheel, and the stand-in's (``sandbox_*``), each built from its own folder."""
    out = tmp_path_factory.mktemp("dist")
    built: dict[str, Path] = {}
    logs = []
    for prefix, source, name in (("", ROOT, "pm_notebook"), ("sandbox_", ROOT / "sandbox", "pm_sandbox")):
        folder = out / (prefix or "client")
        done = _run([sys.executable, "-m", "build", "--outdir", str(folder), str(source)], cwd=out)
        logs.append(done.stdout + done.stderr)
        built[prefix + "wheel"] = next(folder.glob(f"{name}-*.whl"))
        built[prefix + "sdist"] = next(folder.glob(f"{name}-*.tar.gz"))
    log = out / "build.log"
    log.write_text("\n".join(logs))
    return {**built, "log": log}


#: uv, installed in this run's venv by the test extra
UV = str(Path(sys.executable).with_name("uv"))


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The versions of every package in this run's venv, the checkout's own package left out."""
    frozen = _run([UV, "pip", "freeze", "--python", sys.executable, "--exclude-editable"], cwd=ROOT).stdout
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    ours = ("pm-notebook", "pm-sandbox", "pm_notebook", "pm_sandbox")
    path.write_text("\n".join(line for line in frozen.splitlines() if not line.startswith(ours)))
    return path


def _install(venv: Path, constraints: Path, *requirements: str, cwd: Path) -> None:
    """uv installs *requirements* into *venv* (made by the stdlib's venv: pip is there too, as for a user).

    ``--no-sources``: the published metadata only, as pip reads it (the workspace's ``[tool.uv.sources]``,
    which takes ``pm-sandbox`` from ``sandbox/``, is for ``make install``): the stand-in comes from what is
    named here.
    """
    cmd = [UV, "pip", "install", "--quiet", "--no-sources", "--python", str(venv / "bin" / "python")]
    _run([*cmd, "-c", str(constraints), *requirements], cwd=cwd, env=_clean_env(venv))


def _fresh_venv(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    home = tmp_path_factory.mktemp(name)
    path = home / "venv"
    _run([sys.executable, "-m", "venv", str(path)], cwd=home)
    return path


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dist: dict[str, Path], constraints: Path) -> Path:
    path = _fresh_venv(tmp_path_factory, "venv")
    _install(path, constraints, str(dist["wheel"]), "ipykernel", cwd=path.parent)
    return path


def test_build_is_clean_and_twine_accepts_it(dist: dict[str, Path]) -> None:
    log = dist["log"].read_text()
    noisy = [line for line in log.splitlines() if "warning" in line.lower() and "byte-compil" not in line]
    assert noisy == [], "the build warns:\n" + "\n".join(noisy)
    files = [str(dist[k]) for k in ("wheel", "sdist", "sandbox_wheel", "sandbox_sdist")]
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *files], cwd=ROOT)
    assert done.stdout.count("PASSED") == 4


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
    # no server in the client: neither the stand-in's modules nor its dependencies (only through the extra)
    assert not [n for n in names if n.startswith("pm_sandbox/")]
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    assert not [r for r in requires if re.match(r"(duckdb|fastapi|sqlglot|uvicorn|starlette)\b", r)], requires
    assert any(re.fullmatch(r"pm-sandbox\W.*extra == .sandbox.", r) for r in requires), requires


def test_the_stand_in_wheel_carries_its_package_and_no_client(dist: dict[str, Path]) -> None:
    with zipfile.ZipFile(dist["sandbox_wheel"]) as whl:
        names = set(whl.namelist())
        metadata = whl.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        scripts = whl.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    tracked = subprocess.run(
        ["git", "ls-files", "pm_sandbox"], cwd=ROOT / "sandbox", capture_output=True, text=True, check=True
    )
    assert len(tracked.stdout.split()) > 40
    assert sorted(f for f in tracked.stdout.split() if f not in names) == []
    assert not [n for n in names if n.startswith("pm_notebook/")]
    assert "Name: pm-sandbox" in metadata and "License-Expression: MIT" in metadata
    # it stands alone: the client is not among its requirements
    assert not re.findall(r"^Requires-Dist: pm-notebook", metadata, re.M)
    assert "pm-sandbox = pm_sandbox.server:cli" in scripts


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
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("jpype", "pygraphviz", *SERVER))
        installed = sorted(name for name in SERVER if importlib.util.find_spec(name) is not None)
        print(json.dumps({"file": pm_notebook.__file__, "one": int(frame.one[0]), "two": int(cell.two[0]),
                          "heavy": heavy, "installed": installed}))
        """
    )
    script = f"import importlib.util\nSERVER = {SERVER!r}\n{script}"
    env = _clean_env(venv) | sandbox.env
    done = _run([str(venv / "bin" / "python"), "-c", script], cwd=tmp_path, env=env)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["file"].startswith(str(venv)), answer["file"]
    # no server package installed (pip install pm-notebook), none loaded
    assert (answer["one"], answer["two"], answer["heavy"], answer["installed"]) == (1, 2, [], [])


def test_the_demo_without_the_stand_in_says_what_to_install(venv: Path, tmp_path) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pm_notebook.demo", "--cases", "5"],
        cwd=tmp_path,
        env=_clean_env(venv),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert "MissingDependency" in done.stderr and 'pip install "pm-notebook[sandbox]"' in done.stderr


def test_both_wheels_run_the_stand_in_and_the_client_queries_it(
    tmp_path_factory: pytest.TempPathFactory, dist: dict[str, Path], constraints: Path, tmp_path
) -> None:
    """``pip install "pm-notebook[sandbox]"``, from the two wheels in a fresh venv: the stand-in starts (its
    own package API and its ``pm-sandbox`` command) and the client reads its generated data."""
    path = _fresh_venv(tmp_path_factory, "both")
    client = f"pm-notebook[sandbox] @ {dist['wheel'].as_uri()}"
    _install(path, constraints, client, f"pm-sandbox @ {dist['sandbox_wheel'].as_uri()}", cwd=tmp_path)
    script = textwrap.dedent(
        """
        import json, subprocess, sys
        import pm_notebook, pm_sandbox
        with pm_sandbox.start(cases=30) as sb:
            with pm_notebook.connect(**{k.removeprefix("PM_").lower(): v for k, v in sb.env.items()}) as conn:
                project = conn.projects()[0]
                vertex = next(t for t in conn.tables(project) if t.kind == "vertex")
                sql = f"SELECT COUNT(DISTINCT caseid) AS cases FROM {vertex.sql_name}"
                cases = int(conn.query(sql, transport="druid").cases[0])
        usage = subprocess.run(["pm-sandbox", "--help"], capture_output=True, text=True, check=True).stdout
        print(json.dumps({"client": pm_notebook.__file__, "sandbox": pm_sandbox.__file__, "cases": cases,
                          "usage": usage.splitlines()[0]}))
        """
    )
    done = _run([str(path / "bin" / "python"), "-c", script], cwd=tmp_path, env=_clean_env(path))
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["client"].startswith(str(path)) and answer["sandbox"].startswith(str(path)), answer
    assert answer["cases"] == 30  # every generated case has tasks
    assert answer["usage"].startswith("usage: pm-sandbox")


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
    assert 'pip install --no-cache-dir ./sandbox ".[jdbc,notebook,sandbox,map]"' in postbuild
    checkout = [
        f"pm-sandbox @ {(ROOT / 'sandbox').as_uri()}",
        f"pm-notebook[jdbc,notebook,sandbox,map] @ {ROOT.as_uri()}",
    ]
    _install(venv, constraints, *checkout, "nbclient", cwd=home)
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
        assert "pm_sandbox" not in source, f"{nb.name} starts a sandbox itself"
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
    # notebook 06 reads the receipt log from tests/data, next to notebooks/ as in Binder's clone
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "tests" / "data" / RECEIPT.name).write_bytes(RECEIPT.read_bytes())
    env = _clean_env(binder_venv) | {"PM_SANDBOX_DIR": str(tmp_path / "sandbox")}
    cmd = ["bash", str(ROOT / "binder" / "start"), "python", "-c", runner, *map(str, copies)]
    done = _run(cmd, cwd=tmp_path, env=env, timeout=1500)
    assert [line for line in done.stdout.splitlines() if line.startswith("ran ")] == [
        f"ran {p.name}" for p in copies
    ]
