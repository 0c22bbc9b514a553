"""The organisational and time perspectives in JupyterLab under headless Chromium: ``log.resource_map()``
shows its SVG inline and ``log.dotted_chart()`` its picture, both computed by the sandbox's Druid SQL.
The screenshot lands in ``test-artifacts/browser/test_resource_map_and_dotted_chart_in_jupyterlab/``;
``scripts/docs-screenshots.sh`` copies it into the docs (docs/mining.md shows it)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import open_notebook, run_cell

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_resource_map_and_dotted_chart_in_jupyterlab(lab, page, sandbox, sandbox_store, connect_workgroup):
    demo = sandbox.workgroups["demo"]
    project = sandbox_store.workgroup(demo.client_id).projects[0]
    lab.write_notebook(
        "perspectives.ipynb",
        [
            "import pm_notebook\n"
            "conn = pm_notebook.connect()\n"
            f"log = conn.mining({project.name!r})\n"
            "log.resource_map(activities=0.5, paths=0.3)",
            'log.dotted_chart("P1W")',
        ],
    )
    open_notebook(page, lab.lab_url("perspectives.ipynb"))
    cells = page.locator(".jp-Notebook .jp-Cell")

    run_cell(page, 0, timeout=120_000)
    # the map's bundle holds SVG and PNG; JupyterLab prefers the SVG and shows it as an image (data URI)
    resource_map = cells.nth(0).locator(".jp-RenderedSVG img")
    expect(resource_map).to_be_visible(timeout=60_000)
    svg = resource_map.get_attribute("src") or ""
    assert svg.startswith("data:image/svg+xml")
    drawn = _svg_text(svg)
    # a map over resources, not activities: the busiest resource the service counts is a node of it
    conn = connect_workgroup(sandbox)
    try:
        log = conn.mining(project.name)
        counted = log.resources().dropna(subset=["resource"]).sort_values("events", ascending=False)
        resources = [str(r) for r in counted["resource"]]
        activities = log.activities()["activity"].tolist()
    finally:
        conn.close()
    assert f">{resources[0]}<" in drawn and sum(f">{r}<" in drawn for r in resources) >= 3
    assert not any(f">{a}<" in drawn for a in activities)
    box = resource_map.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 100

    run_cell(page, 1, timeout=120_000)
    chart = cells.nth(1).locator(".jp-RenderedImage img")
    expect(chart).to_be_visible(timeout=60_000)
    assert (chart.get_attribute("src") or "").startswith("data:image/png")
    # a drawn picture, not a broken image: the browser decoded it at its full size
    width = chart.evaluate("img => img.complete ? img.naturalWidth : 0")
    assert width > 300
    expect(cells.nth(1).locator(".jp-OutputArea-output")).not_to_contain_text("Traceback")
    page.keyboard.press("Control+b")  # the file browser closed: the outputs get the window's width
    cells.nth(0).scroll_into_view_if_needed()
    page.shots("resource-map-and-dotted-chart")


def _svg_text(uri: str) -> str:
    """The SVG text of a ``data:image/svg+xml`` URI (base64 or percent-encoded)."""
    import base64
    from urllib.parse import unquote

    head, _, body = uri.partition(",")
    return base64.b64decode(body).decode("utf-8") if head.endswith(";base64") else unquote(body)
