"""``ProcessMapExplorer``: Disco's sliders over a fetched process map (no query ever runs here)."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from .._display import fit_svg, footer_html, map_summary
from ..errors import ConfigurationError
from ..mining import ProcessMap

__all__ = ["ProcessMapExplorer"]


class ProcessMapExplorer(w.VBox):
    """Sliders for the share of activities and paths, a frequency/performance toggle and the statistic of
    the performance view, over a :class:`~pm_notebook.mining.ProcessMap`.

    Every change re-simplifies and re-renders the map from the numbers it already holds
    (:meth:`ProcessMap.view`): moving a slider never queries the service.

    :param process_map: a map from ``conn.mining(project).process_map()``.

    :meth:`set` does what the controls do, for tests and scripts; :attr:`current` is the map shown.

    >>> from pm_notebook.widgets import ProcessMapExplorer
    >>> ProcessMapExplorer(conn.mining("Purchase to Pay").process_map())   # doctest: +SKIP
    """

    def __init__(self, process_map: ProcessMap, **kwargs: Any) -> None:
        if not isinstance(process_map, ProcessMap):
            raise ConfigurationError(
                f"ProcessMapExplorer needs a ProcessMap, got {type(process_map).__name__}.",
                hint="ProcessMapExplorer(conn.mining(project).process_map())",
            )
        self._source = process_map
        self.current = process_map
        self.activities = w.FloatSlider(
            value=process_map.activities, description="Activities", **_slider(process_map.activities)
        )
        self.paths = w.FloatSlider(value=process_map.paths, description="Paths", **_slider(process_map.paths))
        self.metric = w.ToggleButtons(options=["frequency", "performance"], value=process_map.metric)
        stats = list(ProcessMap.STATS)
        self.stat = w.Dropdown(options=stats, value=process_map.stat, description="Statistic")
        self.stat.disabled = process_map.metric != "performance"
        self.picture = w.HTML()
        self.summary = w.HTML()
        for control in (self.activities, self.paths, self.metric, self.stat):
            control.observe(self._changed, names="value")
        controls = w.HBox([w.VBox([self.activities, self.paths]), w.VBox([self.metric, self.stat])])
        super().__init__([controls, self.summary, self.picture], **kwargs)
        self._show()

    def _changed(self, _change: dict[str, Any]) -> None:
        self.stat.disabled = self.metric.value != "performance"
        self.current = self._source.view(
            metric=self.metric.value,
            stat=self.stat.value,
            activities=self.activities.value,
            paths=self.paths.value,
        )
        self._show()

    def _show(self) -> None:
        self.summary.value = footer_html(map_summary(self.current))
        self.picture.value = fit_svg(self.current.svg())

    def set(
        self,
        *,
        metric: str | None = None,
        stat: str | None = None,
        activities: float | None = None,
        paths: float | None = None,
    ) -> ProcessMap:
        """Move the controls (as a user would) and return the map now shown."""
        with self.hold_trait_notifications():
            if metric is not None:
                self.metric.value = metric
            if stat is not None:
                self.stat.value = stat
            if activities is not None:
                self.activities.value = activities
            if paths is not None:
                self.paths.value = paths
        return self.current


def _slider(value: float) -> dict[str, Any]:
    """A share slider's settings: steps of 5 %, or of 0.1 % where the map opens on a share that is no
    multiple of 5 % (a resource map of hundreds of resources opens on its 25 busiest), so the slider
    holds the value it opens on and moves from there in steps of a node or two."""
    fine = abs(value * 20 - round(value * 20)) > 1e-9
    return {
        "min": 0.0,
        "max": 1.0,
        "step": 0.001 if fine else 0.05,
        "readout_format": ".1%" if fine else ".0%",
        "continuous_update": False,
    }
