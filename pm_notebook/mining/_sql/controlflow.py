"""Control-flow answers beyond the map: ``endpoints()`` and ``trace_lengths()``; the variant counts
``top_variants(coverage)`` chooses from."""

from __future__ import annotations

from .._filters import Filters
from .._schema import Schema
from ._base import END, START, Statement

__all__ = ["endpoints", "trace_lengths", "variant_counts"]


def endpoints(schema: Schema, filters: Filters) -> Statement:
    """Start and end activities: per (``kind`` = ``"start"``/``"end"``, ``activity``) the number of
    ``cases`` (each case has one START and one END transition, so counting them counts cases)."""
    src, dst = schema.col("edge", "source"), schema.col("edge", "target")
    kind = f"CASE WHEN {src} = '{START}' THEN 'start' ELSE 'end' END"
    act = f"CASE WHEN {src} = '{START}' THEN {dst} ELSE {src} END"
    where, params = filters.where(schema, "edge", (f"({src} = '{START}' OR {dst} = '{END}')", ()))
    sql = (
        f'SELECT {kind} AS "kind", {act} AS "activity", COUNT(*) AS "cases" FROM {schema.table("edge")}'
        f'{where} GROUP BY {kind}, {act} ORDER BY "kind" DESC, "cases" DESC, "activity"'
    )
    return Statement(sql, params, reads="edge", inlines=filters.inlines(schema, "edge"))


def trace_lengths(schema: Schema, filters: Filters) -> Statement:
    """Cases per trace length (tasks per case): a per-case GROUP BY, then a count per length."""
    case = schema.col("vertex", "case")
    where, params = filters.where(schema, "vertex")
    sql = (
        f'SELECT "n" AS "length", COUNT(*) AS "cases" FROM ('
        f'SELECT {case} AS "case_id", COUNT(*) AS "n" FROM {schema.table("vertex")}{where} GROUP BY {case}) '
        f'GROUP BY "n" ORDER BY "length"'
    )
    return Statement(sql, params, reads="vertex", inlines=filters.inlines(schema, "vertex"))


def variant_counts(schema: Schema, filters: Filters) -> Statement:
    """Every process variant key with its ``cases``, most frequent first (ties by key)."""
    key = schema.col("cases", "variant")
    where, params = filters.where(schema, "cases")
    sql = (
        f'SELECT {key} AS "variant", COUNT(*) AS "cases" FROM {schema.table("cases")}{where} '
        f'GROUP BY {key} ORDER BY "cases" DESC, {key}'
    )
    return Statement(sql, params, reads="cases", inlines=filters.inlines(schema, "cases"))
