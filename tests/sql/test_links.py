"""The per-context connections of the Avatica and JDBC transports (``pm_notebook.sql._links``): the most
recently used :data:`MAX_CONTEXTS` stay open, the least recently used one is closed past that, on the class
itself and as the sandbox's broker sees it through both transports."""

from __future__ import annotations

from contextlib import closing

import pytest

from pm_notebook.sql import make_transport
from pm_notebook.sql._links import MAX_CONTEXTS, Links


def _zone(i: int) -> dict[str, str]:
    return {"sqlTimeZone": f"+0{i}:00"}


def test_the_least_recently_used_link_is_closed_past_the_cap() -> None:
    closed: list[str] = []
    links: Links[str] = Links(closed.append, cap=2)
    opened: list[str] = []

    def opener(name: str):
        return lambda: opened.append(name) or name

    assert links.get({}, opener("a")) == "a"
    assert links.get(_zone(1), opener("b")) == "b"
    assert links.get({}, opener("again")) == "a"  # reused, and now the most recently used
    assert links.get(_zone(2), opener("c")) == "c"
    assert (opened, closed) == (["a", "b", "c"], ["b"])
    links.forget("a")  # the server forgot it: dropped, not closed
    assert links.get({}, opener("d")) == "d"
    assert closed == ["b"]
    links.close_all()
    assert closed == ["b", "c", "d"]
    assert links.get(_zone(2), opener("e")) == "e"  # close_all forgot them all


@pytest.mark.parametrize("name", ["avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_a_transport_keeps_at_most_max_contexts_connections_on_the_broker(name, numbers_sql) -> None:
    avatica = numbers_sql.avatica
    before = avatica.connection_count(numbers_sql.client_id)
    with closing(make_transport(name, numbers_sql.target())) as transport:
        for i in range(MAX_CONTEXTS + 2):
            result = transport.execute("SELECT 1 AS x", context=_zone(i))
            result.close()
            expected = before + min(i + 1, MAX_CONTEXTS)
            assert avatica.connection_count(numbers_sql.client_id) == expected
    assert avatica.connection_count(numbers_sql.client_id) == before
