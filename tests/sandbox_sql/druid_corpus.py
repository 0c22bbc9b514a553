"""Two corpora of SQL over one project's three tables (``{c}`` cases, ``{v}`` tasks, ``{e}`` transitions,
lookup names ``{vn}`` / ``{ex}``, project id ``{pid}``; see :meth:`conftest.Tables.fmt`).

``VALID``: Druid SQL adapted from Apache Druid's SQL reference examples (sql-scalar, sql-aggregations,
sql-array-functions, sql-multivalue-string-functions, datasketches, lookups, joins, subqueries, grouping sets)
and from iGrafx's public material (the SDK howto's edge-table queries, the lookup usage of ``/pub/lookups``,
``detail``-style case columns). Each must run on every transport and return at least one row.

``REFUSED``: SQL that DuckDB or PostgreSQL accept and Druid refuses; each must be refused on every transport
with a Druid-shaped error and no DuckDB wording. Every lookup the service documents is used: the variant
names under both names (``<pid>_variant_name`` and the ``<pid>_variants`` alias of the ``/pub/lookups`` usage
string), ``<pid>_excluded_cases``, ``<pid>_cases_is_completed`` and the ``<pid>`` case_version lookup.
"""

#: 40 values each, for the long IN lists
_EVENS = ", ".join(str(i) for i in range(0, 80, 2))
_NAMES = ", ".join(["'Invoice Receipt'"] + [f"'x{i}'" for i in range(39)])

VALID: list[tuple[str, str]] = [
    ("count_cases", "SELECT COUNT(*) AS cases FROM {c}"),
    ("sdk_edge_stats", "SELECT AVG(duration), MIN(enddate), MAX(enddate) FROM {e}"),
    ("sdk_count_by_dimension", "SELECT COUNT(caseid) AS n, supplier_lpkr FROM {c} GROUP BY supplier_lpkr"),
    ("starts_per_week", "SELECT TIME_FLOOR(__time, 'P1W') AS week, COUNT(*) FROM {c} GROUP BY 1 ORDER BY 1"),
    (
        "ends_per_month",
        "SELECT TIME_FLOOR(MILLIS_TO_TIMESTAMP(enddate), 'P1M') AS m, COUNT(*) FROM {c} GROUP BY 1",
    ),
    (
        "floor_to_day",
        "SELECT FLOOR(__time TO DAY) AS d, COUNT(*) FROM {v} GROUP BY 1 ORDER BY d DESC LIMIT 5",
    ),
    ("ceil_to_hour", "SELECT CEIL(__time TO HOUR) AS h, COUNT(*) FROM {v} GROUP BY 1 LIMIT 3"),
    (
        "time_format_day",
        "SELECT TIME_FORMAT(__time, 'yyyy-MM-dd') AS d, COUNT(*) FROM {c} GROUP BY 1 ORDER BY 1 LIMIT 10",
    ),
    ("time_extract_hour", "SELECT TIME_EXTRACT(__time, 'HOUR') AS \"hour\", COUNT(*) FROM {v} GROUP BY 1"),
    ("extract_dow", "SELECT EXTRACT(DOW FROM __time) AS dow, AVG(duration) FROM {c} GROUP BY 1"),
    (
        "timestampdiff_days",
        "SELECT TIMESTAMPDIFF(DAY, __time, MILLIS_TO_TIMESTAMP(enddate)) AS days, COUNT(*) FROM {c} "
        "GROUP BY 1",
    ),
    ("timestampadd", "SELECT MAX(TIMESTAMPADD(HOUR, 1, __time)) FROM {c}"),
    ("time_shift", "SELECT TIME_SHIFT(MIN(__time), 'P1D', 1) FROM {c}"),
    ("time_parse", "SELECT COUNT(*) FROM {c} WHERE __time >= TIME_PARSE('2000-01-01T00:00:00Z')"),
    (
        "timestamp_literal",
        "SELECT COUNT(*) FROM {c} WHERE __time BETWEEN TIMESTAMP '2000-01-01 00:00:00' AND CURRENT_TIMESTAMP",
    ),
    ("timestamp_to_millis", "SELECT TIMESTAMP_TO_MILLIS(MIN(__time)) FROM {v}"),
    ("time_in_interval", "SELECT COUNT(*) FROM {c} WHERE TIME_IN_INTERVAL(__time, '2000-01-01/2100-01-01')"),
    ("date_trunc", "SELECT DATE_TRUNC('month', __time) AS m, COUNT(*) FROM {c} GROUP BY 1"),
    ("time_ceil", "SELECT TIME_CEIL(__time, 'PT1H') FROM {v} LIMIT 2"),
    (
        "interval_arithmetic",
        "SELECT COUNT(*) FROM {c} WHERE __time > CURRENT_TIMESTAMP - INTERVAL '3650' DAY",
    ),
    (
        "variant_names",
        "SELECT LOOKUP(graphkey, '{vn}') AS variant, COUNT(*) AS n FROM {c} GROUP BY 1 "
        "ORDER BY n DESC LIMIT 10",
    ),
    ("excluded_cases", "SELECT COUNT(*) FROM {c} WHERE LOOKUP(case_version, '{ex}') IS NULL"),
    # long IN lists (40 values): the stand-in runs them as a hash join, Druid as a plain filter
    (
        "long_in_list",
        f"SELECT MOD(duration, 97) AS m, COUNT(*) FROM {{v}} WHERE MOD(duration, 97) IN ({_EVENS}) "
        "GROUP BY 1 ORDER BY 1",
    ),
    (
        "long_not_in_list",
        f"SELECT COUNT(*) AS n, COUNT(supplier_lpkr) AS s FROM {{c}} WHERE supplier_lpkr NOT IN ({_NAMES})",
    ),
    ("long_in_list_with_null", f"SELECT COUNT(*) FROM {{c}} WHERE supplier_lpkr NOT IN ({_NAMES}, NULL)"),
    (
        "variants_alias_lookup",
        "SELECT LOOKUP(graphkey, '{pid}_variants') AS variant, COUNT(*) AS n FROM {c} GROUP BY 1 "
        "ORDER BY n DESC LIMIT 5",
    ),
    (
        "completed_cases_lookup",
        "SELECT LOOKUP(case_version, '{pid}_cases_is_completed') AS completed, COUNT(*) AS n FROM {c} "
        "GROUP BY 1",
    ),
    ("current_case_versions", "SELECT COUNT(*) AS n FROM {c} WHERE LOOKUP(case_version, '{pid}') IS NULL"),
    ("lookup_default", "SELECT LOOKUP(caseid, '{ex}', 'kept') AS why, COUNT(*) FROM {c} GROUP BY 1"),
    ("lookup_table", 'SELECT l.k, l.v FROM lookup."{vn}" AS l LIMIT 5'),
    (
        "lookup_join",
        'SELECT c.graphkey, l.v, COUNT(*) FROM {c} c JOIN lookup."{vn}" l ON c.graphkey = l.k GROUP BY 1, 2',
    ),
    (
        "process_map",
        "SELECT e.source_vertex_name, e.destination_vertex_name, COUNT(*) AS n, SUM(e.duration) FROM {e} e "
        "GROUP BY 1, 2 ORDER BY n DESC",
    ),
    ("approx_quantile_ds", "SELECT APPROX_QUANTILE_DS(duration, 0.5) FROM {c}"),
    ("quantile_per_edge", "SELECT source_vertex_name, APPROX_QUANTILE_DS(duration, 0.9) FROM {e} GROUP BY 1"),
    ("ds_get_quantile", "SELECT DS_GET_QUANTILE(DS_QUANTILES_SKETCH(duration), 0.5) FROM {c}"),
    (
        "ds_get_quantiles",
        "SELECT DS_GET_QUANTILES(DS_QUANTILES_SKETCH(duration, 128), 0.25, 0.5, 0.75) FROM {c}",
    ),
    ("ds_hll", "SELECT HLL_SKETCH_ESTIMATE(DS_HLL(caseid)) FROM {v}"),
    ("ds_theta", "SELECT THETA_SKETCH_ESTIMATE(DS_THETA(processkey)) FROM {c}"),
    (
        "hll_union",
        "SELECT HLL_SKETCH_ESTIMATE(HLL_SKETCH_UNION(DS_HLL(caseid), DS_HLL(processkey))) FROM {c}",
    ),
    (
        "approx_count_distinct",
        "SELECT APPROX_COUNT_DISTINCT(processkey), APPROX_COUNT_DISTINCT_DS_HLL(graphkey), "
        "APPROX_COUNT_DISTINCT_DS_THETA(caseid) FROM {c}",
    ),
    ("count_distinct", "SELECT COUNT(DISTINCT vertex_name) FROM {v}"),
    (
        "earliest_latest",
        "SELECT caseid, EARLIEST(vertex_name), LATEST(vertex_name) FROM {v} GROUP BY caseid LIMIT 5",
    ),
    (
        "earliest_by_latest_by",
        "SELECT caseid, EARLIEST_BY(vertex_name, __time, 64), "
        "LATEST_BY(vertex_name, MILLIS_TO_TIMESTAMP(enddate)) FROM {v} GROUP BY 1 LIMIT 5",
    ),
    ("latest_number", "SELECT LATEST(duration) FROM {c}"),
    ("array_agg", "SELECT caseid, ARRAY_AGG(vertex_name, 8192) FROM {v} GROUP BY 1 LIMIT 5"),
    ("string_agg", "SELECT caseid, STRING_AGG(vertex_name, ' > ', 8192) FROM {v} GROUP BY 1 LIMIT 5"),
    ("array_agg_distinct", "SELECT ARRAY_AGG(DISTINCT vertex_name) FROM {v}"),
    ("mv_length", "SELECT MV_LENGTH(distinct_vertices) AS n, COUNT(*) FROM {c} GROUP BY 1"),
    ("mv_group_unnests", "SELECT distinct_vertices, COUNT(*) FROM {c} GROUP BY 1"),
    ("mv_equality", "SELECT COUNT(*) FROM {c} WHERE distinct_vertices = 'no such task'"),
    ("mv_to_string", "SELECT MV_TO_STRING(distinct_vertices, ','), COUNT(*) FROM {c} GROUP BY 1 LIMIT 5"),
    ("mv_offset", "SELECT MV_OFFSET(distinct_vertices, 0) AS first_task, COUNT(*) FROM {c} GROUP BY 1"),
    (
        "mv_ordinal_of",
        "SELECT MV_ORDINAL_OF(distinct_vertices, MV_OFFSET(distinct_vertices, 1)) AS i, COUNT(*) FROM {c} "
        "GROUP BY 1",
    ),
    (
        "mv_overlap_contains",
        "SELECT COUNT(*) FROM {c} WHERE MV_OVERLAP(distinct_vertices, ARRAY['a', 'b']) "
        "OR MV_CONTAINS(distinct_vertices, MV_OFFSET(distinct_vertices, 0))",
    ),
    ("mv_slice", "SELECT MV_TO_STRING(MV_SLICE(distinct_vertices, 0, 2), '|'), COUNT(*) FROM {c} GROUP BY 1"),
    ("mv_to_array", "SELECT ARRAY_LENGTH(MV_TO_ARRAY(distinct_vertices)) AS n, COUNT(*) FROM {c} GROUP BY 1"),
    (
        "array_functions",
        "SELECT ARRAY_TO_STRING(ARRAY_CONCAT(ARRAY['a'], ARRAY['b', 'c']), '-') FROM {c} LIMIT 1",
    ),
    (
        "array_scalars",
        "SELECT ARRAY_CONTAINS(ARRAY[1, 2, 3], 2), ARRAY_OFFSET(ARRAY[10, 20], 1), "
        "ARRAY_ORDINAL_OF(ARRAY['x', 'y'], 'y'), ARRAY_APPEND(ARRAY[1], 2), SCALAR_IN_ARRAY(2, ARRAY[1, 2])",
    ),
    ("string_to_mv", "SELECT STRING_TO_MV('a,b,c', ','), STRING_TO_ARRAY('a,b', ',')"),
    (
        "string_case_length",
        "SELECT UPPER(vertex_name), LOWER(vertex_name), CHAR_LENGTH(vertex_name), STRLEN(vertex_name) "
        "FROM {v} LIMIT 5",
    ),
    (
        "concat",
        "SELECT CONCAT(caseid, '-', vertex_name), TEXTCAT(caseid, '!'), caseid || '?' FROM {v} LIMIT 3",
    ),
    (
        "contains_string",
        "SELECT COUNT(*) FROM {v} WHERE CONTAINS_STRING(vertex_name, 'Order') "
        "OR ICONTAINS_STRING(vertex_name, 'invoice')",
    ),
    (
        "regexp",
        "SELECT REGEXP_EXTRACT(caseid, '[0-9]+'), REGEXP_LIKE(caseid, '^P'), "
        "REGEXP_REPLACE(caseid, '[0-9]', '#') FROM {c} LIMIT 3",
    ),
    (
        "pad_and_slice",
        "SELECT LPAD(caseid, 12, '*'), RPAD(caseid, 12), LEFT(caseid, 2), RIGHT(caseid, 3), "
        "SUBSTRING(caseid, 1, 2), REVERSE(caseid), REPEAT('x', 2) FROM {c} LIMIT 2",
    ),
    (
        "trim_and_position",
        "SELECT TRIM(BOTH ' ' FROM '  x  '), LTRIM('  x'), RTRIM('x  '), BTRIM('xxaxx', 'x'), "
        "POSITION('O' IN 'PO'), STRPOS(caseid, '-'), REPLACE(caseid, '-', '_') FROM {c} LIMIT 1",
    ),
    (
        "other_scalars",
        "SELECT PARSE_LONG('42'), NVL(NULL, 1), COALESCE(NULL, 'a'), NULLIF(1, 1), "
        "CASE WHEN 1 > 0 THEN 'y' ELSE 'n' END",
    ),
    (
        "numeric",
        "SELECT ABS(-1), CEIL(1.2), FLOOR(1.8), EXP(0), LN(1), LOG10(100), POWER(2, 10), SQRT(16), "
        "ROUND(2.567, 2), TRUNCATE(2.567, 1), MOD(7, 3), DIV(7, 2), SAFE_DIVIDE(1, 0)",
    ),
    (
        "reduction_and_bits",
        "SELECT GREATEST(1, 2, 3), LEAST('a', 'b'), BITWISE_AND(12, 10), BITWISE_OR(12, 10), "
        "BITWISE_XOR(12, 10), BITWISE_SHIFT_LEFT(1, 4)",
    ),
    ("trigonometry", "SELECT SIN(0), COS(0), TAN(0), ATAN2(1, 1), DEGREES(1), RADIANS(180)"),
    (
        "casts",
        "SELECT CAST(duration AS DOUBLE) / 1000, CAST(caseid AS VARCHAR), CAST('12' AS BIGINT), "
        "CAST(__time AS DATE) FROM {c} LIMIT 2",
    ),
    ("ip", "SELECT IPV4_PARSE('192.168.0.1'), IPV4_STRINGIFY(3232235521)"),
    ("json", "SELECT JSON_VALUE(PARSE_JSON('{{\"a\": 1}}'), '$.a'), TO_JSON_STRING(ARRAY[1, 2])"),
    (
        "inner_join",
        "SELECT c.caseid, COUNT(v.vertex_name) FROM {c} c INNER JOIN {v} v ON c.caseid = v.caseid "
        "GROUP BY 1 ORDER BY 2 DESC LIMIT 5",
    ),
    (
        "left_join",
        "SELECT c.caseid, e.duration FROM {c} c LEFT JOIN {e} e ON c.caseid = e.caseid "
        "AND e.destination_vertex_name = 'END' LIMIT 3",
    ),
    (
        "in_subquery",
        "SELECT COUNT(*) FROM {c} WHERE caseid IN "
        "(SELECT caseid FROM {v} WHERE total_occurences_by_caseid > 1)",
    ),
    ("rework_per_task", "SELECT vertex_name, COUNT(*) FROM {v} GROUP BY 1 ORDER BY 2 DESC"),
    (
        "cte",
        "WITH t AS (SELECT caseid, COUNT(*) AS n FROM {v} GROUP BY 1) SELECT n, COUNT(*) FROM t GROUP BY 1 "
        "ORDER BY 1",
    ),
    (
        "order_over_aggregate_subquery",
        "SELECT * FROM (SELECT processkey, COUNT(*) AS n FROM {c} GROUP BY 1) ORDER BY n DESC LIMIT 3",
    ),
    (
        "grouping_sets",
        "SELECT supplier_lpkr, company_code_lpkr, COUNT(*) FROM {c} "
        "GROUP BY GROUPING SETS ((supplier_lpkr), (company_code_lpkr), ())",
    ),
    ("rollup", "SELECT supplier_lpkr, COUNT(*) FROM {c} GROUP BY ROLLUP (supplier_lpkr)"),
    (
        "cube_grouping",
        "SELECT company_code_lpkr, purchasing_group_lpkr, GROUPING(company_code_lpkr), COUNT(*) FROM {c} "
        "GROUP BY CUBE (company_code_lpkr, purchasing_group_lpkr)",
    ),
    ("union_all", "SELECT 'cases' AS t, COUNT(*) FROM {c} UNION ALL SELECT 'events', COUNT(*) FROM {v}"),
    ("scan_by_time", "SELECT caseid, duration FROM {c} ORDER BY __time DESC LIMIT 5"),
    (
        "scalar_subquery",
        "SELECT __time, caseid FROM {v} WHERE caseid = (SELECT caseid FROM {c} ORDER BY __time LIMIT 1) "
        "ORDER BY __time",
    ),
    (
        "filtered_aggregates",
        "SELECT COUNT(*) FILTER (WHERE rework > 0), SUM(duration) FILTER (WHERE is_predicted = 1) FROM {c}",
    ),
    (
        "duration_buckets",
        "SELECT FLOOR(duration / 3600000) AS bucket, COUNT(*) FROM {c} GROUP BY 1 ORDER BY 1",
    ),
    (
        "variance",
        "SELECT STDDEV(duration), VARIANCE(duration), VAR_POP(duration), STDDEV_SAMP(duration) FROM {c}",
    ),
    ("any_value", "SELECT ANY_VALUE(caseid), BIT_OR(tasks_count) FROM {c}"),
    (
        "information_schema_tables",
        "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'druid' "
        "AND TABLE_NAME LIKE '{pid}%' ORDER BY 1",
    ),
    (
        "information_schema_columns",
        "SELECT COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = '{pid}_edge' "
        "ORDER BY ORDINAL_POSITION",
    ),
    (
        "predicates",
        "SELECT COUNT(*) FROM {c} WHERE caseid LIKE '%0%' AND duration BETWEEN 0 AND 1e12 "
        "AND caseid IS NOT NULL AND is_predicted = 0",
    ),
    ("values", "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t (x, y)"),
    ("offset", "SELECT caseid FROM {c} WHERE duration > 0 LIMIT 3 OFFSET 1"),
    (
        "having",
        "SELECT vertex_name, SUM(duration) / COUNT(*) AS mean FROM {v} GROUP BY vertex_name "
        "HAVING COUNT(*) > 1 ORDER BY mean DESC",
    ),
    # Druid 33 answers these (found by tests/druid/test_corpus.py; the stand-in refused them before)
    ("non_equi_join", "SELECT COUNT(*) FROM {c} c JOIN {v} v ON c.__time < v.__time"),
    ("not_equals_join", "SELECT COUNT(*) FROM {c} c JOIN {v} v ON c.caseid <> v.caseid"),
    (
        "or_join",
        "SELECT COUNT(*) FROM {c} c JOIN {v} v ON c.caseid = v.caseid OR c.processkey = v.processkey",
    ),
    ("union_distinct", "SELECT caseid FROM {c} UNION SELECT caseid FROM {v}"),
    ("slashes_start_a_comment", "SELECT 7 // 2\n, 3"),
    ("escape_string", "SELECT E'a\\nb', E'it''s \\u0041\\x41\\101\\q'"),
    # the stand-in answers these, Druid 33 refuses them (pinned by tests/druid/test_known_differences.py)
    ("min_of_string", "SELECT MIN(caseid), MAX(caseid) FROM {c}"),
    (
        "start_activities",
        "SELECT destination_vertex_name, COUNT(*) FROM {e} WHERE source_vertex_name = 'START' GROUP BY 1",
    ),
    (
        "window_without_context",
        "SELECT caseid, ROW_NUMBER() OVER (ORDER BY duration) FROM {c} GROUP BY caseid, duration",
    ),
    (
        "lag_lead_over_a_scan",
        "SELECT caseid, vertex_name, LAG(vertex_name) OVER (PARTITION BY caseid ORDER BY __time, enddate), "
        "LEAD(vertex_name) OVER (PARTITION BY caseid ORDER BY __time, enddate) FROM {v} "
        "WHERE caseid < 'PO-00050'",
    ),
]

REFUSED: list[tuple[str, str]] = [
    # a flag is a BIGINT 1/0 (as Druid ingests a boolean): Calcite wants a condition, DuckDB would cast
    ("not_of_a_flag_condition", "SELECT COUNT(*) FROM {c} WHERE NOT is_predicted"),
    ("where_flag_condition", "SELECT COUNT(*) FROM {c} WHERE is_predicted"),
    ("filter_flag_condition", "SELECT COUNT(*) FILTER (WHERE is_predicted) FROM {c}"),
    ("and_flag_condition", "SELECT COUNT(*) FROM {c} WHERE is_predicted AND rework > 0"),
    ("star_exclude", "SELECT * EXCLUDE (caseid) FROM {c} LIMIT 1"),
    ("star_replace", "SELECT * REPLACE (1 AS caseid) FROM {c} LIMIT 1"),
    ("double_colon_cast", "SELECT duration::VARCHAR FROM {c} LIMIT 1"),
    ("strftime", "SELECT strftime(__time, '%Y') FROM {c} LIMIT 1"),
    ("epoch_ms", "SELECT epoch_ms(enddate) FROM {c} LIMIT 1"),
    ("regexp_matches", "SELECT regexp_matches(caseid, 'PO') FROM {c} LIMIT 1"),
    ("list_value", "SELECT list_value(1, 2)"),
    ("list_literal", "SELECT [1, 2, 3]"),
    ("median", "SELECT MEDIAN(duration) FROM {c}"),
    ("percentile_cont", "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY duration) FROM {c}"),
    ("quantile_cont", "SELECT QUANTILE_CONT(duration, 0.5) FROM {c}"),
    ("using_sample", "SELECT COUNT(*) FROM {c} USING SAMPLE 10"),
    ("distinct_on", "SELECT DISTINCT ON (processkey) processkey, caseid FROM {c}"),
    ("arg_max", "SELECT arg_max(caseid, duration) FROM {c}"),
    ("mode", "SELECT mode(processkey) FROM {c}"),
    ("list_aggregate", "SELECT list(caseid) FROM {c}"),
    ("table_function_range", "SELECT * FROM range(10)"),
    ("quoted_current_setting", "SELECT \"current_setting\"('memory_limit')"),
    ("qualified_version", 'SELECT main."version"()'),
    ("quoted_range", 'SELECT len("range"(0, 10000000))'),
    ("unicode_escaped_name", 'SELECT U&"\\0076ersion"()'),
    ("quoted_version", 'SELECT "version"()'),
    ("quoted_setseed", 'SELECT "setseed"(0.5)'),
    ("quoted_getvariable", "SELECT \"getvariable\"('x')"),
    ("order_scan_by_column", "SELECT caseid FROM {c} ORDER BY caseid LIMIT 5"),
    ("order_scan_by_metric", "SELECT caseid, duration FROM {c} ORDER BY duration DESC LIMIT 5"),
    ("order_scan_by_alias", "SELECT LOWER(caseid) AS l FROM {c} ORDER BY l LIMIT 2"),
    ("reserved_word_alias", "SELECT TIME_EXTRACT(__time, 'HOUR') AS hour, COUNT(*) FROM {v} GROUP BY 1"),
    ("intersect", "SELECT caseid FROM {c} INTERSECT SELECT caseid FROM {v}"),
    ("except", "SELECT caseid FROM {c} EXCEPT SELECT caseid FROM {v}"),
    ("try_cast", "SELECT TRY_CAST(duration AS INTEGER) FROM {c} LIMIT 1"),
    ("cast_hugeint", "SELECT CAST(duration AS HUGEINT) FROM {c} LIMIT 1"),
    ("cast_text", "SELECT CAST(caseid AS TEXT) FROM {c} LIMIT 1"),
    ("struct_literal", "SELECT {{'a': 1}}"),
    ("ilike", "SELECT COUNT(*) FROM {c} WHERE caseid ILIKE 'po%'"),
    ("qualify", "SELECT caseid FROM {c} QUALIFY 1 = 1"),
    ("power_operator", "SELECT 2 ** 3"),
    ("lambda", "SELECT list_transform(ARRAY[1, 2], x -> x + 1)"),
    ("group_by_all", "SELECT caseid, COUNT(*) FROM {c} GROUP BY ALL"),
    ("order_by_all", "SELECT caseid, COUNT(*) FROM {c} GROUP BY caseid ORDER BY ALL"),
    ("now", "SELECT now()"),
    ("today", "SELECT today()"),
    ("current_database", "SELECT current_database()"),
    ("generate_series", "SELECT generate_series(1, 3)"),
    ("unnest_list_literal", "SELECT unnest([1, 2])"),
    ("string_split", "SELECT string_split(caseid, '-') FROM {c} LIMIT 1"),
    ("date_part", "SELECT date_part('year', __time) FROM {c} LIMIT 1"),
    ("age", "SELECT age(__time) FROM {c} LIMIT 1"),
    ("to_timestamp", "SELECT to_timestamp(enddate / 1000) FROM {c} LIMIT 1"),
    ("make_date", "SELECT make_date(2024, 1, 1)"),
    ("struct_pack", "SELECT struct_pack(a := 1)"),
    ("typeof", "SELECT typeof(caseid) FROM {c} LIMIT 1"),
    ("regex_operator", "SELECT caseid FROM {c} WHERE caseid ~ 'PO' LIMIT 1"),
    ("dollar_parameter", "SELECT caseid FROM {c} WHERE caseid = $1"),
    ("string_agg_order_by", "SELECT STRING_AGG(caseid, ',' ORDER BY caseid) FROM {c}"),
    ("read_csv", "SELECT COUNT(*) FROM read_csv('/etc/passwd')"),
    ("tablesample", "SELECT COUNT(*) FROM {c} TABLESAMPLE BERNOULLI (10)"),
    (
        "asof_join",
        "SELECT c.caseid FROM {c} c ASOF JOIN {v} v ON c.caseid = v.caseid AND c.__time >= v.__time",
    ),
    ("positional_join", "SELECT c.caseid FROM {c} c POSITIONAL JOIN {v} v"),
    ("semi_join", "SELECT c.caseid FROM {c} c SEMI JOIN {v} v ON c.caseid = v.caseid"),
    ("misspelt_column", "SELECT durration FROM {c} LIMIT 1"),
    ("column_in_other_case", "SELECT CASEID FROM {c} LIMIT 1"),
    ("unknown_table", "SELECT COUNT(*) FROM nosuchtable"),
    ("interval_number", "SELECT INTERVAL 1 DAY"),
    ("interval_in_string", "SELECT INTERVAL '1 day'"),
    ("hex_string", "SELECT x'00'"),
    ("levenshtein", "SELECT levenshtein(caseid, 'PO') FROM {c} LIMIT 1"),
    ("median_filtered", "SELECT median(duration) FILTER (WHERE duration > 0) FROM {c}"),
    ("histogram", "SELECT histogram(processkey) FROM {c}"),
    ("columns_expression", "SELECT COLUMNS('c.*') FROM {c} LIMIT 1"),
    ("from_first", "FROM {c} SELECT caseid"),
    ("pivot", "PIVOT {c} ON processkey USING COUNT(*)"),
    ("deep_nesting", "SELECT " + "(" * 1500 + "1" + ")" * 1500),
    ("deep_case", "SELECT " + "CASE WHEN 1 = 1 THEN " * 5000 + "1" + " END" * 5000),
    ("deep_subqueries", "SELECT * FROM (" * 3000 + "SELECT caseid FROM {c}" + ")" * 3000),
]
