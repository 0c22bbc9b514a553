"""How a process map sits in a notebook, for the magics and the widgets alike (pure text and HTML).

A map is shrunk to the cell's width when wider (aspect kept) and scrolls past :data:`MAP_MAX_HEIGHT` pixels;
it stays SVG, so it is crisp at any zoom. Its footer is the same small grey line as under every table.
Durations read rounded (:func:`readable_duration`) wherever a table shows them: the magics' results and the
process-mining answers.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "MAP_MAX_HEIGHT",
    "duration_formatters",
    "fit_svg",
    "footer_html",
    "map_summary",
    "readable_duration",
]

#: the height above which a process map scrolls inside its cell rather than filling the screen
MAP_MAX_HEIGHT = 640


def readable_duration(value: Any) -> str:
    """A duration rounded for reading: two units at most (``6 min 57 s``, ``2 d 3 h``), ``""`` when missing.

    >>> import pandas as pd
    >>> readable_duration(pd.Timedelta("00:06:56.822")), readable_duration(pd.Timedelta(days=2, hours=3))
    ('6 min 57 s', '2 d 3 h')
    """
    import pandas as pd

    if value is None or pd.isna(value):
        return ""
    seconds = pd.Timedelta(value).total_seconds()
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds < 10:
        return f"{sign}{seconds:.1f} s"
    whole = round(seconds)
    for size, unit, small_size, small in (
        (86400, "d", 3600, "h"),
        (3600, "h", 60, "min"),
        (60, "min", 1, "s"),
    ):
        if whole >= size:
            big, rest = divmod(whole, size)
            part = round(rest / small_size)
            if part * small_size == size:  # 59.6 min rounds up to the next hour
                big, part = big + 1, 0
            return f"{sign}{big} {unit}" + (f" {part} {small}" if part else "")
    return f"{sign}{whole} s"


def duration_formatters(frame: Any) -> dict[Any, Callable[[Any], str]]:
    """The per-column ``formatters`` (of ``to_html`` / ``to_string``) that show *frame*'s durations rounded
    (:func:`readable_duration`): its duration columns, and its mixed columns holding durations (a transposed
    summary); none when its column names repeat (a formatter is keyed by name)."""
    import pandas as pd

    if not frame.columns.is_unique:
        return {}
    formatters: dict[Any, Callable[[Any], str]] = {}
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_timedelta64_dtype(column):
            formatters[name] = readable_duration
        elif column.dtype == object and any(isinstance(v, pd.Timedelta) for v in column):
            formatters[name] = _mixed_value
    return formatters


def _mixed_value(value: Any) -> str:
    """One value of a mixed column as pandas shows it (floats to ``display.precision`` significant
    digits), a duration rounded."""
    import pandas as pd

    if isinstance(value, pd.Timedelta):
        return readable_duration(value)
    if isinstance(value, float):
        return f"{value:.{pd.get_option('display.precision')}g}"
    return str(value)


def footer_html(text: str) -> str:
    """The small grey line under every answer (a table's, a map's); *text* is escaped, lines kept."""
    lines = "<br>".join(html.escape(line) for line in text.split("\n"))
    return f'<div class="pm-footer" style="font-size:smaller;opacity:.75">{lines}</div>'


def fit_svg(svg: str, *, max_height: int = MAP_MAX_HEIGHT) -> str:
    """*svg* (Graphviz's, with its ``viewBox``) as HTML: at most the cell's width, its aspect kept, scrolling
    past *max_height* pixels.

    >>> fit_svg('<?xml version="1.0"?><svg width="900pt" viewBox="0 0 900 90"></svg>')[:81]
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
