"""``variants()``: the top variants by cases, and the activity sequence of their example cases."""

from __future__ import annotations

from collections.abc import Sequence

from .._filters import Filters
from .._schema import Schema
from ._base import Statement, placeholders, quantile
from .cases import total_cases

__all__ = ["sequences", "variants"]


def variants(schema: Schema, filters: Filters, top: int | None, by: str = "process") -> Statement:
    """The *top* variants by cases (``None``: all): ``variant`` (key), ``name`` (model variants, when the
    project has the ``<pid>_variant_name`` lookup), ``cases``, ``median_duration``, ``p90_duration``,
    ``example_case``, and on every row ``total_cases``, the cases the filters keep (rows in no particular
    order).

    :param by: ``"process"`` (the exact activity sequence) or ``"model"`` (model variant).
    """
    key = schema.col("cases", "model" if by == "model" else "variant")
    d, case = schema.col("cases", "duration"), schema.col("cases", "case")
    where, params = filters.where(schema, "cases")
    names = schema.lookup("_variant_name") if by == "model" else None
    name_sel = f", LOOKUP({key}, '{names}') AS \"name\"" if names else ""
    name_grp = f", LOOKUP({key}, '{names}')" if names else ""
    top_sql = (
        f'SELECT {key} AS "variant"{name_sel}, COUNT(*) AS "cases", '
        f'{quantile(0.5, d)} AS "median_duration", '
        f'{quantile(0.9, d)} AS "p90_duration", EARLIEST({case}, 1024) AS "example_case" '
        f"FROM {schema.table('cases')}{where} GROUP BY {key}{name_grp} "
        f"ORDER BY cases DESC, {key}{'' if top is None else f' LIMIT {top}'}"
    )
    # the log's case count beside each row: a one-row aggregate, CROSS JOINed (Druid inlines that one row);
    # a join keeps no order, so the caller orders the rows again (cases, most first, then the key)
    total = total_cases(schema, filters, "total_cases")
    sql = f'SELECT * FROM ({top_sql}) AS "v" CROSS JOIN ({total.sql}) AS "t"'
    return Statement(sql, params + total.params, reads="cases", inlines=filters.inlines(schema, "cases"))


def sequences(schema: Schema, case_ids: Sequence[str]) -> Statement:
    """The tasks of a few cases (``case_id``, ``activity``, ``started``, ``ended``), ordered by start time
    (Druid orders a scan by ``__time`` only; the caller breaks ties by end)."""
    case, act = schema.col("vertex", "case"), schema.col("vertex", "activity")
    t, end = schema.col("vertex", "time"), schema.col("vertex", "end")
    sql = (
        f'SELECT {case} AS "case_id", {act} AS "activity", {t} AS "started", {end} AS "ended" '
        f"FROM {schema.table('vertex')} WHERE {case} IN ({placeholders(len(case_ids))}) ORDER BY {t}"
    )
    return Statement(sql, tuple(case_ids), reads="vertex")
