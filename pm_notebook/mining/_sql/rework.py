"""``rework()``: executions of an activity beyond its first in a case, per activity or per case."""

from __future__ import annotations

from .._filters import Filters
from .._schema import Schema
from ._base import Statement

__all__ = ["rework_by_activity", "rework_by_case"]


def rework_by_activity(schema: Schema, filters: Filters) -> Statement:
    """Per reworked activity (most rework first): ``executions``, ``rework_executions``, ``cases`` and
    ``cases_with_rework`` (the last three DOUBLE sums of ``1/k`` shares, see
    :func:`~.stats.node_stats`)."""
    act, occ = schema.col("vertex", "activity"), schema.col("vertex", "occurrences")
    where, params = filters.where(schema, "vertex")
    sql = (
        f'SELECT {act} AS "activity", COUNT(*) AS "executions", '
        f'SUM(CASE WHEN {occ} > 1 THEN ({occ} - 1.0) / {occ} ELSE 0 END) AS "rework_executions", '
        f'SUM(1.0 / {occ}) AS "cases", SUM(CASE WHEN {occ} > 1 THEN 1.0 / {occ} ELSE 0 END) '
        f"AS cases_with_rework FROM {schema.table('vertex')}{where} GROUP BY {act} "
        f"HAVING MAX({occ}) > 1 ORDER BY rework_executions DESC, {act}"
    )
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))


def rework_by_case(schema: Schema, filters: Filters, top: int | None) -> Statement:
    """The *top* cases with the most rework (``None``: all): ``case_id``, ``variant``, ``rework``,
    ``duration``."""
    case, rw = schema.col("cases", "case"), schema.col("cases", "rework")
    d, var = schema.col("cases", "duration"), schema.col("cases", "variant")
    where, params = filters.where(schema, "cases", (f"{rw} > 0", ()))
    sql = (
        f'SELECT {case} AS "case_id", {var} AS "variant", MAX({rw}) AS "rework", '
        f'MAX({d}) AS "duration" '
        f"FROM {schema.table('cases')}{where} GROUP BY {case}, {var} "
        f"ORDER BY rework DESC, case_id{'' if top is None else f' LIMIT {top}'}"
    )
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))
