"""Browser-test rig: a real JupyterLab server (subprocess) and headless Debian Chromium driven by Playwright.

Every test here carries ``@pytest.mark.browser``. Screenshots go to ``test-artifacts/browser/<test>/``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = os.environ.get("PM_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# User settings for the test server: keep widget state in saved notebooks (so the "no secret in
# the .ipynb" check has teeth), no news/update pop-ups, every cell kept in the DOM.
LAB_SETTINGS = {
    "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class JupyterServer:
    """A running ``jupyter lab`` subprocess (it also serves Notebook 7 under ``/notebooks/``)."""

    url: str
    token: str
    root: Path
    log_path: Path
    process: subprocess.Popen = field(repr=False)

    def lab_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}"

    def notebook7_url(self, name: str) -> str:
        return f"{self.url}/notebooks/{name}?token={self.token}"

    def write_notebook(self, name: str, cells: list[str]) -> Path:
        """Write a notebook of code cells into the server's root directory."""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        path = self.root / name
        nbformat.write(nb, path)
        return path

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        try:  # a clean shutdown also stops the kernels it started
            req = urllib.request.Request(f"{self.url}/api/shutdown?token={self.token}", method="POST")
            urllib.request.urlopen(req, timeout=5).close()
            self.process.wait(timeout=15)
        except Exception:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_jupyter(tmp: Path, kernel_env: dict[str, str], *, launcher: Sequence[str] = ()) -> JupyterServer:
    """Start ``jupyter lab`` on a free 127.0.0.1 port with isolated config, wait until it answers.

    *launcher* is an argv prefix that starts it (e.g. the ``sigint_ignored`` fixture: as a background job).
    """
    root, home = tmp / "notebooks", tmp / "home"
    settings = home / "lab-settings"
    for d in (root, home / "config", home / "runtime", home / "workspaces", settings):
        d.mkdir(parents=True, exist_ok=True)
    for rel, value in LAB_SETTINGS.items():
        target = settings / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PM_", "JUPYTER"))}
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        # Never touch the developer's real OS keyring from a test kernel.
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
        **kernel_env,
    )
    port, token = free_port(), secrets.token_hex(16)
    log_path = tmp / "jupyter.log"
    jupyter = Path(sys.executable).with_name("jupyter")
    cmd = [
        str(jupyter), "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
        "--ServerApp.terminals_enabled=False",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers run as root
        cmd.append("--allow-root")
    cmd = [*launcher, *cmd]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    server = JupyterServer(f"http://127.0.0.1:{port}", token, root, log_path, proc)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/status?token={token}", timeout=2) as resp:
                if resp.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"jupyter lab did not answer within 90 s:\n{server.log_tail()}")


def fresh_url(lab, name: str) -> str:
    """The notebook's URL with a reset workspace: only this notebook open (no tab of an earlier test)."""
    return lab.lab_url(name).replace("?token=", "?reset&token=")


def shut_down_kernels(lab) -> None:
    """Stop every kernel of the server (each notebook's kernel, once done with, frees the shared CPU)."""
    base = f"{lab.url}/api/sessions?token={lab.token}"
    with urllib.request.urlopen(base, timeout=30) as resp:
        sessions = json.load(resp)
    for session in sessions:
        url = f"{lab.url}/api/sessions/{session['id']}?token={lab.token}"
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=60).close()


class Shots:
    """Numbered screenshots of one test, kept under ``test-artifacts/browser/<test name>/``."""

    def __init__(self, page, directory: Path) -> None:
        self.page, self.dir, self.n = page, directory, 0
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True, exist_ok=True)

    def __call__(self, step: str) -> Path:
        self.n += 1
        path = self.dir / f"{self.n:02d}-{step}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture(scope="module")
def lab(sandbox, tmp_path_factory, request) -> Iterator[JupyterServer]:
    """JupyterLab whose kernels have the sandbox's five connection values, as ``binder/start`` gives them, one
    per test module (a module whose kernels need other values defines its own ``lab``)."""
    folder = "lab-" + request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    server = start_jupyter(tmp_path_factory.mktemp(folder), dict(sandbox.env))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chromium_browser() -> Iterator[object]:
    """Headless Debian Chromium through Playwright (no Playwright-downloaded browser)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: run `make system-deps` (apt-get install chromium).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium_browser, request) -> Iterator[object]:
    """A fresh browser page (clipboard allowed) with a :class:`Shots` helper as ``page.shots``."""
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)  # a hang guard on a loaded machine
    page = context.new_page()
    page.shots = Shots(page, ARTIFACTS / request.node.name)
    try:
        yield page
    finally:
        context.close()


def open_notebook(page, url: str, *, lab: bool = True) -> None:
    """Open a notebook page and wait until its kernel is idle (JupyterLab 4, or Notebook 7)."""
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    if lab:  # the status bar turns "Idle" only once the kernel connection is really up
        page.wait_for_selector("text=/\\| Idle/", timeout=90_000)
    else:
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
        page.wait_for_timeout(2000)


def run_cell(page, index: int, timeout: float = 60_000) -> None:
    """Execute the *index*-th cell (Shift+Enter in its editor) and wait for its execution count."""
    from playwright.sync_api import expect

    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-InputArea-prompt")).to_have_text(re.compile(r"\[\d+\]"), timeout=timeout)
