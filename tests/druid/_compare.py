"""Row-for-row comparison of two answers to one statement: the stand-in's and Druid's."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

# the relative tolerance of exact floating-point answers (sums and averages may add in another order)
FLOAT_RTOL = 1e-9
_ORDER_BY = re.compile(r"\bORDER\s+BY\b[^()]*$", re.IGNORECASE | re.DOTALL)
_LIMIT = re.compile(r"\bLIMIT\s+\d+\s*$", re.IGNORECASE)


def ordered(sql: str) -> bool:
    """Whether the statement orders its outermost result (an ORDER BY outside every parenthesis)."""
    depth, top = 0, []
    for ch in sql:
        depth += ch == "("
        depth -= ch == ")"
        top.append(ch if depth == 0 else " ")
    return bool(_ORDER_BY.search("".join(top)))


def limited_without_order(sql: str) -> bool:
    """A LIMIT with no outer ORDER BY picks engine-dependent rows: only the row count can be compared."""
    return bool(_LIMIT.search(sql.strip())) and not ordered(sql)


def _cell(value: Any) -> Any:
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float | np.floating):
        if math.isnan(value):
            return None
        return float(f"{float(value):.12g}")
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray | list | tuple):
        return tuple(_cell(v) for v in value)
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if value is pd.NA:
        return None
    return value


def rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [tuple(_cell(v) for v in row) for row in frame.itertuples(index=False, name=None)]


def differences(sql: str, standin: pd.DataFrame, druid: pd.DataFrame) -> list[str]:
    """What differs between the two answers (empty: the same answer)."""
    out = []
    if list(standin.columns) != list(druid.columns):
        return [f"columns: stand-in {list(standin.columns)} vs Druid {list(druid.columns)}"]
    for name in standin.columns:
        if str(standin[name].dtype) != str(druid[name].dtype):
            out.append(f"dtype of {name!r}: stand-in {standin[name].dtype} vs Druid {druid[name].dtype}")
    if len(standin) != len(druid):
        return [*out, f"rows: stand-in {len(standin)} vs Druid {len(druid)}"]
    if limited_without_order(sql):
        return out
    a, b = rows(standin), rows(druid)
    if not ordered(sql):
        a, b = sorted(a, key=repr), sorted(b, key=repr)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            out.append(f"row {i}: stand-in {x} vs Druid {y}")
            if len(out) > 5:
                break
    return out
