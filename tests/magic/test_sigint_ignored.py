"""An interrupt reaches ``%%pmsql`` in a process that was started with SIGINT ignored.

A Jupyter server started in the background (``nohup jupyter lab &``, a CI runner, a remote shell) passes
SIGINT *ignored* to the kernels it starts; a kernel interrupt is a SIGINT to the kernel's process group. The
kernel here is :class:`~pm_notebook.testing.TestingShell` in its own process, which runs each cell with
Python's SIGINT handler as ipykernel does; the "server" is this test: it starts the process in a session of
its own (as jupyter_client starts a kernel) and sends SIGINT to that group once the sandbox holds the query.
No timing: the verdicts follow the sandbox's hold, and a lost interrupt would leave the query running to the
server's time limit (60 s) and end it ``timed_out``, not ``cancelled``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

KERNEL = """
import signal, sys
from pm_notebook.errors import QueryCancelled
from pm_notebook.testing import TestingShell

transport = sys.argv[1]
print(">> inherited ignored:", signal.getsignal(signal.SIGINT) == signal.SIG_IGN, flush=True)
shell = TestingShell.create()
shell.run_cell(f"%pmsql --transport {transport} SELECT 1 AS warm")  # the JVM's start is not interrupted
try:
    shell.run_cell(f"%%pmsql --transport {transport}\\nSELECT 2 AS held")
except QueryCancelled as exc:
    print(">> held query:", type(exc).__name__, flush=True)
shell.run_cell(f"after = %pmsql --transport {transport} SELECT 3 AS good")
print(">> next query:", shell.user_ns["after"]["good"].tolist(), flush=True)
print(">> ignored between cells:", signal.getsignal(signal.SIGINT) == signal.SIG_IGN, flush=True)
"""


@pytest.mark.parametrize("transport", ["druid", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_a_kernel_interrupt_cancels_the_query_when_sigint_was_inherited_ignored(
    sandbox, sigint_ignored, transport
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(sandbox.env, PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    sandbox.hold_statements("AS held")  # runs on the server until something interrupts it
    kernel = subprocess.Popen(
        [*sigint_ignored, sys.executable, "-c", KERNEL, transport],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        sandbox.wait_held(timeout=120)  # a hang guard: the process starts Python, IPython (and a JVM)
        os.killpg(kernel.pid, signal.SIGINT)  # jupyter_client's interrupt_kernel
        out, err = kernel.communicate(timeout=120)
    finally:
        if kernel.poll() is None:
            kernel.kill()
            kernel.communicate()
    assert kernel.returncode == 0, err[-3000:]
    assert [line for line in out.splitlines() if line.startswith(">> ")] == [
        ">> inherited ignored: True",  # the condition under test holds
        ">> held query: QueryCancelled",
        ">> next query: [3]",
        ">> ignored between cells: True",  # the shell gives the process its own disposition back
    ], err[-3000:]
    assert sandbox.wait_ended("cancelled")["ended"] == {"cancelled": 1}  # the cancel reached the server
