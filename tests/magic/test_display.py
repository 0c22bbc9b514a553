"""Result view, footer, error text and progress line, without IPython or a server."""

from __future__ import annotations

import pickle
import threading
import time

import pandas as pd
import pytest

from pm_notebook.errors import NotFound, QueryCancelled, QueryError
from pm_notebook.magic.display import (
    Footer,
    ProgressLine,
    ResultView,
    Source,
    format_error,
    mark_position,
    readable_duration,
    shown,
)
from pm_notebook.magic.template import render


def test_footer_counts_time_transport_and_truncation():
    frame = pd.DataFrame({"a": range(30), "b": ["x"] * 30})
    view = ResultView(
        frame, Footer(rows=30, columns=2, elapsed=0.5, transport="avatica", limit=30), displaylimit=10
    )
    html = view._repr_html_()
    assert html.count("<tr") == 11  # header + 10 rows
    assert "30 rows × 2 columns · 0.50 s · via avatica" in html
    assert "Showing the first 10 rows" in html and "Stopped at the row limit (30)" in html
    text = repr(view)
    assert "30 rows × 2 columns" in text and len(view.frame) == 30


def test_small_result_is_not_marked_truncated():
    frame = pd.DataFrame({"a": [1]})
    text = repr(ResultView(frame, Footer(rows=1, columns=1, elapsed=0.01), displaylimit=10))
    assert "1 row × 1 column · 0.01 s" in text and "Showing" not in text


def test_query_error_marks_the_offending_line_of_the_cell():
    sql = "SELECT caseid,\n       durationn\nFROM t"
    err = QueryError(
        "Query failed",
        server_message="Column 'durationn' not found in any table (line [2], column [8])",
        position=(2, 8),
        sqlstate="42000",
        hint="Check the column name.",
    )
    cell = "%%pmsql -o x\n" + sql
    text = format_error(
        err, sql=sql, source=Source(cell, sql_offset=len("%%pmsql -o x\n")), suggestion="duration"
    )
    assert text.startswith("QueryError: Column 'durationn' not found in any table (SQLSTATE 42000)\n")
    assert "    3 |        durationn\n      |        ^" in text  # the cell's line 3: %%pmsql is line 1
    assert "line [2]" not in text  # one position: the caret
    assert "  Did you mean duration?" in text and "Hint: Check the column name." in text
    assert "Traceback" not in text and "java." not in text


def test_position_parsed_from_calcite_message_and_the_magic_prefix_removed():
    message = "From line 1, column 25 to line 1, column 27: Object 'nope' not found"
    err = QueryError("x", server_message=message)
    sent = "EXPLAIN PLAN FOR SELECT * FROM nope"
    source = Source("%pmsql --explain SELECT * FROM nope", sql_offset=17, numbered=False, sent_prefix=17)
    text = format_error(err, sql=sent, source=source)
    assert text.startswith("QueryError: Object 'nope' not found\n")
    assert mark_position(source.text, 1, 25, numbered=False) in text


def test_position_maps_back_through_replaced_placeholders():
    typed = "SELECT :y AS y, x FROM {vertex}\nWHERE strftime(__time, '%Y') = :y"
    rendered = render(typed, {"y": 1}.__getitem__, identifier=lambda name: '"p-1_vertex"')
    assert rendered.sql == "SELECT ? AS y, x FROM \"p-1_vertex\"\nWHERE strftime(__time, '%Y') = ?"
    message = "No match found for function signature strftime(<TIMESTAMP>) (line [2], column [7])"
    source = Source(typed, to_typed=rendered.template_offset)
    text = format_error(QueryError("x", server_message=message), sql=rendered.sql, source=source)
    assert mark_position(typed, 2, 7) in text and "p-1" not in text
    inside = QueryError("x", server_message="Object 'p-1_vertex' not found (line [1], column [23])")
    assert mark_position(typed, 1, 24) in format_error(inside, sql=rendered.sql, source=source)  # {vertex}


def test_without_a_source_no_position_is_shown():
    err = QueryError("x", server_message="Object 'nope' not found (line [1], column [15])")
    assert format_error(err, sql="SELECT * FROM nope") == (
        "QueryError: Object 'nope' not found (line [1], column [15])\n"
        "(Run with --verbose for the full traceback.)"
    )


def test_other_errors_and_cancellation():
    assert format_error(NotFound("No project p", hint="List them")).startswith("NotFound: No project p")
    assert format_error(QueryCancelled("stopped")).startswith("QueryCancelled: the statement was stopped")
    assert "stopped on the server" in format_error(KeyboardInterrupt())


def test_shown_errors_keep_their_type_and_render_as_their_text():
    err = shown(QueryError("boom"), "QueryError: boom\n    ^")
    assert isinstance(err, QueryError)
    assert err._render_traceback_() == ["QueryError: boom", "    ^"]
    assert pickle.loads(pickle.dumps(err)).message == "boom"


def test_mark_position_out_of_range_is_empty():
    assert mark_position("SELECT 1", 3, 1) == ""


def test_progress_line_appears_only_after_delay_and_clears():
    shown: list[str] = []
    lock = threading.Lock()

    def show(text):
        with lock:
            shown.append(text)

    fast = ProgressLine(show, delay=3600)  # stopped long before its delay, whatever the speed
    fast.rows(5)
    fast.stop()
    assert shown == []

    slow = ProgressLine(show, delay=0.0, interval=0.02)
    slow.rows(1234)
    deadline = time.monotonic() + 60  # the ticker shows it at once; the deadline only guards against a hang
    while not any("1,234 rows fetched" in s for s in list(shown)):
        assert time.monotonic() < deadline, shown
        time.sleep(0.01)
    slow.stop()
    assert any("1,234 rows fetched" in s and s.startswith("Running… ") for s in shown)
    assert shown[-1] == ""
    assert not slow._ticker.is_alive()


def test_without_server_position_the_quoted_name_is_located():
    sql = 'SELECT caseid,\n  nope\nFROM "p-1"'
    err = QueryError("x", server_message='Binder Error: Referenced column "nope" not found', sqlstate="00000")
    text = format_error(err, sql=sql, source=Source(sql))
    assert "\n    2 |   nope\n      |   ^" in text
    assert "SQLSTATE" not in text
    lost = QueryError("x", server_message="Object 'elsewhere' not found")
    assert "|" not in format_error(lost, sql=sql, source=Source(sql))


def test_durations_are_displayed_rounded_and_the_frame_keeps_them_whole():
    frame = pd.DataFrame(
        {
            "case": ["3f2b8c1e-0d4a-4c7b-9e6f-1a2b3c4d5e6f", "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"],
            "activity": ["Approve", "Pay"],
            "median": pd.to_timedelta(["0 days 00:06:56.822", "2 days 03:10:00"]),
        }
    )
    view = ResultView(frame, Footer(rows=2, columns=3, elapsed=0.0), displaylimit=20)
    text, html = repr(view), view._repr_html_()
    assert "6 min 57 s" in text and "2 d 3 h" in text and "days" not in text and "days" not in html
    assert text.splitlines()[0].split() == ["activity", "median", "case"]  # the UUIDs last
    assert view.frame is frame and frame["median"].iloc[0] == pd.Timedelta("00:06:56.822")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (pd.Timedelta(milliseconds=1500), "1.5 s"),
        (pd.Timedelta(seconds=42.4), "42 s"),
        (pd.Timedelta(minutes=59, seconds=59.6), "1 h"),
        (pd.Timedelta(hours=5, minutes=2), "5 h 2 min"),
        (pd.Timedelta(days=-1, hours=-2), "-1 d 2 h"),
        (pd.NaT, ""),
    ],
)
def test_readable_duration(value, shown):
    assert readable_duration(value) == shown
