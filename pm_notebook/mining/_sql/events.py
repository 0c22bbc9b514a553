"""The events of a log with pm4py's column names (``to_pm4py()``, ``iter_events()``), and the distinct values
of a task column (what the filters check the names they are given against)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .._filters import Filters
from .._schema import Schema, quote
from ._base import Statement, placeholders

__all__ = ["dimensions", "distinct_values", "events", "present_values"]


def distinct_values(schema: Schema, column: str, limit: int) -> Statement:
    """At most *limit* distinct values of the task column *column* (quoted) over the whole project, whatever
    the filters (``value``; one row per value: a ``GROUP BY``, no event pulled)."""
    sql = f'SELECT {column} AS "value" FROM {schema.table("vertex")} GROUP BY {column} LIMIT {limit}'
    return Statement(sql, reads="vertex")


def present_values(schema: Schema, column: str, values: tuple[str, ...]) -> Statement:
    """Which of *values* the task column *column* (quoted) holds somewhere in the project (``value``)."""
    sql = (
        f'SELECT {column} AS "value" FROM {schema.table("vertex")} '
        f"WHERE {column} IN ({placeholders(len(values))}) GROUP BY {column}"
    )
    return Statement(sql, values, reads="vertex")


def dimensions(
    schema: Schema, chosen: Iterable[str] | str | None, names: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """``(column, output name)`` of the task dimensions to export: ``"all"`` (every ``*_lpkr`` and
    ``detail_<n>_lpkr_*`` column), ``None`` (none) or the named ones. The output name is the one the log
    was uploaded with when *names* (Druid column → the user's name, from the project's mapping) knows it
    (``org:resource``, ``lifecycle:transition``), else the column without its ``_lpkr`` parts; a plain
    ``resource`` becomes pm4py's ``org:resource``."""
    columns = schema.columns["vertex"]
    if chosen is None:
        return []
    if chosen == "all":
        found = [c for c in columns if re.search(r"_lpkr$|^detail_\d+_lpkr_", c.lower())]
    else:
        if isinstance(chosen, str):
            chosen = [chosen]
        found = [schema.dimension("vertex", d).strip('"').replace('""', '"') for d in chosen]
    known = {k.lower(): v for k, v in (names or {}).items()}
    out = []
    for c in found:
        name = known.get(c.lower()) or re.sub(r"^detail_\d+_lpkr_|_lpkr$", "", c, flags=re.IGNORECASE)
        out.append((c, "org:resource" if name.lower() == "resource" else name))
    return out


def events(
    schema: Schema,
    filters: Filters,
    chosen: Iterable[str] | str | None = "all",
    names: Mapping[str, str] | None = None,
) -> Statement:
    """One row per task: ``case:concept:name``, ``concept:name``, ``time:timestamp`` (the task's end),
    ``start_timestamp`` and the :func:`dimensions` *chosen*."""
    case, act = schema.col("vertex", "case"), schema.col("vertex", "activity")
    t, end = schema.col("vertex", "time"), schema.col("vertex", "end")
    cols = [
        f'{case} AS "case:concept:name"',
        f'{act} AS "concept:name"',
        f'MILLIS_TO_TIMESTAMP({end}) AS "time:timestamp"',
        f'{t} AS "start_timestamp"',
    ]
    for column, name in dimensions(schema, chosen, names):
        cols.append(f"{quote(column)} AS {quote(name)}")
    where, params = filters.where(schema, "vertex")
    sql = f"SELECT {', '.join(cols)} FROM {schema.table('vertex')}{where}"
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))
