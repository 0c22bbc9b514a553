"""Dictionary-encoded string columns (DuckDB ENUMs in the store) are invisible to clients.

The store keeps low-cardinality VARCHAR columns of Druid tables as ENUMs with sorted values. Each query
here runs through :class:`SqlEngine` on two stores built from the same seed: ``encoded`` (the default) and
``plain`` (encoding switched off, every string a VARCHAR as before). Result columns, Arrow tables,
INFORMATION_SCHEMA and error messages must be identical; the last tests go through the sandbox's HTTP API.
"""

from __future__ import annotations

import csv
import io

import pyarrow as pa
import pytest

from pm_sandbox.data import store as store_module
from pm_sandbox.sql.engine import SqlEngine
from pm_sandbox.sql.errors import SqlError


@pytest.fixture(scope="module")
def stores(small_store):
    """(encoded, plain): the small store, and the same data (same seed and size) without dictionaries."""
    demo = small_store.by_key("demo")
    cases = demo.projects[0].rows[demo.projects[0].id]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "DICTIONARY_MAX_VALUES", 0)
        plain = store_module.build_store(cases=cases)
    yield small_store, plain
    plain.close()


@pytest.fixture(scope="module")
def engines(stores):
    encoded, plain = stores
    return SqlEngine(encoded), SqlEngine(plain)


@pytest.fixture(scope="module")
def client_id(stores):
    return stores[0].by_key("demo").id


@pytest.fixture(scope="module")
def t(stores, tables):
    """The demo's first project's table names (project ids depend on the seed only, not on the size)."""
    assert stores[0].by_key("demo").projects[0].id == stores[1].by_key("demo").projects[0].id == tables.pid
    return tables


def _enum_columns(store, client_id: str) -> dict[tuple[str, str, str], list[str]]:
    """``(schema, table, column)`` → the ENUM's values, for every ENUM column of the workgroup's database."""
    cur = store.database(client_id).cursor()
    try:
        rows = cur.execute(
            "SELECT schema_name, table_name, column_name FROM duckdb_columns() WHERE data_type LIKE 'ENUM(%'"
        ).fetchall()
        return {
            (schema, table, column): cur.execute(
                f'SELECT enum_range("{column}") FROM {schema}."{table}" LIMIT 1'
            ).fetchone()[0]
            for schema, table, column in rows
        }
    finally:
        cur.close()


def _both(engines, client_id: str, sql: str, params: list | None = None):
    encoded, plain = (e.execute(client_id, sql, list(params or [])) for e in engines)
    assert encoded.columns == plain.columns
    assert encoded.table.schema == plain.table.schema
    return encoded, plain


def test_the_encoded_store_stores_low_cardinality_strings_as_sorted_enums(stores, client_id, t):
    encoded, plain = stores
    enums = _enum_columns(encoded, client_id)
    assert _enum_columns(plain, client_id) == {}
    vertex = t.vertex.strip('"')
    assert ("druid", vertex, "vertex_name") in enums
    assert ("druid", vertex, "caseid") in enums  # ~9 events per case: repeated enough
    assert ("druid", t.pid, "caseid") not in enums  # unique per case: stays a VARCHAR
    assert ("druid", t.pid, "processkey") in enums
    assert not any(schema == "lookup" for schema, _, _ in enums)
    for values in enums.values():
        assert values == sorted(values)  # code point order = DuckDB's VARCHAR order


def test_a_project_s_tables_share_the_dictionary_of_a_kind_of_value(stores, client_id, t):
    """An activity and a transition's source and target share one ENUM type (joining them compares small
    integers); so do same-named columns of a project's tables."""
    encoded, _ = stores
    enums = _enum_columns(encoded, client_id)
    vertex, edge = t.vertex.strip('"'), t.edge.strip('"')
    activities = enums[("druid", vertex, "vertex_name")]
    assert {"START", "END"} <= set(activities)  # the union of the three columns' values
    assert enums[("druid", edge, "source_vertex_name")] == activities
    assert enums[("druid", edge, "destination_vertex_name")] == activities
    assert enums[("druid", edge, "processkey")] == enums[("druid", vertex, "processkey")]
    cur = encoded.database(client_id).cursor()
    try:
        names = {
            row[0]
            for row in cur.execute(
                "SELECT type_name FROM duckdb_types() WHERE schema_name = 'pm_dict'"
            ).fetchall()
        }
    finally:
        cur.close()
    assert f"druid.{vertex}.vertex_name" in names and f"druid.{edge}.source_vertex_name" not in names


def test_the_small_aggregate_returns_the_same_rows(engines, client_id, t):
    sql = t.fmt(
        "SELECT vertex_name, COUNT(*) AS n, AVG(duration) AS mean_ms FROM {v} "
        "GROUP BY vertex_name ORDER BY n DESC, vertex_name LIMIT 10"
    )
    encoded, plain = _both(engines, client_id, sql)
    assert encoded.table.num_rows == 10
    assert encoded.table.schema.field("vertex_name").type == pa.string()
    assert encoded.table.equals(plain.table)


QUERIES = [
    (
        "eq_member",
        "SELECT caseid, vertex_name, __time FROM {v} WHERE vertex_name = 'Receive Goods' GROUP BY 1, 2, 3 "
        "ORDER BY 1, 3",
    ),
    ("eq_not_member", "SELECT caseid FROM {v} WHERE vertex_name = 'not an activity'"),
    ("neq_not_member", "SELECT COUNT(*) FROM {v} WHERE vertex_name <> 'not an activity'"),
    ("lt_not_member", "SELECT vertex_name, COUNT(*) FROM {v} WHERE vertex_name < 'Cr' GROUP BY 1 ORDER BY 1"),
    (
        "ge_member",
        "SELECT vertex_name, COUNT(*) FROM {v} WHERE vertex_name >= 'Receive Goods' GROUP BY 1 ORDER BY 1",
    ),
    ("between", "SELECT DISTINCT vertex_name FROM {v} WHERE vertex_name BETWEEN 'B' AND 'Rz' ORDER BY 1"),
    (
        "order_desc",
        "SELECT vertex_name, caseid, __time FROM {v} GROUP BY 1, 2, 3 "
        "ORDER BY vertex_name DESC, caseid, __time LIMIT 40",
    ),
    ("order_case_desc", "SELECT DISTINCT caseid FROM {v} ORDER BY caseid DESC LIMIT 15"),
    ("like", "SELECT DISTINCT vertex_name FROM {v} WHERE vertex_name LIKE '%Purchase%' ORDER BY 1"),
    ("not_like", "SELECT COUNT(*) FROM {v} WHERE vertex_name NOT LIKE 'Create%'"),
    ("upper_like", "SELECT COUNT(*) FROM {v} WHERE UPPER(vertex_name) LIKE '%ORDER%'"),
    (
        "in_list",
        "SELECT vertex_name, COUNT(*) FROM {v} WHERE vertex_name IN ('Receive Goods', 'nope') GROUP BY 1",
    ),
    ("not_in_list", "SELECT COUNT(*) FROM {v} WHERE vertex_name NOT IN ('Receive Goods', 'nope')"),
    (
        "in_subquery",
        "SELECT COUNT(*) FROM {v} WHERE vertex_name IN "
        "(SELECT destination_vertex_name FROM {e} WHERE source_vertex_name = 'Receive Goods')",
    ),
    (
        "join_enum_varchar",
        "SELECT c.caseid, c.duration, COUNT(*) AS events FROM {v} AS v JOIN {c} AS c ON v.caseid = c.caseid "
        "GROUP BY 1, 2 ORDER BY 1 LIMIT 20",
    ),
    (
        "join_two_enum_types",
        "SELECT v.vertex_name, COUNT(*) FROM {v} AS v JOIN {e} AS e "
        "ON v.caseid = e.caseid AND v.vertex_name = e.source_vertex_name GROUP BY 1 ORDER BY 1",
    ),
    (
        "union_all_enums",
        "SELECT name, COUNT(*) FROM (SELECT vertex_name AS name FROM {v} UNION ALL "
        "SELECT source_vertex_name FROM {e}) GROUP BY 1 ORDER BY 1",
    ),
    (
        "union_literal",
        "SELECT vertex_name FROM (SELECT vertex_name FROM {v} UNION ALL SELECT 'zz not a member') "
        "GROUP BY 1 ORDER BY 1",
    ),
    (
        "case",
        "SELECT CASE WHEN duration > 3600000 THEN vertex_name ELSE 'short' END AS k, COUNT(*) "
        "FROM {v} GROUP BY 1 ORDER BY 1",
    ),
    (
        "case_enum_only",
        "SELECT __time, CASE WHEN duration > 0 THEN vertex_name END AS k FROM {v} GROUP BY 1, 2 "
        "ORDER BY __time, k LIMIT 30",
    ),
    (
        "coalesce",
        "SELECT COALESCE(concurrent_vertices, 'none') AS k, COUNT(*) FROM {v} GROUP BY 1 ORDER BY 1",
    ),
    ("nullif", "SELECT NULLIF(vertex_name, 'Receive Goods') AS k, COUNT(*) FROM {v} GROUP BY 1 ORDER BY 1"),
    ("min_max", "SELECT caseid, MIN(vertex_name), MAX(vertex_name) FROM {v} GROUP BY 1 ORDER BY 1"),
    (
        "earliest_latest",
        "SELECT caseid, EARLIEST(vertex_name), LATEST(vertex_name) FROM {v} GROUP BY 1 ORDER BY 1",
    ),
    ("count_distinct", "SELECT COUNT(DISTINCT vertex_name), APPROX_COUNT_DISTINCT(caseid) FROM {v}"),
    ("having", "SELECT vertex_name, COUNT(*) AS n FROM {v} GROUP BY 1 HAVING vertex_name > 'M' ORDER BY 1"),
    (
        "string_functions",
        "SELECT vertex_name || '!', CHAR_LENGTH(vertex_name), SUBSTRING(vertex_name, 1, 4), "
        "CONCAT(vertex_name, '-', caseid), LOWER(vertex_name), REPLACE(vertex_name, ' ', '_'), "
        "CONTAINS_STRING(vertex_name, 'Order'), __time FROM {v} GROUP BY vertex_name, caseid, __time "
        "ORDER BY __time, 1 LIMIT 30",
    ),
    ("lookup", "SELECT caseid, LOOKUP(caseid, '{ex}') AS why FROM {v} GROUP BY 1, 2 ORDER BY 1"),
    ("cases_group", "SELECT processkey, COUNT(*), SUM(duration) FROM {c} GROUP BY 1 ORDER BY 2 DESC, 1"),
    (
        "window",
        "SELECT caseid, vertex_name, LAG(vertex_name) OVER (PARTITION BY caseid ORDER BY __time, "
        "vertex_name) FROM {v} GROUP BY caseid, vertex_name, __time ORDER BY caseid, __time, vertex_name "
        "LIMIT 50",
    ),
    ("cast_varchar", "SELECT CAST(vertex_name AS VARCHAR) AS k FROM {v} GROUP BY 1 ORDER BY 1"),
]


@pytest.mark.parametrize(("name", "sql"), QUERIES, ids=[q[0] for q in QUERIES])
def test_queries_on_encoded_columns_match_plain_varchar(engines, client_id, t, name, sql):
    encoded, plain = _both(engines, client_id, t.fmt(sql))
    assert encoded.table.equals(plain.table), name
    for col, field in zip(encoded.columns, encoded.table.schema, strict=True):
        assert not pa.types.is_dictionary(field.type), (name, col)


def test_a_string_that_is_not_a_member(engines, client_id, t):
    sql = t.fmt("SELECT COUNT(*) AS n FROM {v} WHERE vertex_name = ?")
    for value, found in (("not an activity", False), ("Receive Goods", True)):
        encoded, plain = _both(engines, client_id, sql, [value])
        assert encoded.table.equals(plain.table)
        assert (encoded.table["n"][0].as_py() > 0) is found
    encoded, plain = _both(engines, client_id, t.fmt("SELECT COUNT(*) FROM {v} WHERE vertex_name > ?"), ["Q"])
    assert encoded.table.equals(plain.table)


def test_array_agg_of_an_encoded_column_is_an_array_of_strings(engines, client_id, t):
    sql = t.fmt("SELECT caseid, ARRAY_AGG(DISTINCT vertex_name) AS names FROM {v} GROUP BY 1 ORDER BY 1")
    encoded, plain = _both(engines, client_id, sql)
    assert encoded.columns[1].type == "ARRAY" and encoded.columns[1].component == "VARCHAR"
    assert encoded.table.schema.field("names").type == pa.list_(pa.string())

    def as_sets(table: pa.Table) -> list:
        return [(r["caseid"], sorted(r["names"])) for r in table.to_pylist()]

    assert as_sets(encoded.table) == as_sets(plain.table)


def test_information_schema_and_catalog_say_varchar(engines, client_id, t):
    sql = "SELECT * FROM INFORMATION_SCHEMA.COLUMNS ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"
    encoded, plain = _both(engines, client_id, sql)
    assert encoded.table.equals(plain.table)
    rows = {
        (r["TABLE_NAME"], r["COLUMN_NAME"]): r
        for r in encoded.table.to_pylist()
        if r["TABLE_NAME"] == t.vertex.strip('"')
    }
    name = rows[(t.vertex.strip('"'), "vertex_name")]
    assert (name["DATA_TYPE"], name["CHARACTER_SET_NAME"], name["COLLATION_NAME"], name["JDBC_TYPE"]) == (
        "VARCHAR",
        "UTF-16LE",
        "UTF-16LE$en_US$primary",
        12,
    )
    assert engines[0].catalog(client_id) == engines[1].catalog(client_id)


def test_result_metadata_says_varchar(engines, client_id, t):
    sql = t.fmt("SELECT vertex_name, MAX(caseid) AS last_case FROM {v} WHERE caseid <> ? GROUP BY 1")
    described = [e.describe(client_id, sql)[1] for e in engines]
    assert described[0] == described[1]
    assert [(c.type, c.native_type, c.sql_type) for c in described[0]] == [
        ("VARCHAR", "STRING", "VARCHAR")
    ] * 2


def test_error_messages_name_varchar(engines, client_id, t):
    messages = []
    for engine in engines:
        with pytest.raises(SqlError) as info:
            engine.execute(client_id, t.fmt("SELECT vertex_name + 1 FROM {v}"), [])
        messages.append(str(info.value))
    assert "ENUM" not in messages[0]
    assert messages[0] == messages[1]


# --- through the sandbox's HTTP API (the session sandbox stores its data encoded too) ----------------


def test_druid_api_returns_plain_strings_with_varchar_headers(druid, tables, reference):
    sql = tables.fmt(
        "SELECT vertex_name, MAX(caseid) AS last_case, COUNT(*) AS n FROM {v} GROUP BY 1 ORDER BY 1"
    )
    expected = reference.execute(
        tables.fmt(
            "SELECT CAST(vertex_name AS VARCHAR), CAST(MAX(caseid) AS VARCHAR), COUNT(*) "
            "FROM druid.{v} GROUP BY 1 ORDER BY 1"
        )
    ).fetchall()
    r = druid(sql, resultFormat="array", header=True, typesHeader=True, sqlTypesHeader=True)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body[:3] == [
        ["vertex_name", "last_case", "n"],
        ["STRING", "STRING", "LONG"],
        ["VARCHAR", "VARCHAR", "BIGINT"],
    ]
    assert body[3:] == [list(row) for row in expected]
    csv_rows = list(csv.reader(io.StringIO(druid(sql, resultFormat="csv").text.rstrip("\n"))))
    assert csv_rows == [[str(v) for v in row] for row in expected]


def test_session_sandbox_data_is_encoded(reference, tables):
    kind = reference.execute(
        "SELECT data_type FROM duckdb_columns() WHERE schema_name = 'druid' AND table_name = ? "
        "AND column_name = 'vertex_name'",
        [tables.vertex.strip('"')],
    ).fetchone()[0]
    assert kind.startswith("ENUM(")  # so the HTTP test above runs against dictionary-encoded data
