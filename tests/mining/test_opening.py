"""What opening a log costs: ``conn.mining(id)`` makes one REST call whatever the number of projects (a name
still lists them), and three statements (the columns, the lookups, the excluded cases), counted on the wire:
the ``wire_of`` fixture (tests/conftest.py)."""

from __future__ import annotations

import pytest

from pm_notebook._checks import find_project
from pm_notebook.errors import NotFound

from .conftest import PROJECT


@pytest.fixture(scope="module")
def wired(sandbox, connect_workgroup, wire_of):
    with connect_workgroup(sandbox, transport="druid") as conn:
        yield conn, wire_of(conn)


def test_opening_by_id_makes_one_rest_call(wired):
    conn, wire = wired
    listed = conn.projects()
    assert len(listed) > 1  # one call per project would show
    expected = find_project(listed, PROJECT)
    wire.clear()
    log = conn.mining(expected.id)
    assert wire.rest == [f"/pub/projects/{expected.id}"]
    assert log.project == expected
    assert len(wire.sql) == 3  # columns, lookups, excluded cases


def test_opening_by_name_lists_the_projects(wired):
    conn, wire = wired
    listed = conn.projects()
    wire.clear()
    log = conn.mining(PROJECT)
    assert log.project == find_project(listed, PROJECT)
    assert wire.rest[-len(listed) - 1 :] == ["/pub/projects"] + [f"/pub/projects/{p.id}" for p in listed]
    with pytest.raises(NotFound, match="No project named or with id 'no such project'") as info:
        conn.mining("no such project")
    assert PROJECT in (info.value.hint or "")


def test_a_log_reads_its_schema_and_exclusions_once(wired):
    conn, wire = wired
    log = conn.mining(find_project(conn.projects(), PROJECT))
    wire.clear()
    log.summary()
    log.with_excluded().with_activity(str(log.activities()["activity"].iloc[0])).variants(3)
    assert not [s for s in wire.sql if "INFORMATION_SCHEMA" in s]
    assert not [s for s in wire.sql if s.startswith('SELECT COUNT(*) AS "excluded_cases"')]
    assert wire.rest == []


class Reporting:
    """A Source over a connection that records every time the log asks it which transport it uses."""

    def __init__(self, conn) -> None:
        self.conn, self.asked = conn, []

    def query(self, sql, params=None, **kw):
        return self.conn.query(sql, params, **kw)

    def query_chunks(self, sql, params=None, **kw):
        return self.conn.query_chunks(sql, params, **kw)

    def resolve_transport(self, name=None):
        self.asked.append(name)
        return self.conn.resolve_transport(name)

    def project(self, project_id):
        return self.conn.project(project_id)

    def projects(self):
        return self.conn.projects()

    def column_names(self, project):
        return self.conn.column_names(project)


def test_an_answer_keeps_the_statements_that_ran_and_the_transport_they_reported(wired):
    """``attrs["sql"]`` holds exactly the statements that left the connection for the answer, in order, and
    ``attrs["transport"]`` the transport that served them, as the source reported it with their rows (the
    source is not asked again)."""
    conn, wire = wired
    source = Reporting(conn)
    from pm_notebook.mining import ProcessLog

    log = ProcessLog.open(source, find_project(conn.projects(), PROJECT))
    first = str(log.activities()["activity"].iloc[0])
    filtered = log.with_activity(first)
    asks = [
        filtered.summary,
        lambda: filtered.variants(3),
        filtered.handovers,
        lambda: filtered.conformance([("START", first)]),
        lambda: filtered.drivers("rework"),
        lambda: filtered.arrivals("P1M"),
        filtered.to_pm4py,
    ]
    for ask in asks:
        wire.clear()
        answer = ask()
        assert answer.attrs["sql"].split(";\n\n") == wire.sql
        assert answer.attrs["transport"] == "druid"
    for pmap in (filtered.process_map(), filtered.resource_map()):
        assert pmap.transport == pmap.view(activities=0.5).transport == "druid"
    assert filtered.dotted_chart("P1M").data.attrs["transport"] == "druid"
    assert source.asked == []
