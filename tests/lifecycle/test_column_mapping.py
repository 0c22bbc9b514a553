"""After an upload, ``conn.column_mapping(project)`` (``GET /pub/project/{id}/column-mapping``) and
``conn.mapping_infos(project)`` describe the columns by the names they had in the DataFrame."""

from __future__ import annotations

import pandas as pd

from pm_notebook.api import to_frame


def test_column_mapping_as_a_frame(conn, project):
    frame = pd.DataFrame(
        {
            "case": ["1", "1"],
            "activity": ["a", "b"],
            "start": pd.to_datetime(["2025-01-01", "2025-01-02"]),
            "who": ["x", "y"],
            "cost": [1.0, 2.0],
        }
    )
    conn.upload(project, frame)
    got = to_frame(conn.column_mapping(project).columns)
    assert got["index"].tolist() == [0, 1, 2, 3, 4]  # the DataFrame's column positions
    assert got.loc[got["kind"] == "dimension", "name"].tolist() == ["who"]
    assert got.loc[got["kind"] == "metric", "name"].tolist() == ["cost"]
    infos = {m.name: m for m in conn.mapping_infos(project)}
    assert sorted(infos) == ["cost", "who"]
    assert (infos["who"].category, infos["cost"].category) == ("dimension", "metric")
