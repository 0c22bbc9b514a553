"""``ProcessLog.compare``: two logs of one project side by side and as differences, from aggregates Druid
computes (five statements per side and one for the variants' example sequences: no event is pulled).

The receiver is *a* (the baseline, "before"), the argument *b* ("after"); every difference is ``b - a``.

* **Rates** (the share of cases with rework, of cases in a variant, of cases with an activity, the share of
  all directly-follows steps a transition takes) are compared by the two-proportion test of
  :func:`._drivers.value_statistics` — pooled z-test, Fisher's exact test when an expected count is below
  5 — with Newcombe's 95 % interval of the difference and Benjamini–Hochberg over the rows of one table.
  Both tests assume the two logs are independent samples: cases that are in both logs (overlapping
  filters) make them too cautious, and a transition a case repeats counts once per step (loops make the
  transitions' test too eager).
* **Case durations** are compared by the Mann–Whitney rank test on the durations binned by Druid (bins of
  a factor ``e^(1/24)`` of ``1 + seconds``, :func:`._sql.compare.duration_bin`): the test is exact for the
  binned durations (ties within a bin by mid-ranks, the tie-corrected normal approximation with continuity
  correction, as ``scipy.stats.mannwhitneyu(method="asymptotic")``); what it approximates is the order of
  two durations of the same bin, counted as a tie. ``prob_b_longer`` (the probability that a case of *b*
  takes longer than one of *a*, ties half) is therefore within ``± prob_error`` (half the share of *a*-*b*
  pairs that share a bin) of its value on the exact durations.
* **Waiting times** of each transition both logs have are compared by the same rank test on their binned
  waiting times (``wait_*`` columns; Benjamini–Hochberg over the transitions).
* **Quantiles** of the durations are Druid's sketches (:data:`._sql._base.QUANTILE`, about 1 % rank error).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._cells import cell_int
from ..errors import ConfigurationError
from ._answer import Answer
from ._drivers import ALPHA, _normal_sf2, bh_adjust, value_statistics
from ._flow import edge_frame, node_frame
from ._shaping import _ms, in_task_order
from ._sql import compare as compare_sql
from ._sql import stats as stats_sql
from ._sql import variants as variants_sql
from ._sql._base import QUANTILE, Statement, qname

if TYPE_CHECKING:  # pragma: no cover
    from ._comparemap import ComparedMap
    from ._runner import Ask

__all__ = ["QUANTILES", "Comparison", "compare", "rank_test", "rate_tests"]

#: the duration quantiles of the summary
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


# --- the statistics -------------------------------------------------------------------------------------
#: counts: a list, an array or a Series of integers
Counts = Sequence[int] | np.ndarray[Any, Any] | pd.Series


def rate_tests(xa: Counts, na: Counts | int, xb: Counts, nb: Counts | int) -> pd.DataFrame:
    """Per row, the rate ``xa / na`` of *a* against ``xb / nb`` of *b*: ``difference`` (b − a) with
    Newcombe's 95 % interval (``ci_low``, ``ci_high``), ``test``, ``p_value``, ``p_adjusted``
    (Benjamini–Hochberg over the rows) and ``significant`` — :func:`._drivers.value_statistics` with *a*'s
    cases as "with" and *b*'s as "without". A row whose either side has no case has no test (NaN)."""
    xa_, xb_ = np.asarray(xa, dtype="int64"), np.asarray(xb, dtype="int64")
    na_ = np.broadcast_to(np.asarray(na, dtype="int64"), xa_.shape)
    nb_ = np.broadcast_to(np.asarray(nb, dtype="int64"), xa_.shape)
    out = pd.DataFrame(
        {
            "difference": np.full(len(xa_), math.nan),
            "ci_low": math.nan,
            "ci_high": math.nan,
            "test": pd.array([pd.NA] * len(xa_), dtype="string"),
            "p_value": math.nan,
            "p_adjusted": math.nan,
            "significant": False,
        }
    )
    ok = (na_ > 0) & (nb_ > 0)
    if not ok.any():
        return out
    idx = np.flatnonzero(ok)
    # value_statistics compares "with" (a: xa of na) against "without" (b) in one log of na + nb cases
    frame = value_statistics(xa_[idx], na_[idx], xa_[idx] + xb_[idx], na_[idx] + nb_[idx])
    out.loc[idx, "difference"] = -frame["difference"].to_numpy()
    out.loc[idx, "ci_low"] = -frame["ci_high"].to_numpy()
    out.loc[idx, "ci_high"] = -frame["ci_low"].to_numpy()
    out.loc[idx, "test"] = frame["test"].to_numpy()
    out.loc[idx, "p_value"] = frame["p_value"].to_numpy()
    out.loc[idx, "p_adjusted"] = frame["p_adjusted"].to_numpy()
    out.loc[idx, "significant"] = frame["significant"].to_numpy()
    out["significant"] = out["significant"].astype(bool)
    return out


def rank_test(counts_a: Counts, counts_b: Counts) -> dict[str, float]:
    """The Mann–Whitney test of *b* against *a* from their counts per ordered bin (ties within a bin):
    ``u`` (pairs where *b* is larger, ties half), ``prob_b_longer`` (``u / (na nb)``), ``prob_error`` (half
    the share of pairs in a shared bin: the bound on ``prob_b_longer``'s distance from its value on the
    unbinned data), ``z`` and the two-sided ``p_value`` (tie-corrected normal approximation with continuity
    correction; NaN when a side is empty, 1 when every value shares one bin)."""
    ca = np.asarray(counts_a, dtype="float64")
    cb = np.asarray(counts_b, dtype="float64")
    na, nb = float(ca.sum()), float(cb.sum())
    if na == 0 or nb == 0:
        nan = math.nan
        return {"u": nan, "prob_b_longer": nan, "prob_error": nan, "z": nan, "p_value": nan}
    below_a = np.concatenate([[0.0], np.cumsum(ca)[:-1]])
    u = float((cb * (below_a + ca / 2)).sum())
    pairs = na * nb
    n = na + nb
    t = ca + cb
    ties = float((t**3 - t).sum())
    var = pairs / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    mu = pairs / 2
    if var <= 0:
        z, p = 0.0, 1.0
    else:
        z = (abs(u - mu) - 0.5) / math.sqrt(var)
        z = max(z, 0.0)
        p = min(1.0, float(_normal_sf2(np.array([z]))[0]))
        z = math.copysign(z, u - mu)
    return {
        "u": u,
        "prob_b_longer": u / pairs,
        "prob_error": float(0.5 * (ca * cb).sum() / pairs),
        "z": z,
        "p_value": p,
    }


# --- the answer -----------------------------------------------------------------------------------------
class Comparison:
    """Two logs of one project compared (:meth:`ProcessLog.compare`): each table has the values of *a* and of
    *b* side by side (``_a``, ``_b``), the difference ``b - a`` and, for rates, a test.

    * :attr:`summary`: rows ``a``, ``b``, ``b - a``: cases, cases with rework and their share, variants, and
      the case duration's mean, min, p10, p25, p50, p75, p90, max;
    * :attr:`tests`: the share of cases with rework (two-proportion test) and the case durations
      (Mann–Whitney on Druid's binned durations, with the bound of its approximation);
    * :attr:`durations`: the binned case durations behind the rank test (cases and share per bin);
    * :attr:`variants`, :attr:`activities`, :attr:`transitions`: per variant / activity / transition its
      ``status`` (``both``, ``new`` in *b*, ``vanished`` from *a*), frequencies, rates and times, ranked by
      adjusted p-value then by the size of the change;
    * :meth:`process_map`: one map of both, coloured by change.

    ``sql`` holds every statement (``statements`` counts them); nothing is queried after construction.
    """

    def __init__(
        self,
        labels: tuple[str, str],
        summary: pd.DataFrame,
        tests: pd.DataFrame,
        durations: pd.DataFrame,
        variants: pd.DataFrame,
        activities: pd.DataFrame,
        transitions: pd.DataFrame,
        nodes: tuple[pd.DataFrame, pd.DataFrame],
        edges: tuple[pd.DataFrame, pd.DataFrame],
        statements: Sequence[Statement],
        title: str,
    ) -> None:
        self.labels = labels
        self.summary, self.tests, self.durations = summary, tests, durations
        self.variants, self.activities, self.transitions = variants, activities, transitions
        self._nodes, self._edges = nodes, edges
        self.sql = ";\n\n".join(s.sql for s in statements)
        self.statements = len(statements)
        self.title = title

    @property
    def cases(self) -> tuple[int, int]:
        """The cases of *a* and of *b*."""
        column = self.summary["cases"]
        return cell_int(column.iloc[0]), cell_int(column.iloc[1])

    def process_map(
        self, metric: str = "frequency", stat: str = "median", activities: float = 1.0, paths: float = 0.3
    ) -> ComparedMap:
        """One process map of both logs, nodes and edges coloured by the change from *a* to *b* (see
        :class:`~._comparemap.ComparedMap`); no query: the numbers came with the comparison."""
        from ._comparemap import ComparedMap

        return ComparedMap.of(
            self._nodes,
            self._edges,
            self.cases,
            labels=self.labels,
            metric=metric,
            stat=stat,
            activities=activities,
            paths=paths,
            sql=self.sql,
            title=self.title,
        )

    def _headline(self) -> list[str]:
        (na, nb), s, t = self.cases, self.summary, self.tests.set_index("measure")
        d = t.loc["case_duration"]
        r = t.loc["rework_share"]
        flag = {True: "significant", False: "not significant"}
        return [
            f"a: {self.labels[0]} ({na:,} cases)",
            f"b: {self.labels[1]} ({nb:,} cases)",
            f"median duration {_short(s['p50'].iloc[0])} → {_short(s['p50'].iloc[1])}; P(b longer than a) = "
            f"{_pct(d['effect'])} ± {_pct(d['effect_error'])} (p = {d['p_value']:.3g}, "
            f"{flag[bool(d['significant'])]})",
            f"rework {_pct(s['rework_share'].iloc[0])} → {_pct(s['rework_share'].iloc[1])} "
            f"(p = {r['p_value']:.3g}, {flag[bool(r['significant'])]})",
            f"variants: {int(self.variants.attrs.get('new_variants', 0))} new "
            f"({_pct(self.variants.attrs.get('new_share', math.nan))} of b's cases), "
            f"{int(self.variants.attrs.get('vanished_variants', 0))} vanished; activities: "
            f"{int((self.activities['status'] == 'new').sum())} new, "
            f"{int((self.activities['status'] == 'vanished').sum())} vanished; transitions: "
            f"{int((self.transitions['status'] == 'new').sum())} new, "
            f"{int((self.transitions['status'] == 'vanished').sum())} vanished, "
            f"{int(self.transitions['significant'].sum())} changed significantly in frequency, "
            f"{int(self.transitions['wait_significant'].sum())} in waiting time",
        ]

    def __repr__(self) -> str:
        lines = self._headline()
        return f"<Comparison {self.title!r} ({self.statements} statements)\n  " + "\n  ".join(lines) + ">"

    def _repr_html_(self) -> str:
        parts = [f"<b>Comparison of {html.escape(self.title)}</b><ul>"]
        parts += [f"<li>{html.escape(line)}</li>" for line in self._headline()]
        parts.append("</ul>")
        for name in ("summary", "tests"):
            parts.append(f"<p><b>{name}</b></p>{Answer(getattr(self, name)).to_html()}")
        for name in ("variants", "activities", "transitions"):
            frame = getattr(self, name)
            parts.append(f"<p><b>{name}</b> (first 10 of {len(frame)})</p>{Answer(frame.head(10)).to_html()}")
        return "".join(parts)


def _pct(value: Any) -> str:
    return "-" if value is None or pd.isna(value) else f"{100 * float(value):.1f} %"


def _short(value: Any) -> str:
    from ._map import format_duration

    return format_duration(value)


def _side(ask: Ask) -> tuple[list[Statement], dict[str, pd.DataFrame]]:
    """The five statements of one side and their results."""
    schema, filters = ask.schema, ask.filters
    stats = compare_sql.case_stats(schema, filters, QUANTILES)
    groups = compare_sql.case_groups(schema, filters)
    nodes = stats_sql.node_stats(schema, filters)
    edges = stats_sql.transitions(schema, filters)
    waits = compare_sql.wait_bins(schema, filters)
    out = {
        "stats": ask.run(stats),
        "groups": ask.run(groups),
        "nodes": node_frame(ask, nodes),
        "edges": edge_frame(ask, edges),
        "waits": ask.run(waits),
    }
    return [stats, groups, nodes, edges, waits], out


def _wait_tests(keys: pd.DataFrame, waits_a: pd.DataFrame, waits_b: pd.DataFrame) -> pd.DataFrame:
    """Per transition of *keys* (``source``, ``target``): the rank test of its waiting times in *b* against
    *a* (``wait_prob_b_longer``, ``wait_prob_error``, ``wait_p_value``), Benjamini–Hochberg over the
    transitions both logs have (``wait_p_adjusted``, ``wait_significant``)."""

    def per_edge(frame: pd.DataFrame) -> dict[tuple[str, str], dict[int, int]]:
        out: dict[tuple[str, str], dict[int, int]] = {}
        for s, t, b, n in zip(
            frame["source"], frame["target"], frame["bin"], frame["transitions"], strict=True
        ):
            if b is not None and not pd.isna(b):
                out.setdefault((str(s), str(t)), {})[int(b)] = int(n)
        return out

    a, b = per_edge(waits_a), per_edge(waits_b)
    rows = []
    for s, t in zip(keys["source"], keys["target"], strict=True):
        ha, hb = a.get((str(s), str(t)), {}), b.get((str(s), str(t)), {})
        index = sorted(set(ha) | set(hb))
        rows.append(rank_test([ha.get(i, 0) for i in index], [hb.get(i, 0) for i in index]))
    frame = pd.DataFrame(rows, columns=["u", "prob_b_longer", "prob_error", "z", "p_value"])
    p = frame["p_value"].to_numpy(dtype="float64")
    adjusted = np.full(len(p), math.nan)
    known = ~np.isnan(p)
    adjusted[known] = bh_adjust(p[known])
    return pd.DataFrame(
        {
            "wait_prob_b_longer": frame["prob_b_longer"].to_numpy(dtype="float64"),
            "wait_prob_error": frame["prob_error"].to_numpy(dtype="float64"),
            "wait_p_value": p,
            "wait_p_adjusted": adjusted,
            "wait_significant": adjusted < ALPHA,
        }
    )


def _status(in_a: pd.Series, in_b: pd.Series) -> pd.Series:
    values = np.where(in_a & in_b, "both", np.where(in_b, "new", "vanished"))
    return pd.Series(pd.array(values, dtype="string"), index=in_a.index)


def _ranked(frame: pd.DataFrame, change: str) -> pd.DataFrame:
    """Rows by adjusted p-value, then the size of *change* (largest first), then the key columns."""
    keys = [c for c in ("variant", "activity", "source", "target") if c in frame]
    frame = frame.assign(_size=-frame[change].abs()).sort_values(
        ["p_adjusted", "_size", *keys], kind="stable", na_position="last"
    )
    return frame.drop(columns="_size").reset_index(drop=True)


def compare(a: Ask, b: Ask, labels: tuple[str, str], top: int | None = 20) -> Comparison:
    """The answer of :meth:`ProcessLog.compare` (see there and the module docstring): *a* and *b* are the
    two logs' :class:`~._runner.Ask`; every statement of both (and the variants' sequences, run through *a*)
    is the comparison's ``sql``."""
    statements_a, ra = _side(a)
    statements_b, rb = _side(b)
    statements = [*statements_a, *statements_b]
    na, nb = cell_int(ra["stats"]["cases"].iloc[0]), cell_int(rb["stats"]["cases"].iloc[0])
    if na == 0 and nb == 0:
        raise ConfigurationError(
            f"compare(): neither log holds a case ({labels[0]!r}, {labels[1]!r}): nothing to compare.",
            hint="Check the filters of both logs, e.g. log.between(...).summary() for each.",
        )

    # the variants (all of them counted; the *top* largest changes listed)
    def variant_counts(groups: pd.DataFrame) -> pd.DataFrame:
        part = groups[groups["grouping"].astype("int64") == 1]
        return pd.DataFrame(
            {
                "variant": part["variant"].astype(object).to_numpy(),
                "cases": part["cases"].astype("int64").to_numpy(),
                "total": pd.to_numeric(part["total_duration"], errors="coerce").to_numpy(dtype="float64"),
                "example": part["example_case"].astype(object).to_numpy(),
            }
        )

    va, vb = variant_counts(ra["groups"]), variant_counts(rb["groups"])
    v = pd.merge(va, vb, on="variant", how="outer", suffixes=("_a", "_b"))
    in_a, in_b = v["cases_a"].notna(), v["cases_b"].notna()
    v["cases_a"] = v["cases_a"].fillna(0).astype("int64")
    v["cases_b"] = v["cases_b"].fillna(0).astype("int64")
    tests = rate_tests(v["cases_a"], na, v["cases_b"], nb)
    variants = pd.DataFrame(
        {
            "variant": v["variant"].astype("string"),
            "status": _status(in_a, in_b),
            "cases_a": v["cases_a"].astype("Int64"),
            "cases_b": v["cases_b"].astype("Int64"),
            "share_a": v["cases_a"] / na if na else math.nan,
            "share_b": v["cases_b"] / nb if nb else math.nan,
        }
    )
    variants = pd.concat([variants, tests], axis=1)
    variants["mean_duration_a"] = _ms(v["total_a"] / v["cases_a"].where(v["cases_a"] > 0))
    variants["mean_duration_b"] = _ms(v["total_b"] / v["cases_b"].where(v["cases_b"] > 0))
    examples = v["example_a"].where(in_a, v["example_b"])
    variants["example_case"] = examples.astype("string")
    vattrs = {
        "variants_a": int(in_a.sum()),
        "variants_b": int(in_b.sum()),
        "new_variants": int((in_b & ~in_a).sum()),
        "vanished_variants": int((in_a & ~in_b).sum()),
        "new_share": float(v.loc[in_b & ~in_a, "cases_b"].sum() / nb) if nb else math.nan,
        "vanished_share": float(v.loc[in_a & ~in_b, "cases_a"].sum() / na) if na else math.nan,
    }
    variants = _ranked(variants, "difference")
    if top is not None:
        variants = variants.head(top).reset_index(drop=True)
    ids = [str(x) for x in variants["example_case"].dropna()]
    sequences: dict[str, str] = {}
    if ids:
        sequence_sql = variants_sql.sequences(a.schema, ids)
        statements.append(sequence_sql)
        rows = in_task_order(a.run(sequence_sql), "case_id", "started", "ended", "activity")
        sequences = {
            str(k): " → ".join(g["activity"].astype(str)) for k, g in rows.groupby("case_id", sort=False)
        }
    variants.insert(
        1,
        "activities",
        pd.array([sequences.get(str(x), "") for x in variants["example_case"]], dtype="string"),  # type: ignore[arg-type]
    )

    # the summary
    def summary_row(stats: pd.DataFrame, variants_n: int) -> dict[str, Any]:
        n = cell_int(stats["cases"].iloc[0])
        rework = cell_int(stats["rework_cases"].iloc[0]) if n else 0
        row: dict[str, Any] = {
            "cases": n,
            "cases_with_rework": rework,
            "rework_share": rework / n if n else math.nan,
            "variants": variants_n,
        }
        for col in ("mean", "min", *(qname(q) for q in QUANTILES), "max"):
            row[col] = _ms(stats[col]).iloc[0] if n else pd.NaT
        return row

    sides = [
        summary_row(ra["stats"], int(vattrs["variants_a"])),
        summary_row(rb["stats"], int(vattrs["variants_b"])),
    ]
    summary = pd.DataFrame(sides, index=["a", "b"])
    ints = ["cases", "cases_with_rework", "variants"]
    times = ["mean", "min", *(qname(q) for q in QUANTILES), "max"]
    summary = summary.astype(dict.fromkeys(ints, "Int64"))
    for col in times:
        summary[col] = summary[col].astype("timedelta64[ms]")
    diff = summary.loc["b"] - summary.loc["a"]
    summary.loc["b - a"] = diff
    summary = summary.astype(dict.fromkeys(ints, "Int64"))
    for col in times:
        summary[col] = summary[col].astype("timedelta64[ms]")

    # the binned durations and the tests
    def bins(groups: pd.DataFrame) -> pd.Series:
        part = groups[(groups["grouping"].astype("int64") == 2) & groups["bin"].notna()]
        return pd.Series(
            part["cases"].astype("int64").to_numpy(), index=part["bin"].astype("int64").to_numpy()
        )

    ba, bb = bins(ra["groups"]), bins(rb["groups"])
    index = sorted(set(ba.index) | set(bb.index))
    ca = ba.reindex(index, fill_value=0).astype("int64")
    cb = bb.reindex(index, fill_value=0).astype("int64")
    edges_ms = [compare_sql.bin_edges_ms(int(i)) for i in index]
    durations = pd.DataFrame(
        {
            "bin": pd.array(index, dtype="Int64"),
            "from": _ms(pd.Series([e[0] for e in edges_ms], dtype="float64")),
            "to": _ms(pd.Series([e[1] for e in edges_ms], dtype="float64")),
            "cases_a": pd.array(ca.to_numpy(), dtype="Int64"),
            "cases_b": pd.array(cb.to_numpy(), dtype="Int64"),
        }
    )
    durations["share_a"] = ca.to_numpy() / ca.sum() if ca.sum() else math.nan
    durations["share_b"] = cb.to_numpy() / cb.sum() if cb.sum() else math.nan
    ranks = rank_test(ca.to_numpy(), cb.to_numpy())
    rework = rate_tests(
        [int(summary["cases_with_rework"].iloc[0])], na, [int(summary["cases_with_rework"].iloc[1])], nb
    ).iloc[0]
    tests_frame = pd.DataFrame(
        {
            "measure": pd.array(["rework_share", "case_duration"], dtype="string"),
            "test": pd.array(
                [
                    {"z": "two-proportion z", "fisher": "Fisher exact"}.get(str(rework["test"])),
                    "Mann-Whitney (binned)",
                ],
                dtype="string",
            ),
            "effect": [rework["difference"], ranks["prob_b_longer"]],
            "effect_low": [rework["ci_low"], ranks["prob_b_longer"] - ranks["prob_error"]],
            "effect_high": [rework["ci_high"], ranks["prob_b_longer"] + ranks["prob_error"]],
            "effect_error": [math.nan, ranks["prob_error"]],
            "statistic": [math.nan, ranks["z"]],
            "p_value": [rework["p_value"], ranks["p_value"]],
        }
    )
    tests_frame["significant"] = (tests_frame["p_value"] < ALPHA).astype(bool)
    tests_frame["meaning"] = pd.array(
        [
            "effect: share of cases with rework, b - a (95 % interval)",
            "effect: P(a case of b takes longer than one of a), ties half; 0.5 = no change "
            "(interval: the binning's bound)",
        ],
        dtype="string",
    )

    # activities: share of cases with the activity, executions, service times
    node_a, node_b = ra["nodes"], rb["nodes"]
    act = pd.merge(node_a, node_b, on="activity", how="outer", suffixes=("_a", "_b"))
    in_a, in_b = act["frequency_a"].notna(), act["frequency_b"].notna()
    for col in ("frequency", "cases"):
        for s in ("_a", "_b"):
            act[col + s] = act[col + s].fillna(0).astype("int64")
    act_tests = rate_tests(act["cases_a"], na, act["cases_b"], nb)
    activities = pd.DataFrame(
        {
            "activity": act["activity"].astype("string"),
            "status": _status(in_a, in_b),
            "cases_a": act["cases_a"].astype("Int64"),
            "cases_b": act["cases_b"].astype("Int64"),
            "case_share_a": act["cases_a"] / na if na else math.nan,
            "case_share_b": act["cases_b"] / nb if nb else math.nan,
        }
    )
    activities = pd.concat([activities, act_tests], axis=1)
    activities["executions_a"] = act["frequency_a"].astype("Int64")
    activities["executions_b"] = act["frequency_b"].astype("Int64")
    activities["per_case_a"] = act["frequency_a"] / na if na else math.nan
    activities["per_case_b"] = act["frequency_b"] / nb if nb else math.nan
    for stat in ("median", "p90", "mean"):
        activities[f"{stat}_service_a"] = act[f"{stat}_a"].astype("timedelta64[ms]")
        activities[f"{stat}_service_b"] = act[f"{stat}_b"].astype("timedelta64[ms]")
    activities["median_service_change"] = activities["median_service_b"] - activities["median_service_a"]
    activities = _ranked(activities, "difference")

    # transitions: share of all steps, per case, waiting times
    edge_a, edge_b = ra["edges"], rb["edges"]
    tr = pd.merge(edge_a, edge_b, on=["source", "target"], how="outer", suffixes=("_a", "_b"))
    in_a, in_b = tr["frequency_a"].notna(), tr["frequency_b"].notna()
    for s in ("_a", "_b"):
        tr["frequency" + s] = tr["frequency" + s].fillna(0).astype("int64")
    steps_a, steps_b = int(edge_a["frequency"].sum()), int(edge_b["frequency"].sum())
    tr_tests = rate_tests(tr["frequency_a"], steps_a, tr["frequency_b"], steps_b)
    transitions = pd.DataFrame(
        {
            "source": tr["source"].astype("string"),
            "target": tr["target"].astype("string"),
            "status": _status(in_a, in_b),
            "frequency_a": tr["frequency_a"].astype("Int64"),
            "frequency_b": tr["frequency_b"].astype("Int64"),
            "step_share_a": tr["frequency_a"] / steps_a if steps_a else math.nan,
            "step_share_b": tr["frequency_b"] / steps_b if steps_b else math.nan,
        }
    )
    transitions = pd.concat([transitions, tr_tests], axis=1)
    transitions["per_case_a"] = tr["frequency_a"] / na if na else math.nan
    transitions["per_case_b"] = tr["frequency_b"] / nb if nb else math.nan
    for stat in ("median", "p90", "mean"):
        transitions[f"{stat}_wait_a"] = tr[f"{stat}_a"].astype("timedelta64[ms]")
        transitions[f"{stat}_wait_b"] = tr[f"{stat}_b"].astype("timedelta64[ms]")
    transitions["median_wait_change"] = transitions["median_wait_b"] - transitions["median_wait_a"]
    waits = _wait_tests(transitions, ra["waits"], rb["waits"])
    transitions = pd.concat([transitions, waits], axis=1)
    transitions = _ranked(transitions, "difference")

    def answer(frame: pd.DataFrame, **attrs: Any) -> pd.DataFrame:
        out = Answer(frame)
        out.attrs.update(labels=labels, **attrs)
        return out

    method = (
        "rates: pooled two-proportion z-test (Fisher's exact when an expected count < 5), Newcombe 95 % "
        "interval of b - a, Benjamini-Hochberg over the rows of a table"
    )
    title = a.project.name or a.project.id
    return Comparison(
        labels,
        answer(summary, quantiles=f"{QUANTILE} sketches"),
        answer(tests_frame),
        answer(durations, bins_per_e=compare_sql.BINS_PER_E),
        answer(variants, method=method, **vattrs),
        answer(activities, method=method),
        answer(transitions, method=method + "; a transition's rate: its share of all directly-follows steps"),
        (node_a, node_b),
        (edge_a, edge_b),
        statements,
        title,
    )
