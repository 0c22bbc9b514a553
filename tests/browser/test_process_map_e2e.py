"""The process map in JupyterLab under headless Chromium: the SVG renders inline, the explorer's sliders
re-render it from the fetched graph, and ``%pm map`` shows the same map. Screenshots land in
``test-artifacts/browser/test_process_map_renders_in_jupyterlab/`` (the docs use the first one)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import open_notebook, run_cell

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_process_map_renders_in_jupyterlab(lab, page, sandbox, sandbox_store):
    demo = sandbox.workgroups["demo"]
    project = sandbox_store.workgroup(demo.client_id).projects[0]
    lab.write_notebook(
        "map.ipynb",
        [
            "import pm_notebook\n"
            "conn = pm_notebook.connect()\n"
            f"pmap = conn.mining({project.name!r}).process_map(paths=0.3)\n"
            "pmap",
            "from pm_notebook.widgets import ProcessMapExplorer\nProcessMapExplorer(pmap)",
            f'%load_ext pm_notebook\n%pm map --project "{project.name}" --paths 1.0',
        ],
    )
    open_notebook(page, lab.lab_url("map.ipynb"))

    run_cell(page, 0, timeout=120_000)
    # JupyterLab shows an SVG output as an image (data URI), preferred over the PNG of the same bundle
    first = page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".jp-RenderedSVG img")
    expect(first).to_be_visible(timeout=60_000)
    assert first.get_attribute("src").startswith("data:image/svg+xml")
    page.shots("map")

    run_cell(page, 1)
    explorer = page.locator(".jp-Notebook .jp-Cell").nth(1)
    expect(explorer.locator(".widget-slider")).to_have_count(2, timeout=60_000)
    summary = explorer.locator(".widget-html").first
    expect(explorer.locator("svg g.edge").first).to_be_visible(timeout=60_000)
    expect(summary).to_contain_text("frequency")
    picture = explorer.locator("svg[viewBox]").filter(has=page.locator("g.node"))
    frequency_labels = picture.text_content()
    explorer.locator(".widget-toggle-button", has_text="performance").click()  # re-rendered, not re-queried
    expect(summary).to_contain_text("performance", timeout=30_000)
    expect(picture).not_to_have_text(frequency_labels)
    page.shots("explorer-performance")

    run_cell(page, 2, timeout=120_000)
    magic = page.locator(".jp-Notebook .jp-Cell").nth(2)
    # %pm map shows the map as HTML: the SVG inline, fitted to the cell's width (no image of it)
    expect(magic.locator(".jp-RenderedHTMLCommon svg g.node").first).to_be_visible(timeout=60_000)
    expect(magic).to_contain_text(" activities, ")
    expect(magic).to_contain_text(" via ")
    page.shots("pm-map-magic")
