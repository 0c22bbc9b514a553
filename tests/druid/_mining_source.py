"""A :class:`pm_notebook.mining.Source` that records every statement an answer sends.

Its SQL goes to one connection's ``druid`` transport (the stand-in's, or the real broker's) with a base query
context under the one each statement asks for; its REST (the projects, a project's column mapping) goes to
the stand-in's demo workgroup, which holds the same projects as the broker. Every call is kept as a
:class:`Sent` (the statement, its parameters and the context that went with it), so a test can run the very
statements an answer sent again, on both engines, under another limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from pm_notebook import frames
from pm_notebook.sql.params import check_params


@dataclass(frozen=True)
class Sent:
    sql: str
    params: tuple[Any, ...]
    context: dict[str, Any] | None


class RecordingSource:
    def __init__(self, sql_conn: Any, rest_conn: Any, base: dict[str, Any] | None = None) -> None:
        self.sql_conn, self.rest_conn, self.base = sql_conn, rest_conn, dict(base or {})
        self.sent: list[Sent] = []

    def query(self, sql: str, params: Any = None, *, context: dict[str, Any] | None = None) -> pd.DataFrame:
        self.sent.append(Sent(sql, tuple(params or ()), None if context is None else dict(context)))
        return run(self.sql_conn, sql, params, {**self.base, **(context or {})})

    def query_chunks(self, sql: str, params: Any = None, *, chunk_rows: int = 100_000, context: Any = None):
        yield self.query(sql, params, context=context)

    def resolve_transport(self, name: str | None = None) -> str:
        return "druid"

    def project(self, project_id):
        return self.rest_conn.project(project_id)

    def projects(self):
        return self.rest_conn.projects()

    def column_names(self, project):
        return self.rest_conn.column_names(project)


def run(conn: Any, sql: str, params: Any, context: dict[str, Any] | None) -> pd.DataFrame:
    """One statement over *conn*'s ``druid`` transport (Druid's SQL API) with *context*, as a typed frame."""
    result = conn._sql().get("druid").execute(sql, check_params(list(params or ())), context=context or None)
    try:
        table = frames.to_table(frames.parse(result.columns, result.batches()))
    finally:
        result.close()
    return frames.to_pandas(table, transport="druid")
