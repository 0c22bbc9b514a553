"""Stored and replayed results and the query context: a result is found again by the context keys that may
change its answer (``sqlTimeZone``, ``enableWindowing``, ``maxSubqueryRows``...), whatever the ones that
only change how it runs say (``timeout``, ``sqlQueryId``, ``priority``); the connection's default context
counts as the call's own."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pm_notebook import ConfigurationError, QueryError, ReplayMiss

#: Druid 33 inlines a window's input: a limit of 5 rows refuses the LAG below
LOW = {"maxSubqueryRows": 5}
LIMIT_REFUSED = r"beyond maximum\[5\] rows"


@pytest.fixture
def cases(sandbox):
    return f'"{sandbox.workgroups["demo"].project_ids[0]}"'


def days(cases: str) -> str:
    return f"SELECT TIME_FLOOR(__time, 'P1D') AS d, COUNT(*) AS c FROM {cases} GROUP BY 1 ORDER BY 1"


def lag(cases: str) -> str:
    return (
        f"SELECT caseid, LAG(caseid) OVER (ORDER BY caseid) AS previous FROM {cases} "
        "GROUP BY caseid ORDER BY caseid LIMIT 10"
    )


def test_a_result_is_replayed_for_the_context_that_changes_it(live, replay, cases):
    paris = live.query(days(cases), context={"sqlTimeZone": "Europe/Paris", "timeout": 60000})
    utc = live.query(days(cases))
    assert paris["d"].tolist() != utc["d"].tolist()  # the zone changes the answer on these data
    conn = replay()
    # timeout and sqlQueryId change how a query runs, not its rows: the stored result answers
    again = conn.query(days(cases), context={"sqlTimeZone": "Europe/Paris", "sqlQueryId": "replayed-1"})
    pd.testing.assert_frame_equal(again, paris)
    pd.testing.assert_frame_equal(conn.query(days(cases), context={"timeout": 1000}), utc)
    with pytest.raises(ReplayMiss) as missed:
        conn.query(days(cases), context={"sqlTimeZone": "Asia/Tokyo"})
    message = str(missed.value)
    assert "another query context" in message
    assert '"sqlTimeZone": "Asia/Tokyo"' in message and '"sqlTimeZone": "Europe/Paris"' in message


def test_a_stored_refusal_and_a_stored_result_of_one_statement(live, replay, cases):
    with pytest.raises(QueryError, match=LIMIT_REFUSED):
        live.query(lag(cases), context=LOW)
    windowed = live.query(lag(cases))
    conn = replay()
    with pytest.raises(QueryError, match=LIMIT_REFUSED):
        conn.query(lag(cases), context=LOW)
    pd.testing.assert_frame_equal(conn.query(lag(cases)), windowed)


def test_the_connection_default_is_part_of_the_key(
    sandbox, cache_dir, live_connection, replay, cases, monkeypatch
):

    default = {"sqlTimeZone": "Europe/Paris", "timeout": 60000}
    with live_connection(sandbox, cache_dir, context=default) as conn:
        stored = conn.query(days(cases))
    # whoever replays the folder has not the author's context: it was recorded beside the results
    shared = replay()
    assert shared.context == {"sqlTimeZone": "Europe/Paris"}  # the part that keys results
    pd.testing.assert_frame_equal(shared.query(days(cases)), stored)
    with pytest.raises(ReplayMiss, match="another query context"):
        replay(context={}).query(days(cases))  # an argument wins over the recorded default, {} too
    with pytest.raises(ReplayMiss, match="another query context"):
        shared.query(days(cases), context={"sqlTimeZone": "UTC"})  # per call wins, in replay as live
    monkeypatch.setenv("PM_QUERY_CONTEXT", json.dumps({"sqlTimeZone": "Asia/Tokyo"}))
    with pytest.raises(ReplayMiss, match="another query context"):
        replay().query(days(cases))  # the variable wins over the recorded default
    monkeypatch.setenv("PM_QUERY_CONTEXT", json.dumps({"sqlTimeZone": "Europe/Paris", "priority": 5}))
    pd.testing.assert_frame_equal(replay().query(days(cases)), stored)


def test_a_bad_context_is_refused_in_replay_too(replay, monkeypatch):
    conn = replay()
    with pytest.raises(ConfigurationError, match="Did you mean 'sqlTimeZone'"):
        conn.query("SELECT 1", context={"sqltimezone": "UTC"})
    monkeypatch.setenv("PM_QUERY_CONTEXT", "{oops")
    with pytest.raises(ConfigurationError, match="PM_QUERY_CONTEXT"):
        replay()
