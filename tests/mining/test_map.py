"""ProcessMap: nodes and edges against the raw transitions, Disco-style simplification, pm4py's DFG, the
SVG + PNG mimebundle, and Graphviz rendering with and without a system ``dot``."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pandas as pd
import pytest

from pm_notebook import ConfigurationError
from pm_notebook.mining import ProcessMap

from .conftest import ms, quantile_bounds


@pytest.fixture(scope="module")
def pmap(log) -> ProcessMap:
    return log.process_map(activities=1.0, paths=1.0)


def test_nodes_and_edges_are_the_directly_follows_graph(pmap, raw):
    e = raw.edge[raw.edge["caseid"].isin(raw.current())]
    grouped = e.groupby(["source_vertex_name", "destination_vertex_name"])["duration"]
    edges = pmap.edges
    assert {(r.source, r.target): r.frequency for r in edges.itertuples()} == grouped.size().to_dict()
    for r in edges.itertuples():
        values = grouped.get_group((r.source, r.target))
        assert r.total == ms(values.sum()) and r.min == ms(values.min())
        assert quantile_bounds(values, 0.5)[0] <= r.median <= quantile_bounds(values, 0.5)[1]
    v = raw.vertex[raw.vertex["caseid"].isin(raw.current())]
    nodes = pmap.nodes.set_index("activity")
    assert nodes.loc["START", "frequency"] == nodes.loc["END", "frequency"] == len(raw.current())
    inner = nodes.drop(["START", "END"])
    assert inner["frequency"].to_dict() == v.groupby("vertex_name").size().to_dict()
    assert inner["cases"].to_dict() == v.groupby("vertex_name")["caseid"].nunique().to_dict()


def test_to_pm4py_matches_pm4py_discover_dfg_on_the_pulled_events(log, pmap):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pm4py

        events = log.to_pm4py(dimensions=None)
        events = pm4py.format_dataframe(
            events, case_id="case:concept:name", activity_key="concept:name", timestamp_key="time:timestamp"
        )
        assert "start_timestamp" in events.columns
        dfg, starts, ends = pm4py.discover_dfg(
            events,
            case_id_key="case:concept:name",
            activity_key="concept:name",
            timestamp_key="start_timestamp",
        )
    ours = pmap.to_pm4py()
    assert ours == (dict(dfg), dict(starts), dict(ends))


def test_simplification_keeps_the_most_frequent_and_stays_connected(log, pmap):
    inner = pmap.all_nodes[~pmap.all_nodes["activity"].isin(["START", "END"])]
    half = pmap.view(activities=0.5, paths=0.0)
    kept = set(half.nodes["activity"]) - {"START", "END"}
    top = inner.sort_values(["frequency", "activity"], ascending=[False, True]).head(
        math.ceil(len(inner) / 2)
    )
    assert kept == set(top["activity"])
    shown = half.edges
    for name in kept:  # paths=0 still leaves every kept activity an incoming and an outgoing transition
        assert (shown["target"] == name).any() and (shown["source"] == name).any(), name
    assert set(shown["source"]) | set(shown["target"]) <= kept | {"START", "END"}
    sizes = [len(pmap.view(paths=p).edges) for p in (0.0, 0.3, 0.6, 1.0)]
    assert sizes == sorted(sizes) and sizes[-1] == len(pmap.all_edges)
    default = log.process_map()  # activities=1.0, paths=0.3
    assert default.paths == 0.3 and len(default.edges) < len(pmap.all_edges)
    assert "of 14 activities" in repr(default) and "frequency" in repr(default)


def _sql_requests(sandbox) -> dict:
    return {k: n for k, n in sandbox.stats()["requests"].items() if "/druid/" in k}


def test_view_and_render_never_query_again(sandbox, log, pmap):
    sandbox.reset_stats()
    log.process_map()
    assert sum(_sql_requests(sandbox).values()) >= 2  # the counter sees the map's own queries...
    sandbox.reset_stats()
    perf = pmap.view(metric="performance", stat="p90", activities=0.7, paths=0.5)
    perf.svg()
    perf.png()
    assert _sql_requests(sandbox) == {}  # ...and none for a new view and its rendering
    assert "performance (p90)" in repr(perf)


def test_mimebundle_has_svg_and_png(pmap):
    bundle = pmap._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "image/png", "text/plain"}
    assert "<svg" in bundle["image/svg+xml"] and "Create Purchase Order" in bundle["image/svg+xml"]
    assert bundle["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert bundle["text/plain"] == repr(pmap)


def test_labels_follow_the_metric(pmap):
    freq = pmap.to_dot()
    perf = pmap.view(metric="performance", stat="median").to_dot()
    top = pmap.edges.sort_values("frequency").iloc[-1]
    assert f'label="{int(top.frequency):,}"' in freq
    assert 'label="' in perf and f'label="{int(top.frequency):,}"' not in perf


def test_save_and_networkx(pmap, tmp_path):
    assert pmap.save(tmp_path / "m.svg").read_text().count("<svg") == 1
    assert pmap.save(tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG"
    assert pmap.save(tmp_path / "m.dot").read_text().startswith("digraph")
    with pytest.raises(ConfigurationError, match=r"\.svg, \.png or \.dot"):
        pmap.save(tmp_path / "m.jpg")
    graph = pmap.to_networkx()
    assert graph.number_of_edges() == len(pmap.edges) and graph.number_of_nodes() == len(pmap.nodes)
    some = pmap.edges.iloc[0]
    assert graph.edges[some.source, some.target]["frequency"] == some.frequency


def test_bad_settings(pmap):
    with pytest.raises(ConfigurationError, match="share between 0 and 1"):
        pmap.view(paths=1.5)
    with pytest.raises(ConfigurationError, match="'frequency' or 'performance'"):
        pmap.view(metric="speed")
    with pytest.raises(ConfigurationError, match="stat must be"):
        pmap.view(stat="mode")


def _path_without_dot() -> str:
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "dot").exists()]
    return os.pathsep.join(keep)


RENDER = textwrap.dedent(
    """
    import sys
    from pm_notebook.mining import render
    source = open(sys.argv[1]).read()
    svg, png = render(source, "svg"), render(source, "png")
    assert b"<svg" in svg and png[:4] == b"\\x89PNG", (svg[:80], png[:8])
    print("rendered", len(svg), len(png))
    """
)


def test_renders_with_no_dot_on_path(pmap, tmp_path):
    """The bundled Graphviz of the pygraphviz wheel lays the map out: run in a child process whose PATH
    has every directory holding a ``dot`` removed, so no system Graphviz can be reached."""
    dot = pmap.save(tmp_path / "m.dot")
    env = {**os.environ, "PATH": _path_without_dot()}
    done = subprocess.run(
        [sys.executable, "-c", RENDER, str(dot)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rendered")


def test_a_system_dot_is_preferred(pmap, tmp_path):
    """With a ``dot`` on PATH the map goes through it: a stand-in ``dot`` (which records its call, then
    renders with the bundled library) proves the subprocess route is taken."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    marker = tmp_path / "called"
    fake = bindir / "dot"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys, pygraphviz\n"
        f"open({str(marker)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "fmt = sys.argv[1][2:]\n"
        "sys.stdout.buffer.write(pygraphviz.AGraph(string=sys.stdin.read()).draw(format=fmt, prog='dot'))\n"
    )
    fake.chmod(0o755)
    dot = pmap.save(tmp_path / "m.dot")
    env = {**os.environ, "PATH": str(bindir) + os.pathsep + _path_without_dot()}
    done = subprocess.run(
        [sys.executable, "-c", RENDER, str(dot)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert marker.read_text().split() == ["-Tsvg", "-Tpng"]


def test_missing_graphviz_names_the_extra(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pygraphviz"] = None  # as if the [map] extra were not installed
        from pm_notebook import MissingDependency
        from pm_notebook.mining import render
        try:
            render("digraph { a -> b }", "svg")
        except MissingDependency as e:
            print(e)
        """
    )
    env = {**os.environ, "PATH": _path_without_dot()}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install pm-notebook[map]" in done.stdout


def test_empty_map_renders(log):
    empty = log.between("2031-01-01", "2031-02-01").process_map()
    assert "<svg" in empty.svg() and isinstance(empty.nodes, pd.DataFrame)
