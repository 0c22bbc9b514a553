"""``ProcessLog.drivers``: which values of the case dimensions go with an outcome (slow, reworked,
unfinished cases...), from counts Druid computes (:mod:`._sql.drivers`) and statistics computed here.

For each value *v* of a dimension, with ``n1`` cases having *v* (``a`` of them with the outcome) and ``n0``
cases not having it (``b`` with the outcome):

* ``rate_with = a / n1``, ``rate_without = b / n0``, ``lift = rate_with / rate`` (``rate``: the log's
  overall outcome rate, as association rules define lift);
* ``difference = rate_with - rate_without`` with its 95 % confidence interval by Newcombe's hybrid score
  method (his method 10: the two Wilson score intervals combined), which keeps its coverage for small
  counts and rates near 0 or 1 where the Wald interval does not;
* a two-sided test of "same rate with and without *v*": the pooled two-proportion z-test, or Fisher's exact
  test (two-sided: the tables no more probable than the observed one) when an expected count of the 2×2
  table is below 5 (Cochran's rule);
* ``p_adjusted``: Benjamini–Hochberg across every value tested in the answer (all dimensions together),
  which keeps the expected share of false discoveries among the ``significant`` rows at 5 %.

The normal distribution is ``math.erfc`` and Fisher's probabilities are ``math.lgamma``: no dependency
beyond numpy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._cells import cell_float
from .._checks import positive_int
from ..errors import ConfigurationError
from ._filtering import _answer_names, _count_placeholders, check_no_comment
from ._filters import WithActivity, user_subquery
from ._runner import Ask
from ._schema import Schema, quote
from ._sql import drivers as drivers_sql
from ._sql._base import Fragment, qname

__all__ = ["ALPHA", "Outcome", "drivers", "parse_outcome", "value_statistics"]

#: the level of the tests and the confidence intervals (95 %)
ALPHA = 0.05
#: the 0.975 quantile of the standard normal distribution (a two-sided 95 % interval)
Z95 = 1.959963984540054
#: the quantile of the case duration above which a case is "slow" when no other is named
SLOW_QUANTILE = 0.75
_NUMERIC = {"BIGINT", "DOUBLE", "FLOAT", "INTEGER", "SMALLINT", "TINYINT", "DECIMAL", "REAL", "LONG"}
_USAGE = (
    'outcome is "slow" (above the p75 duration), "slow:p90", "slow:20 days", a Timedelta, "rework", '
    '"not_completed", "with_activity:<name>" or "where:<SQL condition on the cases table>"'
)


# --- the outcome ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What the user asked for: *kind* (``slow``, ``rework``, ``not_completed``, ``with_activity``,
    ``where``), a *label* for the answer, and the kind's argument."""

    kind: str
    label: str
    quantile: float | None = None  # slow: the duration quantile
    threshold_ms: int | None = None  # slow: a fixed threshold
    activity: str | None = None
    condition: str | None = None

    def inlines(self, schema: Schema) -> bool:
        """Whether :meth:`fragment` holds a subquery Druid inlines (an activity's cases, or one the user
        wrote)."""
        if self.kind == "with_activity":
            assert self.activity is not None
            return WithActivity(self.activity).semi_join(schema)
        return self.kind == "where" and user_subquery(self.condition or "")

    def fragment(self, schema: Schema, threshold_ms: float | None = None) -> Fragment:
        """The outcome as a condition on the cases table (*threshold_ms*: the computed slow threshold)."""
        if self.kind == "slow":
            limit = self.threshold_ms if self.threshold_ms is not None else threshold_ms
            return f"{schema.col('cases', 'duration')} > ?", (limit,)
        if self.kind == "rework":
            return f"{schema.col('cases', 'rework')} > 0", ()
        if self.kind == "not_completed":
            lookup = schema.lookup("_cases_is_completed")
            if lookup is None:
                raise ConfigurationError(
                    f"The project has no '{schema.project_id}_cases_is_completed' lookup, so "
                    "'not_completed' has no meaning here.",
                    hint='Name the end activities yourself: drivers("where:NOT MV_CONTAINS('
                    "distinct_vertices, 'Pay Invoice')\") or log.completed_only([...]) for a filter.",
                )
            version = schema.col("cases", "case_version")
            return f"COALESCE(LOOKUP({version}, '{lookup}'), 'false') <> 'true'", ()
        if self.kind == "with_activity":
            assert self.activity is not None
            built = WithActivity(self.activity).render(schema, "cases")
            assert built is not None
            return built
        assert self.condition is not None
        return f"({self.condition})", ()


def parse_outcome(outcome: Any, schema: Schema) -> Outcome:
    """*outcome* as an :class:`Outcome`; :class:`ConfigurationError` naming the accepted forms otherwise."""
    if isinstance(outcome, pd.Timedelta) or (
        not isinstance(outcome, str) and hasattr(outcome, "total_seconds")
    ):
        return _slow_by(pd.Timedelta(outcome), str(outcome))
    if not isinstance(outcome, str) or not outcome.strip():
        raise ConfigurationError(f"drivers() got the outcome {outcome!r}.", hint=_USAGE)
    text = outcome.strip()
    head, sep, rest = text.partition(":")
    head, rest = head.strip().lower(), rest.strip()
    if head == "slow" and not sep:
        return Outcome("slow", f"slow (duration above its {qname(SLOW_QUANTILE)})", quantile=SLOW_QUANTILE)
    if head == "slow":
        q = _quantile(rest)
        if q is not None:
            return Outcome("slow", f"slow (duration above its {qname(q)})", quantile=q)
        try:
            limit = pd.Timedelta(rest)
        except ValueError:
            raise ConfigurationError(
                f"drivers({text!r}): {rest!r} is neither a quantile (p90, 0.9) nor a duration (20 days).",
                hint=_USAGE,
            ) from None
        return _slow_by(limit, rest)
    if head in ("rework", "not_completed") and not sep:
        return Outcome(head, "reworked" if head == "rework" else "not completed")
    if head == "with_activity" and rest:
        return Outcome("with_activity", f"with activity {rest!r}", activity=rest)
    if head == "where" and rest:
        check_no_comment(rest, f"drivers({text!r})")
        if _count_placeholders(rest) or ";" in rest:
            raise ConfigurationError(
                f"drivers({text!r}): the condition must be one SQL expression with its values written in "
                "(no ? placeholder, no ';').",
                hint='e.g. drivers("where:tasks_count > 8")',
            )
        condition = _answer_names(schema, rest)
        return Outcome("where", f"where {rest}", condition=condition)
    raise ConfigurationError(f"drivers() does not know the outcome {text!r}.", hint=_USAGE)


def _slow_by(limit: pd.Timedelta, text: str) -> Outcome:
    if pd.isna(limit) or limit < pd.Timedelta(0):
        raise ConfigurationError(f"drivers(): a slow threshold must be a duration ≥ 0, got {text!r}.")
    ms = int(round(limit.total_seconds() * 1000))
    return Outcome("slow", f"slow (duration above {limit})", threshold_ms=ms)


def _quantile(text: str) -> float | None:
    m = re.fullmatch(r"p(\d+(?:\.\d+)?)", text.lower())
    try:
        q = float(m.group(1)) / 100 if m else float(text)
    except ValueError:
        return None
    if not 0 < q < 1:
        raise ConfigurationError(
            f"drivers(): the slow quantile must lie strictly between 0 and 1, got {text!r}."
        )
    return q


# --- the dimensions -------------------------------------------------------------------------------------
def _display_name(column: str) -> str:
    lower = column.lower()
    m = re.fullmatch(r"detail_\d+_lpkr_(.+)", lower)
    if m:
        return m.group(1)
    return column[: -len("_lpkr")] if lower.endswith("_lpkr") else column


def dimensions(schema: Schema, by: Any) -> list[drivers_sql.Dimension]:
    """The case dimensions to test: every mapped dimension and metric column of the cases table
    (``<name>_lpkr``, ``detail_<n>_lpkr_<name>``; not their ``all_`` lists), or the columns *by* names;
    each shown by its column's name without the ``_lpkr`` decoration (``supplier``)."""
    types = schema.columns["cases"]
    if by is None:
        chosen = [
            (_display_name(c), quote(c))
            for c in types
            if "lpkr" in c.lower() and not c.lower().startswith("all_")
        ]
        if not chosen:
            raise ConfigurationError(
                "The project's cases table has no dimension column to test.",
                hint='Name the columns to test: drivers("rework", by=["tasks_count"]).',
            )
    else:
        names = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) else None
        if not names or not all(isinstance(n, str) and n.strip() for n in names):
            raise ConfigurationError(
                f"drivers(by=...) must be a dimension name or a list of them, got {by!r}.",
                hint='drivers("slow", by=["supplier", "order_amount"])',
            )
        columns = dict.fromkeys(schema.dimension("cases", n) for n in names)
        chosen = [(_display_name(c[1:-1].replace('""', '"')), c) for c in columns]
    out = []
    for name, column in chosen:
        kind = types[column[1:-1].replace('""', '"')].upper()
        if kind == "ARRAY" or kind.startswith("COMPLEX"):
            if by is not None:
                raise ConfigurationError(f"drivers(): {name!r} holds lists, not one value per case.")
            continue
        out.append(drivers_sql.Dimension(name, column, kind in _NUMERIC))
    return out


# --- the statistics -------------------------------------------------------------------------------------
def _wilson(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = k / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return centre - half, centre + half


def _normal_sf2(z: np.ndarray) -> np.ndarray:
    """Two-sided p-value of a standard normal statistic: ``P(|Z| ≥ |z|) = erfc(|z| / √2)``."""
    return np.array([math.erfc(abs(float(x)) / math.sqrt(2)) for x in z], dtype="float64")


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_two_sided(a: int, n1: int, k: int, n: int) -> float:
    """Fisher's exact two-sided p-value of a 2×2 table with margins *n1* (row) and *k* (column) of *n*,
    *a* in the shared cell: the summed hypergeometric probability of the tables no more probable than the
    observed one (relative tolerance 1e-7, as R and scipy use)."""
    low, high = max(0, n1 + k - n), min(n1, k)
    denom = _log_choose(n, n1)
    logs = np.array([_log_choose(k, x) + _log_choose(n - k, n1 - x) - denom for x in range(low, high + 1)])
    probs = np.exp(logs)
    observed = probs[a - low]
    return float(min(1.0, probs[probs <= observed * (1 + 1e-7)].sum()))


def bh_adjust(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (step-up: ``min_{j ≥ i} p_(j) m / j``, capped at 1)."""
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def value_statistics(
    a: Sequence[int] | np.ndarray[Any, Any],
    n1: Sequence[int] | np.ndarray[Any, Any],
    k: int | Sequence[int] | np.ndarray[Any, Any],
    n: int | Sequence[int] | np.ndarray[Any, Any],
) -> pd.DataFrame:
    """The statistics of each value (``a`` outcome cases among its ``n1`` cases) against the rest of a log
    of ``n`` cases, ``k`` of them with the outcome: ``rate_with``, ``rate_without``, ``lift``,
    ``difference``, ``ci_low``, ``ci_high``, ``test`` (``z`` or ``fisher``), ``p_value``, ``p_adjusted``
    (Benjamini–Hochberg over the given values) and ``significant`` (``p_adjusted < 0.05``). *k* and *n* may
    also be given per value (``compare()`` tests each row's two logs against each other: ``n1`` cases of
    one, ``n - n1`` of the other)."""
    av = np.asarray(a, dtype="float64")
    n1v = np.asarray(n1, dtype="float64")
    kv = np.broadcast_to(np.asarray(k, dtype="float64"), av.shape)
    nv = np.broadcast_to(np.asarray(n, dtype="float64"), av.shape)
    bv, n0v = kv - av, nv - n1v
    if len(av) and (np.any(n1v <= 0) or np.any(n0v <= 0) or np.any(av < 0) or np.any(av > n1v)):
        raise ValueError("every value needs cases with it and without it, and 0 ≤ a ≤ n1")
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(nv > 0, kv / np.where(nv > 0, nv, 1), math.nan)
    p1, p0 = av / n1v, bv / n0v
    l1, u1 = _wilson(av, n1v)
    l0, u0 = _wilson(bv, n0v)
    diff = p1 - p0
    low = diff - np.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    high = diff + np.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    # expected counts of the four cells under "same rate"
    expected = np.stack([n1v * rate, n1v * (1 - rate), n0v * rate, n0v * (1 - rate)]) if len(av) else None
    small = (expected.min(axis=0) < 5) if expected is not None else np.zeros(0, bool)
    pooled_se = np.sqrt(rate * (1 - rate) * (1 / n1v + 1 / n0v))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(pooled_se > 0, diff / pooled_se, 0.0)
    p_value = _normal_sf2(z)
    for i in np.flatnonzero(small):
        p_value[i] = fisher_two_sided(int(av[i]), int(n1v[i]), int(kv[i]), int(nv[i]))
    p_adjusted = bh_adjust(p_value)
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = np.where(rate > 0, p1 / np.where(rate > 0, rate, 1), math.nan)
    return pd.DataFrame(
        {
            "rate_with": p1,
            "rate_without": p0,
            "lift": lift,
            "difference": diff,
            "ci_low": low,
            "ci_high": high,
            "test": pd.array(np.where(small, "fisher", "z"), dtype="string"),
            "p_value": p_value,
            "p_adjusted": p_adjusted,
            "significant": p_adjusted < ALPHA,
        }
    )


# --- the answer -----------------------------------------------------------------------------------------
def _bin_labels(edges: Sequence[float]) -> dict[int, str]:
    def f(x: float) -> str:
        return f"{x:g}"

    if not edges:
        return {1: "all"}
    labels = {1: f"≤ {f(edges[0])}"}
    for i in range(1, len(edges)):
        labels[i + 1] = f"({f(edges[i - 1])}, {f(edges[i])}]"
    labels[len(edges) + 1] = f"> {f(edges[-1])}"
    return labels


def drivers(ask: Ask, outcome: Any, by: Any = None, min_cases: int = 30) -> pd.DataFrame:
    """The answer of :meth:`ProcessLog.drivers` (see there and the module docstring)."""
    min_cases = positive_int(min_cases, "min_cases")
    schema = ask.schema
    wanted = parse_outcome(outcome, schema)
    if wanted.kind == "with_activity":
        assert wanted.activity is not None
        ask.check_activities((wanted.activity,), "drivers")
    dims = dimensions(schema, by)
    if not dims:
        raise ConfigurationError("drivers(): the cases table has no dimension with one value per case.")
    numeric = [d for d in dims if d.numeric]
    threshold: float | None = None
    if numeric or (wanted.kind == "slow" and wanted.quantile is not None):
        cut = drivers_sql.cut_points(schema, ask.filters, wanted.quantile, numeric)
        row = ask.run(cut).iloc[0]
        if wanted.quantile is not None:
            threshold = _number(row["threshold"])
        edges = {
            d.name: tuple(
                sorted(
                    {
                        v
                        for j in range(len(drivers_sql.QUARTILES))
                        if not math.isnan(v := _number(row[f"d{i}_q{j}"]))
                    }
                )
            )
            for i, d in enumerate(numeric)
        }
        dims = [
            drivers_sql.Dimension(d.name, d.column, True, edges[d.name]) if d.numeric else d for d in dims
        ]
    if (
        wanted.kind == "slow"
        and wanted.quantile is not None
        and threshold is not None
        and math.isnan(threshold)
    ):
        threshold = None  # no case: nothing is slow
    counts_sql = drivers_sql.value_counts(
        schema,
        ask.filters,
        wanted.fragment(schema, threshold if threshold is not None else 0),
        dims,
        outcome_inlines=wanted.inlines(schema),
    )
    counts = ask.run(counts_sql)
    full = (1 << len(dims)) - 1
    groupings = counts["grouping"].astype("int64")
    total = counts[groupings == full]
    n = int(total["cases"].iloc[0]) if len(total) else 0
    k = int(total["outcome_cases"].fillna(0).iloc[0]) if len(total) else 0
    rows: list[dict[str, Any]] = []
    left_out: dict[str, int] = {}
    for i, dim in enumerate(dims):
        part = counts[groupings == full ^ (1 << (len(dims) - 1 - i))]
        labels = _bin_labels(dim.edges) if dim.numeric else {}
        left_out[dim.name] = 0
        for value, cases, hits in zip(part[f"g{i}"], part["cases"], part["outcome_cases"], strict=True):
            cases, hits = int(cases), 0 if pd.isna(hits) else int(hits)
            if cases < min_cases or cases >= n:
                left_out[dim.name] += 1
                continue
            shown = (
                None if pd.isna(value) else labels.get(int(value), str(value)) if dim.numeric else str(value)
            )
            rows.append({"dimension": dim.name, "value": shown, "cases": cases, "outcome_cases": hits})
    frame = pd.DataFrame(rows, columns=["dimension", "value", "cases", "outcome_cases"])
    stats = value_statistics(frame["outcome_cases"].to_numpy(), frame["cases"].to_numpy(), k, n)
    frame = pd.concat([frame, stats], axis=1)
    frame["dimension"] = frame["dimension"].astype("string")
    frame["value"] = frame["value"].astype("string")
    frame["cases"] = frame["cases"].astype("Int64")
    frame["outcome_cases"] = frame["outcome_cases"].astype("Int64")
    frame["significant"] = frame["significant"].astype(bool)
    frame = frame.assign(_effect=-frame["difference"].abs()).sort_values(
        ["p_adjusted", "_effect", "dimension", "value"], kind="stable"
    )
    frame = frame.drop(columns="_effect").reset_index(drop=True)
    attrs: dict[str, Any] = {
        "outcome": wanted.label,
        "cases": n,
        "outcome_cases": k,
        "rate": k / n if n else math.nan,
        "min_cases": min_cases,
        "left_out": sum(left_out.values()),
        "left_out_by_dimension": left_out,
        "bins": {d.name: d.edges for d in dims if d.numeric},
        "method": "difference: Newcombe hybrid score 95 % CI; test: pooled two-proportion z-test, "
        "Fisher's exact when an expected count < 5; p_adjusted: Benjamini-Hochberg over every value tested",
    }
    if wanted.kind == "slow":
        limit = wanted.threshold_ms if wanted.threshold_ms is not None else threshold
        attrs["threshold"] = pd.NaT if limit is None else pd.Timedelta(milliseconds=float(limit))
        attrs["threshold_ms"] = limit
    return ask.answer(frame, **attrs)


def _number(value: Any) -> float:
    return math.nan if value is None or pd.isna(value) else cell_float(value)
