"""Known differences between the stand-in and Druid 33 (docs/druid-dialect.md, "Known differences from Druid
33"), pinned on both sides: each test asserts what the stand-in answers and what Druid answers, so it fails as
soon as either side changes (then fix the stand-in, or update the record)."""

from __future__ import annotations

import pandas as pd
import pytest
import test_corpus
from test_corpus import CORPUS, KNOWN, KNOWN_REFUSALS, assert_quantile_close, refusal

from pm_notebook.errors import QueryError

fmt = test_corpus.fmt  # the fixtures: fill a corpus statement's table names; post to both sides
post_both = test_corpus.post_both

STATEMENTS = dict(CORPUS.VALID + CORPUS.REFUSED)


def _both(standin_conn, druid_conn, fmt, name):
    statement = fmt(STATEMENTS[name])
    return statement, standin_conn.query(statement, transport="druid"), druid_conn


def test_every_known_difference_is_pinned():
    pinned = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert pinned >= KNOWN


def test_mv_group_unnests(standin_conn, druid_conn, fmt):
    # The loader publishes distinct_vertices as ARRAY<STRING>; the stand-in models a multi-value string, whose
    # GROUP BY unnests. Oracle: the per-task case counts from the task table.
    statement, ours, druid = _both(standin_conn, druid_conn, fmt, "mv_group_unnests")
    per_task = standin_conn.query(
        fmt("SELECT vertex_name, COUNT(DISTINCT caseid) AS n FROM {v} GROUP BY 1"), transport="druid"
    )
    assert str(ours["distinct_vertices"].dtype) == "string"
    assert dict(zip(ours.iloc[:, 0], ours.iloc[:, 1], strict=True)) == dict(
        zip(per_task["vertex_name"], per_task["n"], strict=True)
    )
    theirs = druid.query(statement, transport="druid")
    assert str(theirs["distinct_vertices"].dtype) == "object"
    assert all(isinstance(v, list | tuple) or hasattr(v, "__len__") for v in theirs["distinct_vertices"])
    cases = int(standin_conn.query(fmt("SELECT COUNT(*) FROM {c}"), transport="druid").iat[0, 0])
    assert int(theirs.iloc[:, 1].sum()) == cases  # one row per distinct whole array


def test_mv_equality(standin_conn, druid_conn, fmt):
    statement, ours, druid = _both(standin_conn, druid_conn, fmt, "mv_equality")
    assert int(ours.iat[0, 0]) == 0
    with pytest.raises(QueryError, match=r"Cannot apply '=' to arguments of type '<VARCHAR ARRAY> = "):
        druid.query(statement, transport="druid")


def test_string_to_mv(standin_conn, druid_conn, fmt):
    # Druid answers STRING_TO_MV as a VARCHAR holding a JSON array; the stand-in as a list.
    statement, ours, druid = _both(standin_conn, druid_conn, fmt, "string_to_mv")
    assert list(ours.iat[0, 0]) == ["a", "b", "c"] and list(ours.iat[0, 1]) == ["a", "b"]
    theirs = druid.query(statement, transport="druid")
    assert str(theirs.dtypes.iloc[0]) == "string" and theirs.iat[0, 0] == '["a","b","c"]'
    assert list(theirs.iat[0, 1]) == ["a", "b"]


def test_ds_get_quantiles(standin_conn, druid_conn, fmt):
    # Druid answers DS_GET_QUANTILES as COMPLEX/OTHER, a string holding a JSON array; the stand-in as a list.
    # Both sides' values are within the sketch's rank error of the exact quartiles.
    statement, ours, druid = _both(standin_conn, druid_conn, fmt, "ds_get_quantiles")
    exact = sorted(
        standin_conn.query(fmt("SELECT duration FROM {c}"), transport="druid").iloc[:, 0].astype(float)
    )
    theirs = druid.query(statement, transport="druid")
    assert str(ours.dtypes.iloc[0]) == "object" and str(theirs.dtypes.iloc[0]) == "string"
    druid_values = [float(x) for x in theirs.iat[0, 0].strip("[]").split(",")]
    for who, values in (("stand-in", list(ours.iat[0, 0])), ("Druid", druid_values)):
        for q, x in zip((0.25, 0.5, 0.75), values, strict=True):
            assert_quantile_close(exact, q, float(x), who)


def test_duration_buckets(standin_conn, druid_conn, fmt):
    # FLOOR of a BIGINT quotient: Druid keeps BIGINT, the stand-in answers DOUBLE; the values are the same.
    statement, ours, druid = _both(standin_conn, druid_conn, fmt, "duration_buckets")
    theirs = druid.query(statement, transport="druid")
    assert str(ours["bucket"].dtype) == "float64" and str(theirs["bucket"].dtype) == "Int64"
    pd.testing.assert_frame_equal(ours.astype({"bucket": "Int64"}), theirs)


def test_variance(standin_conn, druid_conn, fmt):
    # STDDEV/VARIANCE live in Druid's druid-stats extension, which our cluster does not load.
    statement, ours, druid = _both(standin_conn, druid_conn, fmt, "variance")
    durations = (
        standin_conn.query(fmt("SELECT duration FROM {c}"), transport="druid").iloc[:, 0].astype(float)
    )
    expected = [durations.std(ddof=1), durations.var(ddof=1), durations.var(ddof=0), durations.std(ddof=1)]
    assert list(ours.iloc[0]) == pytest.approx(expected, rel=1e-9)
    with pytest.raises(QueryError, match=r"No match found for function signature STDDEV"):
        druid.query(statement, transport="druid")


def test_min_of_string(standin_conn, druid_conn, fmt):
    # Druid 33 aggregates MIN/MAX over numbers only; the stand-in answers the strings' least and greatest.
    statement, ours, druid = _both(standin_conn, druid_conn, fmt, "min_of_string")
    ids = sorted(standin_conn.query(fmt("SELECT caseid FROM {c}"), transport="druid")["caseid"])
    assert [ours.iat[0, 0], ours.iat[0, 1]] == [ids[0], ids[-1]]
    with pytest.raises(QueryError, match=r"Aggregation \[MIN\] does not support type \[STRING\]"):
        druid.query(statement, transport="druid")


def test_array_data_type_in_information_schema(standin_conn, druid_conn, fmt):
    # INFORMATION_SCHEMA.COLUMNS.DATA_TYPE of a string array: Druid 33 answers a bare ARRAY (JDBC type 2003 on
    # both), the stand-in ARRAY<VARCHAR> (found by tests/druid/test_uploaded_log.py).
    statement = fmt(
        "SELECT COLUMN_NAME, DATA_TYPE, JDBC_TYPE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = '{pid}' "
        "AND COLUMN_NAME = 'distinct_vertices'"
    )
    ours = standin_conn.query(statement, transport="druid").values.tolist()
    theirs = druid_conn.query(statement, transport="druid").values.tolist()
    assert (ours, theirs) == (
        [["distinct_vertices", "ARRAY<VARCHAR>", 2003]],
        [["distinct_vertices", "ARRAY", 2003]],
    )


@pytest.mark.parametrize("name", sorted(KNOWN_REFUSALS))
def test_known_refusal_differences(post_both, fmt, name):
    # (HTTP status, error, category, key phrase) of each side, as docs/druid-dialect.md records them
    ours, theirs = post_both(fmt(STATEMENTS[name]))
    druid_side, standin_side = KNOWN_REFUSALS[name]
    assert (refusal(theirs), refusal(ours)) == (druid_side, standin_side)
