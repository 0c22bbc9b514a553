"""``ProcessMap``: a directly-follows graph fetched once, simplified Disco-style, laid out by Graphviz.

Layout is Graphviz's ``dot``: a system ``dot`` on ``PATH`` when there is one, else the Graphviz library
bundled in the ``pygraphviz`` wheels (``pip install pm-notebook[map]``), called in-process. Nothing here
places a node by hand. The map renders inline as SVG *and* PNG in one mimebundle, so JupyterLab, GitHub,
nbviewer and nbval all see a picture.

Simplification (Disco's two sliders), in four steps:

1. ``activities`` keeps that share of the activities, most frequent first (at least one);
2. ``paths`` keeps that share of the transitions among the kept activities, most frequent first, plus each
   kept activity's strongest incoming and outgoing transition;
3. every transition from START or into END that at least :data:`ENDPOINT_SHARE` of the cases take (5 %)
   is kept whenever its activity is: the paths slider never hides how a sizeable share of cases starts or
   ends;
4. the map is then made connected: a kept activity that START does not reach on the kept paths gets the
   *strongest route* to it from what START reaches — the route whose rarest transition is the most
   frequent (a widest path), among kept activities when there is one, else through hidden activities,
   which are then shown too; likewise every activity gets the strongest route to one that reaches END.

So at every slider position every shown activity lies on a path from START to END (every case goes from
START to END, so such a route always exists in the full graph). ``1.0`` / ``1.0`` is the exact process.
"""

from __future__ import annotations

import heapq
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from .._cells import cell_float, cell_int
from ..errors import ConfigurationError, MissingDependency
from ._answer import Answer
from ._sql.stats import STATS

__all__ = ["ProcessMap", "render"]

START, END = "START", "END"
#: the share of the cases from which a transition from START or into END is always shown (when its
#: activity is): simplification step 3 never hides how at least 5 % of the cases start or end
ENDPOINT_SHARE = 0.05
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
    :param transport: the transport that served the statements (``sql``) the numbers came from.
    """

    #: the statistics the performance view can show (*stat*)
    STATS: ClassVar[tuple[str, ...]] = STATS

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
        transport: str | None = None,
    ) -> None:
        if metric not in ("frequency", "performance"):
            raise ConfigurationError(f"metric must be 'frequency' or 'performance', got {metric!r}.")
        if stat not in STATS:
            raise ConfigurationError(f"stat must be one of {', '.join(STATS)}, got {stat!r}.")
        self.metric, self.stat, self.sql, self.title = metric, stat, sql, title
        #: the transport that served the map's statements (``None``: not fetched by a log)
        self.transport = transport
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
        """The shown activities (START and END included): frequency, cases and service-time stats (an
        answer: durations shown rounded)."""
        return Answer(self._nodes.copy())

    @property
    def edges(self) -> pd.DataFrame:
        """The shown transitions: source, target, frequency and waiting-time stats."""
        return Answer(self._edges.copy())

    @property
    def all_nodes(self) -> pd.DataFrame:
        """Every activity fetched, before simplification."""
        return Answer(self._nodes_all.copy())

    @property
    def all_edges(self) -> pd.DataFrame:
        """Every transition fetched, before simplification."""
        return Answer(self._edges_all.copy())

    def view(
        self,
        metric: str | None = None,
        stat: str | None = None,
        activities: float | None = None,
        paths: float | None = None,
    ) -> ProcessMap:
        """The same graph with other settings (no query: the numbers were fetched with the map)."""
        metric, stat = metric or self.metric, stat or self.stat
        if metric not in ("frequency", "performance"):
            raise ConfigurationError(f"metric must be 'frequency' or 'performance', got {metric!r}.")
        if stat not in STATS:
            raise ConfigurationError(f"stat must be one of {', '.join(STATS)}, got {stat!r}.")
        # the fetched frames are shared (never changed in place): a slider move only re-simplifies
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)  # what a subclass adds (ComparedMap's labels) comes along
        other.metric, other.stat, other.sql, other.title = metric, stat, self.sql, self.title
        other.transport = self.transport
        other.activities = _check_share(self.activities if activities is None else activities, "activities")
        other.paths = _check_share(self.paths if paths is None else paths, "paths")
        other._edges_all, other._nodes_all = self._edges_all, self._nodes_all
        other._nodes, other._edges = other._simplify()
        other._svg, other._png = None, None
        return other

    def _simplify(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        nodes, edges = self._nodes_all, self._edges_all
        inner = sorted(
            (-int(f), str(a))
            for a, f in zip(nodes["activity"], nodes["frequency"], strict=True)
            if a not in (START, END)
        )
        n_keep = math.ceil(self.activities * len(inner) - 1e-9)
        if len(inner) and n_keep == 0:
            n_keep = 1
        kept = {a for _, a in inner[:n_keep]} | {START, END}
        # plain tuples, most frequent first: the selection below runs at every slider move
        ranked = sorted(
            (
                (-int(f), str(a), str(b), i)
                for i, a, b, f in zip(
                    edges.index, edges["source"], edges["target"], edges["frequency"], strict=True
                )
            )
        )
        graph = [(a, b, -neg, i) for neg, a, b, i in ranked]
        candidates = [e for e in graph if e[0] in kept and e[1] in kept]
        m_keep = math.ceil(self.paths * len(candidates) - 1e-9)
        chosen = {e[3] for e in candidates[:m_keep]}
        strongest_in: dict[str, Any] = {}
        strongest_out: dict[str, Any] = {}
        for a, b, _, i in candidates:  # the first match is the strongest
            strongest_out.setdefault(a, i)
            strongest_in.setdefault(b, i)
        chosen |= {i for name, i in strongest_in.items() if name != START}
        chosen |= {i for name, i in strongest_out.items() if name != END}
        cases = sum(f for a, _, f, _ in graph if a == START)
        chosen |= {i for a, b, f, i in candidates if (a == START or b == END) and f >= ENDPOINT_SHARE * cases}
        chosen, kept = _connect(graph, chosen, kept, candidates)
        order = [e[3] for e in graph if e[3] in chosen]
        shown_edges = edges.loc[order].reset_index(drop=True)
        shown_nodes = nodes[nodes["activity"].isin(kept)].reset_index(drop=True)
        return shown_nodes, shown_edges

    @property
    def single_timestamp(self) -> bool:
        """Whether the log has one timestamp per event (every activity's service time is zero): the
        performance view then shows the waiting times on the paths and no time on the activities."""
        inner = self._nodes_all[~self._nodes_all["activity"].isin([START, END])]
        if not len(inner) or "max" not in inner:
            return False
        longest = inner["max"].dropna()
        return bool(len(longest)) and bool((longest <= pd.Timedelta(0)).all())

    # --- rendering ---------------------------------------------------------------------------------
    def to_dot(self) -> str:
        """The map as Graphviz DOT text (left-to-right; thickness and labels by the chosen metric)."""
        perf = self.metric == "performance"
        instant = perf and self.single_timestamp  # no service time to show: label activities by name only
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
                label = _esc(name) if instant else f"{_esc(name)}\\n{detail}"
                attrs = f'label="{label}", fillcolor="{fill}", fontcolor="{font}"'
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


def default_shares(
    nodes: pd.DataFrame, edges: pd.DataFrame, *, max_nodes: int, max_paths: int, paths: float
) -> tuple[float, float]:
    """The ``(activities, paths)`` shares that open a large map readably: the *max_nodes* most frequent
    nodes (all when there are no more) and, among them, the *max_paths* most frequent transitions, or the
    share *paths* of them when that is fewer (each node's strongest transitions in and out, the START/END
    transitions of :data:`ENDPOINT_SHARE` of the cases and the connecting routes come on top, as at any
    slider position). The ranking is :meth:`ProcessMap._simplify`'s (frequency, then name)."""
    inner = sorted(
        (-int(f), str(a))
        for a, f in zip(nodes["activity"], nodes["frequency"], strict=True)
        if a not in (START, END)
    )
    activities = 1.0 if len(inner) <= max_nodes else max_nodes / len(inner)
    kept = {a for _, a in inner[:max_nodes]} | {START, END}
    candidates = sum(
        1 for a, b in zip(edges["source"], edges["target"], strict=True) if str(a) in kept and str(b) in kept
    )
    share = paths if candidates * paths <= max_paths else max_paths / candidates
    return activities, share


#: one transition for the simplification: (source, target, frequency, row label in the edges frame)
_Edge = tuple[str, str, int, Any]


def _widest(reached: set[str], goal: str, allowed: list[_Edge], reverse: bool) -> list[_Edge]:
    """The strongest route from *reached* to *goal* (to *reached* from *goal* when *reverse*) over the
    *allowed* edges: the route whose least frequent edge is the most frequent (ties: fewer edges, then
    names), or ``[]`` when there is none."""
    out: dict[str, list[tuple[str, _Edge]]] = {}
    for e in allowed:
        src, dst = (e[1], e[0]) if reverse else (e[0], e[1])
        out.setdefault(src, []).append((dst, e))
    # a max-bottleneck Dijkstra: the heap holds (-width, hops, node)
    best: dict[str, float] = dict.fromkeys(reached, math.inf)
    came: dict[str, tuple[str, _Edge]] = {}
    heap: list[tuple[float, int, str]] = [(-math.inf, 0, name) for name in sorted(reached)]
    done: set[str] = set()
    while heap:
        neg, hops, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        if node == goal:
            break
        for nxt, e in out.get(node, []):
            width = min(-neg, e[2])
            if nxt not in done and width > best.get(nxt, -math.inf):
                best[nxt] = width
                came[nxt] = (node, e)
                heapq.heappush(heap, (-width, hops + 1, nxt))
    if goal not in came:
        return []
    path, node = [], goal
    while node not in reached:
        node, e = came[node]
        path.append(e)
    return path


def _reach(graph: list[_Edge], chosen: set[Any], origin: str, reverse: bool) -> set[str]:
    """The activities *origin* reaches on the *chosen* edges (that reach *origin*, when *reverse*)."""
    step: dict[str, set[str]] = {}
    for a, b, _, i in graph:
        if i in chosen:
            src, dst = (b, a) if reverse else (a, b)
            step.setdefault(src, set()).add(dst)
    seen, todo = {origin}, [origin]
    while todo:
        for nxt in step.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _connect(
    graph: list[_Edge], chosen: set[Any], kept: set[str], candidates: list[_Edge]
) -> tuple[set[Any], set[str]]:
    """*chosen* edges and *kept* activities made connected: every kept activity reached from START, then
    every one reaching END, each by its strongest route (see the module's docstring, step 4)."""
    chosen, kept = set(chosen), set(kept)
    executions: dict[str, int] = {}
    for _, b, f, _ in graph:
        executions[b] = executions.get(b, 0) + f
    for reverse, origin in ((False, START), (True, END)):
        reached = _reach(graph, chosen, origin, reverse)
        # most frequent activities first, so rarer ones may ride on the routes already added
        for goal in sorted(kept - reached, key=lambda a: (-executions.get(a, 0), a)):
            if goal in reached:
                continue
            route = _widest(reached, goal, candidates, reverse) or _widest(reached, goal, graph, reverse)
            for a, b, _, i in route:
                chosen.add(i)
                kept.update((a, b))
            reached = _reach(graph, chosen, origin, reverse)
    return chosen, kept


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
