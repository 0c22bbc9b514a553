"""Pure tests of the Druid → DuckDB translation and the guard (no server, no data)."""

from __future__ import annotations

import duckdb
import pytest

from pm_sandbox.sql.dialect import Catalog, joda_to_strftime, translate
from pm_sandbox.sql.errors import SqlError

CATALOG = Catalog(
    tables={"p-1": {"__time": "TIMESTAMP_MS", "caseid": "VARCHAR", "tags": "VARCHAR[]", "enddate": "BIGINT"}},
    lookups=frozenset({"p-1_names"}),
)


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA druid; CREATE SCHEMA lookup")
    con.execute(
        'CREATE TABLE druid."p-1" AS SELECT * FROM (VALUES '
        "(TIMESTAMP '2025-01-06 10:30:00', 'a', ['x', 'y'], 1736160000000),"
        "(TIMESTAMP '2025-01-12 23:59:59.5', 'b', ['y'], 1736726400000)) "
        "AS t(__time, caseid, tags, enddate)"
    )
    con.execute("CREATE TABLE lookup.\"p-1_names\" AS SELECT * FROM (VALUES ('a', 'Alpha')) AS t(k, v)")
    yield con
    con.close()


def run(db, sql, params=()):
    t = translate(sql, CATALOG)
    return db.execute(t.sql, t.bind(list(params))).fetchall()


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("SELECT TIME_FLOOR(__time, 'P1W') FROM \"p-1\" GROUP BY 1 ORDER BY 1", "2025-01-06 00:00:00"),
        ("SELECT TIME_FLOOR(__time, 'PT1H') FROM \"p-1\" GROUP BY 1 ORDER BY 1", "2025-01-06 10:00:00"),
        # local midnight of a half-hour offset zone (16:00 there)
        (
            "SELECT TIME_FLOOR(__time, 'P1D', NULL, '+05:30') FROM \"p-1\" GROUP BY 1 ORDER BY 1",
            "2025-01-05 18:30:00",
        ),
        ("SELECT TIME_CEIL(__time, 'P1D') FROM \"p-1\" GROUP BY 1 ORDER BY 1", "2025-01-07 00:00:00"),
        ("SELECT TIME_SHIFT(__time, 'P1M', -1) FROM \"p-1\" GROUP BY 1 ORDER BY 1", "2024-12-06 10:30:00"),
        ("SELECT TIME_EXTRACT(__time, 'DOW') FROM \"p-1\" GROUP BY 1 ORDER BY 1", "1"),
        ('SELECT EXTRACT(DOW FROM __time) FROM "p-1" GROUP BY 1 ORDER BY 1 DESC', "7"),
        (
            "SELECT TIME_FORMAT(__time, 'dd/MM/yyyy HH:mm') FROM \"p-1\" GROUP BY 1 ORDER BY 1",
            "06/01/2025 10:30",
        ),
        ('SELECT TIME_FORMAT(__time) FROM "p-1" GROUP BY 1 ORDER BY 1 DESC', "2025-01-12T23:59:59.500Z"),
        ("SELECT TIME_PARSE('2025-01-06T10:30:00.000Z') FROM \"p-1\" LIMIT 1", "2025-01-06 10:30:00"),
        ('SELECT MILLIS_TO_TIMESTAMP(enddate) FROM "p-1" GROUP BY 1 ORDER BY 1', "2025-01-06 10:40:00"),
        (
            'SELECT TIMESTAMPDIFF(DAY, __time, MILLIS_TO_TIMESTAMP(enddate)) FROM "p-1" '
            "GROUP BY 1 ORDER BY 1",
            "0",
        ),
        ('SELECT TIMESTAMPADD(HOUR, 2, __time) FROM "p-1" GROUP BY 1 ORDER BY 1', "2025-01-06 12:30:00"),
        ('SELECT FLOOR(__time TO MONTH) FROM "p-1" LIMIT 1', "2025-01-01 00:00:00"),
        ("SELECT LOOKUP(caseid, 'p-1_names', 'none') FROM \"p-1\" GROUP BY 1 ORDER BY 1", "Alpha"),
        ("SELECT COUNT(*) FROM \"p-1\" WHERE tags = 'y'", "2"),
        ("SELECT COUNT(*) FROM \"p-1\" WHERE tags <> 'x'", "1"),
        ("SELECT MV_TO_STRING(tags, '|') FROM \"p-1\" GROUP BY 1 ORDER BY 1 DESC", "y"),
        ('SELECT APPROX_COUNT_DISTINCT(caseid) FROM "p-1"', "2"),
        ('SELECT 30 * 86400000 * 1000 FROM "p-1" LIMIT 1', "2592000000000"),
    ],
)
def test_translation_runs_on_duckdb(db, sql, want):
    assert str(run(db, sql)[0][0]) == want


def test_parameters_keep_their_order_through_rewrites(db):
    # TIMESTAMPADD moves its count after the timestamp: $p1 must still bind to the first ?.
    rows = run(db, 'SELECT TIMESTAMPADD(DAY, ?, __time) FROM "p-1" WHERE caseid = ?', [1, "a"])
    assert str(rows[0][0]) == "2025-01-07 10:30:00"


def test_unnamed_expressions_are_named_like_druid():
    assert 'AS "EXPR$1"' in translate('SELECT caseid, COUNT(*) FROM "p-1" GROUP BY 1', CATALOG).sql


def test_explain_and_param_types():
    t = translate('EXPLAIN PLAN FOR SELECT caseid FROM "p-1" WHERE caseid = ? LIMIT ?', CATALOG)
    assert t.explain and t.tables == ("p-1",) and t.param_types == ("VARCHAR", "BIGINT")


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("SELECT TIME_FLOOR(__time, 'P1X') FROM \"p-1\"", "ISO-8601 period"),
        ('SELECT DS_RANK(DS_QUANTILES_SKETCH(enddate), 1) FROM "p-1"', "DS_RANK"),
        ("SELECT LOOKUP(caseid, 'nope') FROM \"p-1\"", "Lookup [nope] not found"),
        ('SELECT TIMESTAMPDIFF(FORTNIGHT, __time, __time) FROM "p-1"', "unknown time unit"),
        ('SELECT * FROM "p-1" WHERE caseid = :name', "unexpected token [:]"),
        ("", "Empty SQL"),
        ("EXPLAIN SELECT 1", "EXPLAIN PLAN FOR"),
    ],
)
def test_unservable_constructs_are_named(sql, needle):
    with pytest.raises(SqlError) as info:
        translate(sql, CATALOG)
    assert needle in info.value.message


def test_joda_patterns():
    assert joda_to_strftime("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'") == "%Y-%m-%dT%H:%M:%S.%gZ"
    assert joda_to_strftime("EEE d MMM yy, h a") == "%a %-d %b %y, %-I %p"
    with pytest.raises(SqlError, match="'G'"):
        joda_to_strftime("G yyyy")


# --- GROUP BY on a multi-value column, integer division ------------------------------------------

MV_CATALOG = Catalog(
    tables={
        "p-2": {"caseid": "VARCHAR", "tags": "VARCHAR[]", "n": "BIGINT", "d": "DOUBLE"},
        "p-3": {"caseid": "VARCHAR", "labels": "VARCHAR[]"},
    }
)


@pytest.fixture(scope="module")
def mvdb():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA druid")
    con.execute(
        'CREATE TABLE druid."p-2" AS SELECT * FROM (VALUES '
        "('a', ['x', 'y'], 7, 1.5), ('b', ['y'], -7, 2.0), ('c', [], 3, 1.0), ('d', NULL, 4, 1.0)) "
        "AS t(caseid, tags, n, d)"
    )
    con.execute(
        "CREATE TABLE druid.\"p-3\" AS SELECT * FROM (VALUES ('a', ['l1', 'l2']), ('b', ['l1'])) "
        "AS t(caseid, labels)"
    )
    yield con
    con.close()


def mvrun(db, sql):
    return db.execute(translate(sql, MV_CATALOG).sql).fetchall()


def _unnested(db, select: str, tail: str) -> list:
    """Reference: *select* over ``p-2`` with ``tags`` unnested the Druid way (empty/NULL → one NULL)."""
    return db.execute(
        f"SELECT {select} FROM (SELECT caseid, n, d, unnest(coalesce(nullif(tags, []), [NULL])) AS tag "
        f'FROM druid."p-2") AS u {tail}'
    ).fetchall()


@pytest.mark.parametrize(
    ("sql", "select", "tail"),
    [
        (
            'SELECT tags, COUNT(*) FROM "p-2" GROUP BY tags ORDER BY 1',
            "tag, COUNT(*)",
            "GROUP BY tag ORDER BY 1 NULLS FIRST",
        ),
        (
            'SELECT tags, COUNT(*) FROM "p-2" GROUP BY 1 ORDER BY 1',
            "tag, COUNT(*)",
            "GROUP BY tag ORDER BY 1 NULLS FIRST",
        ),
        (
            'SELECT tags AS t, COUNT(*) AS c FROM "p-2" GROUP BY t ORDER BY c DESC, t',
            "tag, COUNT(*)",
            "GROUP BY tag ORDER BY 2 DESC, 1 NULLS FIRST",
        ),
        (
            'SELECT x.tags, SUM(x.n) FROM "p-2" AS x GROUP BY x.tags ORDER BY x.tags',
            "tag, SUM(n)",
            "GROUP BY tag ORDER BY 1 NULLS FIRST",
        ),
        (
            "SELECT tags, COUNT(*) FROM \"p-2\" WHERE tags = 'x' GROUP BY 1 ORDER BY 1",
            "tag, COUNT(*)",
            "WHERE caseid = 'a' GROUP BY tag ORDER BY 1",
        ),
        (
            "SELECT tags, COUNT(*) FROM \"p-2\" GROUP BY 1 HAVING tags <> 'x' ORDER BY 1",
            "tag, COUNT(*)",
            "GROUP BY tag HAVING tag <> 'x' ORDER BY 1",
        ),
        (
            'SELECT caseid, tags FROM "p-2" GROUP BY caseid, tags ORDER BY 1, 2',
            "caseid, tag",
            "GROUP BY caseid, tag ORDER BY 1, 2 NULLS FIRST",
        ),
    ],
)
def test_group_by_multi_value_unnests(mvdb, sql, select, tail):
    want = _unnested(mvdb, select, tail)
    assert want
    assert mvrun(mvdb, sql) == want


def test_empty_and_null_arrays_make_one_null_group(mvdb):
    assert (None, 2) in mvrun(mvdb, 'SELECT tags, COUNT(*) FROM "p-2" GROUP BY 1')


def test_group_by_two_multi_value_columns_is_a_cartesian_product(mvdb):
    rows = mvrun(
        mvdb,
        'SELECT a.tags, b.labels, COUNT(*) FROM "p-2" a JOIN "p-3" b ON a.caseid = b.caseid '
        "GROUP BY 1, 2 ORDER BY 1, 2",
    )
    assert rows == [("x", "l1", 1), ("x", "l2", 1), ("y", "l1", 2), ("y", "l2", 1)]


def test_group_by_whole_array_functions_is_not_unnested(mvdb):
    rows = mvrun(mvdb, "SELECT MV_TO_STRING(tags, ','), COUNT(*) FROM \"p-2\" GROUP BY 1 ORDER BY 1")
    assert ("x,y", 1) in rows and ("y", 1) in rows


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ('SELECT UPPER(tags), COUNT(*) FROM "p-2" GROUP BY 1', ["UPPER", "tags"]),
        ('SELECT tags, COUNT(*) FROM "p-2" GROUP BY ROLLUP (tags)', ["ROLLUP", "tags"]),
        ('SELECT tags, COUNT(*) FROM "p-2", "p-3" GROUP BY tags, labels', []),
    ],
)
def test_group_by_multi_value_constructs_not_served_are_named(mvdb, sql, words):
    try:
        t = translate(sql, MV_CATALOG)
    except SqlError as e:
        assert all(w in str(e) for w in words), str(e)
    else:  # unqualified columns of a join are resolved through the catalog
        assert not words
        rows = mvdb.execute(t.sql).fetchall()
        assert ("x", 2) in rows and ("x", 1) in rows


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("SELECT 7 / 2", [(3,)]),
        ("SELECT -7 / 2", [(-3,)]),
        ("SELECT 7 / 2.0", [(3.5,)]),
        (
            'SELECT caseid, n / 2 FROM "p-2" GROUP BY 1, 2 ORDER BY caseid',
            [("a", 3), ("b", -3), ("c", 1), ("d", 2)],
        ),
        ('SELECT SUM(n) / COUNT(*), COUNT(*) / 3, MAX(n) / 2 FROM "p-2"', [(1, 1, 3)]),
        ("SELECT AVG(n) / 2, d / 2 FROM \"p-2\" WHERE caseid = 'a' GROUP BY d", [(3.5, 0.75)]),
        ("SELECT (n + 1) / 2, CAST(n AS BIGINT) / 3 FROM \"p-2\" WHERE caseid = 'a'", [(4, 2)]),
        ('SELECT SUM(d) / 2 FROM "p-2"', [(2.75,)]),
        ('SELECT x / 2 FROM (SELECT AVG(n) AS x FROM "p-2")', [(0.875,)]),
    ],
)
def test_integer_division_truncates_like_druid(mvdb, sql, want):
    assert mvrun(mvdb, sql) == want


def test_select_distinct_on_a_multi_value_column_unnests(mvdb):
    got = mvrun(mvdb, 'SELECT DISTINCT tags FROM "p-2" ORDER BY 1')
    assert got == _unnested(mvdb, "DISTINCT tag", "ORDER BY 1 NULLS FIRST")


def test_subquery_and_cte_sources_are_unnested(mvdb):
    want = _unnested(mvdb, "tag, COUNT(*)", "GROUP BY 1 ORDER BY 1 NULLS FIRST")
    assert mvrun(mvdb, 'SELECT tags, COUNT(*) FROM (SELECT * FROM "p-2") GROUP BY 1 ORDER BY 1') == want
    cte = 'WITH c AS (SELECT * FROM "p-2") SELECT tags, COUNT(*) FROM c GROUP BY 1 ORDER BY 1'
    assert mvrun(mvdb, cte) == want


def test_the_function_table_is_data_with_a_doc_page_per_entry():
    from pm_sandbox.sql.access import _FORBIDDEN_FUNCTIONS
    from pm_sandbox.sql.dialect import FUNCTIONS
    from pm_sandbox.sql.dialect.functions import SAME, UNSUPPORTED
    from pm_sandbox.sql.dialect.templates import tmpl

    assert len(FUNCTIONS) > 150
    for name, entry in FUNCTIONS.items():
        assert name == entry.name == name.upper()
        assert entry.kind in ("scalar", "aggregate", "window")
        assert entry.doc.startswith("sql-")
        assert name.lower() not in _FORBIDDEN_FUNCTIONS
        if isinstance(entry.rewrite, str) and entry.rewrite not in (SAME, UNSUPPORTED, "lookup"):
            tmpl(entry.rewrite)  # every one-line template is valid DuckDB SQL


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "SELECT \"current_setting\"('memory_limit')",
            "No match found for function signature current_setting",
        ),
        ('SELECT main."version"()', "No match found for function signature main.version()"),
        ('SELECT "Abs"(1)', "No match found for function signature Abs(<NUMERIC>)"),
        ('SELECT U&"\\0076ersion"()', "Received an unexpected token [&]"),
        ('SELECT "ABS"(-1)', None),
        ("SELECT abs(-1), Abs(-2)", None),
    ],
)
def test_function_names_resolve_as_druid_resolves_them(sql, message):
    if message is None:
        assert translate(sql, CATALOG).sql.lower().count("abs(") >= 1
        return
    with pytest.raises(SqlError) as info:
        translate(sql, CATALOG)
    assert message in info.value.message and "(line [1], column [" in info.value.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * 1500 + "1" + ")" * 1500,
        "SELECT * FROM (" * 3000 + 'SELECT caseid FROM "p-1"' + ")" * 3000,
        "SELECT " + "CASE WHEN 1 = 1 THEN " * 5000 + "1" + " END" * 5000,
    ],
    ids=["parentheses", "subqueries", "case"],
)
def test_deep_nesting_is_a_druid_shaped_refusal(sql):
    with pytest.raises(SqlError) as info:
        translate(sql, CATALOG)
    assert "nested too deeply" in info.value.message
    assert info.value.http_status == 400 and info.value.druid_body()["errorCode"] == "invalidInput"


def test_a_quantile_of_a_sketch_column_merges_the_sketches():
    """Druid's APPROX_QUANTILE_DS and DS_QUANTILES_SKETCH take a numeric expression or a quantiles sketch
    column (sql-aggregations): an outer query over per-group sketches merges them."""
    catalog = Catalog(tables={"p-9": {"caseid": "VARCHAR", "activity": "VARCHAR", "enddate": "BIGINT"}})
    con = duckdb.connect()
    con.execute("CREATE SCHEMA druid")
    con.execute(
        'CREATE TABLE druid."p-9" AS SELECT (i % 3)::VARCHAR AS caseid, (i % 7)::VARCHAR AS activity, '
        "i * 10 AS enddate FROM range(100) AS r(i)"
    )
    per_group = (
        'SELECT caseid, activity, DS_QUANTILES_SKETCH(enddate) AS "sk" FROM "p-9" GROUP BY caseid, activity'
    )
    merged = translate(
        f'SELECT caseid, APPROX_QUANTILE_DS("sk", 0.5), DS_GET_QUANTILE(DS_QUANTILES_SKETCH("sk"), 0.9) '
        f"FROM ({per_group}) GROUP BY caseid ORDER BY caseid",
        catalog,
    )
    direct = translate(
        'SELECT caseid, APPROX_QUANTILE_DS(enddate, 0.5), APPROX_QUANTILE_DS(enddate, 0.9) FROM "p-9" '
        "GROUP BY caseid ORDER BY caseid",
        catalog,
    )
    assert con.execute(merged.sql).fetchall() == con.execute(direct.sql).fetchall()
    assert [r[1] for r in con.execute(direct.sql).fetchall()] == [480.0, 490.0, 500.0]
    con.close()


@pytest.mark.parametrize("negated", [False, True])
@pytest.mark.parametrize("with_null", [False, True])
def test_a_long_in_list_answers_as_the_same_short_list(db, negated, with_null):
    """Past HASH_IN_FROM values an IN list runs as a hash (anti-)join in DuckDB: the same rows as the list
    written out, NULLs included (a NULL in the list or a NULL on the left makes the test NULL)."""
    from pm_sandbox.sql.dialect.pipeline import HASH_IN_FROM

    values = ["a"] + [f"z{i}" for i in range(HASH_IN_FROM + 5)] + ([None] if with_null else [])
    op = "NOT IN" if negated else "IN"
    long_sql = f'SELECT caseid FROM "p-1" WHERE caseid {op} ({", ".join("?" * len(values))})'
    translated = translate(long_sql, CATALOG)
    assert "UNNEST" in translated.sql and translated.inlined == ()  # a value list is no inlined subquery
    assert run(db, long_sql, values) == run(
        db,
        f'SELECT caseid FROM "p-1" WHERE caseid {op} (?, ?)',
        ["a", None] if with_null else ["a", "z0"],
    )
    want = [("a",)] if not negated else ([] if with_null else [("b",)])
    assert sorted(run(db, long_sql, values)) == want
    literals = ", ".join(["'a'"] + [f"'z{i}'" for i in range(HASH_IN_FROM + 5)])
    assert run(db, f"SELECT NULL {op} ({literals}), 'a' {op} ({literals}) FROM \"p-1\" LIMIT 1") == [
        (None, not negated)
    ]
