"""The process-map explorer widget re-renders from the fetched map: its controls never query."""

from __future__ import annotations

import pytest

from pm_notebook import ConfigurationError
from pm_notebook.widgets import ProcessMapExplorer


def test_controls_reshape_the_map_without_querying(sandbox, log):
    pmap = log.process_map()
    explorer = ProcessMapExplorer(pmap)
    assert explorer.current is pmap and "<svg" in explorer.picture.value
    assert explorer.stat.disabled  # the statistic only matters for the performance view
    sandbox.reset_stats()
    shown = explorer.set(paths=1.0)
    assert len(shown.edges) == len(pmap.all_edges) and explorer.current is shown
    shown = explorer.set(metric="performance", stat="p90", activities=0.5)
    assert not explorer.stat.disabled and shown.metric == "performance" and shown.stat == "p90"
    assert len(shown.nodes) < len(pmap.all_nodes)
    explorer.paths.value = 0.0  # as a user dragging the slider
    assert explorer.current.paths == 0.0 and len(explorer.current.edges) < len(pmap.all_edges)
    assert explorer.current.svg().split("<svg", 1)[1] in explorer.picture.value  # fitted to the notebook
    assert "performance (p90): " in explorer.summary.value and "<ProcessMap" not in explorer.summary.value
    assert not any("/druid/" in k for k in sandbox.stats()["requests"])


def test_needs_a_process_map():
    with pytest.raises(ConfigurationError, match="needs a ProcessMap"):
        ProcessMapExplorer("map")  # type: ignore[arg-type]
