"""The SQL builders of ``mining/_sql`` and the filters of ``mining/_filters`` with plain values: a schema and
filters in, SQL text and parameters out, no service. (``test_answers.py`` runs the same statements against
the sandbox and checks their results against pandas.)"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from pm_notebook import ConfigurationError, SchemaError
from pm_notebook.mining import Schema
from pm_notebook.mining._filters import (
    CompletedByLookup,
    Condition,
    EndsWith,
    Filters,
    StartedBetween,
    VariantsIn,
    WithActivity,
)
from pm_notebook.mining._sql import cases, conformance, events, rework, stats, variants
from pm_notebook.mining._sql._base import QUANTILE, Statement, period, period_ms, qname, quantile

SHARED = {"__time": "TIMESTAMP", "enddate": "BIGINT", "duration": "BIGINT", "caseid": "VARCHAR"}
SHARED |= {"graphkey": "VARCHAR", "processkey": "VARCHAR"}
COLUMNS = {
    "cases": {**SHARED, "case_version": "VARCHAR", "rework": "BIGINT", "supplier_lpkr": "VARCHAR"},
    "vertex": {
        **SHARED,
        "vertex_name": "VARCHAR",
        "total_occurences_by_caseid": "BIGINT",
        "resource_lpkr": "VARCHAR",
        "detail_3_lpkr_company_code": "VARCHAR",
    },
    "edge": {**SHARED, "source_vertex_name": "VARCHAR", "destination_vertex_name": "VARCHAR"},
}
TABLES = {"cases": "p-1", "vertex": "p-1_vertex", "edge": "p-1_edge"}
EXCLUDED = "LOOKUP(\"case_version\", 'p-1_excluded_cases') IS NULL"


def schema(*lookups: str, cases_columns: dict[str, str] | None = None) -> Schema:
    """The project ``p-1`` with the lookups ``p-1<suffix>`` for each suffix in *lookups*."""
    columns = {**COLUMNS, "cases": cases_columns or COLUMNS["cases"]}
    return Schema("p-1", TABLES, columns, frozenset(f"p-1{s}" for s in lookups))


def placeholders(sql: str) -> int:
    """``?`` outside quoted strings and identifiers."""
    return re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "", sql).count("?")


# --- filters ---------------------------------------------------------------------------------------
def test_no_filter_and_no_lookup_is_no_where_clause() -> None:
    assert Filters().where(schema(), "cases") == ("", ())
    assert Filters().where(schema(), "edge", ("x > ?", (1,))) == (" WHERE x > ?", (1,))


def test_excluded_cases_are_left_out_on_every_table_unless_included() -> None:
    s = schema("_excluded_cases")
    assert Filters().where(s, "cases") == (f" WHERE {EXCLUDED}", ())
    sql, params = Filters().where(s, "vertex")
    assert sql == (
        ' WHERE "caseid" NOT IN (SELECT "caseid" FROM "p-1" '
        "WHERE LOOKUP(\"case_version\", 'p-1_excluded_cases') IS NOT NULL)"
    )
    assert params == ()
    assert Filters(include_excluded=True).where(s, "vertex") == ("", ())


def test_excluded_ids_read_by_the_log_are_a_list_of_values_instead_of_the_subquery() -> None:
    s = schema("_excluded_cases")
    listed = Filters().with_excluded_ids(("c-7", "c'9"))
    assert "c-7" not in repr(listed)  # a log's filters print without the (up to 5,000) ids
    for kind in ("vertex", "edge"):
        sql, params = listed.where(s, kind)
        assert sql == ' WHERE "caseid" NOT IN (?, ?)'
        assert params == ("c-7", "c'9")
        assert not listed.inlines(s, kind)  # a filter, not a subquery Druid inlines
    assert Filters().inlines(s, "vertex")  # the subquery is one
    assert listed.where(s, "cases") == (f" WHERE {EXCLUDED}", ())  # the lookup itself on the cases table
    assert Filters().with_excluded_ids(()).where(s, "vertex") == ("", ())  # none excluded: no condition
    assert listed.with_excluded(True).where(s, "vertex") == ("", ())
    # a case filter's semi-join already leaves the excluded cases out inside its subquery: no list beside it
    sql, params = listed.add(Condition("rework > ?", (2,))).where(s, "vertex")
    assert "NOT IN" not in sql and f"{EXCLUDED})" in sql and params == (2,)


def test_a_part_of_whole_cases_keeps_only_its_own_excluded_ids() -> None:
    listed = Filters().with_excluded_ids(("c-01", "c-05", "c-09", "d-1"))
    assert listed.within("c-03", "c-09").excluded_ids == ("c-05",)
    assert listed.within(None, "c-05").excluded_ids == ("c-01",)
    assert listed.within("c-09", None).excluded_ids == ("c-09", "d-1")
    assert listed.within(None, None) is listed and Filters().within("a", "b").excluded_ids is None
    # the two text orders of the engines disagree past U+D7FF: an id inside by either stays
    astral, private = "\U00010000", "\ue000"  # code points: private < astral; UTF-16 units: astral < private
    odd = Filters().with_excluded_ids((astral, "a"))
    assert odd.within(private, None).excluded_ids == (astral,)
    assert odd.within(None, private).excluded_ids == (astral, "a")


def test_the_excluded_ids_statement_lists_one_more_than_the_limit_and_which_are_current() -> None:
    assert cases.excluded_ids(schema(), 10) is None
    statement = cases.excluded_ids(schema("_excluded_cases"), 10)
    assert statement is not None
    assert statement.sql == (
        'SELECT "caseid" AS "case_id", 1 AS "current" FROM "p-1" '
        "WHERE LOOKUP(\"case_version\", 'p-1_excluded_cases') IS NOT NULL LIMIT 11"
    )
    versioned = cases.excluded_ids(schema("_excluded_cases", ""), 10)
    assert versioned is not None
    assert 'CASE WHEN LOOKUP("case_version", \'p-1\') IS NULL THEN 1 ELSE 0 END AS "current"' in versioned.sql


def test_a_case_filter_becomes_a_semi_join_on_the_task_and_transition_tables() -> None:
    s = schema("_excluded_cases", "")  # "" is the lookup of outdated case versions, named like the project
    f = Filters().add(Condition("rework > ?", (2,)))
    assert f.where(s, "cases") == (
        f" WHERE (rework > ?) AND LOOKUP(\"case_version\", 'p-1') IS NULL AND {EXCLUDED}",
        (2,),
    )
    sql, params = f.where(s, "edge", ('"duration" > ?', (5,)))
    assert sql == (
        ' WHERE "caseid" IN (SELECT "caseid" FROM "p-1" WHERE (rework > ?) '
        f'AND LOOKUP("case_version", \'p-1\') IS NULL AND {EXCLUDED}) AND "duration" > ?'
    )
    assert params == (2, 5)  # in text order: the filter's, then the answer's own


def test_variant_filters_apply_directly_on_every_table() -> None:
    f = Filters(include_excluded=True).add(VariantsIn(("k1", "k2")))
    for kind in ("cases", "vertex", "edge"):
        assert f.where(schema(), kind) == (' WHERE ("processkey" IN (?, ?))', ("k1", "k2"))
    named = VariantsIn(("Variant 1",), by="model").render(schema("_variant_name"), "edge")
    assert named == (
        '("graphkey" IN (?) OR LOOKUP("graphkey", \'p-1_variant_name\') IN (?))',
        ("Variant 1", "Variant 1"),
    )


def test_each_filter_writes_its_cases_table_condition() -> None:
    s = schema()
    start = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    assert StartedBetween(start, None).render(s, "cases") == ('("__time" >= ?)', (start,))
    assert StartedBetween(None, start).render(s, "vertex") is None
    assert WithActivity("Pay").render(s, "cases") == (
        '"caseid" IN (SELECT "caseid" FROM "p-1_vertex" WHERE "vertex_name" = ?)',
        ("Pay",),
    )
    with_list = schema(cases_columns={**COLUMNS["cases"], "distinct_vertices": "ARRAY<STRING>"})
    assert WithActivity("Pay").render(with_list, "cases") == ('MV_CONTAINS("distinct_vertices", ?)', ("Pay",))
    assert CompletedByLookup("p-1_cases_is_completed").render(s, "cases") == (
        "LOOKUP(\"case_version\", 'p-1_cases_is_completed') = 'true'",
        (),
    )
    assert EndsWith(("Pay", "Close")).render(s, "cases") == (
        '"caseid" IN (SELECT "caseid" FROM "p-1_edge" WHERE "destination_vertex_name" = \'END\' '
        'AND "source_vertex_name" IN (?, ?))',
        ("Pay", "Close"),
    )


def test_filters_are_values() -> None:
    base = Filters()
    added = base.add(WithActivity("Pay")).add(Condition("rework > 0"))
    assert base == Filters() and base.describe() == "all cases"
    assert added == Filters((WithActivity("Pay"), Condition("rework > 0")))
    assert (
        added.with_excluded(True).describe()
        == "with activity 'Pay'; where rework > 0; including excluded cases"
    )
    with pytest.raises(AttributeError):
        added.include_excluded = True  # type: ignore[misc]


# --- the builders -------------------------------------------------------------------------------------
FILTERS = [
    Filters(),
    Filters(include_excluded=True),
    Filters().add(Condition("supplier_lpkr = ? AND duration > ?", ("Acme", 9))).add(VariantsIn(("k",))),
    Filters().add(WithActivity("Pay")).add(EndsWith(("Pay",))).add(VariantsIn(("V1",), by="model")),
]


def every_statement(s: Schema, f: Filters) -> list[Statement]:
    return [
        cases.total_cases(s, f),
        *cases.summary(s, f),
        cases.throughput(s, f, None, [0.5]),
        cases.throughput(s, f, "month", [0.1, 0.9]),
        cases.throughput(s, f, "supplier", [0.5]),
        cases.distribution(s, f, "P1D"),
        *cases.cases_over_time(s, f, "P1W"),
        variants.variants(s, f, 5),
        variants.variants(s, f, 5, "model"),
        variants.sequences(s, ["c1", "c2"]),
        stats.node_stats(s, f),
        stats.transitions(s, f),
        stats.bottlenecks(s, f, 3, "p90"),
        rework.rework_by_activity(s, f),
        rework.rework_by_case(s, f, 10),
        rework.rework_by_case(s, f, None),
        variants.variants(s, f, None),
        *conformance.deviations(s, f, [("A", "B")]),
        events.events(s, f),
        events.distinct_values(s, '"vertex_name"', 10_001),
        events.present_values(s, '"vertex_name"', ("A", "B")),
    ]


@pytest.mark.parametrize("filters", FILTERS, ids=["none", "with-excluded", "condition+variant", "mixed"])
def test_every_statement_binds_each_placeholder_and_stays_druid_sql(filters: Filters) -> None:
    s = schema("_excluded_cases", "", "_variant_name")
    for statement in every_statement(s, filters):
        assert placeholders(statement.sql) == len(statement.params), statement.sql
        assert statement.sql.startswith("SELECT ")
        # Druid SQL only: no window functions; joins only as IN (subquery) semi-joins, or a CROSS JOIN
        # that sets a one-row aggregate beside the answer's rows
        assert not re.search(r"\bOVER\b|(?<!CROSS )\bJOIN\b|\bQUANTILE_CONT\b", statement.sql), statement.sql
        for right in statement.sql.split(" CROSS JOIN (")[1:]:
            assert right.startswith('SELECT COUNT(*) AS "'), statement.sql  # one row: a count


def test_the_quantile_function_is_named_in_one_place() -> None:
    assert quantile(0.9, '"duration"') == f'{QUANTILE}("duration", 0.9)'
    assert [qname(q) for q in (0.1, 0.5, 0.999)] == ["p10", "p50", "p99_9"]
    mining = Path(__file__).resolve().parents[2] / "pm_notebook" / "mining"
    naming = [
        p.relative_to(mining).as_posix() for p in mining.rglob("*.py") if "APPROX_QUANTILE" in p.read_text()
    ]
    assert naming == ["_sql/_base.py"]
    statement = cases.throughput(schema(), Filters(), None, [0.25])
    assert f'{QUANTILE}("duration", 0.25) AS "p25"' in statement.sql


def test_node_and_edge_statistics() -> None:
    nodes = stats.node_stats(schema(), Filters())
    assert nodes.sql == (
        'SELECT "vertex_name" AS "activity", COUNT(*) AS "frequency", '
        'SUM(1.0 / "total_occurences_by_caseid") AS "cases", SUM(CASE WHEN "total_occurences_by_caseid" > 1 '
        'THEN 1.0 / "total_occurences_by_caseid" ELSE 0 END) AS "cases_with_rework", '
        'AVG(CAST("duration" AS DOUBLE)) AS "mean", APPROX_QUANTILE_DS("duration", 0.5) AS "median", '
        'APPROX_QUANTILE_DS("duration", 0.9) AS "p90", SUM("duration") AS "total", MIN("duration") AS "min", '
        'MAX("duration") AS "max" FROM "p-1_vertex" GROUP BY "vertex_name" '
        'ORDER BY frequency DESC, "vertex_name"'
    )
    edges = stats.transitions(schema(), Filters())
    assert 'GROUP BY "source_vertex_name", "destination_vertex_name"' in edges.sql
    assert edges.sql.endswith('ORDER BY "frequency" DESC, "source", "target"') and edges.params == ()
    slow = stats.bottlenecks(schema("_excluded_cases"), Filters(), 4, "total")
    assert "\"source_vertex_name\" <> 'START' AND \"destination_vertex_name\" <> 'END'" in slow.sql
    assert slow.sql.endswith('ORDER BY "total" DESC, "source", "target" LIMIT 4')
    frequent = stats.bottlenecks(schema(), Filters(), 4, "p90", min_count=5)
    assert (
        'GROUP BY "source_vertex_name", "destination_vertex_name" HAVING COUNT(*) >= 5 ORDER BY'
        in frequent.sql
    )
    same_columns = [c for c in stats.STATS if f'AS "{c}"' in nodes.sql and f'AS "{c}"' in edges.sql]
    assert same_columns == list(stats.STATS)


def test_case_groupings_and_periods() -> None:
    s = schema()
    assert cases.group_key(s, None) == (None, "", "")
    assert cases.group_key(s, "variant") == ('"processkey"', "variant", "cases DESC, variant")
    assert cases.group_key(s, "week") == ("TIME_FLOOR(\"__time\", 'P1W')", "period", '"period"')
    assert cases.group_key(s, "Supplier") == ('"supplier_lpkr"', "Supplier", 'cases DESC, "Supplier"')
    with pytest.raises(SchemaError, match="dimension 'region'"):
        cases.group_key(s, "region")
    with pytest.raises(ConfigurationError, match="by must be None"):
        cases.group_key(s, " ")
    assert [period(x) for x in ("day", "p2w", "PT1H")] == ["P1D", "P2W", "PT1H"]
    with pytest.raises(ConfigurationError, match="not an ISO-8601 period"):
        period("fortnight")
    assert period_ms("P1W") == 7 * 86_400_000 and period_ms("P1DT1H30M") == 91_800_000
    with pytest.raises(ConfigurationError, match="fixed-length"):
        period_ms("P1M")
    assert '"duration" / 86400000 AS "bucket"' in cases.distribution(s, Filters(), "P1D").sql
    started, finished = cases.cases_over_time(s, Filters().add(Condition("rework > ?", (1,))), "P1M")
    assert "TIME_FLOOR(\"__time\", 'P1M')" in started.sql and started.params == (1,)
    assert "TIME_FLOOR(MILLIS_TO_TIMESTAMP(\"enddate\"), 'P1M')" in finished.sql and finished.params == (1,)


def test_variants_conformance_and_events() -> None:
    named = variants.variants(schema("_variant_name"), Filters(), 3, "model")
    assert 'LOOKUP("graphkey", \'p-1_variant_name\') AS "name"' in named.sql
    total = 'CROSS JOIN (SELECT COUNT(*) AS "total_cases" FROM "p-1") AS "t"'
    assert named.sql.endswith(f'LIMIT 3) AS "v" {total}')
    assert '"name"' not in variants.variants(schema(), Filters(), 3, "model").sql  # no lookup, no names
    seq = variants.sequences(schema(), ["c1", "c2", "c3"])
    assert seq.params == ("c1", "c2", "c3") and '"caseid" IN (?, ?, ?) ORDER BY "__time"' in seq.sql

    pairs, count = conformance.deviations(schema(), Filters(), [("A", "B"), ("B", "C")])
    assert pairs.params == count.params == ("A", "B", "B", "C")
    assert "<> 'START'" in pairs.sql  # START/END transitions are not judged unless allowed mentions them
    with_ends, _ = conformance.deviations(schema(), Filters(), [("START", "A")])
    assert "<> 'START'" not in with_ends.sql

    assert events.dimensions(schema(), "all") == [
        ("resource_lpkr", "org:resource"),
        ("detail_3_lpkr_company_code", "company_code"),
    ]
    assert events.dimensions(schema(), None) == []
    assert events.dimensions(schema(), "company code") == [("detail_3_lpkr_company_code", "company_code")]
    sql = events.events(schema(), Filters(), None).sql
    assert sql == (
        'SELECT "caseid" AS "case:concept:name", "vertex_name" AS "concept:name", '
        'MILLIS_TO_TIMESTAMP("enddate") AS "time:timestamp", "__time" AS "start_timestamp" FROM "p-1_vertex"'
    )


def test_a_missing_column_is_a_schema_error_before_any_filter_is_written() -> None:
    bare = Schema("p-1", TABLES, {**COLUMNS, "vertex": {"caseid": "VARCHAR"}}, frozenset())
    with pytest.raises(SchemaError, match="'activity' role"):
        stats.node_stats(bare, Filters().add(WithActivity("Pay")))
    with pytest.raises(SchemaError, match="'rework' role"):
        rework.rework_by_case(schema(cases_columns=SHARED), Filters(), 10)


# --- the perspectives (issue 28) -----------------------------------------------------------------------
def _new_statements(s: Schema, f: Filters) -> list[Statement]:
    from pm_notebook.mining._sql import controlflow, resources, timing

    res = resources.resource_column(s, None)
    return [
        *resources.resources(s, f, res),
        resources.resources_by_activity(s, f, res),
        *resources.handovers(s, f, res),
        *resources.resource_nodes(s, f, res),
        *resources.resource_edges(s, f, res),
        controlflow.endpoints(s, f),
        controlflow.trace_lengths(s, f),
        controlflow.variant_counts(s, f),
        timing.arrivals(s, f, "P1W"),
        timing.dotted_bins(s, f, "P1D"),
        timing.spectrum(s, f, "A", "B", "P1W"),
        timing.waiting(s, f),
    ]


def _new_filters() -> Filters:
    from pm_notebook.mining._filters import (
        AttributeIn,
        CaseDuration,
        DirectlyFollows,
        EventuallyFollows,
        LastActivity,
        StartsWith,
        TopVariants,
        WithoutActivity,
    )

    return (
        Filters()
        .add(DirectlyFollows("A", "B"))
        .add(EventuallyFollows("A", "C"))
        .add(StartsWith(("A",)))
        .add(LastActivity(("Z", "Y")))
        .add(WithoutActivity("X"))
        .add(CaseDuration(1000, None))
        .add(AttributeIn("company code", ("1000", "2000")))
        .add(TopVariants(("k1", "k2"), 0.8))
    )


@pytest.mark.parametrize("filters", [*FILTERS, _new_filters()], ids=["none", "excl", "cond", "mixed", "new"])
def test_perspective_statements_bind_each_placeholder_and_window_only_the_task_order(
    filters: Filters,
) -> None:
    s = schema("_excluded_cases", "", "_variant_name")
    order = (
        'OVER (PARTITION BY "caseid" ORDER BY "__time", "enddate", COALESCE("vertex_name", \'\'), '
        "COALESCE(\"resource_lpkr\", ''))"
    )
    windowed = 0
    for statement in _new_statements(s, filters):
        assert placeholders(statement.sql) == len(statement.params), statement.sql
        assert statement.sql.startswith("SELECT ")
        assert not re.search(r"\bQUANTILE_CONT\b|COUNT\(DISTINCT", statement.sql), statement.sql
        if statement.windowing:  # handovers' two and the resource map's two edge statements: the task order
            windowed += 1
            overs = len(re.findall(r"\bOVER\b", statement.sql))
            ordered, whole_case = (
                statement.sql.count(order),
                statement.sql.count('OVER (PARTITION BY "caseid")'),
            )
            assert ordered >= 3 and ordered + whole_case == overs, statement.sql
            assert statement.in_parts and "large_subqueries=True" in (statement.refusal_hint or "")
        else:
            assert not re.search(r"\bOVER\b", statement.sql), statement.sql
    assert windowed == 4


@pytest.mark.parametrize("filters", [*FILTERS, _new_filters()], ids=["none", "excl", "cond", "mixed", "new"])
def test_the_interarrival_statement_is_the_one_window_and_asks_for_it(filters: Filters) -> None:
    from pm_notebook.mining._sql import timing

    statement = timing.interarrival(
        schema("_excluded_cases", "", "_variant_name"), filters, "P1M", (0.5, 0.9)
    )
    assert statement.windowing and placeholders(statement.sql) == len(statement.params)
    assert len(re.findall(r"\bOVER\b", statement.sql)) == 1
    assert (
        'LAG(TIMESTAMP_TO_MILLIS("__time")) OVER (PARTITION BY TIME_FLOOR("__time", \'P1M\')' in statement.sql
    )
    assert '"p50", ' in statement.sql and statement.sql.endswith('GROUP BY "period" ORDER BY "period"')
    assert not timing.arrivals(schema(), filters, "P1M").windowing


def test_no_perspective_statement_joins_and_case_counts_are_nested_group_bys() -> None:
    s = schema()
    assert not [st for st in _new_statements(s, Filters()) if re.search(r"(?<!CROSS) JOIN ", st.sql)]
    from pm_notebook.mining._sql import resources

    counted, medians = (st.sql for st in resources.handovers(s, Filters(), '"resource_lpkr"'))
    # the counts: a GROUP BY per pair over a GROUP BY per (pair, case); the medians: one GROUP BY over the
    # window (merged sketches under two GROUP BYs over a window need a third merge buffer on Druid 33)
    assert 'COUNT(*) AS "cases", ' in counted and 'FROM (SELECT "prev_resource" AS "from_resource"' in counted
    assert "SKETCH" not in counted and "QUANTILE" not in counted
    assert 'APPROX_QUANTILE_DS(GREATEST("start_ms" - "prev_end", 0), 0.5) AS "median_wait"' in medians
    assert medians.endswith('WHERE "pos" > 1 GROUP BY "prev_resource", "resource"')
    counts, _ = resources.resources(s, Filters(), '"resource_lpkr"')
    assert 'COUNT(*) AS "cases" FROM (SELECT "resource_lpkr" AS "resource", "caseid"' in counts.sql


def test_new_filters_write_their_cases_table_conditions() -> None:
    s = schema()
    rendered = [f.render(s, "cases") for f in _new_filters().cases]
    sql = [r[0] for r in rendered if r is not None]
    assert '"source_vertex_name" = ? AND "destination_vertex_name" = ?' in sql[0]
    assert "HAVING MIN(CASE WHEN" in sql[1] and rendered[1][1] == ("A", "C", "A", "C")  # type: ignore[index]
    assert "\"source_vertex_name\" = 'START'" in sql[2]
    assert sql[4].startswith("NOT (") and sql[5] == '("duration" >= ?)'
    assert '"detail_3_lpkr_company_code" IN (?, ?)' in sql[6]
    top = _new_filters().cases[-1]
    assert top.render(s, "vertex") == ('"processkey" IN (?, ?)', ("k1", "k2"))  # no subquery on any table
    assert (
        _new_filters().describe().startswith("'A' directly followed by 'B'; 'A' eventually followed by 'C'")
    )


def test_no_resource_column_is_a_schema_error_naming_the_option() -> None:
    from pm_notebook.mining._sql import resources

    bare = Schema("p-1", TABLES, {**COLUMNS, "vertex": {**SHARED, "vertex_name": "VARCHAR"}}, frozenset())
    with pytest.raises(SchemaError, match="no resource column") as err:
        resources.resource_column(bare, None)
    assert "resource=" in (err.value.hint or "")
    assert resources.resource_column(schema(), "company code") == '"detail_3_lpkr_company_code"'


# --- the facts of a statement ----------------------------------------------------------------------------
#: what the log once read back from a statement's text to tell whether Druid inlines a subquery of it (here
#: with the strings blanked, which it did not do): the oracle the facts the builders state are checked against
_INLINED = re.compile(r"\b(?:IN|(?<!CROSS )JOIN) \(SELECT\b", re.IGNORECASE)


def _inlined(sql: str) -> bool:
    return bool(_INLINED.search(re.sub(r"'(?:[^']|'')*'", "''", sql)))


def _single_filters() -> list[Filters]:
    from pm_notebook.mining._filters import (
        AttributeIn,
        CaseDuration,
        DirectlyFollows,
        EventuallyFollows,
        LastActivity,
        StartsWith,
        TopVariants,
        WithoutActivity,
    )

    one = [
        Condition("supplier_lpkr = ?", ("Acme",)),
        Condition("caseid IN (SELECT caseid FROM \"p-1_vertex\" WHERE vertex_name = 'A')"),
        Condition("supplier_lpkr = 'IN (SELECT x'"),  # a string is no subquery
        StartedBetween(dt.datetime(2025, 1, 1, tzinfo=dt.UTC), None),
        VariantsIn(("k",)),
        VariantsIn(("V1",), by="model"),
        WithActivity("Pay"),
        WithoutActivity("X"),
        EndsWith(("Pay",)),
        LastActivity(("Z",)),
        CompletedByLookup("p-1_cases_is_completed"),
        DirectlyFollows("A", "B"),
        EventuallyFollows("A", "C"),
        StartsWith(("A",)),
        CaseDuration(1000, None),
        AttributeIn("company code", ("1000",)),
        AttributeIn("resource", ("r1",), what="resource"),
        TopVariants(("k1",), 0.8),
    ]
    out = [Filters(), Filters(include_excluded=True)]
    out += [Filters(include_excluded=True).add(f) for f in one] + [Filters().add(f) for f in one]
    return [*out, _new_filters(), *FILTERS]


def _driver_statements(s: Schema, f: Filters) -> list[Statement]:
    from pm_notebook.mining._drivers import dimensions, parse_outcome
    from pm_notebook.mining._sql import drivers

    dims = dimensions(s, None)
    out = [drivers.cut_points(s, f, 0.75, [])]
    for text in (
        "slow",
        "rework",
        "with_activity:Pay",
        "where:caseid IN (SELECT caseid FROM x)",
        "where:a > 1",
    ):
        outcome = parse_outcome(text, s)
        fragment = outcome.fragment(s, 5)
        out.append(drivers.value_counts(s, f, fragment, dims, outcome_inlines=outcome.inlines(s)))
    return out


def _compare_and_open_cases_statements(s: Schema, f: Filters) -> list[Statement]:
    from pm_notebook.mining._sql import compare, open_cases

    lookup = s.lookup("_cases_is_completed")
    assert lookup is not None
    completions = [open_cases.Completion(lookup=lookup), open_cases.Completion(end_activities=("Pay", "Z"))]
    return [
        compare.case_stats(s, f, (0.1, 0.5, 0.9)),
        compare.case_groups(s, f),
        compare.wait_bins(s, f),
        open_cases.now(s),
        *(open_cases.open_cases(s, f, c) for c in completions),
        *(open_cases.history(s, f, c) for c in completions),
    ]


@pytest.mark.parametrize(
    "cases_columns",
    [None, {**COLUMNS["cases"], "distinct_vertices": "ARRAY", "all_resource_lpkr": "ARRAY"}],
    ids=["bare-cases", "per-case-lists"],
)
def test_every_statement_states_what_it_reads_and_whether_druid_inlines_a_subquery(cases_columns) -> None:
    """The facts a builder states agree with the statement's text: ``inlines`` exactly where the text has
    a semi-join or join on a subquery, ``reads`` the table after the outer ``FROM``, and ``context`` the key a
    window needs."""
    from pm_notebook.mining._sql import resources, timing

    s = schema("_excluded_cases", "", "_variant_name", "_cases_is_completed", cases_columns=cases_columns)
    assert s.has("cases", "activities") == (cases_columns is not None)
    seen = {True: 0, False: 0}
    for f in _single_filters():
        statements = [
            *every_statement(s, f),
            *_new_statements(s, f),
            *_driver_statements(s, f),
            *_compare_and_open_cases_statements(s, f),
            resources.total_tasks(s, f),
            resources.task_counts(s, f),
            timing.interarrival(s, f, "P1W", (0.5,)),
        ]
        for statement in statements:
            assert statement.inlines == _inlined(statement.sql), (f.describe(), statement.sql)
            seen[statement.inlines] += 1
            assert statement.reads in TABLES, statement.sql
            assert f'FROM "{TABLES[statement.reads]}"' in statement.sql, statement.sql
            assert statement.subquery_limited == (statement.inlines or statement.windowing)
            assert statement.context == ({"enableWindowing": True} if statement.windowing else {})
    assert seen[True] > 100 and seen[False] > 100  # both kinds of statement are checked
