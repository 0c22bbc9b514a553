"""`make demo` runs `python -m pm_notebook.demo`: it must keep working end to end."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pandas as pd
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


# The demo's data on Druid: tests/conftest.py's SANDBOX_CASES and the default seed, the rows the differential
# suite and PM_TEST_DRUID=1 publish too (a Druid that holds them is used at once; no other copy of the ids).
DEMO_CASES = "300"
# Durations come from quantiles (APPROX_QUANTILE_DS: a DataSketches sketch on Druid, about 1 % of rank, i.e. a
# few of the 300 cases either way, and not the same from run to run): measured up to 5.2 % apart (a p10 of
# 9 d 18 h against 9 d 6 h), so a duration may differ by 10 %, relative, or by one second. Counts, shares,
# names, orders and every other number must be equal.
DURATION_RTOL = 0.10
_DURATION = re.compile(r"(?:\d+ days? )?\d{1,2}:\d{2}:\d{2}")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _main_job(out: str) -> list[str]:
    """The demo's output from the workgroup on, without what names this run (ports, file paths)."""
    lines = out[out.index("\nWorkgroup:") :].splitlines()
    # an answer's title line names its transport, which auto picks per run: the title itself must match
    return [
        line.split("  [", 1)[0] if "Druid SQL statement(s) via" in line else line
        for line in lines
        if "written to" not in line
    ]


def _seconds(text: str) -> float:
    return pd.to_timedelta(text).total_seconds()


def _same_line(ours: str, theirs: str) -> bool:
    if ours == theirs:
        return True
    durations = _DURATION.findall(ours), _DURATION.findall(theirs)
    if len(durations[0]) != len(durations[1]) or not durations[0]:
        return False
    if _DURATION.sub("D", ours) != _DURATION.sub("D", theirs):
        return False
    return all(
        math.isclose(_seconds(a), _seconds(b), rel_tol=DURATION_RTOL, abs_tol=1.0)
        for a, b in zip(*durations, strict=True)
    )


@pytest.mark.jdbc
@pytest.mark.slow
def test_demo_on_druid_ends_with_the_same_answers(tmp_path, druid_cluster):
    def demo(*extra: str) -> str:
        command = [
            sys.executable,
            "-m",
            "pm_notebook.demo",
            "--cases",
            DEMO_CASES,
            "--map",
            str(tmp_path / "m.svg"),
        ]
        done = subprocess.run([*command, *extra], capture_output=True, text=True, timeout=3600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    on_duckdb, on_druid = demo(), demo("--druid", druid_cluster.broker)
    assert "in front of the Druid at" in on_druid
    ours, theirs = _main_job(on_duckdb), _main_job(on_druid)
    assert len(ours) == len(theirs), "\n".join(theirs)
    different = [(a, b) for a, b in zip(ours, theirs, strict=True) if not _same_line(a, b)]
    assert not different, different
    # the comparison covers the answers: the variants, throughput, activities and waits all printed
    assert all(title in on_druid for title in ("Top variants", "Throughput (case duration)", "Busiest"))
    assert "The real Avatica JDBC driver gives the same top variants: True" in on_druid
