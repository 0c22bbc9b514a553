"""`make demo` runs `python -m pm_notebook.demo`: it must keep working end to end."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.jdbc
def test_demo_runs_end_to_end():
    command = [sys.executable, "-m", "pm_notebook.demo", "--cases", "150"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Projects:" in out and "Purchase to Pay" in out
    assert "The real Avatica JDBC driver gives the same top variants: True" in out
    assert "Sandbox stopped." in out
    assert "Traceback" not in done.stderr and "SLF4J" not in done.stderr
