"""``{name}`` identifiers and ``:name`` bind parameters, without any server."""

from __future__ import annotations

import pytest

from pm_notebook._models import Table
from pm_notebook.magic.template import TemplateError, quote_identifier, render


def _render(sql, **ns):
    return render(sql, ns.__getitem__)


def test_identifier_is_quoted_and_value_is_bound():
    r = _render("SELECT * FROM {t} WHERE caseid = :cid", t="a-b", cid="x")
    assert r.sql == 'SELECT * FROM "a-b" WHERE caseid = ?'
    assert r.params == ["x"]
    assert r.param_names == ["cid"]
    assert r.identifiers == {"t": '"a-b"'}


def test_jupysql_double_braces_and_inner_spaces():
    assert _render("SELECT {{ c }} FROM {{t}}", c="duration", t="x").sql == 'SELECT "duration" FROM "x"'


def test_quotes_inside_identifier_are_doubled():
    assert quote_identifier('we"ird') == '"we""ird"'
    assert quote_identifier(("lookup", "p_variant_name")) == '"lookup"."p_variant_name"'
    assert quote_identifier(Table(name="p-1_vertex", project_id="p-1")) == '"p-1_vertex"'


def test_value_with_quotes_and_sql_keywords_is_never_pasted():
    evil = "x'; DROP TABLE cases; --"
    r = _render("SELECT 1 FROM t WHERE a = :evil AND b = :evil", evil=evil)
    assert r.sql == "SELECT 1 FROM t WHERE a = ? AND b = ?"
    assert r.params == [evil, evil]
    assert "DROP" not in r.sql


def test_placeholders_in_literals_identifiers_and_comments_are_left_alone():
    sql = (
        "SELECT ':a', \"{t}\", '{t}' -- :a {t}\n"
        "/* :a {t} */ , TIMESTAMP '2020-01-01 10:00:00', 'it''s :a' FROM {t} WHERE x = :a"
    )
    r = _render(sql, a=1, t="tbl")
    assert r.params == [1]
    assert r.sql.endswith('FROM "tbl" WHERE x = ?')
    assert r.sql.count("?") == 1
    assert "'it''s :a'" in r.sql and "-- :a {t}" in r.sql and "/* :a {t} */" in r.sql


def test_casts_and_jdbc_escapes_are_not_placeholders():
    r = _render("SELECT x::VARCHAR, {fn UCASE('a')}, {d '2020-01-01'} FROM t")
    assert r.sql == "SELECT x::VARCHAR, {fn UCASE('a')}, {d '2020-01-01'} FROM t"
    assert r.params == []


def test_list_values_expand_to_one_placeholder_each():
    r = _render("SELECT * FROM t WHERE caseid IN (:ids) AND n > :n", ids=("a", "b", "c"), n=3)
    assert r.sql == "SELECT * FROM t WHERE caseid IN (?, ?, ?) AND n > ?"
    assert r.params == ["a", "b", "c", 3]


def test_numpy_values_become_python_scalars():
    import numpy as np

    r = _render("SELECT :a, :b", a=np.int64(5), b=np.array([1.5, 2.5]))
    assert r.params == [5, 1.5, 2.5]
    assert all(type(v) in (int, float) for v in r.params)


def test_identifier_callback_wins_over_namespace():
    r = render(
        "SELECT * FROM {cases}",
        {"cases": "user-var"}.__getitem__,
        identifier=lambda n: '"p-1"' if n == "cases" else None,
    )
    assert r.sql == 'SELECT * FROM "p-1"'


@pytest.mark.parametrize(
    ("sql", "ns", "fragment", "position"),
    [
        ("SELECT * FROM {nope}", {}, "no Python variable named 'nope'", (1, 15)),
        ("SELECT 1\nWHERE a = :missing", {}, ":missing (line 2, column 11)", (2, 11)),
        ("SELECT * FROM {n}", {"n": 42}, "write :n instead", None),
        ("SELECT * FROM {n}", {"n": ""}, "empty string", None),
        ("SELECT :ids", {"ids": []}, "empty list", (1, 8)),
        ("SELECT 'open", {}, "Unterminated string literal", (1, 8)),
        ('SELECT "open', {}, "Unterminated quoted identifier", (1, 8)),
        ("SELECT ? , :a", {"a": 1}, "mixes ? placeholders", None),
    ],
)
def test_errors_name_the_problem(sql, ns, fragment, position):
    with pytest.raises(TemplateError) as info:
        render(sql, ns.__getitem__)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)
    if position:
        assert info.value.position == position


def test_positional_question_marks_alone_are_kept():
    r = _render("SELECT * FROM t WHERE a = ?")
    assert r.sql == "SELECT * FROM t WHERE a = ?" and r.params == []
