"""``%pm upload DF --project NAME --create``: a pandas-cleaned log to a new project in one line, then ``%pm``
answers on it (the notebook section of issue 19, run in a real shell)."""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.core.error import UsageError

from pm_notebook import _current
from pm_notebook.testing import TestingShell


@pytest.fixture
def shell(conn):
    _current.clear_current()
    sh = TestingShell.create()
    sh.user_ns["conn"] = conn
    sh.run_cell("%pmsql --connection conn")
    sh.clear_displayed()
    yield sh
    _current.clear_current()


def test_upload_creates_maps_ingests_then_answers(shell, conn, request):
    name = f"Uploaded {request.node.name}"
    shell.user_ns["log"] = pd.DataFrame(
        {
            "case:concept:name": ["c1", "c1", "c2", "c2", "c2"],
            "concept:name": ["Open", "Close", "Open", "Check", "Close"],
            "time:timestamp": pd.to_datetime(
                [
                    "2025-03-01 09:00",
                    "2025-03-02 10:00",
                    "2025-03-01 11:00",
                    "2025-03-01 12:00",
                    "2025-03-03 08:00",
                ],
                utc=True,
            ),
            "region": ["north", "north", "south", "south", "south"],
        }
    )
    shell.run_cell(f'%pm upload log --project "{name}" --create -o uploaded')
    uploaded = shell.user_ns["uploaded"]
    try:
        assert uploaded.status == "DONE" and uploaded.events == 5
        assert "%pm and %pmsql now use this project" in shell.displayed[-1]["data"]["text/plain"]
        shell.run_cell("%pm summary -o s")  # the uploaded project is the chosen one now
        summary = shell.user_ns["s"]
        assert (int(summary["cases"].iloc[0]), int(summary["events"].iloc[0])) == (2, 5)
        shell.run_cell("%pm activities -o a")
        assert dict(zip(shell.user_ns["a"]["activity"], shell.user_ns["a"]["executions"], strict=True)) == {
            "Open": 2,
            "Close": 2,
            "Check": 1,
        }
    finally:
        conn.delete_project(uploaded.project_id, confirm=name)


def test_upload_needs_data_and_project(shell):
    with pytest.raises(UsageError, match="needs the data and the project"):
        shell.run_line_magic("pm", "upload log")
    with pytest.raises(UsageError, match="--create goes with %pm upload"):
        shell.run_line_magic("pm", "summary --create")
