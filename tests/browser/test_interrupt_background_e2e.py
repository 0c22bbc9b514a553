"""Kernel → Interrupt stops a JDBC and a druid query in a kernel of a Jupyter server run in the background.

A server started as a background job of a non-interactive shell (``nohup jupyter lab &``, a service, a CI
runner) runs with SIGINT ignored and its kernels inherit that; Kernel → Interrupt is a SIGINT to the kernel's
process group. The queries are held by the sandbox until something cancels them, so each interrupt lands
while its query runs on the server; a lost interrupt would leave it running to the server's time limit.
Every step waits on an event (the sandbox's hold, a selector, the execution count), never on a pause.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .conftest import fresh_url, open_notebook, run_cell, shut_down_kernels, start_jupyter

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.jdbc]

# events, not speed: generous ceilings for a machine shared by many (a hang guard, never a measure)
STEP_TIMEOUT = 180_000


@pytest.fixture(scope="module")
def background_lab(sandbox, sigint_ignored, tmp_path_factory):
    """JupyterLab started as a background job (SIGINT ignored), its kernels with the sandbox's values."""
    folder = tmp_path_factory.mktemp("lab-background")
    server = start_jupyter(folder, dict(sandbox.env), launcher=sigint_ignored)
    yield server
    server.stop()


def ignores_sigint(pid: int) -> bool:
    """Whether process *pid* ignores SIGINT (Linux: the ``SigIgn`` mask of ``/proc/<pid>/status``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.MULTILINE)
    assert found, status
    return bool(int(found.group(1), 16) & (1 << (signal.SIGINT - 1)))


def test_kernel_interrupt_stops_jdbc_and_druid_queries_under_a_background_server(
    background_lab, page, sandbox
) -> None:
    lab = background_lab
    assert ignores_sigint(lab.process.pid)  # the condition under test: what the kernels inherit
    lab.write_notebook(
        "interrupt.ipynb",
        [
            "import os\n%load_ext pm_notebook\nos.getppid()",
            "%%pmsql --transport jdbc\nSELECT 2 AS held",  # the JVM starts in this very cell
            "%%pmsql --transport druid\nSELECT 2 AS held",
            "%pmsql --transport jdbc SELECT 3 AS good",
        ],
    )
    open_notebook(page, fresh_url(lab, "interrupt.ipynb"))
    cells = page.locator(".jp-Notebook .jp-Cell")
    run_cell(page, 0, timeout=STEP_TIMEOUT)
    # the kernel is the server's child: it was started with the server's SIGINT disposition
    expect(cells.nth(0).locator(".jp-OutputArea-output")).to_have_text(str(lab.process.pid))
    for index, transport in ((1, "jdbc"), (2, "druid")):
        sandbox.clear_faults()  # zero the previous transport's counts
        sandbox.hold_statements("AS held")  # runs on the server until the interrupt cancels it
        held = cells.nth(index)
        held.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        sandbox.wait_held(timeout=STEP_TIMEOUT / 1000)  # the statement is at the server, running
        expect(held.locator(".jp-InputArea-prompt")).to_have_text(re.compile(r"\[\*\]"))
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Kernel$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Interrupt Kernel$")).click()
        expect(held.locator(".jp-OutputArea-output")).to_contain_text(
            "QueryCancelled: the statement was stopped on the server", timeout=STEP_TIMEOUT
        )
        expect(held.locator(".jp-InputArea-prompt")).to_have_text(
            re.compile(r"\[\d+\]"), timeout=STEP_TIMEOUT
        )
        assert sandbox.wait_ended("cancelled")["ended"] == {"cancelled": 1}, transport  # not timed out
        page.shots(f"{transport}-interrupted")
    run_cell(page, 3, timeout=STEP_TIMEOUT)  # the kernel and its JVM serve the next query
    expect(cells.nth(3).locator(".jp-OutputArea-output")).to_contain_text("good")
    shut_down_kernels(lab)
