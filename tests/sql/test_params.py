"""The one Python → wire classifier (``pm_notebook.sql.params``), case by case, with no server.

``test_param_contract.py`` drives the same contract through the three transports; these name the cases the
security review found (Decimal NaN and 1e400 sent as NULL, ``pd.NaT`` three ways, bare errors for big ints).
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pandas as pd
import pytest

from pm_notebook.errors import ConfigurationError
from pm_notebook.sql import Param, check_params
from pm_notebook.sql.params import classify

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("value", "param"),
    [
        (None, Param("NULL", None)),
        (pd.NaT, Param("NULL", None)),
        (pd.NA, Param("NULL", None)),
        (np.datetime64("NaT", "ms"), Param("NULL", None)),
        (True, Param("BOOLEAN", True)),
        (np.bool_(False), Param("BOOLEAN", False)),
        ((1 << 63) - 1, Param("BIGINT", (1 << 63) - 1)),
        (-(1 << 63), Param("BIGINT", -(1 << 63))),
        (np.int8(-5), Param("BIGINT", -5)),
        (np.uint64((1 << 63) - 1), Param("BIGINT", (1 << 63) - 1)),
        (1.5, Param("DOUBLE", 1.5)),
        (np.float32(0.5), Param("DOUBLE", 0.5)),
        (decimal.Decimal("12.25"), Param("DOUBLE", 12.25)),
        ("x", Param("VARCHAR", "x")),
        (dt.date(2015, 9, 12), Param("DATE", 16690)),
        (dt.datetime(2015, 9, 12), Param("TIMESTAMP", 1442016000000)),  # naive = UTC
        (
            dt.datetime(2015, 9, 11, 20, tzinfo=dt.timezone(dt.timedelta(hours=-4))),
            Param("TIMESTAMP", 1442016000000),
        ),
        (dt.datetime(1969, 12, 31, 23, 59, 59, 999999), Param("TIMESTAMP", -1)),  # floor to the millisecond
        (pd.Timestamp("2015-09-12 00:00:00.0019999"), Param("TIMESTAMP", 1442016000001)),
        (pd.Timestamp("2015-09-12 02:00", tz="Europe/Paris"), Param("TIMESTAMP", 1442016000000)),
        (np.datetime64("2015-09-12T00:00:00.001"), Param("TIMESTAMP", 1442016000001)),
        (np.datetime64("2015-09-12T00:00:00.001999999", "ns"), Param("TIMESTAMP", 1442016000001)),
    ],
)
def test_values_classify_to_one_druid_type(value, param) -> None:
    assert classify(value) == param
    assert classify(param) is param  # a classified value passes through


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (1 << 63, "outside BIGINT"),
        (-(1 << 63) - 1, "outside BIGINT"),
        (np.uint64((1 << 64) - 1), "outside BIGINT"),
        (float("nan"), "not a number"),
        (float("-inf"), "infinite"),
        (np.float64("nan"), "not a number"),
        (decimal.Decimal("NaN"), "not a number"),
        (decimal.Decimal("sNaN"), "not a number"),
        (decimal.Decimal("1e400"), "beyond the DOUBLE range"),
        (decimal.Decimal("-Infinity"), "infinite"),
        (b"abc", "no binary parameter type"),
        ([1, 2], "array parameters"),
        (("a",), "array parameters"),
        ("\ud800", "not valid Unicode"),
        (dt.timedelta(1), "SQL parameters carry"),
        (np.timedelta64(1, "s"), "durations"),
        ({"a": 1}, "SQL parameters carry"),
    ],
)
def test_values_without_a_druid_type_are_refused_clearly(value, why) -> None:
    with pytest.raises(ConfigurationError, match=why) as raised:
        check_params(["ok", value])
    assert str(raised.value).startswith("Parameter 2 (")
    assert raised.value.hint
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("params", ["abc", b"x", {"a": 1}, 5, object()])
def test_params_must_be_a_sequence(params) -> None:
    with pytest.raises(ConfigurationError, match="list or tuple"):
        check_params(params)


def test_iso_text_of_dates_and_timestamps() -> None:
    assert Param("TIMESTAMP", -1).iso() == "1969-12-31 23:59:59.999"
    assert Param("DATE", -1).iso() == "1969-12-31"
    assert Param("BIGINT", 1).iso() is None
