"""The one Python → wire classifier of ``?`` parameter values, shared by every transport.

:func:`classify` turns a Python value into a :class:`Param`: a Druid SQL type and a canonical value. Each
transport only renders that pair in its own encoding (a Druid SQL ``{"type", "value"}`` object, an Avatica
``TypedValue``, a JDBC setter), so a value means the same on every transport or is refused by all of them with
the same :class:`~pm_notebook.errors.ConfigurationError` (a ``ValueError``).

The contract (Python value → Druid type):

- ``None``, ``pd.NaT``, ``pd.NA``, ``np.datetime64("NaT", unit)`` → ``NULL``: these *are* missing values.
- ``bool``, ``np.bool_`` → ``BOOLEAN``.
- ``int``, numpy integers → ``BIGINT``; outside the signed 64-bit range: refused.
- ``float``, numpy floats → ``DOUBLE``; NaN and ±inf: refused (Druid's wire carries finite doubles only, and
  NULL would be a silent lie). A zero's sign is not kept everywhere (the JDBC driver reads -0.0 as 0.0).
- ``decimal.Decimal`` → ``DOUBLE`` (Druid has no DECIMAL type; digits beyond a double's 17 are lost, as in
  Druid itself); NaN, ±inf and values beyond the double range (``Decimal("1e400")``): refused.
- ``str`` → ``VARCHAR``; text that is not valid Unicode (a lone surrogate): refused.
- ``datetime``, ``pd.Timestamp``, ``np.datetime64`` → ``TIMESTAMP``, milliseconds since 1970 UTC. A naive
  value is read as UTC (every query runs with ``sqlTimeZone`` UTC and the JVM in UTC), an aware one is
  converted to UTC; digits below the millisecond are cut (floor), as Druid keeps milliseconds.
- ``date`` → ``DATE``, days since 1970-01-01.
- ``bytes``, lists/tuples (arrays), ``timedelta`` and anything else: refused, with a hint (text; one ``?`` per
  array element).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

__all__ = ["Param", "check_params", "classify"]

_INT64 = (-(1 << 63), (1 << 63) - 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_UTC = dt.timezone.utc
_MS = dt.timedelta(milliseconds=1)


@dataclass(frozen=True)
class Param:
    """A classified parameter: a Druid SQL type and its canonical value.

    ``NULL`` → ``None``; ``BOOLEAN`` → bool; ``BIGINT`` → int (64-bit); ``DOUBLE`` → finite float;
    ``VARCHAR`` → str; ``TIMESTAMP`` → int ms since 1970-01-01 UTC; ``DATE`` → int days since 1970-01-01.
    """

    type: str
    value: Any

    def iso(self) -> str | None:
        """The value as Druid SQL text: ``2015-09-12 10:20:30.123`` (TIMESTAMP), ``2015-09-12`` (DATE)."""
        if self.type == "TIMESTAMP":
            moment: dt.datetime = _EPOCH + int(self.value) * _MS
            return moment.isoformat(sep=" ", timespec="milliseconds")
        if self.type == "DATE":
            day: dt.date = _EPOCH_DATE + dt.timedelta(days=int(self.value))
            return day.isoformat()
        return None


def _refuse(index: int | None, value: Any, why: str, hint: str) -> ConfigurationError:
    where = f"Parameter {index}" if index is not None else "A parameter"
    shown = f"{type(value).__name__} {value!r:.40}"
    return ConfigurationError(f"{where} ({shown}) cannot be sent to SQL: {why}.", hint=hint)


def _numpy_value(value: Any, index: int | None) -> Any:
    """A numpy scalar as the Python value it stands for (datetime64 → epoch ms ``Param`` or NULL)."""
    import numpy as np

    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return Param("NULL", None)
        return Param("TIMESTAMP", int(value.astype("datetime64[ms]").astype(np.int64)))
    if isinstance(value, np.timedelta64):
        raise _refuse(index, value, "durations have no SQL parameter type", "Pass a number of seconds or ms.")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _timestamp(value: dt.datetime) -> Param:
    if value.tzinfo is not None and value.utcoffset() is not None:
        value = value.astimezone(_UTC).replace(tzinfo=None)
    else:
        value = value.replace(tzinfo=None)
    return Param("TIMESTAMP", (value - _EPOCH) // _MS)


def _text(value: str, index: int | None) -> Param:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(
            index, value, "it is not valid Unicode (a lone surrogate)", "Decode the text properly."
        ) from None
    return Param("VARCHAR", str(value))


def classify(value: Any, index: int | None = None) -> Param:
    """The :class:`Param` for *value* (a ``Param`` is returned as it is).

    :param index: the 1-based position of the ``?``, for messages.
    :raises ConfigurationError: the value has no SQL parameter form (see the module's table).
    """
    if isinstance(value, Param):
        return value
    if type(value) is str:  # the common case first (a filter's list of ids: thousands per statement)
        return _text(value, index)
    module = type(value).__module__
    if module == "numpy":
        value = _numpy_value(value, index)
        if isinstance(value, Param):
            return value
    elif module.startswith("pandas"):
        pd = sys.modules["pandas"]
        if value is pd.NaT or value is pd.NA:
            return Param("NULL", None)
    if value is None:
        return Param("NULL", None)
    if isinstance(value, bool):  # before int: a bool is an int
        return Param("BOOLEAN", value)
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise _refuse(
                index, value, "it is outside BIGINT's signed 64-bit range", "Pass it as a str or a float."
            )
        return Param("BIGINT", int(value))
    if isinstance(value, float | decimal.Decimal):
        try:
            number = float(value)
        except (OverflowError, ValueError):  # a Decimal NaN with a payload, sNaN
            number = math.nan
        if not math.isfinite(number):
            what = "not a number" if math.isnan(number) else "infinite or beyond the DOUBLE range"
            raise _refuse(
                index,
                value,
                f"it is {what} (Druid's wire carries finite doubles only)",
                "Filter such values out, or pass None for SQL NULL.",
            )
        return Param("DOUBLE", number)
    if isinstance(value, str):  # a str subclass (numpy's str_ is handled above)
        return _text(value, index)
    if isinstance(value, dt.datetime):  # before date: a datetime is a date
        return _timestamp(value)
    if isinstance(value, dt.date):
        return Param("DATE", (value - _EPOCH_DATE).days)
    if isinstance(value, bytes | bytearray | memoryview):
        raise _refuse(
            index, value, "Druid SQL has no binary parameter type", "Decode it to text (or base64) first."
        )
    if isinstance(value, list | tuple):
        raise _refuse(
            index,
            value,
            "array parameters are not supported",
            "Write one ? per element: `IN (?, ?, ?)` or `ARRAY[?, ?]`, and pass the elements.",
        )
    raise _refuse(
        index,
        value,
        "SQL parameters carry str, int, float, Decimal, bool, date, datetime or None",
        "Convert the value to one of those types.",
    )


def check_params(params: Any) -> list[Param]:
    """Classify the values for ``?`` placeholders: a list/tuple of values (``None`` means no parameters).

    :raises ConfigurationError: for a non-sequence, or a value SQL parameters cannot carry.
    """
    if params is None:
        return []
    if isinstance(params, str | bytes | dict) or not isinstance(params, Sequence):
        raise ConfigurationError(
            f"params must be a list or tuple of values for the ? placeholders, got {type(params).__name__}.",
            hint="Write `WHERE caseid = ?` and pass params=['case-1'].",
        )
    return [classify(value, i) for i, value in enumerate(params, start=1)]
