"""The suite's Ctrl-C tests pass in a run started with SIGINT ignored (``nohup make test &``, a CI runner).

Such a run inherits SIGINT ignored, so Python installs no handler and a Ctrl-C a test sends itself never
arrives; the root ``conftest.py`` installs Python's handler then. Here one Ctrl-C test runs in a pytest
started as such a background job: without that handler its held query would run to the server's time
limit and end in ``QueryTimeout``. No timing: the inner test waits on the sandbox's hold.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CTRL_C_TEST = "tests/sql/test_query.py::test_ctrl_c_cancels_and_the_connection_stays_usable[druid]"


@pytest.mark.standin_only("its inner run's Ctrl-C test holds a statement in the stand-in's engine")
def test_a_ctrl_c_test_passes_in_a_run_started_with_sigint_ignored(sigint_ignored, tmp_path) -> None:
    check = "import signal; assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN"
    assert subprocess.run([*sigint_ignored, sys.executable, "-c", check], check=False).returncode == 0
    run = subprocess.run(
        [
            *sigint_ignored,
            sys.executable,
            "-m",
            "pytest",
            CTRL_C_TEST,
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={tmp_path / 'inner'}",
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard: the inner run starts a sandbox of its own
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout.splitlines()[-1], run.stdout[-2000:]
