"""The arithmetic corpus (tests/sandbox_sql/arithmetic_corpus.py) replayed on the real Druid 33 broker.

tests/sandbox_sql/test_arithmetic.py proves the stand-in answers each statement with the model's value and
native type; here Druid 33 answers the same statements with the same value and native type (``typesHeader``),
so the stand-in and Druid agree through the model. An integer division by zero fails on both (``/ by zero``).
The SQL type header differs (pinned below; docs/druid-dialect.md, "Known differences from Druid 33").
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from _cluster import corpus


def _corpus():
    return corpus("arithmetic_corpus")


ARITH = _corpus()

# Statements of the corpus on which Druid 33 answers otherwise than the model (and so the stand-in), with what
# Druid answers (a phrase of its JSON answer); docs/druid-dialect.md, "Known differences from Druid 33". The
# test asserts that Druid still answers so and the model still differs: it fails when either side changes.
_MV = '["STRING"]'  # MV_SLICE: a multi-value STRING on Druid, ARRAY<STRING> in the model
_FOLDED_NULL = "Calcite assertion violated: [Cannot add expression of different type to set"
DIFFERENT = {
    **{i: _MV for i in (2, 14, 15, 16, 55, 65, 75, 132, 173, 182)},
    **{i: _FOLDED_NULL for i in (41, 43, 80, 81, 171, 179)},
    74: "types.size >= 1",
    72: "[37.6]",  # the array literal's elements evaluated as doubles: SAFE_DIVIDE(8, -5) is -1.6
    77: "evaluates to an unsupported value [Infinity]",  # 4 / 0.0 in the same way, not "/ by zero"
}


def _post(url: str, sql: str) -> tuple[int, Any]:
    body = {
        "query": sql,
        "resultFormat": "array",
        "header": True,
        "typesHeader": True,
        "sqlTypesHeader": True,
    }
    request = urllib.request.Request(
        f"{url}/druid/v2/sql", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def druid(druid_cluster):
    return lambda sql: _post(druid_cluster.broker, sql)


@pytest.mark.parametrize(
    "case", ARITH.ARITHMETIC_CORPUS, ids=[f"c{i}" for i in range(len(ARITH.ARITHMETIC_CORPUS))]
)
def test_druid_answers_the_arithmetic_corpus_as_the_model(druid, case):
    index = ARITH.ARITHMETIC_CORPUS.index(case)
    if index in DIFFERENT:
        assert DIFFERENT[index] in json.dumps(druid(case.sql)[1])
        with pytest.raises(AssertionError):
            _check(druid, case)
        return
    _check(druid, case)


def _check(druid, case) -> None:
    status, answer = druid(case.sql)
    if case.expected == ARITH.DIVIDE_BY_ZERO:
        assert status >= 400 and "/ by zero" in json.dumps(answer), (status, answer)
        return
    assert status == 200, answer
    names, types, _sql_types, row = answer
    if types[0].startswith("ARRAY") and isinstance(row[0], str):
        row = [json.loads(row[0])]  # the SQL API writes an ARRAY value as JSON text
    assert len(names) == 1 and types == [case.native_type], (case.sql, types)
    assert ARITH.same_answer(case.expected, row[0]), (case.sql, case.expected, row[0])


@pytest.mark.parametrize(
    ("sql", "value", "native", "sql_type"), ARITH.ISSUE_EXAMPLES, ids=[e[0] for e in ARITH.ISSUE_EXAMPLES]
)
def test_issue_examples_and_the_sql_type_header(druid, sql, value, native, sql_type):
    # Druid types integer literals' arithmetic INTEGER and decimal literals' DECIMAL in sqlTypesHeader; the
    # stand-in says BIGINT and DOUBLE (pinned on the stand-in by test_arithmetic.py).
    status, answer = druid(sql)
    assert status == 200, answer
    names, types, sql_types, row = answer
    assert row == [value] and types == [native] and sql_types == [sql_type]
    assert isinstance(row[0], type(value))
