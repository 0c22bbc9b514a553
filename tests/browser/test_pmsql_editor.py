"""The editor extension in a real browser: ``%%pmsql`` cells highlighted as Druid SQL, Python cells alone,
the switch made as the user types, and the kernel's completion on Tab, in JupyterLab 4 and Notebook 7.

The extension is the one ``make labextension`` built from ``labextension/`` (the wheel ships the same files);
JupyterLab finds it as a prebuilt extension through ``JUPYTER_PATH``, beside whatever the venv has (jupysql's
own plugin among them, as for a user of both). Screenshots of the cells go to
``test-artifacts/browser/<test>/``; ``scripts/docs-screenshots.sh`` copies them into the docs.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from playwright.sync_api import expect

from .conftest import ROOT, fresh_url, open_notebook, run_cell, shut_down_kernels, start_jupyter

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# laid out as share/jupyter: labextensions/pm-notebook/
BUILT = ROOT / "labextension" / "dist"

PYTHON_CELL = '%load_ext pm_notebook\n%pmsql --project "Purchase to Pay"\nthreshold = 3_600_000  # in ms'
SQL_CELL = (
    "%%pmsql -o daily --polars --limit 100\n"
    "SELECT TIME_FLOOR(__time, 'P1D') AS d, COUNT(*) AS cases\n"
    "FROM {cases}\n"
    "WHERE duration > :threshold AND LOOKUP(caseid, 'vendors') IS NULL\n"
    "GROUP BY 1 ORDER BY 1"
)
# what a Python cell must never carry: the SQL language, CodeMirror's token classes (only the SQL language
# adds them), the extension's own classes
# events, not speed: a generous ceiling for a machine shared by many (a hang guard, never a measure)
STEP_TIMEOUT = 180_000
SQL_MARKS = "[class*='tok-'], .pm-sql-function, .pm-sql-special, .pm-magic-line"


@pytest.fixture(scope="module")
def lab(sandbox, tmp_path_factory):
    """JupyterLab with the built extension on its path and kernels that reach the sandbox."""
    assert (BUILT / "labextensions" / "pm-notebook" / "package.json").exists(), (
        "the extension is not built: run `make labextension`"
    )
    server = start_jupyter(tmp_path_factory.mktemp("lab"), {**sandbox.env, "JUPYTER_PATH": str(BUILT)})
    yield server
    server.stop()


@pytest.fixture
def server(lab):
    """The module's server; each test's kernels are shut down after it (they free the shared CPU). Every
    expectation waits up to STEP_TIMEOUT for its event (a loaded machine renders late, never wrongly)."""
    expect.set_options(timeout=STEP_TIMEOUT)
    try:
        yield lab
    finally:
        expect.set_options(timeout=None)  # Playwright's default again
        shut_down_kernels(lab)


def editor(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content")


def token(cell, cls: str, text: str):
    return cell.locator(f"span.{cls}", has_text=re.compile(rf"^{re.escape(text)}$", re.I))


def assert_python(cell) -> None:
    assert cell.get_attribute("data-pm-language") is None
    assert cell.get_attribute("data-language") == "python"
    assert cell.locator(SQL_MARKS).count() == 0


def cells_screenshot(page, step: str) -> None:
    """A screenshot of the notebook's cells only (what the docs show), among the test's artifacts."""
    boxes = [cell.bounding_box() for cell in page.locator(".jp-Notebook .jp-Cell").all()]
    left, top = min(b["x"] for b in boxes), min(b["y"] for b in boxes)
    right, bottom = max(b["x"] + b["width"] for b in boxes), max(b["y"] + b["height"] for b in boxes)
    page.shots.n += 1
    path = page.shots.dir / f"{page.shots.n:02d}-{step}.png"
    page.screenshot(path=str(path), clip={"x": left, "y": top, "width": right - left, "height": bottom - top})


def test_jupyterlab_lists_the_extension_as_prebuilt_and_enabled(server):
    with urllib.request.urlopen(f"{server.url}/lab/api/extensions?token={server.token}") as resp:
        listed = {e["name"]: e for e in json.load(resp)}
    assert listed["pm-notebook"]["enabled"] and listed["pm-notebook"]["installed"]


def test_pmsql_cell_reads_as_sql_and_python_cell_stays_python(server, page):
    server.write_notebook("highlight.ipynb", [PYTHON_CELL, SQL_CELL])
    open_notebook(page, fresh_url(server, "highlight.ipynb"))
    python, sql = editor(page, 0), editor(page, 1)
    expect(sql).to_have_attribute("data-pm-language", "pmsql")
    # lang-sql's tokens, with CodeMirror's highlight classes: keywords, Druid functions, strings
    for word in ("SELECT", "FROM", "WHERE", "AND", "IS", "NULL", "GROUP", "ORDER"):
        expect(token(sql, "tok-keyword", word).first).to_be_visible()
    for function in ("TIME_FLOOR", "COUNT", "LOOKUP"):
        expect(token(sql, "pm-sql-function", function)).to_be_visible()
    expect(token(sql, "tok-string", "'P1D'")).to_be_visible()
    # Druid's `__time` and the bound `:threshold` are special names; `duration` a plain name
    expect(token(sql, "pm-sql-special", "__time")).to_be_visible()
    expect(token(sql, "pm-sql-special", ":threshold")).to_be_visible()
    assert sql.locator("span", has_text=re.compile("^duration$")).count() == 0
    # the magic line is a magic, not SQL: `--polars` is no SQL comment, `-o` no operator
    magic = sql.locator(".cm-line").first
    expect(magic).to_have_class(re.compile(r"\bpm-magic-line\b"))
    assert magic.locator("span").count() == 0
    # the Python cell, its `%pmsql` line magic included: Python's own highlighting, nothing of SQL's
    assert_python(python)
    expect(python.locator("span", has_text=re.compile(r"^3_600_000$"))).to_be_visible()
    cells_screenshot(page, "cells")


def test_typing_the_magic_line_switches_the_cell_both_ways(server, page):
    server.write_notebook("typing.ipynb", [""])
    open_notebook(page, fresh_url(server, "typing.ipynb"))
    cell = editor(page, 0)
    cell.click()
    page.keyboard.type("SELECT caseid FROM t")
    expect(cell).to_contain_text("SELECT caseid FROM t")
    assert_python(cell)  # Python until the magic line is there
    page.keyboard.press("Control+Home")
    page.keyboard.type("%%pmsql\n")
    expect(cell).to_have_attribute("data-pm-language", "pmsql")
    expect(token(cell, "tok-keyword", "SELECT")).to_be_visible()
    page.keyboard.press("Control+Home")
    page.keyboard.press("Delete")  # `%pmsql`: a line magic, the cell is Python again
    expect(cell).not_to_have_attribute("data-pm-language", "pmsql")
    expect(cell.locator(SQL_MARKS)).to_have_count(0)
    assert_python(cell)
    page.shots("switched-back")


def test_tab_completes_from_the_kernel_in_a_highlighted_cell(server, page):
    server.write_notebook("complete.ipynb", [PYTHON_CELL, "%%pmsql\nSELECT caseid FROM "])
    open_notebook(page, fresh_url(server, "complete.ipynb"))
    run_cell(page, 0)
    cell = editor(page, 1)
    expect(cell).to_have_attribute("data-pm-language", "pmsql")
    cell.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("{ca")
    page.keyboard.press("Tab")
    # the kernel's completion: a single match is inserted at once; a list waits for the choice
    popup = page.locator(".jp-Completer")
    offered = popup.locator(".jp-Completer-item", has_text="{cases}")
    expect(cell.filter(has_text="FROM {cases}").or_(offered).first).to_be_visible()
    if popup.is_visible():
        page.shots("completion-offered")
        offered.click()
    # the completion is in, once, and the cell stays SQL
    expect(cell).to_contain_text("FROM {cases}")
    assert cell.text_content().count("{cases}") == 1 and "{cases}}" not in cell.text_content()
    expect(token(cell, "tok-keyword", "SELECT")).to_be_visible()
    expect(token(cell, "tok-keyword", "FROM")).to_be_visible()
    page.shots("completed")


def test_notebook7_highlights_the_pmsql_cell_too(server, page):
    server.write_notebook("nb7.ipynb", [PYTHON_CELL, SQL_CELL])
    open_notebook(page, server.notebook7_url("nb7.ipynb"), lab=False)
    python, sql = editor(page, 0), editor(page, 1)
    expect(sql).to_have_attribute("data-pm-language", "pmsql")
    expect(token(sql, "tok-keyword", "SELECT")).to_be_visible()
    expect(token(sql, "pm-sql-function", "TIME_FLOOR")).to_be_visible()
    expect(token(sql, "pm-sql-special", "__time")).to_be_visible()
    expect(sql.locator(".cm-line").first).to_have_class(re.compile(r"\bpm-magic-line\b"))
    assert_python(python)
    cells_screenshot(page, "cells")
