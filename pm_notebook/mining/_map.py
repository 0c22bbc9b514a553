"""``ProcessMap``: a directly-follows graph fetched once, simplified Disco-style, laid out by Graphviz.

Layout is Graphviz's ``dot``: a system ``dot`` on ``PATH`` when there is one, else the Graphviz library
bundled in the ``pygraphviz`` wheels (``pip install pm-notebook[map]``), called in-process. Nothing here
places a node by hand. The map renders inline as SVG *and* PNG in one mimebundle, so JupyterLab, GitHub,
nbviewer and nbval all see a picture.

Simplification (Disco's two sliders): ``activities`` keeps that share of the activities, most frequent
first; ``paths`` keeps that share of the transitions among the kept activities, most frequent first,
plus each kept activity's strongest incoming and outgoing transition so no activity is left dangling.
``1.0`` / ``1.0`` is the exact process.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from .._cells import cell_float, cell_int
from ..errors import ConfigurationError, MissingDependency

__all__ = ["ProcessMap", "render"]

START, END = "START", "END"
STATS = ("mean", "median", "p90", "total", "min", "max")
_INSTALL = "pip install pm-notebook[map]"


def _check_share(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= float(value) <= 1:
        raise ConfigurationError(f"{name} must be a share between 0 and 1, got {value!r}.")
    return float(value)


def format_duration(value: Any) -> str:
    """A short human duration: ``45s``, ``12m``, ``3.4h``, ``2.1d`` (``-`` for missing)."""
    if value is None or pd.isna(value):
        return "-"
    seconds = pd.Timedelta(value).total_seconds()
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def render(dot_source: str, fmt: str) -> bytes:
    """Lay out and render DOT text as ``svg`` or ``png`` with Graphviz ``dot``.

    A system ``dot`` on ``PATH`` is used when present; otherwise the Graphviz bundled in pygraphviz.
    :raises MissingDependency: neither is available (names ``pip install pm-notebook[map]``).
    """
    if fmt not in ("svg", "png"):
        raise ConfigurationError(f"A process map renders as 'svg' or 'png', not {fmt!r}.")
    exe = shutil.which("dot")
    if exe:
        done = subprocess.run([exe, f"-T{fmt}"], input=dot_source.encode(), capture_output=True, timeout=300)
        if done.returncode == 0 and done.stdout:
            return done.stdout
        # a broken system Graphviz (missing plugin, say) falls through to the bundled one
    try:
        import pygraphviz
    except ImportError:
        raise MissingDependency(
            "Drawing a process map needs Graphviz: no 'dot' program on PATH and pygraphviz is not installed.",
            hint=f"{_INSTALL} (its wheels bundle Graphviz; no system install needed).",
        ) from None
    graph = pygraphviz.AGraph(string=dot_source)
    with _quiet_stderr() as said:
        try:
            out = graph.draw(format=fmt, prog="dot")
        except (ValueError, OSError) as e:
            raise ConfigurationError(f"Graphviz could not draw the map: {e} {said()}".strip()) from None
    return out if isinstance(out, bytes) else bytes(out)


@contextmanager
def _quiet_stderr() -> Iterator[Callable[[], str]]:
    """Hold back what the bundled C libraries write on file descriptor 2 while drawing.

    The wheel's fontconfig warns about a newer system ``fonts.conf`` on every process's first draw; in a
    notebook that line would land in the cell's output (ipykernel forwards fd 2), so it is captured and
    only shown in the error of a failed draw.
    """
    with tempfile.TemporaryFile() as sink:
        saved = None
        try:
            sys.stderr.flush()
            saved = os.dup(2)
            os.dup2(sink.fileno(), 2)
        except (OSError, ValueError):  # no real fd 2 (some embedded interpreters): nothing to hide
            saved = None

        def said() -> str:
            sink.seek(0)
            return sink.read().decode("utf-8", "replace").strip()

        try:
            yield said
        finally:
            if saved is not None:
                os.dup2(saved, 2)
                os.close(saved)


class ProcessMap:
    """A process map: activities and the directly-follows transitions between them (START/END included).

    Build it with :meth:`pm_notebook.mining.ProcessLog.process_map`. ``nodes``/``edges`` are the shown
    (simplified) parts, ``all_nodes``/``all_edges`` everything fetched; :meth:`view` re-simplifies or
    switches between the frequency and performance views without querying again.

    :param metric: ``"frequency"`` (counts) or ``"performance"`` (times, by *stat*).
    :param stat: ``"median"``, ``"mean"``, ``"p90"``, ``"total"``, ``"min"`` or ``"max"``.
    :param activities: share of activities kept (most frequent first), 0..1.
    :param paths: share of transitions kept (most frequent first), 0..1.
    """

    def __init__(
        self,
        nodes: pd.DataFrame,
        edges: pd.DataFrame,
        *,
        metric: str = "frequency",
        stat: str = "median",
        activities: float = 1.0,
        paths: float = 0.3,
        sql: str = "",
        title: str = "",
    ) -> None:
        if metric not in ("frequency", "performance"):
            raise ConfigurationError(f"metric must be 'frequency' or 'performance', got {metric!r}.")
        if stat not in STATS:
            raise ConfigurationError(f"stat must be one of {', '.join(STATS)}, got {stat!r}.")
        self.metric, self.stat, self.sql, self.title = metric, stat, sql, title
        self.activities = _check_share(activities, "activities")
        self.paths = _check_share(paths, "paths")
        self._edges_all = edges.reset_index(drop=True)
        self._nodes_all = self._with_start_end(nodes.reset_index(drop=True), self._edges_all)
        self._nodes, self._edges = self._simplify()
        self._svg: str | None = None
        self._png: bytes | None = None

    @staticmethod
    def _with_start_end(nodes: pd.DataFrame, edges: pd.DataFrame) -> pd.DataFrame:
        starts = int(edges.loc[edges["source"] == START, "frequency"].sum())
        ends = int(edges.loc[edges["target"] == END, "frequency"].sum())
        extra = pd.DataFrame({"activity": [START, END], "frequency": [starts, ends], "cases": [starts, ends]})
        extra = extra.astype({"activity": nodes["activity"].dtype, "frequency": "Int64", "cases": "Int64"})
        parts = [nodes, extra] if len(nodes) else [extra]
        out = pd.concat(parts, ignore_index=True) if len(nodes) else extra
        for stat in STATS:
            if stat in out:
                out[stat] = out[stat].astype("timedelta64[ms]")
        return out

    # --- data ------------------------------------------------------------------------------------
    @property
    def nodes(self) -> pd.DataFrame:
        """The shown activities (START and END included): frequency, cases and service-time stats."""
        return self._nodes.copy()

    @property
    def edges(self) -> pd.DataFrame:
        """The shown transitions: source, target, frequency and waiting-time stats."""
        return self._edges.copy()

    @property
    def all_nodes(self) -> pd.DataFrame:
        """Every activity fetched, before simplification."""
        return self._nodes_all.copy()

    @property
    def all_edges(self) -> pd.DataFrame:
        """Every transition fetched, before simplification."""
        return self._edges_all.copy()

    def view(
        self,
        metric: str | None = None,
        stat: str | None = None,
        activities: float | None = None,
        paths: float | None = None,
    ) -> ProcessMap:
        """The same graph with other settings (no query: the numbers were fetched with the map)."""
        return ProcessMap(
            self._nodes_all[~self._nodes_all["activity"].isin([START, END])],
            self._edges_all,
            metric=metric or self.metric,
            stat=stat or self.stat,
            activities=self.activities if activities is None else activities,
            paths=self.paths if paths is None else paths,
            sql=self.sql,
            title=self.title,
        )

    def _simplify(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        nodes, edges = self._nodes_all, self._edges_all
        inner = nodes[~nodes["activity"].isin([START, END])].sort_values(
            ["frequency", "activity"], ascending=[False, True], kind="stable"
        )
        n_keep = math.ceil(self.activities * len(inner) - 1e-9)
        if len(inner) and n_keep == 0:
            n_keep = 1
        kept = set(inner["activity"].astype(str).head(n_keep)) | {START, END}
        candidates = edges[edges["source"].isin(kept) & edges["target"].isin(kept)]
        candidates = candidates.sort_values(
            ["frequency", "source", "target"], ascending=[False, True, True], kind="stable"
        )
        m_keep = math.ceil(self.paths * len(candidates) - 1e-9)
        chosen = set(candidates.index[:m_keep])
        for name in kept:
            # candidates are sorted by frequency: the first match is the strongest
            if name != START:
                incoming = candidates.index[candidates["target"] == name]
                if len(incoming):
                    chosen.add(incoming[0])
            if name != END:
                outgoing = candidates.index[candidates["source"] == name]
                if len(outgoing):
                    chosen.add(outgoing[0])
        shown_edges = candidates.loc[[i for i in candidates.index if i in chosen]].reset_index(drop=True)
        shown_nodes = nodes[nodes["activity"].isin(kept)].reset_index(drop=True)
        return shown_nodes, shown_edges

    # --- rendering ---------------------------------------------------------------------------------
    def to_dot(self) -> str:
        """The map as Graphviz DOT text (left-to-right; thickness and labels by the chosen metric)."""
        perf = self.metric == "performance"
        edges = self._edges
        weight = edges[self.stat].dt.total_seconds() if perf else edges["frequency"].astype("float64")
        top = float(weight.max()) if len(weight) and weight.max() > 0 else 1.0
        freq_top = float(self._nodes["frequency"].max() or 1) if len(self._nodes) else 1.0
        lines = [
            "digraph process_map {",
            '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.35, ranksep=0.45, bgcolor="white"];',
            '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, '
            'color="#33506f", fillcolor="#eaf1f8"];',
            '  edge [fontname="Helvetica", fontsize=9, color="#5a6b7d", arrowsize=0.7];',
        ]
        ids = {}
        for i, row in enumerate(self._nodes.itertuples(index=False)):
            name = str(row.activity)
            ids[name] = f"n{i}"
            if name == START:
                attrs = 'shape=circle, label="", width=0.3, fillcolor="#4f9a5f", color="#2f6a3a"'
            elif name == END:
                attrs = 'shape=doublecircle, label="", width=0.25, fillcolor="#b5514b", color="#7a2f2a"'
            else:
                detail = format_duration(getattr(row, self.stat)) if perf else f"{cell_int(row.frequency):,}"
                share = cell_float(row.frequency) / freq_top
                fill = _blend((0xEA, 0xF1, 0xF8), (0x2C, 0x5D, 0x8F), share)
                font = "white" if share > 0.55 else "black"
                attrs = f'label="{_esc(name)}\\n{detail}", fillcolor="{fill}", fontcolor="{font}"'
            lines.append(f"  {ids[name]} [{attrs}];")
        for row, w in zip(edges.itertuples(index=False), weight, strict=True):
            label = format_duration(getattr(row, self.stat)) if perf else f"{cell_int(row.frequency):,}"
            pen = 0.8 + 5.2 * (float(w) / top if top else 0)
            lines.append(
                f'  {ids[str(row.source)]} -> {ids[str(row.target)]} [label="{label}", penwidth={pen:.2f}];'
            )
        lines.append("}")
        return "\n".join(lines) + "\n"

    def svg(self) -> str:
        """The map as SVG text (rendered once, then cached)."""
        if self._svg is None:
            self._svg = render(self.to_dot(), "svg").decode("utf-8")
        return self._svg

    def png(self) -> bytes:
        """The map as PNG bytes (rendered once, then cached)."""
        if self._png is None:
            self._png = render(self.to_dot(), "png")
        return self._png

    def save(self, path: str | Path) -> Path:
        """Write the map to *path*: ``.svg``, ``.png`` or ``.dot`` (by suffix); returns the path."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".svg":
            path.write_text(self.svg(), encoding="utf-8")
        elif suffix == ".png":
            path.write_bytes(self.png())
        elif suffix in (".dot", ".gv"):
            path.write_text(self.to_dot(), encoding="utf-8")
        else:
            raise ConfigurationError(f"save() writes .svg, .png or .dot files, not {path.name!r}.")
        return path

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """SVG and PNG together, so every notebook viewer shows the map (and text for the rest)."""
        return {"image/svg+xml": self.svg(), "image/png": self.png(), "text/plain": repr(self)}

    def __repr__(self) -> str:
        def inner(f: pd.DataFrame) -> int:
            return int((~f["activity"].isin([START, END])).sum())

        view = self.metric if self.metric == "frequency" else f"performance ({self.stat})"
        return (
            f"<ProcessMap {self.title!r}: {inner(self._nodes)} of {inner(self._nodes_all)} activities, "
            f"{len(self._edges)} of {len(self._edges_all)} paths, {view}>"
        )

    # --- interop -----------------------------------------------------------------------------------
    def to_networkx(self) -> Any:
        """The shown map as a ``networkx.DiGraph`` (node and edge attributes: frequency and the time
        statistics in seconds). networkx is imported here, only when asked for."""
        try:
            import networkx as nx
        except ImportError:
            raise MissingDependency("to_networkx() needs networkx.", hint="pip install networkx") from None
        graph = nx.DiGraph(name=self.title)
        for row in self._nodes.to_dict("records"):
            graph.add_node(str(row.pop("activity")), **_plain(row))
        for row in self._edges.to_dict("records"):
            graph.add_edge(str(row.pop("source")), str(row.pop("target")), **_plain(row))
        return graph

    def to_pm4py(self) -> tuple[dict[tuple[str, str], int], dict[str, int], dict[str, int]]:
        """pm4py's ``(dfg, start_activities, end_activities)`` dicts for the shown map (pm4py not imported):
        START/END transitions become the start and end activities."""
        dfg: dict[tuple[str, str], int] = {}
        starts: dict[str, int] = {}
        ends: dict[str, int] = {}
        for row in self._edges.itertuples(index=False):
            src, dst, n = str(row.source), str(row.target), cell_int(row.frequency)
            if src == START and dst != END:
                starts[dst] = n
            elif dst == END and src != START:
                ends[src] = n
            elif src != START and dst != END:
                dfg[(src, dst)] = n
        return dfg, starts, ends


def _blend(light: tuple[int, int, int], dark: tuple[int, int, int], share: float) -> str:
    r, g, b = (round(a + (z - a) * max(0.0, min(share, 1.0))) for a, z in zip(light, dark, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _plain(row: dict[Hashable, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, v in row.items():
        k = str(key)  # column names: already text
        if isinstance(v, pd.Timedelta):
            out[k] = v.total_seconds()
        elif v is pd.NaT or (not isinstance(v, str) and pd.isna(v)):
            out[k] = None
        else:
            out[k] = v.item() if hasattr(v, "item") else v
    return out
