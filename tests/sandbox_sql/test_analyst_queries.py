"""Process-analyst Druid SQL against the three tables, checked against hand-written DuckDB SQL.

Each case pairs the Druid SQL an analyst would send with an independent DuckDB formulation run on the
same generated data (``reference``: the store rebuilt in-process). Both sides are ordered, so rows are
compared in order; floats with a relative tolerance; timestamps as Druid's ISO strings.
``{c}``/``{v}``/``{e}`` are the cases/vertex/edge tables, ``{vn}``/``{ex}`` the variant-name and
excluded-cases lookups.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

CASES: list[tuple[str, str, str]] = [
    ("count_cases", "SELECT COUNT(*) AS n FROM {c}", "SELECT COUNT(*) FROM druid.{c}"),
    (
        "distinct_cases_in_events",
        "SELECT COUNT(DISTINCT caseid) FROM {v}",
        "SELECT COUNT(DISTINCT caseid) FROM druid.{v}",
    ),
    ("avg_case_duration", "SELECT AVG(duration) AS d FROM {c}", "SELECT AVG(duration) FROM druid.{c}"),
    (
        "time_range",
        "SELECT MIN(__time), MAX(__time) FROM {c}",
        "SELECT MIN(__time), MAX(__time) FROM druid.{c}",
    ),
    (
        "activity_frequency",
        "SELECT vertex_name, COUNT(*) AS n FROM {v} GROUP BY vertex_name ORDER BY n DESC, vertex_name",
        "SELECT vertex_name, COUNT(*) n FROM druid.{v} GROUP BY 1 ORDER BY n DESC, vertex_name",
    ),
    (
        "activity_mean_duration",
        "SELECT vertex_name, AVG(duration) AS d, MAX(duration) AS m FROM {v} GROUP BY 1 ORDER BY 1",
        "SELECT vertex_name, AVG(duration), MAX(duration) FROM druid.{v} GROUP BY 1 ORDER BY 1",
    ),
    (
        "cases_per_month",
        "SELECT TIME_FLOOR(__time, 'P1M') AS m, COUNT(*) AS n FROM {c} GROUP BY 1 ORDER BY 1",
        "SELECT date_trunc('month', __time), COUNT(*) FROM druid.{c} GROUP BY 1 ORDER BY 1",
    ),
    (
        "cases_per_week",
        "SELECT TIME_FLOOR(__time, 'P1W') AS w, COUNT(*) AS n FROM {c} GROUP BY 1 ORDER BY 1",
        "SELECT date_trunc('week', __time), COUNT(*) FROM druid.{c} GROUP BY 1 ORDER BY 1",
    ),
    (
        "busiest_days",
        "SELECT FLOOR(__time TO DAY) AS d, COUNT(*) AS n FROM {v} GROUP BY 1 ORDER BY n DESC, d LIMIT 5",
        "SELECT date_trunc('day', __time) d, COUNT(*) n FROM druid.{v} GROUP BY 1 ORDER BY n DESC, d LIMIT 5",
    ),
    (
        "events_by_hour",
        "SELECT TIME_EXTRACT(__time, 'HOUR') AS h, COUNT(*) FROM {v} GROUP BY 1 ORDER BY 1",
        "SELECT hour(__time), COUNT(*) FROM druid.{v} GROUP BY 1 ORDER BY 1",
    ),
    (
        "events_by_weekday",
        "SELECT EXTRACT(DOW FROM __time) AS dow, COUNT(*) FROM {v} GROUP BY 1 ORDER BY 1",
        "SELECT isodow(__time), COUNT(*) FROM druid.{v} GROUP BY 1 ORDER BY 1",
    ),
    (
        "top_variants",
        "SELECT processkey, COUNT(*) AS n FROM {c} GROUP BY processkey ORDER BY n DESC, processkey LIMIT 10",
        "SELECT processkey, COUNT(*) n FROM druid.{c} GROUP BY 1 ORDER BY n DESC, processkey LIMIT 10",
    ),
    (
        "variant_names_by_lookup",
        "SELECT LOOKUP(graphkey, '{vn}') AS variant, COUNT(*) AS n FROM {c} GROUP BY 1 ORDER BY n DESC, "
        "variant",
        'SELECT l.v, COUNT(*) n FROM druid.{c} LEFT JOIN lookup."{vn}" l ON l.k = graphkey GROUP BY 1 '
        "ORDER BY n DESC, l.v",
    ),
    (
        "current_cases_without_excluded",
        "SELECT COUNT(*) FROM {c} WHERE LOOKUP(case_version, '{ex}') IS NULL",
        'SELECT COUNT(*) FROM druid.{c} WHERE case_version NOT IN (SELECT k FROM lookup."{ex}")',
    ),
    (
        "lookup_with_default",
        "SELECT LOOKUP(graphkey, '{vn}', 'unknown') AS v, COUNT(*) FROM {c} GROUP BY 1 ORDER BY 1",
        "SELECT COALESCE(l.v, 'unknown') x, COUNT(*) FROM druid.{c} LEFT JOIN lookup.\"{vn}\" l ON l.k = "
        "graphkey "
        "GROUP BY 1 ORDER BY 1",
    ),
    (
        "throughput_days",
        "SELECT AVG(duration) / 86400000.0 FROM {c}",
        "SELECT AVG(duration) / 86400000.0 FROM druid.{c}",
    ),
    (
        "median_duration",
        "SELECT APPROX_QUANTILE_DS(duration, 0.5) FROM {c}",
        "SELECT quantile_disc(duration, 0.5) FROM druid.{c}",
    ),
    (
        "p90_by_activity",
        "SELECT vertex_name, APPROX_QUANTILE(duration, 0.9) FROM {v} GROUP BY 1 ORDER BY 1",
        "SELECT vertex_name, quantile_disc(duration, 0.9) FROM druid.{v} GROUP BY 1 ORDER BY 1",
    ),
    (
        "approx_distinct_variants",
        "SELECT APPROX_COUNT_DISTINCT(processkey) FROM {c}",
        "SELECT COUNT(DISTINCT processkey) FROM druid.{c}",
    ),
    (
        "rework_rate",
        "SELECT SUM(CASE WHEN rework > 0 THEN 1 ELSE 0 END) * 1.0 / COUNT(*) FROM {c}",
        "SELECT SUM(CASE WHEN rework > 0 THEN 1 ELSE 0 END) * 1.0 / COUNT(*) FROM druid.{c}",
    ),
    (
        "mv_contains",
        "SELECT COUNT(*) FROM {c} WHERE MV_CONTAINS(distinct_vertices, 'Receive Goods')",
        "SELECT COUNT(*) FROM druid.{c} WHERE list_contains(distinct_vertices, 'Receive Goods')",
    ),
    (
        "mv_equality_matches_any_value",
        "SELECT COUNT(*) FROM {c} WHERE distinct_vertices = 'Approve Purchase Requisition'",
        "SELECT COUNT(*) FROM druid.{c} WHERE list_contains(distinct_vertices, 'Approve Purchase "
        "Requisition')",
    ),
    (
        "mv_length",
        "SELECT AVG(MV_LENGTH(distinct_vertices)) FROM {c}",
        "SELECT AVG(len(distinct_vertices)) FROM druid.{c}",
    ),
    (
        "top_transitions",
        "SELECT source_vertex_name, destination_vertex_name, COUNT(*) AS n FROM {e} GROUP BY 1, 2 "
        "ORDER BY n DESC, 1, 2 LIMIT 10",
        "SELECT source_vertex_name, destination_vertex_name, COUNT(*) n FROM druid.{e} GROUP BY 1, 2 "
        "ORDER BY n DESC, 1, 2 LIMIT 10",
    ),
    (
        "transition_waiting_time",
        "SELECT source_vertex_name, destination_vertex_name, AVG(duration) FROM {e} GROUP BY 1, 2 ORDER "
        "BY 1, 2",
        "SELECT source_vertex_name, destination_vertex_name, AVG(duration) FROM druid.{e} GROUP BY 1, 2 "
        "ORDER BY 1, 2",
    ),
    (
        "self_loops",
        "SELECT COUNT(*) FROM {e} WHERE source_vertex_name = destination_vertex_name",
        "SELECT COUNT(*) FROM druid.{e} WHERE source_vertex_name = destination_vertex_name",
    ),
    (
        "events_per_supplier_join",
        "SELECT c.supplier_lpkr, COUNT(*) AS n FROM {v} v JOIN {c} c ON v.caseid = c.caseid GROUP BY 1 "
        "ORDER BY 1",
        "SELECT c.supplier_lpkr, COUNT(*) FROM druid.{v} v JOIN druid.{c} c ON v.caseid = c.caseid GROUP "
        "BY 1 ORDER BY 1",
    ),
    (
        "cte_events_per_case",
        "WITH per_case AS (SELECT caseid, COUNT(*) AS n FROM {v} GROUP BY caseid) SELECT AVG(n), MAX(n), "
        "MIN(n) "
        "FROM per_case",
        "SELECT AVG(n), MAX(n), MIN(n) FROM (SELECT caseid, COUNT(*) n FROM druid.{v} GROUP BY caseid)",
    ),
    (
        "subquery_in",
        "SELECT COUNT(*) FROM {c} WHERE caseid IN (SELECT caseid FROM {v} WHERE vertex_name = 'Verify "
        "Invoice' "
        "AND duration > 1000000)",
        "SELECT COUNT(*) FROM druid.{c} WHERE caseid IN (SELECT caseid FROM druid.{v} WHERE vertex_name = "
        "'Verify Invoice' AND duration > 1000000)",
    ),
    (
        "start_activities",
        "SELECT first_act, COUNT(*) FROM (SELECT caseid, EARLIEST(vertex_name) AS first_act FROM {v} "
        "GROUP BY caseid) "
        "GROUP BY 1 ORDER BY 1",
        "SELECT f, COUNT(*) FROM (SELECT caseid, arg_min(vertex_name, __time) f FROM druid.{v} GROUP BY "
        "caseid) "
        "GROUP BY 1 ORDER BY 1",
    ),
    (
        "end_activities",
        "SELECT last_act, COUNT(*) FROM (SELECT caseid, LATEST_BY(vertex_name, "
        "MILLIS_TO_TIMESTAMP(enddate)) AS last_act "
        "FROM {v} GROUP BY caseid) GROUP BY 1 ORDER BY 1",
        "SELECT f, COUNT(*) FROM (SELECT caseid, arg_max(vertex_name, epoch_ms(enddate)) f FROM druid.{v} "
        "GROUP BY caseid) GROUP BY 1 ORDER BY 1",
    ),
    (
        "hours_between_start_and_end",
        "SELECT AVG(TIMESTAMPDIFF(HOUR, __time, MILLIS_TO_TIMESTAMP(enddate))) FROM {c}",
        "SELECT AVG(date_sub('hour', __time, epoch_ms(enddate))) FROM druid.{c}",
    ),
    (
        "first_start_millis",
        "SELECT MIN(TIMESTAMP_TO_MILLIS(__time)) FROM {c}",
        "SELECT MIN(epoch_ms(__time)) FROM druid.{c}",
    ),
    (
        "cases_by_month_label",
        "SELECT TIME_FORMAT(__time, 'yyyy-MM') AS ym, COUNT(*) FROM {c} GROUP BY 1 ORDER BY 1",
        "SELECT strftime(__time, '%Y-%m'), COUNT(*) FROM druid.{c} GROUP BY 1 ORDER BY 1",
    ),
    (
        "next_day_after_last_case",
        "SELECT MAX(TIME_SHIFT(TIME_FLOOR(__time, 'P1D'), 'P1D', 1)) FROM {c}",
        "SELECT MAX(date_trunc('day', __time) + INTERVAL 1 DAY) FROM druid.{c}",
    ),
    (
        "first_hour_ceiling",
        "SELECT MIN(TIME_CEIL(__time, 'PT1H')) FROM {v}",
        "SELECT MIN(CASE WHEN date_trunc('hour', __time) = __time THEN __time "
        "ELSE date_trunc('hour', __time) + INTERVAL 1 HOUR END) FROM druid.{v}",
    ),
    (
        "cases_in_february",
        "SELECT COUNT(*) FROM {c} WHERE __time >= TIMESTAMP '2025-02-01 00:00:00' AND __time < TIMESTAMP "
        "'2025-03-01 00:00:00'",
        "SELECT COUNT(*) FROM druid.{c} WHERE __time >= TIMESTAMP '2025-02-01' AND __time < TIMESTAMP "
        "'2025-03-01'",
    ),
    (
        "time_parse_filter",
        "SELECT COUNT(*) FROM {v} WHERE __time >= TIME_PARSE('2025-06-01T00:00:00.000Z')",
        "SELECT COUNT(*) FROM druid.{v} WHERE __time >= TIMESTAMP '2025-06-01'",
    ),
    (
        "suppliers_having",
        "SELECT supplier_lpkr, COUNT(*) AS n FROM {c} GROUP BY 1 HAVING COUNT(*) > 20 ORDER BY n DESC, 1",
        "SELECT supplier_lpkr, COUNT(*) n FROM druid.{c} GROUP BY 1 HAVING COUNT(*) > 20 ORDER BY n DESC, 1",
    ),
    (
        "duration_buckets",
        "SELECT CASE WHEN duration < 7 * 86400000 THEN 'under a week' WHEN duration < 30 * 86400000 THEN "
        "'under a month' "
        "ELSE 'longer' END AS bucket, COUNT(*) FROM {c} GROUP BY 1 ORDER BY 1",
        "SELECT CASE WHEN duration < 7 * 86400000::BIGINT THEN 'under a week' WHEN duration < 30 * "
        "86400000::BIGINT "
        "THEN 'under a month' ELSE 'longer' END b, COUNT(*) FROM druid.{c} GROUP BY 1 ORDER BY 1",
    ),
    (
        "first_event_per_case_window",
        "SELECT vertex_name, COUNT(*) FROM (SELECT vertex_name, ROW_NUMBER() OVER (PARTITION BY caseid "
        "ORDER BY __time, "
        "vertex_name) AS rn FROM {v}) WHERE rn = 1 GROUP BY 1 ORDER BY 1",
        "SELECT vertex_name, COUNT(*) FROM (SELECT vertex_name, ROW_NUMBER() OVER (PARTITION BY caseid "
        "ORDER BY __time, "
        "vertex_name) rn FROM druid.{v}) WHERE rn = 1 GROUP BY 1 ORDER BY 1",
    ),
    (
        "rows_of_three_tables",
        "SELECT 'cases' AS t, COUNT(*) FROM {c} UNION ALL SELECT 'events', COUNT(*) FROM {v} "
        "UNION ALL SELECT 'transitions', COUNT(*) FROM {e}",
        "SELECT 'cases', COUNT(*) FROM druid.{c} UNION ALL SELECT 'events', COUNT(*) FROM druid.{v} "
        "UNION ALL SELECT 'transitions', COUNT(*) FROM druid.{e}",
    ),
    (
        "information_schema_columns",
        "SELECT COUNT(*) FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'druid' AND TABLE_NAME = "
        "'{pid}_vertex'",
        "SELECT COUNT(*) FROM duckdb_columns() WHERE schema_name = 'druid' AND table_name = '{pid}_vertex'",
    ),
    (
        "information_schema_types",
        "SELECT COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = '{pid}' AND "
        "COLUMN_NAME IN "
        "('__time', 'duration', 'concurrency', 'caseid', 'is_predicted', 'distinct_vertices') ORDER BY "
        "ORDINAL_POSITION",
        "SELECT * FROM (VALUES ('__time', 'TIMESTAMP'), ('duration', 'BIGINT'), ('caseid', 'VARCHAR'), "
        "('concurrency', 'DOUBLE'), ('distinct_vertices', 'ARRAY<VARCHAR>'), ('is_predicted', 'BIGINT'))",
    ),
    (
        "invoice_activities",
        "SELECT COUNT(*) FROM {v} WHERE CONTAINS_STRING(vertex_name, 'Invoice')",
        "SELECT COUNT(*) FROM druid.{v} WHERE vertex_name LIKE '%Invoice%'",
    ),
    (
        "amount_by_company",
        "SELECT company_code_lpkr, SUM(order_amount_lpkr), ROUND(AVG(quantity_lpkr), 2) FROM {c} GROUP "
        "BY 1 ORDER BY 1",
        "SELECT company_code_lpkr, SUM(order_amount_lpkr), ROUND(AVG(quantity_lpkr), 2) FROM druid.{c} "
        "GROUP BY 1 "
        "ORDER BY 1",
    ),
    (
        "filtered_aggregate",
        "SELECT COUNT(*) FILTER (WHERE rework > 0), COUNT(*) FILTER (WHERE is_predicted = 1) FROM {c}",
        "SELECT COUNT(*) FILTER (WHERE rework > 0), SUM(is_predicted) FROM druid.{c}",
    ),
    (
        "concurrency_rounded",
        "SELECT ROUND(AVG(concurrency), 3) FROM {c}",
        "SELECT ROUND(AVG(concurrency), 3) FROM druid.{c}",
    ),
    (
        "unnest_distinct_vertices",
        "SELECT u.act, COUNT(*) FROM {c} CROSS JOIN UNNEST(distinct_vertices) AS u(act) GROUP BY 1 ORDER "
        "BY 1",
        "SELECT act, COUNT(*) FROM (SELECT unnest(distinct_vertices) act FROM druid.{c}) GROUP BY 1 "
        "ORDER BY 1",
    ),
    (
        "group_by_mv_column",
        "SELECT distinct_vertices, COUNT(*) FROM {c} GROUP BY distinct_vertices ORDER BY 1",
        "SELECT act, COUNT(*) FROM (SELECT unnest(distinct_vertices) act FROM druid.{c}) GROUP BY 1 "
        "ORDER BY 1",
    ),
    (
        "group_by_mv_alias_ordinal_order_by_count",
        "SELECT distinct_vertices AS act, COUNT(*) AS n FROM {c} GROUP BY 1 ORDER BY n DESC, act",
        "SELECT act, COUNT(*) n FROM (SELECT unnest(distinct_vertices) act FROM druid.{c}) GROUP BY 1 "
        "ORDER BY n DESC, act",
    ),
    (
        "group_by_mv_with_any_value_filter",
        "SELECT distinct_vertices AS act, COUNT(DISTINCT caseid) AS n, SUM(duration) AS d FROM {c} "
        "WHERE distinct_vertices = (SELECT MIN(vertex_name) FROM {v}) GROUP BY act ORDER BY act",
        "SELECT act, COUNT(DISTINCT caseid), SUM(duration) FROM (SELECT caseid, duration, "
        "unnest(distinct_vertices) act FROM druid.{c} WHERE list_contains(distinct_vertices, "
        "(SELECT MIN(vertex_name) FROM druid.{v}))) GROUP BY 1 ORDER BY 1",
    ),
    (
        "group_by_two_mv_columns",
        "SELECT all_company_code_lpkr AS cc, distinct_vertices AS act, COUNT(*) FROM {c} "
        "GROUP BY 1, 2 ORDER BY 1, 2",
        "WITH a AS (SELECT caseid, unnest(coalesce(nullif(all_company_code_lpkr, []), [NULL])) cc "
        "FROM druid.{c}), b AS (SELECT caseid, unnest(coalesce(nullif(distinct_vertices, []), [NULL])) act "
        "FROM druid.{c}) SELECT cc, act, COUNT(*) FROM a JOIN b USING (caseid) GROUP BY 1, 2 "
        "ORDER BY 1 NULLS FIRST, 2 NULLS FIRST",
    ),
    (
        "group_by_mv_having",
        "SELECT distinct_vertices, COUNT(*) AS n FROM {c} GROUP BY 1 HAVING COUNT(*) > 1 ORDER BY 1",
        "SELECT act, COUNT(*) FROM (SELECT unnest(distinct_vertices) act FROM druid.{c}) GROUP BY 1 "
        "HAVING COUNT(*) > 1 ORDER BY 1",
    ),
    (
        "integer_division",
        "SELECT 7 / 2, SUM(duration) / COUNT(*), MAX(tasks_count) / 2, COUNT(*) / 7 FROM {c}",
        "SELECT 3, CAST(trunc(SUM(duration) / COUNT(*)) AS BIGINT), CAST(trunc(MAX(tasks_count) / 2) AS "
        "BIGINT), CAST(trunc(COUNT(*) / 7) AS BIGINT) FROM druid.{c}",
    ),
    (
        "integer_division_per_row",
        "SELECT caseid, duration / 3600000, rework / 2 + 1 FROM {c} GROUP BY caseid, duration, rework "
        "ORDER BY caseid LIMIT 20",
        "SELECT caseid, CAST(trunc(duration / 3600000) AS BIGINT), CAST(trunc(rework / 2) AS BIGINT) + 1 "
        "FROM druid.{c} ORDER BY caseid LIMIT 20",
    ),
    (
        "float_division_stays_double",
        "SELECT AVG(duration) / 3600000.0, SUM(duration) / 3600000.0, MAX(concurrency) / 2 FROM {c}",
        "SELECT AVG(duration) / 3600000.0, SUM(duration) / 3600000.0, MAX(concurrency) / 2 FROM druid.{c}",
    ),
    (
        "paging",
        "SELECT caseid, duration FROM {c} GROUP BY 1, 2 ORDER BY duration DESC, caseid LIMIT 5 OFFSET 10",
        "SELECT caseid, duration FROM druid.{c} ORDER BY duration DESC, caseid LIMIT 5 OFFSET 10",
    ),
    (
        "timestampadd",
        "SELECT MIN(TIMESTAMPADD(DAY, 7, __time)) FROM {c}",
        "SELECT MIN(__time + INTERVAL 7 DAY) FROM druid.{c}",
    ),
    (
        "resource_workload",
        "SELECT resource_lpkr, COUNT(DISTINCT caseid) AS cases, SUM(duration) / 3600000.0 AS hours FROM {v} "
        "WHERE resource_lpkr IS NOT NULL GROUP BY 1 ORDER BY 1",
        "SELECT resource_lpkr, COUNT(DISTINCT caseid), SUM(duration) / 3600000.0 FROM druid.{v} "
        "WHERE resource_lpkr IS NOT NULL GROUP BY 1 ORDER BY 1",
    ),
    (
        "string_functions",
        "SELECT UPPER(vertex_name), STRLEN(vertex_name), SUBSTRING(vertex_name, 1, 4) FROM {v} GROUP BY "
        "1, 2, 3 ORDER BY 1",
        "SELECT upper(vertex_name), length(vertex_name), substring(vertex_name, 1, 4) FROM druid.{v} "
        "GROUP BY 1, 2, 3 "
        "ORDER BY 1",
    ),
]


def _norm(value):
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def _same(got, want) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        return got == pytest.approx(want, rel=1e-9, abs=1e-9)
    return got == want


def test_there_are_at_least_forty():
    assert len(CASES) >= 40
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("druid_sql", "duck_sql"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_analyst_query(druid, reference, tables, druid_sql, duck_sql):
    want = [[_norm(v) for v in row] for row in reference.execute(tables.fmt(duck_sql)).fetchall()]
    r = druid(
        tables.fmt(druid_sql),
        resultFormat="array",
        context={"sqlStringifyArrays": False, "enableWindowing": True},
    )
    assert r.status_code == 200, r.text
    got = r.json()
    assert len(got) == len(want), (got[:5], want[:5])
    assert want, "the reference query returned nothing: the case tests nothing"
    for g, w in zip(got, want, strict=True):
        assert len(g) == len(w)
        assert all(_same(a, b) for a, b in zip(g, w, strict=True)), (g, w)
