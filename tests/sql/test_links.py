"""The per-context connections of the Avatica and JDBC transports (``pm_notebook.sql._links``): the most
recently used :data:`MAX_CONTEXTS` stay open, the least recently used one is closed past that, on the class
itself and as the sandbox's broker sees it through both transports."""

from __future__ import annotations

from contextlib import closing

import pytest

from pm_notebook.sql import make_transport
from pm_notebook.sql._links import MAX_CONTEXTS, Links, Seats


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


class _Link:
    """A stand-in server connection with the statement bookkeeping of the real ones."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seats = Seats()

    def __repr__(self) -> str:
        return self.name


def test_a_link_with_an_open_result_is_neither_shared_nor_evicted() -> None:
    closed: list[str] = []
    links: Links[_Link] = Links(lambda link: closed.append(link.name), cap=1)
    opened = iter(["a", "b", "c", "d"])

    def opener() -> _Link:
        return _Link(next(opened))

    a, seat, shared = links.take({}, opener, reusable=True)
    assert (a.name, seat, shared) == ("a", "new-shared", None)
    a.seats.shared = 7  # the shared statement, once made
    b, seat, _ = links.take({}, opener, reusable=True)  # a's result is still open: another connection
    assert (b.name, seat, closed) == ("b", "new-shared", [])  # over the cap of 1, but busy: kept
    assert links.give_back(a, "new-shared") is False
    again, seat, shared = links.take({}, opener, reusable=True)
    assert (again, seat, shared) == (a, "shared", 7)  # idle again: reused with its shared statement
    assert links.give_back(a, "shared", shared_lost=True) is False  # a cancel closed the shared statement
    again, seat, shared = links.take({}, opener, reusable=False)
    assert (again, seat, shared) == (a, "owned", None)  # a parameterised statement is prepared
    links.give_back(a, "owned")
    assert links.take({}, opener, reusable=True)[1:] == ("new-shared", None)  # a is the most recently used
    assert links.forget(b) is False  # b's result is open: closed only after it
    assert links.give_back(b, "new-shared") is True
    links.give_back(a, "new-shared")
    c, _, _ = links.take(_zone(1), opener, reusable=True)  # a is idle: evicted past the cap
    assert (c.name, closed) == ("c", ["a"])


@pytest.mark.parametrize("name", ["avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)])
def test_a_statement_started_while_a_result_is_open_gets_its_own_connection(name, numbers_sql) -> None:
    avatica = numbers_sql.avatica
    before = avatica.connection_count(numbers_sql.client_id)
    sql = "SELECT n FROM numbers WHERE n < ?"
    with closing(make_transport(name, numbers_sql.target())) as transport:
        first = transport.execute(sql, [20_000], batch_rows=1000)
        batches = first.batches()
        got = [next(batches)]
        second = transport.execute("SELECT COUNT(*) AS c FROM numbers")
        assert [b.num_rows for b in second.batches()] == [1]
        assert avatica.connection_count(numbers_sql.client_id) == before + 2
        got.extend(batches)  # the first result is whole
        assert sum(b.num_rows for b in got) == 20_000
        for _ in range(3):  # both connections idle now: reused, none opened
            result = transport.execute("SELECT 1 AS x")
            list(result.batches())
        assert avatica.connection_count(numbers_sql.client_id) == before + 2
    assert avatica.connection_count(numbers_sql.client_id) == before
