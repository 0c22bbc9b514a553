"""The data generator: determinism, row counts, process-mining invariants, scale, CSV import."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pm_sandbox import data as datagen
from pm_sandbox.data.store import LARGE_PROJECT_NAME, build_store, import_event_log
from pm_sandbox.data.templates import P2P


def _tables(seed: int, n: int = 200, template: str = "p2p") -> datagen.ProjectTables:
    log = datagen.simulate(datagen.TEMPLATES[template], n, np.random.default_rng(seed))
    return datagen.build_tables(log, "pid")


def test_same_seed_same_data_other_seed_other_data():
    a, b, c = _tables(7), _tables(7), _tables(8)
    for name in a.tables:
        assert a.tables[name].equals(b.tables[name])
        assert not a.tables[name].equals(c.tables[name])
    for name in a.lookups:
        assert a.lookups[name].equals(b.lookups[name])


def test_store_ids_and_secrets_are_deterministic():
    one, two, other = build_store(cases=10), build_store(cases=10), build_store(cases=10, seed=1)
    try:
        ids = [(w.id, w.secret, [p.id for p in w.projects]) for w in one.workgroups()]
        assert ids == [(w.id, w.secret, [p.id for p in w.projects]) for w in two.workgroups()]
        assert ids != [(w.id, w.secret, [p.id for p in w.projects]) for w in other.workgroups()]
        assert [w.key for w in one.workgroups()] == ["demo", "second", "unlicensed"]
    finally:
        for s in (one, two, other):
            s.close()


@pytest.mark.parametrize("template", sorted(datagen.TEMPLATES))
def test_row_counts_and_invariants(template):
    n = 400
    pt = _tables(3, n, template)
    cases, vertex, edge = (pt.tables[k].to_pandas() for k in ("pid", "pid_vertex", "pid_edge"))
    assert len(cases) == n and cases["caseid"].is_unique
    assert len(vertex) == cases["tasks_count"].sum()
    assert len(edge) == len(vertex) + n  # one START edge per case plus one edge into END per task chain
    per_case = vertex.groupby("caseid").size()
    assert (per_case.reindex(cases["caseid"]).to_numpy() == cases["tasks_count"].to_numpy()).all()
    distinct = vertex.groupby("caseid")["vertex_name"].nunique().reindex(cases["caseid"]).to_numpy()
    assert (cases["rework"].to_numpy() == cases["tasks_count"].to_numpy() - distinct).all()
    assert cases["rework"].max() >= 1  # loops exist
    assert (cases["concurrency"] > 0).any()  # parallel tasks exist
    assert vertex["concurrent_vertices"].notna().any()
    assert cases["graphkey"].nunique() >= 5 and cases["processkey"].nunique() >= cases["graphkey"].nunique()
    assert (cases["duration"] == cases["enddate"] - cases["__time"].astype("int64") // 1000).all()
    assert (cases["active_duration"] <= cases["duration"]).all()
    assert (vertex["duration"] > 0).all()
    # Tasks start in business hours: Monday-Friday, 08:00-18:00 UTC.
    t = vertex["__time"]
    assert (t.dt.day_of_week < 5).all() and t.dt.hour.between(8, 17).all()
    lookup = pt.lookups["pid_variant_name"].to_pandas()
    assert set(lookup["k"]) == set(cases["graphkey"]) and lookup["v"].is_unique
    assert set(pt.lookups["pid_excluded_cases"].to_pandas()["k"]) <= set(cases["case_version"])
    assert (edge["source_vertex_name"] == "START").sum() == n and (
        edge["destination_vertex_name"] == "END"
    ).sum() == n


def test_column_types_follow_the_reference():
    pt = _tables(1, 50)
    cases = pt.tables["pid"].schema
    assert cases.field("__time").type == pa.timestamp("us")
    for col in ("enddate", "duration", "active_duration", "rework", "tasks_count"):
        assert cases.field(col).type == pa.int64(), col
    assert cases.field("concurrency").type == pa.float64()
    assert cases.field("is_predicted").type == pa.int64()  # Druid ingests a boolean as a long 1/0
    assert set(pt.tables["pid"]["is_predicted"].to_pylist()) <= {0, 1}
    assert cases.field("distinct_vertices").type == pa.list_(pa.string())
    assert cases.field("all_supplier_lpkr").type == pa.list_(pa.string())
    assert cases.field("order_amount_lpkr").type == pa.float64()
    vertex = pt.tables["pid_vertex"].schema
    assert vertex.field("total_occurences_by_caseid").type == pa.int64()
    assert {"vertex_name", "vertex_id", "concurrent_vertices", "resource_lpkr"} <= set(vertex.names)


def test_store_row_counts_match_generator(sandbox_store):
    demo = sandbox_store.by_key("demo")
    con = sandbox_store.database(demo.id).cursor()
    for p in demo.projects:
        for table, rows in p.rows.items():
            schema = "druid" if table in p.tables else "lookup"
            assert con.execute(f'SELECT COUNT(*) FROM {schema}."{table}"').fetchone()[0] == rows
    other = sandbox_store.by_key("second").projects[0].id
    names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert not any(other in n for n in names)  # a workgroup's database holds only its own projects


@pytest.mark.slow
def test_one_million_vertex_rows():
    # How long this takes is a bench figure (bench/bench_server.py builds data the same way), not a verdict.
    log = datagen.simulate(P2P, 110_000, np.random.default_rng(5))
    pt = datagen.build_tables(log, "big")
    assert pt.tables["big_vertex"].num_rows >= 1_000_000


# --- CSV event logs ---------------------------------------------------------------------------------

CSV = """Case ID,Activity,Start Time,End Time,Resource,Cost
c1,Register,2024-03-04 09:00:00,2024-03-04 09:10:00,ann,10
c1,Check,2024-03-04 10:00:00,2024-03-04 10:30:00,bob,20.5
c1,Check,2024-03-04 11:00:00,2024-03-04 11:05:00,bob,3
c1,Close,2024-03-05 09:00:00,2024-03-05 09:01:00,ann,1
c2,Register,2024-03-04 09:30:00,2024-03-04 09:40:00,cid,10
c2,Close,2024-03-04 12:00:00,2024-03-04 12:01:00,ann,1
"""


def test_import_event_log_csv(tmp_path):
    path = tmp_path / "claims.csv"
    path.write_text(CSV)
    store = build_store(cases=5, seal=False)
    try:
        record = import_event_log(store, path)
        demo = store.by_key("demo")
        assert demo.project(record.id) is record and record.name == "claims"
        con = store.database(demo.id).cursor()
        cases = con.execute(
            "SELECT caseid, tasks_count, rework, duration, cost_lpkr, resource_lpkr "
            f'FROM druid."{record.id}" '
            "ORDER BY caseid"
        ).fetchall()
        assert cases == [("c1", 4, 1, 86_460_000, 10.0, "ann"), ("c2", 2, 0, 9_060_000, 10.0, "cid")]
        vertex = con.execute(
            f'SELECT vertex_name, total_occurences_by_caseid FROM druid."{record.id}_vertex" '
            "WHERE caseid = 'c1' ORDER BY __time"
        ).fetchall()
        assert vertex == [("Register", 1), ("Check", 2), ("Check", 2), ("Close", 1)]
        assert con.execute(f'SELECT COUNT(*) FROM druid."{record.id}_edge"').fetchone()[0] == 8
        with pytest.raises(ValueError, match="already imported"):
            import_event_log(store, path)
    finally:
        store.close()


def test_csv_header_spellings(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(
        "case:concept:name;concept:name;time:timestamp\nx;A;2024-01-02T10:00:00Z\nx;B;2024-01-02T11:00:00Z\n"
    )
    path.write_text(path.read_text().replace(";", ","))
    log = datagen.read_event_log_csv(path)
    assert log.n_cases == 1 and log.activities == ["A", "B"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("Case,Task\n1,A\n", "has no timestamp column"),
        ("Activity,Timestamp\nA,2024-01-01\n", "has no case id column"),
        ("foo,bar\n1,2\n", "has no case id / activity / timestamp column"),
        ("case,activity,timestamp\n1,A,yesterday-ish\n", "not a date/time"),
        ("case,activity,timestamp\n", "no complete row"),
    ],
)
def test_bad_csv_gets_a_clear_error_naming_file_and_column(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        datagen.read_event_log_csv(path)
    assert "bad.csv" in str(info.value)


def test_large_project_is_added_without_changing_the_others():
    plain, large = build_store(cases=10), build_store(cases=10, large_cases=40)
    try:
        demo, demo_large = plain.by_key("demo"), large.by_key("demo")
        assert [p.id for p in demo_large.projects[:-1]] == [p.id for p in demo.projects]
        extra = demo_large.projects[-1]
        assert extra.name == LARGE_PROJECT_NAME and extra.rows[extra.id] == 40
        assert extra.rows[f"{extra.id}_vertex"] > 40  # several tasks per case
        for wg in plain.workgroups():
            db, db_large = plain.database(wg.id), large.database(wg.id)
            for p in wg.projects:
                for table in p.tables:
                    sql = f'SELECT * FROM druid."{table}" ORDER BY ALL'
                    assert db.sql(sql).to_arrow_table().equals(db_large.sql(sql).to_arrow_table())
    finally:
        plain.close()
        large.close()
