"""Escape and isolation attempts on the SQL port: each is refused with a clear error, data stays intact."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TARGET = "/tmp/pm-sandbox-escape-probe"

# (name, Druid SQL with {c}/{v}/{other}/{other_v}/{target} slots, text the error must contain)
ATTEMPTS: list[tuple[str, str, str]] = [
    ("other_workgroup_table", "SELECT COUNT(*) FROM {other}", "not found (line [1], column [22])"),
    (
        "other_workgroup_in_join",
        "SELECT COUNT(*) FROM {c} a JOIN {other} b ON a.caseid = b.caseid",
        "not found",
    ),
    (
        "other_workgroup_in_subquery",
        "SELECT * FROM {c} WHERE caseid IN (SELECT caseid FROM {other_v})",
        "not found",
    ),
    ("other_workgroup_in_cte", "WITH x AS (SELECT * FROM {other}) SELECT COUNT(*) FROM x", "not found"),
    ("other_workgroup_schema_qualified", "SELECT COUNT(*) FROM druid.{other}", "not found"),
    ("other_workgroup_catalog_qualified", "SELECT COUNT(*) FROM druid.druid.{other}", "not found"),
    ("other_workgroup_in_union", "SELECT caseid FROM {c} UNION ALL SELECT caseid FROM {other}", "not found"),
    (
        "other_workgroup_lookup",
        'SELECT * FROM lookup."{other_pid}_variant_name"',
        "not found within 'lookup'",
    ),
    ("other_workgroup_lookup_fn", "SELECT LOOKUP(graphkey, '{other_pid}_variant_name') FROM {c}", "Lookup"),
    ("duckdb_catalog_memory", "SELECT COUNT(*) FROM memory.druid.{c}", "Object 'memory' not found"),
    ("duckdb_system_catalog", "SELECT * FROM system.main.duckdb_tables", "Object 'system' not found"),
    ("duckdb_information_schema_internal", "SELECT * FROM information_schema.schemata_internal", "not found"),
    ("metadata_schema_direct", 'SELECT * FROM pm_meta."TABLES"', "Object 'pm_meta' not found"),
    ("read_csv_table_function", "SELECT * FROM read_csv('/etc/passwd')", "READ_CSV"),
    ("read_parquet", "SELECT * FROM read_parquet('/tmp/x.parquet')", "READ_PARQUET"),
    ("read_text_scalar", "SELECT read_text('/etc/passwd')", "READ_TEXT"),
    ("file_path_as_table", 'SELECT * FROM "/etc/passwd"', "not found"),
    ("glob", "SELECT * FROM {c} WHERE caseid IN (SELECT file FROM glob('/etc/*'))", "GLOB"),
    ("getenv", "SELECT getenv('HOME')", "GETENV"),
    ("current_setting", "SELECT current_setting('threads')", "CURRENT_SETTING"),
    (
        "duckdb_settings",
        "SELECT * FROM {c} WHERE caseid IN (SELECT name FROM duckdb_settings())",
        "DUCKDB_SETTINGS",
    ),
    ("query_table", "SELECT * FROM query_table('druid.{pid}')", "QUERY_TABLE"),
    ("query_function", "SELECT * FROM query('SELECT 1')", "QUERY"),
    ("copy_to_file", "COPY (SELECT * FROM {c}) TO '{target}'", "COPY statements are not allowed"),
    ("attach", "ATTACH '{target}' AS evil", "ATTACH statements are not allowed"),
    ("install_httpfs", "INSTALL httpfs", "INSTALL statements are not allowed"),
    ("load_extension", "LOAD httpfs", "LOAD statements are not allowed"),
    ("set_setting", "SET enable_external_access = true", "SET statements are not allowed"),
    ("pragma", "PRAGMA database_list", "PRAGMA statements are not allowed"),
    ("call", "CALL pragma_version()", "CALL statements are not allowed"),
    ("drop_table", "DROP TABLE {c}", "DROP statements are not allowed"),
    ("delete_rows", "DELETE FROM {c}", "DELETE statements are not allowed"),
    ("insert_rows", "INSERT INTO {c} (caseid) VALUES ('x')", "INSERT statements are not allowed"),
    ("update_rows", "UPDATE {c} SET caseid = 'x'", "UPDATE statements are not allowed"),
    ("create_table_as", "CREATE TABLE evil AS SELECT * FROM {c}", "CREATE statements are not allowed"),
    ("stacked_statements", "SELECT 1; DROP TABLE {c}", "only a single statement"),
    ("stacked_after_comment", "SELECT 1 /* x */; DELETE FROM {c}", "only a single statement"),
    ("export_database", "EXPORT DATABASE '{target}'", "EXPORT statements are not allowed"),
    ("checkpoint", "CHECKPOINT", "CHECKPOINT statements are not allowed"),
    ("describe", "DESCRIBE {c}", "DESCRIBE statements are not allowed"),
    ("transaction", "BEGIN TRANSACTION", "BEGIN statements are not allowed"),
    ("sys_schema", "SELECT * FROM sys.segments", "Schema 'sys' is not available"),
    ("range_dos", "SELECT * FROM range(1000000000000)", "RANGE"),
    (
        "duckdb_functions_in_cte",
        "WITH f AS (SELECT * FROM duckdb_functions()) SELECT COUNT(*) FROM f",
        "DUCKDB_FUNCTIONS",
    ),
    ("named_parameter", "SELECT * FROM {c} WHERE caseid = $1", "Column '$1' not found in any table"),
]


@pytest.fixture(scope="module")
def other(second):
    return second.project_ids[0]


@pytest.fixture(scope="module")
def fill(tables, other):
    def fmt(sql: str) -> str:
        return sql.format(
            c=tables.cases,
            v=tables.vertex,
            pid=tables.pid,
            other=f'"{other}"',
            other_v=f'"{other}_vertex"',
            other_pid=other,
            target=TARGET,
        )

    return fmt


@pytest.fixture(scope="module")
def counts(druid, tables):
    def snapshot() -> list:
        sql = tables.fmt(
            "SELECT (SELECT COUNT(*) FROM {c}), (SELECT COUNT(*) FROM {v}), (SELECT COUNT(*) FROM {e}), "
            "(SELECT SUM(duration) FROM {v})"
        )
        r = druid(sql, resultFormat="array")
        assert r.status_code == 200, r.text
        return r.json()

    return snapshot


def test_at_least_thirty_attempts():
    assert len(ATTEMPTS) >= 30


#: attempts Druid's parser refuses itself in front of Druid (the stand-in checks only what it parses)
_DRUID_WORDS = (
    "SELECT * FROM {c} WHERE caseid IN (SELECT file FROM glob",
    "SELECT * FROM {c} WHERE caseid = $1",
)


@pytest.mark.parametrize(("sql", "needle"), [a[1:] for a in ATTEMPTS], ids=[a[0] for a in ATTEMPTS])
def test_attempt_is_refused_and_data_intact(druid, fill, counts, sql, needle):
    before = counts()
    r = druid(fill(sql))
    assert r.status_code == 400, r.text
    message = r.json()["errorMessage"]
    if os.environ.get("PM_TEST_DRUID") != "1" or not sql.startswith(_DRUID_WORDS):
        assert needle.lower() in message.lower(), message  # else Druid's own words (a syntax error)
    assert "Traceback" not in message and "java.lang" not in message
    assert counts() == before
    assert not Path(TARGET).exists()


def test_information_schema_lists_only_own_tables(druid, demo, second, sandbox_store):
    r = druid(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA IN ('druid', "
        "'lookup')",
        resultFormat="array",
    )
    seen = {name for _, name in r.json()}
    own = {t for p in sandbox_store.workgroup(demo.client_id).projects for t in p.tables + p.lookups}
    foreign = {t for p in sandbox_store.workgroup(second.client_id).projects for t in p.tables + p.lookups}
    assert seen == own
    assert not seen & foreign


def test_second_workgroup_sees_its_own_data(sandbox, second, http, other, sandbox_store):
    r = http.post(
        sandbox.sql_url + "/druid/v2/sql/",
        json={"query": f'SELECT COUNT(*) AS n FROM "{other}"'},
        auth=(second.client_id, second.client_secret),
    )
    want = (
        sandbox_store.database(second.client_id)
        .execute(f'SELECT COUNT(*) FROM druid."{other}"')
        .fetchone()[0]
    )
    assert r.json() == [{"n": want}]


def test_error_leaks_no_existence(druid, other):
    """Another workgroup's table and a table that exists nowhere get the same kind of answer."""
    a = druid(f'SELECT * FROM "{other}"').json()["errorMessage"]
    b = druid('SELECT * FROM "00000000-0000-0000-0000-000000000000"').json()["errorMessage"]
    assert a.replace(other, "X") == b.replace("00000000-0000-0000-0000-000000000000", "X")
