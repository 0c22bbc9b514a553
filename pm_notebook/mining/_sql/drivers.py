"""``drivers()``: the counts behind the driver analysis, per value of every case dimension, in two statements
at most.

* :func:`cut_points` (only when needed): one row over the filtered cases with the duration quantile that
  defines "slow" and the quartiles of every numeric dimension (``_base.quantile``, a sketch: approximate on a
  real Druid, within the sketch's error).
* :func:`value_counts`: one ``GROUP BY GROUPING SETS ((d1), (d2), ..., ())`` over the cases table: per value
  of each dimension (a numeric one by its quartile bin) the cases and the cases with the outcome, and the
  log's totals (the empty grouping set). ``GROUPING(d1, d2, ...)`` tells which set a row belongs to, so a
  NULL value stays a value of its own. One native groupBy on Druid (its ``subtotalsSpec``): no subquery is
  inlined, whatever the number of cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._filters import Filters
from .._schema import Schema
from ._base import Fragment, Statement, quantile

__all__ = ["Dimension", "bin_expression", "cut_points", "value_counts"]

#: the quantiles that cut a numeric dimension into (at most) four bins
QUARTILES = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class Dimension:
    """A case dimension the answer groups by: its display *name*, its quoted *column*, whether it is
    *numeric* (binned by quartiles) and, once known, its bin *edges* (ascending, distinct)."""

    name: str
    column: str
    numeric: bool
    edges: tuple[float, ...] = ()


def _literal(value: float) -> str:
    return repr(float(value))


def bin_expression(dim: Dimension) -> str:
    """The grouping expression of *dim*: the column itself, or for a numeric one the number of its bin
    (1 = at most the first edge, ..., ``len(edges) + 1`` = above the last; NULL stays NULL)."""
    if not dim.numeric:
        return dim.column
    whens = " ".join(f"WHEN {dim.column} <= {_literal(e)} THEN {i}" for i, e in enumerate(dim.edges, 1))
    return f"CASE {whens} WHEN {dim.column} IS NOT NULL THEN {len(dim.edges) + 1} END"


def cut_points(
    schema: Schema, filters: Filters, slow_quantile: float | None, numeric: Sequence[Dimension]
) -> Statement:
    """One row: ``threshold`` (the *slow_quantile* of the case duration, when given) and ``d<i>_q<j>`` (the
    quartiles of the *i*-th numeric dimension)."""
    cols = []
    if slow_quantile is not None:
        cols.append(f'{quantile(slow_quantile, schema.col("cases", "duration"))} AS "threshold"')
    for i, dim in enumerate(numeric):
        cols += [f'{quantile(q, dim.column)} AS "d{i}_q{j}"' for j, q in enumerate(QUARTILES)]
    where, params = filters.where(schema, "cases")
    sql = f"SELECT {', '.join(cols)} FROM {schema.table('cases')}{where}"
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))


def value_counts(
    schema: Schema,
    filters: Filters,
    outcome: Fragment,
    dimensions: Sequence[Dimension],
    *,
    outcome_inlines: bool = False,
) -> Statement:
    """Per value of each dimension (``g<i>``: the value in the *i*-th column, the others NULL) and once for
    the whole log: ``grouping`` (``GROUPING(g0, g1, ...)``: bit ``n-1-i`` clear when the row groups by
    dimension *i*), ``cases`` and ``outcome_cases`` (cases where the *outcome* condition holds; NULL
    counts as not); *outcome_inlines*: the outcome condition holds a semi-join (a fact of the statement)."""
    exprs = [bin_expression(d) for d in dimensions]
    condition, cond_params = outcome
    where, params = filters.where(schema, "cases")
    keys = ", ".join(f'{e} AS "g{i}"' for i, e in enumerate(exprs))
    sets = ", ".join(f"({e})" for e in exprs)
    sql = (
        f'SELECT {keys}, GROUPING({", ".join(exprs)}) AS "grouping", COUNT(*) AS "cases", '
        f'SUM(CASE WHEN {condition} THEN 1 ELSE 0 END) AS "outcome_cases" '
        f"FROM {schema.table('cases')}{where} GROUP BY GROUPING SETS ({sets}, ())"
    )
    inlines = outcome_inlines or filters.inlines(schema, "cases")
    return Statement(sql, (*cond_params, *params), reads="cases", inlines=inlines)
