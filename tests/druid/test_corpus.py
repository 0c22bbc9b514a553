"""The stand-in's Druid SQL corpus on a real Druid 33 and on the stand-in: the same rows, or the same
refusal."""

from __future__ import annotations

import math
import re

import pytest
import requests
from _cluster import corpus
from _compare import differences

from pm_notebook.errors import QueryError


def _corpus():
    return corpus("druid_corpus")


CORPUS = _corpus()

# Differences recorded in docs/druid-dialect.md ("Known differences from Druid 33"), each pinned on both sides
# by tests/druid/test_known_differences.py; the approximate statements are compared within the sketches' error
# by test_approximate_* below.
KNOWN = {
    "mv_group_unnests",
    "mv_equality",
    "string_to_mv",
    "ds_get_quantiles",
    "duration_buckets",
    "variance",
    "min_of_string",
}
# Refusals whose body differs (HTTP status, `error`, `category` or the message's key phrase), or that one
# side answers: each pinned with both sides' answer in tests/druid/test_known_differences.py.
KNOWN_REFUSALS = {
    "percentile_cont": (
        (500, "druidException", "UNCATEGORIZED", "null"),
        (400, "druidException", "INVALID_INPUT", "No match found for function signature PERCENTILE_CONT"),
    ),
    "tablesample": (
        (
            501,
            "druidException",
            "UNSUPPORTED",
            "Unhandled Query Planning Failure, see broker logs for details",
        ),
        (400, "druidException", "INVALID_INPUT", "Received an unexpected token"),
    ),
    "table_function_range": (
        (400, "druidException", "INVALID_INPUT", "Incorrect syntax near the keyword"),
        (400, "druidException", "INVALID_INPUT", "No match found for function signature range"),
    ),
    "qualified_version": (
        (400, "druidException", "INVALID_INPUT", "No match found for function signature version"),
        (400, "druidException", "INVALID_INPUT", "No match found for function signature main.version"),
    ),
    "quoted_range": (
        (400, "druidException", "INVALID_INPUT", "No match found for function signature range"),
        (400, "druidException", "INVALID_INPUT", "No match found for function signature len"),
    ),
    "unicode_escaped_name": (
        (400, "druidException", "INVALID_INPUT", "No match found for function signature version"),
        (400, "druidException", "INVALID_INPUT", "Received an unexpected token"),
    ),
    "ilike": (
        (400, "druidException", "INVALID_INPUT", "No match found for function signature ILIKE"),
        (400, "druidException", "INVALID_INPUT", "Received an unexpected token"),
    ),
    "qualify": (
        (400, "druidException", "INVALID_INPUT", "QUALIFY expression"),
        (400, "druidException", "INVALID_INPUT", "Received an unexpected token"),
    ),
    "struct_pack": (
        (400, "druidException", "INVALID_INPUT", "Received an unexpected token"),
        (400, "druidException", "INVALID_INPUT", "No match found for function signature struct_pack"),
    ),
    "interval_number": (
        (400, "druidException", "INVALID_INPUT", "Cannot handle literal"),
        (400, "druidException", "INVALID_INPUT", "Received an unexpected token"),
    ),
    "hex_string": (
        (400, "druidException", "INVALID_INPUT", "Cannot handle literal"),
        (400, "druidException", "INVALID_INPUT", "Received an unexpected token"),
    ),
    "from_first": (
        (400, "druidException", "INVALID_INPUT", "Incorrect syntax near the keyword"),
        (400, "druidException", "INVALID_INPUT", "FROM statements are not allowed"),
    ),
    "pivot": (
        (400, "druidException", "INVALID_INPUT", "Non-query expression encountered in illegal context"),
        (400, "druidException", "INVALID_INPUT", "Unexpected"),
    ),
    **{
        name: (
            (400, "druidException", "INVALID_INPUT", ""),  # Calcite's stack overflow: no message
            (400, "druidException", "INVALID_INPUT", "The query is nested too deeply"),
        )
        for name in ("deep_nesting", "deep_case", "deep_subqueries")
    },
}
APPROXIMATE = {"approx_quantile_ds", "quantile_per_edge", "ds_get_quantile", "ds_hll", "hll_union"}


@pytest.fixture(scope="module")
def fmt(sandbox):
    pid = sandbox.workgroups["demo"].project_ids[0]

    def fill(sql: str) -> str:
        return sql.format(
            c=f'"{pid}"',
            v=f'"{pid}_vertex"',
            e=f'"{pid}_edge"',
            vn=f"{pid}_variant_name",
            ex=f"{pid}_excluded_cases",
            pid=pid,
        )

    return fill


SAME_ROWS = [(n, q) for n, q in CORPUS.VALID if n not in KNOWN | APPROXIMATE]
SAME_REFUSAL = [(n, q) for n, q in CORPUS.REFUSED if n not in KNOWN | set(KNOWN_REFUSALS)]


def key_phrase(message: str) -> str:
    """A refusal message's words before its first detail (a name, position, type or number in brackets,
    parentheses or quotes, or a colon): what the two sides must share."""
    return re.split(r"""[\[("':0-9]""", message, maxsplit=1)[0].strip()


def refusal(response: requests.Response) -> tuple[object, ...]:
    """``(HTTP status, error, category, key phrase)`` of a Druid SQL API answer (``(200, None, …)``: rows)."""
    if response.status_code == 200:
        return (200, None, None, None)
    body = response.json()
    return (
        response.status_code,
        body.get("error"),
        body.get("category"),
        key_phrase(body.get("errorMessage") or ""),
    )


@pytest.fixture(scope="module")
def post_both(sandbox, druid_cluster):
    """``post_both(sql)``: the raw Druid SQL API answers of (the stand-in, Druid) to *sql*."""
    demo = sandbox.workgroups["demo"]
    with requests.Session() as http:

        def post(sql: str) -> tuple[requests.Response, requests.Response]:
            ours = http.post(
                sandbox.sql_url + "/druid/v2/sql/",
                json={"query": sql},
                auth=(demo.client_id, demo.client_secret),
                timeout=120,
            )
            theirs = http.post(druid_cluster.broker + "/druid/v2/sql", json={"query": sql}, timeout=120)
            return ours, theirs

        yield post


@pytest.mark.parametrize("sql", [q for _, q in SAME_ROWS], ids=[n for n, _ in SAME_ROWS])
def test_same_rows(standin_conn, druid_conn, fmt, sql):
    statement = fmt(sql)
    ours = standin_conn.query(statement, transport="druid")
    theirs = druid_conn.query(statement, transport="druid")
    assert differences(statement, ours, theirs) == []


@pytest.mark.parametrize("sql", [q for _, q in SAME_REFUSAL], ids=[n for n, _ in SAME_REFUSAL])
def test_same_refusal(standin_conn, druid_conn, post_both, fmt, sql):
    statement = fmt(sql)
    ours, theirs = post_both(statement)
    assert refusal(theirs)[0] != 200, theirs.text
    assert refusal(ours) == refusal(theirs), (ours.text[:300], theirs.text[:300])
    with pytest.raises(QueryError) as theirs_error:
        druid_conn.query(statement, transport="druid")
    with pytest.raises(QueryError) as ours_error:
        standin_conn.query(statement, transport="druid")
    assert type(ours_error.value) is type(theirs_error.value)


# --- approximate functions: each side within the sketch's documented error of the exact answer -----------
# (derivation: docs/druid-dialect.md, "Approximate functions"). The exact answer is computed on the stand-in
# with exact SQL over the same rows.
QUANTILE_RANK_ERROR = (
    0.01725  # DataSketches quantiles sketch, k = 128 (Druid's default): normalized rank error
)
HLL_RELATIVE_ERROR = 3 * 1.04 / math.sqrt(2**12)  # 3 x the HLL RSE at lgK = 12 (DS_HLL's default): 4.9 %

# name -> (q, exact SQL answering (group, value) rows); the statement answers (group, estimate) or (estimate,)
QUANTILES = {
    "approx_quantile_ds": (0.5, "SELECT 'all', duration FROM {c}"),
    "quantile_per_edge": (0.9, "SELECT source_vertex_name, duration FROM {e}"),
    "ds_get_quantile": (0.5, "SELECT 'all', duration FROM {c}"),
}
# name -> exact SQL answering the exact distinct count
DISTINCT_COUNTS = {
    "ds_hll": "SELECT COUNT(DISTINCT caseid) FROM {v}",
    "hll_union": "SELECT COUNT(*) FROM (SELECT caseid AS x FROM {c} UNION SELECT processkey FROM {c})",
}


def rank_interval(values: list[float], x: float) -> tuple[float, float]:
    """The normalized ranks *x* can have among *values*: [share below x, share at or below x]."""
    n = len(values)
    return sum(v < x for v in values) / n, sum(v <= x for v in values) / n


def assert_quantile_close(values: list[float], q: float, x: float, who: str) -> None:
    low, high = rank_interval(values, x)
    assert low - QUANTILE_RANK_ERROR <= q <= high + QUANTILE_RANK_ERROR, (
        f"{who}: {x} has rank [{low:.4f}, {high:.4f}], not within {QUANTILE_RANK_ERROR} of {q}"
    )


@pytest.mark.parametrize("name", sorted(QUANTILES))
def test_approximate_quantiles(standin_conn, druid_conn, fmt, name):
    q, exact_sql = QUANTILES[name]
    statement = fmt(dict(CORPUS.VALID)[name])
    exact = standin_conn.query(fmt(exact_sql), transport="druid")
    groups: dict[str, list[float]] = {}
    for group, value in exact.itertuples(index=False, name=None):
        groups.setdefault(group, []).append(float(value))
    for who, conn in (("stand-in", standin_conn), ("Druid", druid_conn)):
        answer = conn.query(statement, transport="druid")
        answered = [(r[0], r[1]) if len(r) == 2 else ("all", r[0]) for r in answer.itertuples(index=False)]
        assert sorted(g for g, _ in answered) == sorted(groups)
        for group, x in answered:
            assert_quantile_close(sorted(groups[group]), q, float(x), f"{who} {group}")


@pytest.mark.parametrize("name", sorted(DISTINCT_COUNTS))
def test_approximate_distinct_counts(standin_conn, druid_conn, fmt, name):
    exact = int(standin_conn.query(fmt(DISTINCT_COUNTS[name]), transport="druid").iat[0, 0])
    statement = fmt(dict(CORPUS.VALID)[name])
    for conn in (standin_conn, druid_conn):
        estimate = float(conn.query(statement, transport="druid").iat[0, 0])
        assert abs(estimate - exact) <= HLL_RELATIVE_ERROR * exact, (estimate, exact)
