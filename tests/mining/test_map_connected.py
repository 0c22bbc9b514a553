"""A simplified process map stays connected: at every slider position every shown activity is reached from
START and reaches END on the shown paths (a property over random logs, and the explorer's whole grid on the
demo map); on a log with one timestamp per event the performance view puts no time on the activities."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from pm_notebook.mining import ProcessMap
from pm_notebook.mining._map import STATS
from pm_notebook.widgets import ProcessMapExplorer

#: the positions of the explorer's sliders (0 % to 100 % in steps of 5 %)
GRID = [round(i * 0.05, 2) for i in range(21)]


def _map_of(traces: list[list[str]], *, one_timestamp: bool = False) -> ProcessMap:
    """The ProcessMap of *traces* (one list of activities per case), its numbers computed in pandas."""
    rows = []
    for case, trace in enumerate(traces):
        for i, act in enumerate(trace):
            rows.append((case, i, act))
    events = pd.DataFrame(rows, columns=["case", "pos", "activity"])
    events["service"] = 0 if one_timestamp else (events["pos"] + 1) * 1000
    nodes = events.groupby("activity").agg(frequency=("case", "size"), cases=("case", "nunique"))
    for stat in STATS:
        nodes[stat] = pd.to_timedelta(events.groupby("activity")["service"].max(), unit="ms")
    pairs = []
    for trace in traces:
        path = ["START", *trace, "END"]
        pairs.extend(zip(path[:-1], path[1:], strict=True))
    edges = pd.DataFrame(pairs, columns=["source", "target"]).value_counts().rename("frequency").reset_index()
    for stat in STATS:
        edges[stat] = pd.to_timedelta(edges["frequency"] * 60_000, unit="ms")
    nodes = nodes.reset_index().astype({"frequency": "Int64", "cases": "Int64"})
    edges = edges.astype({"frequency": "Int64"})
    return ProcessMap(nodes, edges)


def _stranded(shown: ProcessMap) -> set[str]:
    """The shown activities START does not reach, or that do not reach END, on the shown paths."""
    step: dict[str, set[str]] = {}
    back: dict[str, set[str]] = {}
    for src, dst in zip(shown.edges["source"], shown.edges["target"], strict=True):
        step.setdefault(str(src), set()).add(str(dst))
        back.setdefault(str(dst), set()).add(str(src))

    def reach(origin: str, graph: dict[str, set[str]]) -> set[str]:
        seen, todo = {origin}, [origin]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    names = set(shown.nodes["activity"].astype(str))
    return names - (reach("START", step) & reach("END", back))


ACTIVITIES = "ABCDEFGHIJ"
traces = st.lists(st.lists(st.sampled_from(ACTIVITIES), min_size=1, max_size=8), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(traces, st.sampled_from(GRID) | st.floats(0, 1), st.sampled_from(GRID) | st.floats(0, 1))
def test_every_shown_activity_lies_between_start_and_end(log_traces, activities, paths):
    full = _map_of(log_traces)
    shown = full.view(activities=activities, paths=paths)
    assert not _stranded(shown), (activities, paths)
    inner = set(shown.nodes["activity"]) - {"START", "END"}
    assert inner, "at least one activity is always shown"
    by_frequency = full.all_nodes[~full.all_nodes["activity"].isin(["START", "END"])].sort_values(
        ["frequency", "activity"], ascending=[False, True]
    )
    # the slider's activities are all shown (the connecting routes may add hidden ones, never drop any)
    n_keep = max(1, math.ceil(activities * len(by_frequency) - 1e-9))
    assert set(by_frequency["activity"].head(n_keep)) <= inner
    assert set(zip(shown.edges["source"], shown.edges["target"], strict=True)) <= set(
        zip(full.all_edges["source"], full.all_edges["target"], strict=True)
    )


def test_a_stranding_log_is_reconnected_through_the_strongest_route():
    # B and C only ever follow each other after A; with A hidden (activities slider), the route to them
    # goes through A, which is then shown.
    traces = [["A", "B", "C", "B", "C", "B", "C"]] * 3 + [["D"]] * 4
    full = _map_of(traces)
    shown = full.view(activities=0.5, paths=0.0)  # keeps B and C (6 + 6 executions ...), hides A and D
    assert {"B", "C"} <= set(shown.nodes["activity"])
    assert not _stranded(shown)
    assert "A" in set(shown.nodes["activity"])  # brought back to connect B and C


def test_the_explorer_grid_on_the_demo_map_is_connected(log):
    pmap = log.process_map()
    for activities in GRID:
        for paths in GRID:
            assert not _stranded(pmap.view(activities=activities, paths=paths)), (activities, paths)


def test_explorer_sliders_show_connected_maps(log):
    explorer = ProcessMapExplorer(log.process_map())
    for activities, paths in ((0.0, 0.0), (0.35, 0.1), (1.0, 0.0)):
        assert not _stranded(explorer.set(activities=activities, paths=paths))


def test_one_timestamp_per_event_puts_no_time_on_activities():
    traces = [["A", "B", "C"], ["A", "C"], ["A", "B", "B", "C"]]
    flat = _map_of(traces, one_timestamp=True).view(metric="performance", paths=1.0)
    assert flat.single_timestamp
    dot = flat.to_dot()
    assert 'label="A"' in dot and "0s" not in dot  # no invented service time
    assert 'label="1m"' in dot or 'label="2m"' in dot  # the waits on the paths are shown
    timed = _map_of(traces).view(metric="performance", paths=1.0)
    assert not timed.single_timestamp and 'label="A\\n' in timed.to_dot()
