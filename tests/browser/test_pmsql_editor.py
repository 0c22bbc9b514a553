"""The editor extension in a real browser: ``%%pmsql`` cells highlighted as Druid SQL, Python cells alone,
the switch made as the user types, and the kernel's completion on Tab, in JupyterLab 4 and Notebook 7.

The extension is the one ``make labextension`` built from ``labextension/`` (the wheel ships the same files);
JupyterLab finds it as a prebuilt extension through ``JUPYTER_PATH``. A screenshot goes to ``docs/_static``.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from .conftest import ROOT, open_notebook, run_cell, start_jupyter

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BUILT = ROOT / "pm_notebook" / "labextension"
SCREENSHOT = ROOT / "docs" / "_static" / "pmsql-highlighting.png"

PYTHON_CELL = '%load_ext pm_notebook\n%pmsql --project "Purchase to Pay"\nthreshold = 3_600_000  # in ms'
SQL_CELL = (
    "%%pmsql -o daily --polars --limit 100\n"
    "SELECT TIME_FLOOR(__time, 'P1D') AS day, COUNT(*) AS cases\n"
    "FROM {cases}\n"
    "WHERE duration > :threshold AND LOOKUP(caseid, 'vendors') IS NULL\n"
    "GROUP BY 1 ORDER BY 1"
)


@pytest.fixture(scope="module")
def lab(sandbox, tmp_path_factory):
    """JupyterLab with the built extension on its path and kernels that reach the sandbox."""
    assert (BUILT / "package.json").exists(), "the extension is not built: run `make labextension`"
    data = tmp_path_factory.mktemp("jupyter-data")
    (data / "labextensions").mkdir()
    (data / "labextensions" / "pm-notebook").symlink_to(BUILT, target_is_directory=True)
    server = start_jupyter(tmp_path_factory.mktemp("lab"), {**sandbox.env, "JUPYTER_PATH": str(data)})
    yield server
    server.stop()


def editor(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content")


def token(cell, cls: str, text: str):
    return cell.locator(f"span.{cls}", has_text=re.compile(rf"^{re.escape(text)}$", re.I))


def test_jupyterlab_lists_the_extension_as_prebuilt_and_enabled(lab):
    import urllib.request

    with urllib.request.urlopen(f"{lab.url}/lab/api/extensions?token={lab.token}") as resp:
        listed = {e["name"]: e for e in json.load(resp)}
    assert listed["pm-notebook"]["enabled"] and listed["pm-notebook"]["installed"]


def test_pmsql_cell_reads_as_sql_and_python_cell_stays_python(lab, page):
    lab.write_notebook("highlight.ipynb", [PYTHON_CELL, SQL_CELL])
    open_notebook(page, lab.lab_url("highlight.ipynb"))
    python, sql = editor(page, 0), editor(page, 1)
    expect(sql).to_have_attribute("data-pm-language", "pmsql")
    # lang-sql's tokens, with CodeMirror's highlight classes: keywords, Druid functions, strings
    for word in ("SELECT", "FROM", "WHERE", "GROUP"):
        expect(token(sql, "tok-keyword", word).first).to_be_visible()
    expect(token(sql, "pm-sql-function", "TIME_FLOOR")).to_be_visible()
    expect(token(sql, "pm-sql-function", "LOOKUP")).to_be_visible()
    expect(token(sql, "tok-string", "'P1D'")).to_be_visible()
    # the magic line is a magic, not SQL: `--polars` is no SQL comment, `-o` no operator
    magic = sql.locator(".cm-line").first
    expect(magic).to_have_class(re.compile(r"\bpm-magic-line\b"))
    assert magic.locator("[class*='tok-']").count() == 0
    # the Python cell: no SQL language, no SQL classes, its `%pmsql` line included
    assert python.get_attribute("data-pm-language") is None
    assert python.locator("[class*='tok-'], .pm-sql-function, .pm-magic-line").count() == 0
    page.locator(".jp-Notebook .jp-Cell").nth(1).screenshot(path=str(SCREENSHOT))
    page.shots("highlighted")


def test_typing_the_magic_line_switches_the_cell_both_ways(lab, page):
    lab.write_notebook("typing.ipynb", [""])
    open_notebook(page, lab.lab_url("typing.ipynb"))
    cell = editor(page, 0)
    cell.click()
    page.keyboard.type("SELECT caseid FROM t")
    assert cell.locator("[class*='tok-']").count() == 0  # Python until the magic line is there
    page.keyboard.press("Control+Home")
    page.keyboard.type("%%pmsql\n")
    expect(cell).to_have_attribute("data-pm-language", "pmsql")
    expect(token(cell, "tok-keyword", "SELECT")).to_be_visible()
    page.keyboard.press("Control+Home")
    page.keyboard.press("Delete")  # `%pmsql`: a line magic, the cell is Python again
    expect(cell).not_to_have_attribute("data-pm-language", "pmsql")
    expect(cell.locator("[class*='tok-']")).to_have_count(0)
    page.shots("switched-back")


def test_tab_completes_from_the_kernel_in_a_highlighted_cell(lab, page):
    lab.write_notebook("complete.ipynb", [PYTHON_CELL, "%%pmsql\nSELECT caseid FROM "])
    open_notebook(page, lab.lab_url("complete.ipynb"))
    run_cell(page, 0)
    cell = editor(page, 1)
    expect(cell).to_have_attribute("data-pm-language", "pmsql")
    cell.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("{ca")
    page.keyboard.press("Tab")
    # one match: the kernel's completion is inserted at once
    expect(cell).to_contain_text("FROM {cases}")
    expect(token(cell, "tok-keyword", "SELECT")).to_be_visible()
    page.shots("completed")


def test_notebook7_highlights_the_pmsql_cell_too(lab, page):
    lab.write_notebook("nb7.ipynb", [PYTHON_CELL, SQL_CELL])
    open_notebook(page, lab.notebook7_url("nb7.ipynb"), lab=False)
    expect(editor(page, 1)).to_have_attribute("data-pm-language", "pmsql")
    expect(token(editor(page, 1), "pm-sql-function", "TIME_FLOOR")).to_be_visible()
    assert editor(page, 0).locator("[class*='tok-']").count() == 0
    page.shots("notebook7")
