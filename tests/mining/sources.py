"""A Source for the mining tests that records the statements a log sends (:class:`Counting`)."""

from __future__ import annotations


class Counting:
    """A Source that records the SQL of every statement a log sends, and sends it through the connection."""

    def __init__(self, conn) -> None:
        self.conn, self.sent = conn, []

    def query(self, sql, params=None, **kw):
        self.sent.append(sql)
        return self.conn.query(sql, params, **kw)

    def query_chunks(self, sql, params=None, **kw):
        yield self.query(sql, params)

    def resolve_transport(self, name=None):
        return self.conn.resolve_transport(name)

    def projects(self):
        return self.conn.projects()

    def column_names(self, project):
        return self.conn.column_names(project)
