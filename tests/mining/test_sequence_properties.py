"""A property test of the answers that read each case's tasks as a sequence — ``handovers()``, the resource
map's edges, ``variants()``' printed activities and ``to_pm4py()`` — on random logs full of the shapes
real logs have: tasks at the same instant, identical (duplicate) events, overlapping tasks, one-event
cases, NULL resources. Each log is uploaded to a sandbox of this module's own and every count is compared
exactly with pandas and pm4py on the same events in the documented task order (start, end, activity,
resource)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .perspectives_data import ordered

ACTIVITIES = ("A", "B", "C")
RESOURCES = ("r1", "r2", "r3", None)
BASE = pd.Timestamp("2025-03-01 09:00")
_names = itertools.count()

#: one task: activity, resource, start (minutes after the case's start, on a coarse grid: many ties),
#: duration in minutes (0: instantaneous; longer than the grid's step: overlaps), duplicated or not
task = st.tuples(
    st.sampled_from(ACTIVITIES),
    st.sampled_from(RESOURCES),
    st.integers(0, 4),
    st.sampled_from([0, 0, 1, 3]),
    st.booleans(),
)
logs = st.lists(st.lists(task, min_size=1, max_size=5), min_size=1, max_size=6)


def _frame(cases: list[list[tuple]]) -> pd.DataFrame:
    rows = []
    for c, tasks in enumerate(cases):
        start = BASE + pd.Timedelta(hours=3 * c)
        for act, res, at, minutes, twice in tasks:
            begin = start + pd.Timedelta(minutes=at)
            row = {
                "case:concept:name": f"c{c}",
                "concept:name": act,
                "start_timestamp": begin,
                "time:timestamp": begin + pd.Timedelta(minutes=minutes),
                "resource": res,
            }
            rows.extend([row, dict(row)] if twice else [row])
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def conn(tmp_path_factory, connect_workgroup):
    from pm_sandbox import start

    sb = start(cases=5, log_path=tmp_path_factory.mktemp("sequence-sandbox") / "sandbox.log")
    connection = connect_workgroup(sb)
    yield connection
    connection.close()
    sb.stop()


def _name(value) -> str:
    return "(none)" if value is None or value is pd.NA or value != value else str(value)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs)
def test_sequences_handovers_and_the_resource_map_against_pandas_and_pm4py(conn, cases):
    import pm4py

    events = _frame(cases)
    project = conn.create_project(f"Sequences {next(_names)}")
    assert conn.upload(project, events).status == "DONE"
    log = conn.mining(project).with_excluded()

    ev = ordered(events).reset_index(drop=True)
    ev["r"] = ev["resource"].map(_name)
    nxt = ev.shift(-1)
    same = ev["case:concept:name"] == nxt["case:concept:name"]
    pairs = pd.DataFrame(
        {
            "case": ev["case:concept:name"][same],
            "f": ev["r"][same],
            "t": nxt["r"][same],
            "wait": (nxt["start_timestamp"] - ev["time:timestamp"])[same].clip(lower=pd.Timedelta(0)),
        }
    )

    # handovers(): every consecutive pair, counts and cases exact, waits by the documented definition
    got = log.handovers()
    rows = {(_name(r.from_resource), _name(r.to_resource)): r for r in got.itertuples()}
    want = pairs.groupby(["f", "t"]).agg(n=("case", "size"), cases=("case", "nunique"))
    assert set(rows) == set(want.index)
    for key, w in want.iterrows():
        assert (rows[key].handovers, rows[key].cases) == (w["n"], w["cases"]), key
        ms = (
            pairs.loc[(pairs["f"] == key[0]) & (pairs["t"] == key[1]), "wait"] / pd.Timedelta("1ms")
        ).to_numpy()
        assert abs(rows[key].mean_wait / pd.Timedelta("1ms") - ms.mean()) <= 0.5, key
        assert rows[key].median_wait / pd.Timedelta("1ms") == np.quantile(ms, 0.5, method="inverted_cdf")
    assert int(got["handovers"].sum()) == len(events) - len(cases)  # n - 1 per case of n tasks

    # pm4py's handover-of-work network (beta=0) on the same events in the same order: shares of the total
    if len(pairs):
        frame = ev.assign(**{"org:resource": ev["r"]})
        network = pm4py.discover_handover_of_work_network(
            frame,
            beta=0,
            resource_key="org:resource",
            timestamp_key="time:timestamp",
            case_id_key="case:concept:name",
        )
        total = int(got["handovers"].sum())
        counts = {k: round(share * total) for k, share in network.connections.items()}
        assert counts == {k: int(r.handovers) for k, r in rows.items()}

    # the same answers in parts of whole cases (a limit of 24 rows: 10 tasks a window, half the limit less the
    # tenth kept free; a case has at most 10)
    parted = conn.mining(project, context={"maxSubqueryRows": 24}).with_excluded()
    split = parted.handovers()
    assert (split.attrs["parts"] > 1) == (len(events) > 10)  # one window holds 10 tasks
    assert {
        (_name(r.from_resource), _name(r.to_resource)): (r.handovers, r.cases) for r in split.itertuples()
    } == {k: (r.handovers, r.cases) for k, r in rows.items()}
    # the waits add up exactly across parts (sums and counts), the mean too
    for r in split.itertuples():
        whole = rows[(_name(r.from_resource), _name(r.to_resource))]
        assert abs((r.mean_wait - whole.mean_wait) / pd.Timedelta("1ms")) <= 0.5
    split_edges = parted.resource_map(paths=1.0).edges

    # the resource map: START → first resource, each handover, last resource → END, nothing else
    by_case = ev.groupby("case:concept:name")["r"]
    edges = {("START", r): n for r, n in by_case.first().value_counts().items()}
    edges |= {(r, "END"): n for r, n in by_case.last().value_counts().items()}
    for (f, t), n in pairs.groupby(["f", "t"]).size().items():
        edges[(f, t)] = edges.get((f, t), 0) + n
    drawn = log.resource_map(paths=1.0).edges
    assert {(e.source, e.target): e.frequency for e in drawn.itertuples()} == edges
    assert {(e.source, e.target): e.frequency for e in split_edges.itertuples()} == edges
    exact = ["source", "target", "frequency", "min", "max", "total"]  # what parts combine without a sketch
    pd.testing.assert_frame_equal(
        split_edges[exact].sort_values(["source", "target"]).reset_index(drop=True),
        drawn[exact].sort_values(["source", "target"]).reset_index(drop=True),
        check_dtype=False,
    )

    # variants() and to_pm4py(): each case's activities in the task order
    sequences = ev.groupby("case:concept:name")["concept:name"].apply(tuple)
    pulled = log.to_pm4py(None)
    assert pulled.groupby("case:concept:name")["concept:name"].apply(tuple).to_dict() == sequences.to_dict()
    variants = log.variants(top=100)
    assert int(variants["cases"].sum()) == len(cases)
    for row in variants.itertuples():
        assert str(row.activities) == " → ".join(sequences[row.example_case])
    # the stand-in's process variants follow the same order: one variant per distinct sequence
    assert sorted(variants["cases"].tolist()) == sorted(sequences.value_counts().tolist())
