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


def _order_keys(sql: str, columns: list[str]) -> list[int] | None:
    """The result columns the outermost ORDER BY sorts on (``None``: an expression that is not one)."""
    depth, top = 0, []
    for ch in sql:
        depth += ch == "("
        depth -= ch == ")"
        top.append(ch if depth == 0 else " ")
    text = "".join(top)
    found = list(re.finditer(r"\bORDER\s+BY\b", text, re.IGNORECASE))
    if not found:
        return None
    clause = re.split(r"\bLIMIT\b|\bOFFSET\b", text[found[-1].end() :], flags=re.IGNORECASE)[0]
    keys = []
    for item in clause.split(","):
        word = re.sub(r"\s+(ASC|DESC)\s*$", "", item.strip(), flags=re.IGNORECASE).strip().strip('"')
        word = word.rsplit(".", 1)[-1].strip('"')
        if word.isdigit() and 0 < int(word) <= len(columns):
            keys.append(int(word) - 1)
        elif word in columns:
            keys.append(columns.index(word))
        else:
            return None
    return keys


def _tied(sql: str, columns: list[str], a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> list[str]:
    """Ordered answers whose order keys tie: what the statement determines is the key sequence, each tie
    group's rows (as a multiset), and under LIMIT the rows outside the tie cut by the limit (the last key's
    group is only counted)."""
    keys = _order_keys(sql, columns)
    if keys is None:
        return [
            f"row {i}: stand-in {x} vs Druid {y}" for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y
        ]

    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row[k] for k in keys)

    if [key(r) for r in a] != [key(r) for r in b]:
        return [f"order keys: stand-in {[key(r) for r in a]} vs Druid {[key(r) for r in b]}"]
    cut = key(a[-1]) if a and _LIMIT.search(sql.strip()) else object()
    groups: dict[Any, tuple[list[Any], list[Any]]] = {}
    for x, y in zip(a, b, strict=True):
        ours, theirs = groups.setdefault(key(x), ([], []))
        ours.append(x)
        theirs.append(y)
    return [
        f"rows with order key {k}: stand-in {sorted(o, key=repr)} vs Druid {sorted(t, key=repr)}"
        for k, (o, t) in groups.items()
        if k != cut and sorted(o, key=repr) != sorted(t, key=repr)
    ]


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
    if ordered(sql):
        return [*out, *_tied(sql, list(standin.columns), a, b)][:6]
    a, b = sorted(a, key=repr), sorted(b, key=repr)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            out.append(f"row {i}: stand-in {x} vs Druid {y}")
            if len(out) > 5:
                break
    return out
