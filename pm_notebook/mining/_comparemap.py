"""``ComparedMap``: one process map of two logs (``Comparison.process_map()``), coloured by the change.

The graph is the union of both logs' directly-follows graphs, simplified as any :class:`ProcessMap` (its
``frequency`` is the two logs' frequencies added). Each node and edge is coloured by the change from *a* to
*b* on a diverging scale of ``log2(b / a)`` clipped to ±1 (halving … doubling):

* ``metric="frequency"``: the executions (nodes) or occurrences (edges) *per case* of each log, so logs of
  different sizes compare; red = more often in *b*, blue = less often, grey = unchanged;
* ``metric="performance"``: the *stat* (median ...) service time (nodes) or waiting time (edges); red =
  slower in *b*, blue = faster;
* only in *b* (``new``): green and bold; only in *a* (``vanished``): grey and dashed.

A legend below the map shows the scale. Labels read ``a → b``.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .._cells import cell_float
from ._map import END, START, ProcessMap, _esc, format_duration
from ._sql.stats import STATS

__all__ = ["DECREASE", "INCREASE", "NEW", "SAME", "VANISHED", "ComparedMap", "change_colour"]

#: the scale's colours: unchanged, the far ends (halving and doubling or more), and the two statuses
SAME, DECREASE, INCREASE = (0xE0, 0xE0, 0xE0), (0x21, 0x66, 0xAC), (0xB2, 0x18, 0x2B)
NEW, VANISHED = "#1a9850", "#8c8c8c"


def change_colour(ratio: float) -> str:
    """The colour of a change by the factor *ratio* (``b / a``): grey at 1, blending to blue at ½ and
    below, to red at 2 and above (``log2`` scale); grey when unknown."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return _hex(SAME) if ratio is None or math.isnan(ratio) else _hex(INCREASE if ratio > 0 else DECREASE)
    t = max(-1.0, min(1.0, math.log2(ratio)))
    far = INCREASE if t > 0 else DECREASE
    return _hex(tuple(round(s + (f - s) * abs(t)) for s, f in zip(SAME, far, strict=True)))


def _hex(rgb: tuple[int, ...]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _text_on(colour: str) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 140 else "black"


class ComparedMap(ProcessMap):
    """A :class:`ProcessMap` of two logs: ``nodes``/``edges`` hold ``frequency`` (both logs together, for
    the simplification), ``frequency_a``/``frequency_b``, ``status`` (``both``, ``new``, ``vanished``) and
    each statistic as ``<stat>_a``/``<stat>_b``; :meth:`view` switches the metric and the sliders without
    a query, as on any map."""

    labels: tuple[str, str] = ("a", "b")
    cases: tuple[int, int] = (0, 0)

    @classmethod
    def of(
        cls,
        nodes: tuple[pd.DataFrame, pd.DataFrame],
        edges: tuple[pd.DataFrame, pd.DataFrame],
        cases: tuple[int, int],
        *,
        labels: tuple[str, str],
        **view: Any,
    ) -> ComparedMap:
        """The map of the two logs' node and edge statistics (as ``ProcessLog.process_map`` fetches them)."""
        both_nodes = _merge(nodes, ["activity"])
        both_edges = _merge(edges, ["source", "target"])
        out = cls(both_nodes, both_edges, **view)
        out.labels, out.cases = labels, cases
        # START and END: how many cases start and end, in each log
        for side, i in (("_a", 0), ("_b", 1)):
            frame = edges[i]
            starts = int(frame.loc[frame["source"] == START, "frequency"].sum())
            ends = int(frame.loc[frame["target"] == END, "frequency"].sum())
            for name, value in ((START, starts), (END, ends)):
                out._nodes_all.loc[out._nodes_all["activity"] == name, "frequency" + side] = value
        out._nodes_all["status"] = out._nodes_all["status"].fillna("both")
        out._nodes, out._edges = out._simplify()
        return out

    def view(
        self,
        metric: str | None = None,
        stat: str | None = None,
        activities: float | None = None,
        paths: float | None = None,
    ) -> ComparedMap:
        other = super().view(metric, stat, activities, paths)
        assert isinstance(other, ComparedMap)
        other.labels, other.cases = self.labels, self.cases
        return other

    def _change(self, row: Any, perf: bool) -> tuple[float, str]:
        """``(b / a, label)`` of one node or edge row."""
        if perf:
            va, vb = getattr(row, f"{self.stat}_a"), getattr(row, f"{self.stat}_b")
            ratio = _ratio(_seconds(va), _seconds(vb))
            return ratio, f"{format_duration(va)} → {format_duration(vb)}"
        fa, fb = _number(row.frequency_a), _number(row.frequency_b)
        na, nb = self.cases
        ratio = _ratio(fa / na if na else math.nan, fb / nb if nb else math.nan)
        return ratio, f"{int(fa):,} → {int(fb):,}"

    def to_dot(self) -> str:
        """The map as Graphviz DOT text: the union of both graphs, coloured by change, with a legend."""
        perf = self.metric == "performance"
        lines = [
            "digraph compared_map {",
            '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.35, ranksep=0.45, bgcolor="white"];',
            '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, color="#33506f"];',
            '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.7];',
        ]
        ids: dict[str, str] = {}
        for i, row in enumerate(self._nodes.itertuples(index=False)):
            name = str(row.activity)
            ids[name] = f"n{i}"
            if name == START:
                attrs = 'shape=circle, label="", width=0.3, fillcolor="#4f9a5f", color="#2f6a3a"'
            elif name == END:
                attrs = 'shape=doublecircle, label="", width=0.25, fillcolor="#b5514b", color="#7a2f2a"'
            else:
                attrs = self._look(row, perf, node=True)
            lines.append(f"  {ids[name]} [{attrs}];")
        rates = [
            max(
                _number(r.frequency_a) / max(self.cases[0], 1), _number(r.frequency_b) / max(self.cases[1], 1)
            )
            for r in self._edges.itertuples(index=False)
        ]
        top = max(rates, default=1.0) or 1.0
        for row, rate in zip(self._edges.itertuples(index=False), rates, strict=True):
            pen = 0.8 + 5.2 * (rate / top)
            attrs = self._look(row, perf, node=False)
            lines.append(f"  {ids[str(row.source)]} -> {ids[str(row.target)]} [{attrs}, penwidth={pen:.2f}];")
        lines += self._legend(perf)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _look(self, row: Any, perf: bool, *, node: bool) -> str:
        status = str(row.status)
        ratio, text = self._change(row, perf)
        if status == "new":
            colour, text, style = NEW, f"new: {text}", "bold"
        elif status == "vanished":
            colour, text, style = VANISHED, f"vanished: {text}", "dashed"
        else:
            colour, style = change_colour(ratio), "solid"
            if math.isfinite(ratio) and ratio > 0:
                text += f" ({(ratio - 1) * 100:+.0f} %)"
        if node:
            label = f"{_esc(str(row.activity))}\\n{_esc(text)}"
            if status == "vanished":
                return f'label="{label}", style="rounded,dashed", color="{VANISHED}", fontcolor="{VANISHED}"'
            border = f', color="{NEW}", penwidth=2.5' if status == "new" else ""
            return f'label="{label}", fillcolor="{colour}", fontcolor="{_text_on(colour)}"{border}'
        return f'label="{_esc(text)}", color="{colour}", fontcolor="#333333", style={style}'

    def _legend(self, perf: bool) -> list[str]:
        what = f"{self.stat} time" if perf else "frequency per case"
        more = "slower" if perf else "more often"
        less = "faster" if perf else "less often"
        cells = [
            (change_colour(0.5), f"≤ ½× ({less})"),
            (change_colour(2**-0.5), "0.71×"),
            (change_colour(1.0), "unchanged"),
            (change_colour(2**0.5), "1.41×"),
            (change_colour(2.0), f"≥ 2× ({more})"),
            (NEW, "new in b"),
            (VANISHED, "vanished from a"),
        ]
        tds = "".join(
            f'<TD BGCOLOR="{c}"><FONT COLOR="{_text_on(c)}">{_html(t)}</FONT></TD>' for c, t in cells
        )
        rows = [f"colour: the change of the {what} from a to b (labels: a → b)"]
        rows += [f"{side} = {_html_text(name)}" for side, name in zip("ab", self.labels, strict=True)]
        heads = "".join(f'<TR><TD COLSPAN="{len(cells)}">{_html(r)}</TD></TR>' for r in rows)
        table = (
            f'<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">{heads}<TR>{tds}</TR></TABLE>'
        )
        return [f'  {{ rank=sink; legend [shape=plaintext, style="", fontsize=9, label=<{table}>]; }}']

    def __repr__(self) -> str:
        inner = self._nodes[~self._nodes["activity"].isin([START, END])]
        status = self._edges["status"].value_counts()
        view = self.metric if self.metric == "frequency" else f"performance ({self.stat})"
        return (
            f"<ComparedMap {self.title!r}: {len(inner)} activities, {len(self._edges)} of "
            f"{len(self._edges_all)} paths ({int(status.get('new', 0))} new, "
            f"{int(status.get('vanished', 0))} vanished), {view}, a = {self.labels[0]!r}, "
            f"b = {self.labels[1]!r}>"
        )


def _merge(frames: tuple[pd.DataFrame, pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    a, b = frames
    cols = ["frequency", *(s for s in STATS if s in a.columns)]
    both = pd.merge(a[[*keys, *cols]], b[[*keys, *cols]], on=keys, how="outer", suffixes=("_a", "_b"))
    in_a, in_b = both["frequency_a"].notna(), both["frequency_b"].notna()
    both["frequency_a"] = both["frequency_a"].fillna(0).astype("Int64")
    both["frequency_b"] = both["frequency_b"].fillna(0).astype("Int64")
    both["frequency"] = (both["frequency_a"] + both["frequency_b"]).astype("Int64")
    both["status"] = pd.array(
        [("both" if x and y else "new" if y else "vanished") for x, y in zip(in_a, in_b, strict=True)],
        dtype="string",
    )
    if "activity" in keys:
        both["cases"] = both["frequency"]  # ProcessMap's nodes carry cases; the map shows frequencies
    for s in STATS:
        if f"{s}_b" in both:
            both[s] = both[f"{s}_b"].where(both[f"{s}_b"].notna(), both[f"{s}_a"])
    return both


def _number(value: Any) -> float:
    return 0.0 if value is None or pd.isna(value) else cell_float(value)


def _seconds(value: Any) -> float:
    return math.nan if value is None or pd.isna(value) else pd.Timedelta(value).total_seconds()


def _ratio(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == 0:
        return 1.0 if b == 0 else math.inf
    return b / a


def _html_text(text: str) -> str:
    return text if len(text) <= 90 else text[:89] + "…"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
