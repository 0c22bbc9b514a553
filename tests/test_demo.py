"""`make demo` runs `python -m pm_notebook.demo`: it must keep working end to end."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.jdbc
def test_demo_runs_end_to_end(tmp_path):
    map_path = tmp_path / "map.svg"
    command = [sys.executable, "-m", "pm_notebook.demo", "--cases", "150", "--map", str(map_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Projects:" in out and "Purchase to Pay" in out
    # what an analyst wants first: variant names (not keys), throughput, busiest activities, a map on disk
    assert "Variant 1" in out and "Throughput (case duration)" in out and "Busiest activities" in out
    assert f"written to {map_path}" in out and map_path.read_text().lstrip().startswith("<")
    assert "The real Avatica JDBC driver gives the same top variants: True" in out
    assert "Sandbox stopped." in out
    assert "Traceback" not in done.stderr and "SLF4J" not in done.stderr
