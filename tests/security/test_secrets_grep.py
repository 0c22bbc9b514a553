"""Secrets grep: run every shipped notebook and the demo with DEBUG logging and tracebacks with locals
(``%xmode Verbose`` plus failing calls formatted by ``TracebackException(capture_locals=True)``), then search
everything they left — the executed notebooks (outputs and widget state), the logs, the error texts and the
sandbox's log — for every workgroup secret and every token the sandbox issued. Zero hits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _hits(out: Path, haystacks: list[Path]) -> list[str]:
    """``"<needle kind> in <file>"`` for every needle found; the needles come from the probe's dump."""
    needles = json.loads((out / "needles.json").read_text(encoding="utf-8"))
    assert needles["secrets"] and needles["tokens"], "the run issued no token: nothing was exercised"
    probes: list[tuple[str, str]] = [("secret", s) for s in needles["secrets"]]
    for token in needles["tokens"]:
        probes.append(("token", token))
        probes.append(("token signature", token.rsplit(".", 1)[-1]))  # a token cut short still leaks this
    found = []
    for path in haystacks:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert text.strip(), f"{path.name} is empty: nothing was captured"
        found += [f"{kind} in {path.name}" for kind, needle in probes if needle and needle in text]
    return sorted(set(found))


def _injected(out: Path) -> tuple[str, str]:
    """The first cell (verbose tracebacks, DEBUG log to a file, a sandbox whose ``PM_*`` values go to the
    kernel's environment as ``binder/start`` puts them) and the probe cell (at the end, then the stop)."""
    first = textwrap.dedent(
        f"""\
        %xmode Verbose
        import logging, os, sys
        logging.basicConfig(filename={str(out / "kernel.log")!r}, level=logging.DEBUG, force=True)
        sys.path.insert(0, {str(HERE)!r})
        from pm_sandbox import start as _start
        sb = _start(cases=100, extra_args=["--log-level", "debug"])
        os.environ.update(sb.env)
        """
    )
    probe = textwrap.dedent(
        f"""\
        import _leak_probe
        from pathlib import Path
        _sb = globals().get("sandbox") or globals().get("sb")
        print(_leak_probe.probe(_sb, Path({str(out)!r})))
        # a failing cell: IPython prints its traceback with the values of the failing line's variables (only
        # those on IPython 8), so that line holds the sandbox
        1 / (_sb is None)
        """
    )
    return first, probe


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_run_leaks_no_secret_or_token(path: Path, tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    first, probe = _injected(tmp_path)
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    nb.cells.append(nbformat.v4.new_code_cell("sb.stop()"))
    nb.cells.insert(0, nbformat.v4.new_code_cell(first))
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        store_widget_state=True,
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    client.execute()
    saved = tmp_path / path.name
    nbformat.write(nb, saved)
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells if c.cell_type == "code"])
    outputs = re.sub(r"\\u001b\[[0-9;]*m", "", outputs)  # the traceback's colours (JSON-escaped) apart
    assert "ZeroDivisionError" in outputs and "_sb = " in outputs, "the verbose traceback was not shown"
    haystacks = [saved, tmp_path / "kernel.log", tmp_path / "probe.txt", tmp_path / "sandbox.log"]
    assert _hits(tmp_path, haystacks) == []


DEMO = textwrap.dedent(
    """\
    import contextlib
    import sys
    from pathlib import Path
    import _leak_probe
    import pm_notebook.demo as demo
    import pm_sandbox

    out = Path(sys.argv[1])

    @contextlib.contextmanager
    def stand_in(cases, *, seed=None, druid=None):
        # the demo's stand-in, started through its own package API with DEBUG logging, so the probe can ask
        # it what it issued before it stops
        assert seed is None and druid is None
        with pm_sandbox.start(cases=cases, extra_args=["--log-level", "debug"]) as sb:
            yield sb.env
            print(_leak_probe.probe(sb, out, transports=("druid", "avatica")))

    demo.stand_in = stand_in
    sys.exit(demo.main(["--cases", "100", "--verbose", "--transport", "druid"]))
    """
)


@pytest.mark.slow
def test_demo_run_leaks_no_secret_or_token(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    for name in ("PM_BASE_URL", "PM_AUTH_URL", "PM_CLIENT_ID", "PM_CLIENT_SECRET", "PM_JDBC_URL"):
        env.pop(name, None)
    run = subprocess.run(
        [sys.executable, "-c", DEMO, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    (tmp_path / "demo.out").write_text(run.stdout + "\n" + run.stderr, encoding="utf-8")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback (most recent call last)" in run.stdout and "    self = " in run.stdout  # locals shown
    assert "settings resolved" in run.stderr  # DEBUG logging really was on
    haystacks = [tmp_path / "demo.out", tmp_path / "probe.txt", tmp_path / "sandbox.log"]
    assert _hits(tmp_path, haystacks) == []
