"""``compare()``: the case-table statements of one side of a comparison (the activity and transition
statistics are :mod:`.stats`' own, run once per side).

* :func:`case_stats`: one row over the side's cases: the count, the cases with rework and the duration
  statistics (mean, min, the quantiles through ``_base.quantile``, max).
* :func:`case_groups`: one ``GROUP BY GROUPING SETS ((variant), (duration bin))`` over the side's cases:
  per process variant its cases, the sum of their durations and an example case, and per duration bin
  (:func:`duration_bin`) its cases — the distribution the rank test of the durations reads. One native
  groupBy on Druid: nothing is inlined, whatever the number of cases.
* :func:`wait_bins`: per transition and waiting-time bin, the transitions seen: the distributions the rank
  test of each transition's waiting time reads (under the filters' semi-join, as ``transitions()``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._filters import Filters
from .._schema import Schema
from ._base import Statement, qname, quantile

__all__ = ["BINS_PER_E", "bin_edges_ms", "case_groups", "case_stats", "duration_bin", "wait_bins"]

#: the duration bins per factor e of ``1 + seconds``: a bin spans a factor ``e^(1/24) ≈ 1.043`` of
#: ``1 + seconds``, so two durations above a few seconds that share a bin differ by less than 4.3 %; about
#: 470 bins cover ten years
BINS_PER_E = 24


def duration_bin(column: str) -> str:
    """The bin of a duration in ms (``FLOOR(LN(1 + seconds) * 24)``: 0 for durations under 42.55 ms, and
    for a negative one; NULL stays NULL)."""
    seconds = f"GREATEST(CAST({column} AS DOUBLE), 0.0) / 1000.0"
    return f"CAST(FLOOR(LN({seconds} + 1.0) * {BINS_PER_E}) AS BIGINT)"


def bin_edges_ms(index: int) -> tuple[float, float]:
    """The durations ``[from, to)`` in ms that fall in bin *index* (the inverse of :func:`duration_bin`)."""
    import math

    return (
        (math.exp(index / BINS_PER_E) - 1.0) * 1000.0,
        (math.exp((index + 1) / BINS_PER_E) - 1.0) * 1000.0,
    )


def case_stats(schema: Schema, filters: Filters, quantiles: Sequence[float]) -> Statement:
    """One row: ``cases``, ``rework_cases``, ``mean``, ``min``, one ``p<q>`` per quantile and ``max`` of the
    case duration (ms)."""
    d, rework = schema.col("cases", "duration"), schema.col("cases", "rework")
    where, params = filters.where(schema, "cases")
    qcols = "".join(f', {quantile(q, d)} AS "{qname(q)}"' for q in quantiles)
    sql = (
        f'SELECT COUNT(*) AS "cases", SUM(CASE WHEN {rework} > 0 THEN 1 ELSE 0 END) AS "rework_cases", '
        f'AVG(CAST({d} AS DOUBLE)) AS "mean", MIN({d}) AS "min"{qcols}, MAX({d}) AS "max" '
        f"FROM {schema.table('cases')}{where}"
    )
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))


def case_groups(schema: Schema, filters: Filters) -> Statement:
    """Per process variant (``variant`` set, ``grouping`` 1) and per duration bin (``bin`` set, ``grouping``
    2): ``cases``, ``total_duration`` (ms) and ``example_case`` (the earliest case of the group)."""
    key, d = schema.col("cases", "variant"), schema.col("cases", "duration")
    case = schema.col("cases", "case")
    binned = duration_bin(d)
    where, params = filters.where(schema, "cases")
    sql = (
        f'SELECT {key} AS "variant", {binned} AS "bin", GROUPING({key}, {binned}) AS "grouping", '
        f'COUNT(*) AS "cases", SUM({d}) AS "total_duration", EARLIEST({case}, 1024) AS "example_case" '
        f"FROM {schema.table('cases')}{where} GROUP BY GROUPING SETS (({key}), ({binned}))"
    )
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))


def wait_bins(schema: Schema, filters: Filters) -> Statement:
    """Per transition (``source``, ``target``) and bin of its waiting time (``bin``): ``transitions``."""
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    binned = duration_bin(schema.col("edge", "duration"))
    where, params = filters.where(schema, "edge")
    sql = (
        f'SELECT {src} AS "source", {dst} AS "target", {binned} AS "bin", COUNT(*) AS "transitions" '
        f"FROM {schema.table('edge')}{where} GROUP BY {src}, {dst}, {binned}"
    )
    return Statement(sql, params, reads="edge", inlines=filters.inlines(schema, "edge"))
