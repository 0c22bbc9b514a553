"""Pictures of answers drawn with matplotlib (a notebook extra, imported only when a chart is drawn)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigurationError, MissingDependency

__all__ = ["Chart", "dotted_chart"]


class Chart:
    """A drawn answer: shows itself in a notebook as a PNG (an SVG of thousands of dots would weigh
    megabytes in a saved notebook), keeps its numbers in :attr:`data` and its matplotlib figure in
    :attr:`figure`; :meth:`save` writes it as a file, as a process map's ``save()`` does."""

    def __init__(self, figure: Any, data: pd.DataFrame) -> None:
        self.figure = figure
        self.data = data

    def _render(self, fmt: str) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format=fmt, dpi=72)
        return buf.getvalue()

    def _repr_png_(self) -> bytes:
        return self._render("png")

    def to_svg(self) -> str:
        """The chart as SVG text."""
        return self._render("svg").decode("utf-8")

    def save(self, path: str | Path) -> Path:
        """Write the chart to *path*: ``.svg``, ``.png`` or ``.pdf`` (by suffix); returns the path."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".svg", ".png", ".pdf"):
            raise ConfigurationError(f"save() writes .svg, .png or .pdf files, not {path.name!r}.")
        path.write_bytes(self._render(suffix[1:]))
        return path

    def __repr__(self) -> str:
        return f"<Chart: {len(self.data)} bins>"


def dotted_chart(data: pd.DataFrame, title: str) -> Chart:
    """Dots per (period, activity) of *data* (``period``, ``activity``, ``events``), sized by events."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependency(
            "dotted_chart() draws with matplotlib, which is not installed.",
            hint="pip install 'pm-notebook[notebook]'",
        ) from None
    order = list(dict.fromkeys(data.sort_values(["period", "activity"])["activity"].astype(str)))
    fig = Figure(figsize=(9, 0.35 * max(4, len(order)) + 1.2))
    ax = fig.add_subplot()
    biggest = float(data["events"].max()) if len(data) else 1.0
    for i, name in enumerate(order):
        part = data[data["activity"].astype(str) == name]
        sizes = 8 + 160 * part["events"].astype("float64") / biggest
        ax.scatter(part["period"].dt.tz_localize(None), [i] * len(part), s=sizes, alpha=0.7)
    ax.set_yticks(range(len(order)), order)
    ax.set_xlabel(f"task start, {data.attrs.get('freq', '')} bins (dot size: events)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return Chart(fig, data)
