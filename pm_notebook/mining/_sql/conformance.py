"""``conformance()``: the transitions outside an allowed set, and the cases that take one."""

from __future__ import annotations

from collections.abc import Sequence

from .._filters import Filters
from .._schema import Schema
from ._base import END, START, Fragment, Statement, between_activities, per_case

__all__ = ["deviations"]


def deviations(
    schema: Schema, filters: Filters, allowed: Sequence[tuple[str, str]]
) -> tuple[Statement, Statement]:
    """Two statements over the transitions outside *allowed* ``(source, target)`` pairs (START/END
    transitions only when *allowed* mentions START or END): per such transition its ``transitions`` and
    ``cases``; and ``deviating``, the number of cases with at least one."""
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    case = schema.col("edge", "case")
    conds: list[Fragment] = []
    if allowed:
        ors = " OR ".join(f"({src} = ? AND {dst} = ?)" for _ in allowed)
        conds.append((f"NOT ({ors})", tuple(v for p in allowed for v in p)))
    if not any(START in p or END in p for p in allowed):
        conds.append(between_activities(schema))
    where, params = filters.where(schema, "edge", *conds)
    keys = {"source": src, "target": dst}
    sql = per_case(
        schema.table("edge"), where, case, keys, rows="transitions", order='cases DESC, "source", "target"'
    )
    sql_dev = (
        f'SELECT COUNT(*) AS "deviating" FROM '
        f"(SELECT {case} FROM {schema.table('edge')}{where} GROUP BY {case})"
    )
    return Statement(sql, params, reads="edge", inlines=filters.inlines(schema, "edge")), Statement(
        sql_dev, params, reads="edge", inlines=filters.inlines(schema, "edge")
    )
