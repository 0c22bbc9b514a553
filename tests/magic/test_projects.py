"""Project shortcuts, listings and the magics' session, without IPython or a server."""

from __future__ import annotations

import pytest

from pm_notebook import _current
from pm_notebook._models import Column, Project, Table
from pm_notebook.api import to_frame
from pm_notebook.errors import ConfigurationError
from pm_notebook.magic.projects import ProjectChoice, columns_frame, pick_project, table_for, tables_frame
from pm_notebook.magic.session import Session

PROJECTS = [Project("p-1", "Sales"), Project("p-2", "HR"), Project("p-3", "hr")]
TABLES = [Table("p-1", "p-1"), Table("p-1_vertex", "p-1"), Table("p-1_edge", "p-1")]


def test_pick_project_by_id_then_exact_name_then_any_case() -> None:
    assert pick_project(PROJECTS, "p-3").id == "p-3"
    assert pick_project(PROJECTS, "HR").id == "p-2"  # an exact name wins over a case-insensitive one
    assert pick_project(PROJECTS, "sales").id == "p-1"
    with pytest.raises(ConfigurationError, match="No project named or with id 'Ops'") as err:
        pick_project(PROJECTS, "Ops")
    assert "'Sales' (p-1)" in (err.value.hint or "")
    with pytest.raises(ConfigurationError, match="2 projects are named 'Hr'"):
        pick_project(PROJECTS, "Hr")


def test_choice_maps_shortcuts_to_tables() -> None:
    choice = ProjectChoice(conn=None, project=PROJECTS[0], tables=TABLES[:2])  # type: ignore[arg-type]
    assert {k: t.name for k, t in choice.shortcuts().items()} == {"cases": "p-1", "vertex": "p-1_vertex"}
    assert choice.table("edge") is None
    assert table_for(" {vertex} ", choice) is TABLES[1]
    assert table_for("edge", choice) == "edge"  # no such table in the project: the name as given
    assert table_for('"we""ird"', None) == 'we"ird'


def test_listings_are_built_by_the_clients_frame_helper_and_keep_columns_when_empty() -> None:
    frame = tables_frame(TABLES, {"p-1": PROJECTS[0]})
    assert list(frame.columns) == ["project", "project_id", "table", "kind"]
    assert frame["kind"].tolist() == ["cases", "vertex", "edge"] and set(frame["project"]) == {"Sales"}
    assert list(tables_frame([], {}).columns) == ["project", "project_id", "table", "kind"]
    assert tables_frame([Table("x", "gone")], {})["project"].tolist() == [None]
    columns = [Column("caseid", "VARCHAR", 1, False), Column("duration", "BIGINT", 2)]
    assert columns_frame(columns).equals(to_frame(columns, Column))
    assert list(columns_frame([]).columns) == ["name", "data_type", "ordinal", "nullable"]


def test_session_refuses_a_variable_that_is_not_a_connection() -> None:
    session = Session()
    with pytest.raises(ConfigurationError, match="no Python variable of that name"):
        session.connection({}, variable="conn")
    with pytest.raises(ConfigurationError, match="expected a pm_notebook Connection, got a int"):
        session.connection({"conn": 3}, variable="conn")


def test_session_env_file_must_exist_and_set_something(tmp_path) -> None:
    _current.clear_current()
    with pytest.raises(ConfigurationError, match="no such file"):
        Session().connection({}, env_file=str(tmp_path / "missing.env"))
    empty = tmp_path / "empty.env"
    empty.write_text("OTHER=1\n")
    with pytest.raises(ConfigurationError, match="it sets none of PM_"):
        Session().connection({}, env_file=str(empty))
    assert _current.get_current() is None
