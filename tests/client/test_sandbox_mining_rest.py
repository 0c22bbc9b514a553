"""The client's variants, completed cases, graphs and column-mapping calls against the running sandbox."""

from __future__ import annotations

import pytest

from pm_notebook import (
    ColumnMapping,
    ConfigurationError,
    GraphInstance,
    HTTPError,
    MappingInfo,
    NotFound,
    ProcessGraph,
    Variant,
)
from pm_notebook.api import to_frame


@pytest.fixture
def second(sandbox, connect_to):
    return connect_to(sandbox, "second")


@pytest.fixture
def delivery(sandbox) -> str:
    return sandbox.workgroups["second"].project_ids[2]


def test_variants_fetch_every_page(sandbox, connect_to, sandbox_store):
    conn = connect_to(sandbox)
    project = conn.projects()[0]
    expected = (
        sandbox_store.database(sandbox.workgroups["demo"].client_id)
        .execute(f'SELECT COUNT(DISTINCT graphkey), COUNT(*) FROM druid."{project.id}"')
        .fetchone()
    )
    variants = conn.rest.variants(project, page_size=2)  # several pages
    assert len(variants) == expected[0] > 2
    assert all(isinstance(v, Variant) and v.project_id == project.id for v in variants)
    assert sum(v.occurrences for v in variants) == expected[1]
    assert [v.name for v in variants[:2]] == ["Variant 1", "Variant 2"]
    assert variants == conn.variants(project)  # same answer with the default page size
    frame = to_frame(variants)
    assert list(frame.columns) == ["id", "name", "occurrences", "project_id"]
    assert conn.variants(project, search="Variant 1")[0].name == "Variant 1"
    assert conn.variants(project, search="no such variant") == []


def test_completed_cases_fetch_every_page(sandbox, connect_to, sandbox_store):
    conn = connect_to(sandbox)
    pid = sandbox.workgroups["demo"].project_ids[1]  # order to cash: returned goods stay open
    cases = conn.rest.completed_cases(pid, page_size=40)
    flags = dict(
        sandbox_store.database(sandbox.workgroups["demo"].client_id)
        .execute(f'SELECT k, v FROM lookup."{pid}_cases_is_completed"')
        .fetchall()
    )
    assert sorted(f"{c}-1" for c in cases) == sorted(k for k, v in flags.items() if v == "true")
    assert 0 < len(cases) < len(flags)
    assert cases == conn.completed_cases(pid)
    few = conn.completed_cases(pid, search=cases[0])
    assert few == [cases[0]]


def test_completed_cases_without_end_case_rule_is_a_clear_error(tmp_path, sandbox_factory, connect_to):
    data = tmp_path / "logs"
    data.mkdir()
    (data / "tickets.csv").write_text("case,activity,timestamp\nT1,Open,2024-05-06 09:00\n")
    sb = sandbox_factory(cases=5, data=data)
    conn = connect_to(sb)
    with pytest.raises(HTTPError) as info:
        conn.completed_cases(sb.workgroups["demo"].project_ids[2])
    err = info.value
    assert not isinstance(err, NotFound) and err.status == 400
    assert "END CASE" in str(err) and "business rule" in err.hint


def test_graph_and_instance(sandbox, second, delivery):
    graph = second.graph(delivery)
    assert isinstance(graph, ProcessGraph) and graph.mode == "simplified"
    assert {"START", "END", "Deliver Parcel"} <= set(graph.names().values())
    assert ("START", "Register Shipment") in graph.transitions()
    assert all(v.category is None for v in graph.vertices)
    gateways = second.graph(delivery, mode="gateways")
    assert {v.category for v in gateways.vertices} >= {"start", "end"}
    assert list(to_frame(graph.edges).columns) == ["id", "source", "destination"]
    with pytest.raises(ConfigurationError, match="simplified"):
        second.graph(delivery, mode="bpmn")
    processkey = second.query(f'SELECT processkey FROM "{delivery}" ORDER BY __time LIMIT 1').iloc[0, 0]
    instance = second.graph_instance(delivery, processkey)
    assert isinstance(instance, GraphInstance) and instance.process_key == processkey
    assert instance.vertices[0].name == "START" and instance.vertices[-1].name == "END"
    assert len(instance.edges) == len(instance.vertices) - 1
    assert {v.id for v in instance.vertices} <= {v.id for v in graph.vertices}
    assert instance.rework_total is not None and instance.concurrency_rate is not None
    with pytest.raises(NotFound, match="nope"):
        second.graph_instance(delivery, "nope")
    with pytest.raises(ConfigurationError):
        second.graph_instance(delivery, "")


def test_column_mapping_and_mapping_infos(second, delivery):
    assert second.rest.column_mapping_exists(delivery) is True
    mapping = second.column_mapping(delivery)
    assert isinstance(mapping, ColumnMapping)
    assert [c.kind for c in mapping.columns[:4]] == ["case_id", "activity", "time", "time"]
    assert [c.index for c in mapping.columns] == list(range(len(mapping.columns)))
    destination = next(c for c in mapping.of_kind("dimension") if c.name == "Destination")
    assert destination.index == 7 and destination.case_scope is True
    assert {c.unit for c in mapping.of_kind("metric")} == {"kg", "EUR"}
    infos = second.mapping_infos(delivery)
    assert all(isinstance(i, MappingInfo) for i in infos)
    assert {i.category for i in infos} == {"dimension", "metric"}
    names = second.column_names(delivery)
    assert names["Destination"] == "detail_7_lpkr_destination"
    # The database names are what SQL must use: the user's names are not columns.
    column = names["Destination"]
    frame = second.query(f'SELECT {column}, COUNT(*) AS n FROM "{delivery}" GROUP BY 1 ORDER BY 2 DESC')
    assert len(frame) > 3
    assert list(to_frame(infos).columns) == [
        "name",
        "database_column_name",
        "category",
        "column_index",
        "aggregation",
        "case_scope",
        "unit",
    ]


def test_older_naming_project_maps_to_lpkr_columns(sandbox, connect_to):
    conn = connect_to(sandbox)
    pid = sandbox.workgroups["demo"].project_ids[0]
    assert conn.column_names(pid)["Supplier"] == "supplier_lpkr"


@pytest.mark.parametrize(
    "call",
    [
        lambda c, p: c.variants(p),
        lambda c, p: c.completed_cases(p),
        lambda c, p: c.graph(p),
        lambda c, p: c.graph_instance(p, "x"),
        lambda c, p: c.column_mapping(p),
        lambda c, p: c.mapping_infos(p),
    ],
)
def test_foreign_project_is_not_found(sandbox, connect_to, call):
    conn = connect_to(sandbox)
    foreign = sandbox.workgroups["second"].project_ids[2]
    with pytest.raises(NotFound) as info:
        call(conn, foreign)
    assert foreign in str(info.value) and info.value.status == 404


def test_bad_page_size_is_refused_before_any_call(sandbox, connect_to):
    conn = connect_to(sandbox)
    with pytest.raises(ConfigurationError, match="page_size"):
        conn.rest.variants(sandbox.workgroups["demo"].project_ids[0], page_size=0)
