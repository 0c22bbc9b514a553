"""The window answers (``handovers()``, ``resource_map()``) on a real Druid 33 under a small
``maxSubqueryRows``: Druid holds a window's input and, under an outer aggregate, its result on the
broker — two rows per task — so the log cuts the cases into parts of at most half the limit (less a tenth)
and each part runs on Druid at that limit; the parts add up to the one-statement answer (docs/mining.md, "The
organisational perspective")."""

from __future__ import annotations

import pytest
from _mining_source import RecordingSource
from test_mining import LATER, _frame, _same_answer, logs, names, project  # noqa: F401 (fixtures)

from pm_notebook.mining import ProcessLog

#: a limit well below the demo project's ~2,800 tasks: parts of at most 450 tasks
LIMIT = {"maxSubqueryRows": 1000}


@pytest.mark.parametrize("answer", list(LATER))
def test_window_answers_run_in_parts_under_a_small_limit(standin_conn, druid_conn, project, answer):  # noqa: F811
    ours_source = RecordingSource(standin_conn, standin_conn)
    theirs_source = RecordingSource(druid_conn, standin_conn)
    ours = _frame(LATER[answer](ProcessLog.open(ours_source, project, context=LIMIT)))
    theirs = _frame(LATER[answer](ProcessLog.open(theirs_source, project, context=LIMIT)))
    windows = [s for s in theirs_source.sent if " OVER (" in s.sql]
    assert len(windows) >= 6  # 2,800 tasks in parts of at most 450: at least one window statement per part
    assert all(s.context and s.context.get("maxSubqueryRows") == 1000 for s in windows)
    assert _same_answer(ours, theirs) == []
    # the oracle: the one-statement answer under Druid's default limit, on Druid
    whole = _frame(LATER[answer](ProcessLog.open(RecordingSource(druid_conn, standin_conn), project)))
    assert len(theirs) == len(whole) > 0 and _same_answer(theirs, whole) == []
