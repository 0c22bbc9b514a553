"""How a process map sits in a notebook, for the magics and the widgets alike (pure text and HTML).

A map is shrunk to the cell's width when wider (aspect kept) and scrolls past :data:`MAP_MAX_HEIGHT` pixels;
it stays SVG, so it is crisp at any zoom. Its footer is the same small grey line as under every table.
"""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = ["MAP_MAX_HEIGHT", "fit_svg", "footer_html", "map_summary"]

#: the height above which a process map scrolls inside its cell rather than filling the screen
MAP_MAX_HEIGHT = 640


def footer_html(text: str) -> str:
    """The small grey line under every answer (a table's, a map's); *text* is escaped, lines kept."""
    lines = "<br>".join(html.escape(line) for line in text.split("\n"))
    return f'<div class="pm-footer" style="font-size:smaller;opacity:.75">{lines}</div>'


def fit_svg(svg: str, *, max_height: int = MAP_MAX_HEIGHT) -> str:
    """*svg* (Graphviz's, with its ``viewBox``) as HTML: at most the cell's width, its aspect kept, scrolling
    past *max_height* pixels.

    >>> fit_svg('<?xml version="1.0"?><svg width="900pt" viewBox="0 0 900 90"></svg>')[:80]
    '<div class="pm-map" style="max-height:640px;overflow:auto"><svg style="max-width:'
    """
    start = svg.find("<svg")
    if start < 0:
        return svg
    svg = re.sub(r"<svg\b", '<svg style="max-width:100%;height:auto"', svg[start:], count=1)
    return f'<div class="pm-map" style="max-height:{max_height}px;overflow:auto">{svg}</div>'


def map_summary(pmap: Any) -> str:
    """What a process map shows, in the words of its controls (``frequency: 14 of 14 activities, 20 of 25
    paths``), and what it hides."""
    ends = ("START", "END")

    def inner(nodes: Any) -> int:
        return int((~nodes["activity"].isin(ends)).sum())

    shown, every = inner(pmap.nodes), inner(pmap.all_nodes)
    paths, all_paths = len(pmap.edges), len(pmap.all_edges)
    view = pmap.metric if pmap.metric == "frequency" else f"{pmap.metric} ({pmap.stat})"
    text = f"{view}: {shown} of {every} activities, {paths} of {all_paths} paths"
    hidden = [f"{n} {what}" for n, what in ((every - shown, "activities"), (all_paths - paths, "paths")) if n]
    if hidden:
        text += f" ({' and '.join(hidden)} hidden: raise the activities / paths share to show them)"
    return text
