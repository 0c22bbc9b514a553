"""One value-binding contract on every transport (issue 15, point 2; the table in ``pm_notebook.sql.params``).

Hypothesis draws Python values of every kind a notebook may hold — ints (also beyond 64 bits), floats (NaN,
±inf), Decimals (NaN, 1e400), text, bytes, bools, dates, naive and aware datetimes, ``pd.Timestamp``,
``pd.NaT``, ``None``, numpy scalars (integers of every width, floats, ``bool_``, ``datetime64``), lists and
tuples — and sends each as the ``?`` of ``SELECT ? AS v`` through the sandbox. On ``druid``, ``avatica`` and
``jdbc`` alike, a value either comes back as the value the classifier promised (never NULL unless it *is* a
missing value), or is refused before anything is sent with the same ``ConfigurationError`` message.
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pandas as pd
import pytest
from _sql_transports import TRANSPORTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pm_notebook.errors import ConfigurationError
from pm_notebook.sql import check_params

_EPOCH = pd.Timestamp(0, unit="ms", tz="UTC")
_ZONES = st.builds(dt.timezone, st.builds(dt.timedelta, minutes=st.integers(-14 * 60 + 1, 14 * 60 - 1)))
_DATETIMES = st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30))
_NUMPY_INTS = st.sampled_from(
    [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
)

VALUES = st.one_of(
    st.none(),
    st.just(pd.NaT),
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.integers().filter(lambda i: not -(1 << 63) <= i < 1 << 63)
    | st.sampled_from([1 << 63, -(1 << 63) - 1]),
    st.floats(),  # NaN and ±inf included
    st.decimals(places=None) | st.sampled_from([decimal.Decimal("NaN"), decimal.Decimal("1e400")]),
    st.text(),
    st.binary(max_size=8),
    st.dates(),
    _DATETIMES,
    st.builds(
        lambda d, z: d.replace(tzinfo=z), _DATETIMES.map(lambda d: d.replace(year=max(d.year, 2))), _ZONES
    ),
    st.datetimes(dt.datetime(1700, 1, 1), dt.datetime(2250, 1, 1)).map(pd.Timestamp),
    st.builds(lambda t, n: t(n), _NUMPY_INTS, st.integers(0, 127)),
    st.sampled_from([np.uint64((1 << 64) - 1), np.uint64(1 << 63)]),
    st.floats(width=32).map(np.float32) | st.floats().map(np.float64),
    st.booleans().map(np.bool_),
    st.integers(-(10**14), 10**14).map(lambda ms: np.datetime64(ms, "ms"))
    | st.just(np.datetime64("NaT", "ms")),
    st.lists(st.integers(0, 9), max_size=3) | st.tuples(st.text(max_size=3)),
    st.just({"a": 1}) | st.just(dt.timedelta(seconds=1)) | st.just(dt.time(1, 2)),
)


def _expected(value):
    """What ``SELECT ? AS v`` must give back for *value*, from the classifier's promise."""
    param = check_params([value])[0]
    if param.type == "NULL":
        return None
    if param.type == "TIMESTAMP":
        # in milliseconds: pandas 2's Timedelta(milliseconds=...) is in nanoseconds, within 292 years only
        return _EPOCH + pd.Timedelta(np.timedelta64(param.value, "ms"))
    if param.type == "DATE":
        return pd.Timestamp(dt.date(1970, 1, 1) + dt.timedelta(days=param.value))
    return param.value


def _same(got, want) -> bool:
    if want is None:
        return got is None or got is pd.NA or got is pd.NaT or (isinstance(got, float) and got != got)
    if isinstance(want, pd.Timestamp):
        got = pd.Timestamp(got)
        if want.tzinfo is None:  # DATE columns carry no zone
            got = got.tz_localize(None) if got.tzinfo is not None else got
        return got == want
    if isinstance(want, bool):
        return bool(got) is want and not isinstance(got, str)
    if isinstance(want, float):
        # equal as SQL doubles: -0.0 = 0.0 (the JDBC driver reads a -0.0 answer as 0.0)
        return float(got) == want
    return type(got)(want) == got if not isinstance(got, str) else got == want


@pytest.mark.standin_only(
    "binds each value to a bare SELECT ? AS v, which Druid 33 refuses (Illegal use of dynamic parameter)"
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_value_binds_the_same_on_every_transport(conn, transport) -> None:
    conn.query("SELECT 1 AS warm", transport=transport)
    seen: dict[str, int] = {}

    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(VALUES)
    def check(value) -> None:
        try:
            want = _expected(value)
        except ConfigurationError as refused:
            seen["refused"] = seen.get("refused", 0) + 1
            with pytest.raises(ConfigurationError) as raised:
                conn.query("SELECT ? AS v", [value], transport=transport)
            assert str(raised.value) == str(refused)
            return
        seen[type(want).__name__] = seen.get(type(want).__name__, 0) + 1
        frame = conn.query("SELECT ? AS v", [value], transport=transport)
        assert len(frame) == 1
        got = frame["v"].iloc[0]
        assert _same(got, want), (value, want, got, frame.dtypes["v"])

    check()
    # the draw covers every outcome (derandomized: the same on every run)
    assert set(seen) >= {"refused", "NoneType", "bool", "int", "float", "str", "Timestamp"}, seen
