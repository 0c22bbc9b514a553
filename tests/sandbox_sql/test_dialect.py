"""Pure tests of the Druid → DuckDB translation and the guard (no server, no data)."""

from __future__ import annotations

import duckdb
import pytest

from pm_notebook.sandbox.dialect import Catalog, joda_to_strftime, translate
from pm_notebook.sandbox.sqlerrors import SqlError

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
        ("SELECT TIME_FLOOR(__time, 'P1W') FROM \"p-1\" ORDER BY 1", "2025-01-06 00:00:00"),
        ("SELECT TIME_FLOOR(__time, 'PT1H') FROM \"p-1\" ORDER BY 1", "2025-01-06 10:00:00"),
        ("SELECT TIME_CEIL(__time, 'P1D') FROM \"p-1\" ORDER BY 1", "2025-01-07 00:00:00"),
        ("SELECT TIME_SHIFT(__time, 'P1M', -1) FROM \"p-1\" ORDER BY 1", "2024-12-06 10:30:00"),
        ("SELECT TIME_EXTRACT(__time, 'DOW') FROM \"p-1\" ORDER BY 1", "1"),
        ('SELECT EXTRACT(DOW FROM __time) FROM "p-1" ORDER BY 1 DESC', "7"),
        ("SELECT TIME_FORMAT(__time, 'dd/MM/yyyy HH:mm') FROM \"p-1\" ORDER BY 1", "06/01/2025 10:30"),
        ('SELECT TIME_FORMAT(__time) FROM "p-1" ORDER BY 1 DESC', "2025-01-12T23:59:59.500Z"),
        ("SELECT TIME_PARSE('2025-01-06T10:30:00.000Z') FROM \"p-1\" LIMIT 1", "2025-01-06 10:30:00"),
        ('SELECT MILLIS_TO_TIMESTAMP(enddate) FROM "p-1" ORDER BY 1', "2025-01-06 10:40:00"),
        ('SELECT TIMESTAMPDIFF(DAY, __time, MILLIS_TO_TIMESTAMP(enddate)) FROM "p-1" ORDER BY 1', "0"),
        ('SELECT TIMESTAMPADD(HOUR, 2, __time) FROM "p-1" ORDER BY 1', "2025-01-06 12:30:00"),
        ('SELECT FLOOR(__time TO MONTH) FROM "p-1" LIMIT 1', "2025-01-01 00:00:00"),
        ("SELECT LOOKUP(caseid, 'p-1_names', 'none') FROM \"p-1\" ORDER BY 1", "Alpha"),
        ("SELECT COUNT(*) FROM \"p-1\" WHERE tags = 'y'", "2"),
        ("SELECT COUNT(*) FROM \"p-1\" WHERE tags <> 'x'", "1"),
        ("SELECT MV_TO_STRING(tags, '|') FROM \"p-1\" ORDER BY 1 DESC", "y"),
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
        ("SELECT TIME_FLOOR(__time, 'PT1H', NULL, 'Europe/Paris') FROM \"p-1\"", "Europe/Paris"),
        ('SELECT DS_THETA(caseid) FROM "p-1"', "DS_THETA"),
        ("SELECT LOOKUP(caseid, 'nope') FROM \"p-1\"", "Lookup 'nope' not found"),
        ('SELECT TIMESTAMPDIFF(FORTNIGHT, __time, __time) FROM "p-1"', "unknown time unit"),
        ('SELECT * FROM "p-1" WHERE caseid = :name', "Named parameter"),
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
