"""The notebooks and a newcomer's first session, in JupyterLab under headless Chromium, against the sandbox.

One JupyterLab server serves the module. Every shipped notebook runs with *Run All* and shows no error;
then a new notebook goes through a newcomer's steps: connect with the form, browse to a table, insert the
offered ``%%pmsql`` cell and run it, a typo (the caret and "did you mean"), a completion accepted with Tab and
run, an interrupt of a query that runs until it is interrupted (a sandbox hold: slow by construction, not by
timing), and ``%pm map``. Every step waits on an event (a selector, the kernel's execution count, the
sandbox's held statement), never on a fixed pause. Screenshots land in
``test-artifacts/browser/<test name>/``; ``scripts/docs-screenshots.sh`` copies the best ones into the docs.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect

from .conftest import ROOT, fresh_url, open_notebook, run_cell, shut_down_kernels, start_jupyter

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
NOTEBOOK_CASES = (
    500  # as notebooks/conftest.py and binder/start: the notebooks' own checks hold for these data
)
PROJECT = "Purchase to Pay"
# events, not speed: generous ceilings for a machine shared by many (a hang guard, never a measure)
RUN_ALL_TIMEOUT = 600_000
STEP_TIMEOUT = 180_000


@pytest.fixture(scope="module")
def lab_sandbox(tmp_path_factory):
    """A sandbox of this module's own, with the notebooks' data (``binder/start``'s case count): notebook 04
    creates a project, which the session's shared sandbox must not see."""
    from pm_sandbox import start

    sb = start(cases=NOTEBOOK_CASES, log_path=tmp_path_factory.mktemp("lab-sandbox") / "sandbox.log")
    yield sb
    sb.stop()


@pytest.fixture(scope="module")
def lab(lab_sandbox, tmp_path_factory):
    """JupyterLab whose kernels have the sandbox's five connection values, as ``binder/start`` gives them."""
    tmp = tmp_path_factory.mktemp("lab-newcomer")
    # notebook 06 reads the receipt log from the checkout's tests/data, next to notebooks/ (the server's root)
    (tmp / "tests" / "data").mkdir(parents=True)
    (tmp / "tests" / "data" / "receipt.csv.gz").write_bytes(
        (ROOT / "tests" / "data" / "receipt.csv.gz").read_bytes()
    )
    server = start_jupyter(tmp, dict(lab_sandbox.env))
    yield server
    server.stop()


def exactly(text: str) -> re.Pattern[str]:
    """*text* as a whole option label (ipywidgets shows a list's spaces as no-break spaces)."""
    return re.compile("^" + r"\s".join(re.escape(word) for word in text.split(" ")) + "$")


def menu(page, top: str, item: str) -> None:
    """Choose *item* of the menu bar's *top* menu, as a user does."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def prompts(page) -> list[str]:
    return page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt").all_text_contents()


def error_outputs(scope) -> list[str]:
    """The texts of the outputs under *scope* that report an error (JupyterLab renders one as stderr text)."""
    texts = scope.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return [t for t in texts.all_text_contents() if re.search(r"Traceback|Error\b|Exception\b", t)]


def cell(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def show(locator) -> None:
    """Bring *locator* into view for the next screenshot."""
    locator.scroll_into_view_if_needed()


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_all_without_errors(lab, page, source: Path) -> None:
    nb = nbformat.read(source, as_version=4)
    for c in nb.cells:  # start from no outputs, so every execution count seen is this run's
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    nbformat.write(nb, lab.root / source.name)
    code = [c for c in nb.cells if c.cell_type == "code"]
    n_code = len(code)
    # a cell tagged raises-exception shows an error on purpose (Run All goes on past it): that, and only that
    expected = {i for i, c in enumerate(code) if "raises-exception" in c.metadata.get("tags", [])}
    open_notebook(page, fresh_url(lab, source.name))
    menu(page, "Run", "Run All Cells")
    # done: every code cell counted, or Run All stopped at an error (no cell queued or running any more)
    page.wait_for_function(
        """(n) => {
          const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
            .map((e) => e.textContent);
          const counted = p.filter((t) => /\\[\\d+\\]/.test(t)).length;
          return counted === n || (counted > 0 && !p.some((t) => t.includes('*')));
        }""",
        arg=n_code,
        timeout=RUN_ALL_TIMEOUT,
    )
    page.wait_for_selector("text=/\\| Idle/", timeout=STEP_TIMEOUT)
    page.shots(source.stem)
    code_cells = page.locator(".jp-Notebook .jp-CodeCell")
    for i in range(n_code):
        errors = error_outputs(code_cells.nth(i))
        if i in expected:
            assert errors, f"{source.name}: code cell {i} is tagged raises-exception but shows no error"
        else:
            assert not errors, f"{source.name}, code cell {i}: " + "\n---\n".join(e[:2000] for e in errors)
    counted = [p for p in prompts(page) if re.search(r"\[\d+\]", p)]
    assert len(counted) == n_code, f"{source.name}: {len(counted)} of {n_code} cells ran: {prompts(page)}"
    shut_down_kernels(lab)


def test_newcomer_connect_browse_insert_run_typo_complete_interrupt_map(lab, page, lab_sandbox):
    sandbox = lab_sandbox
    demo = sandbox.workgroups["demo"]
    lab.write_notebook(
        "newcomer.ipynb",
        [
            "%load_ext pm_notebook\nfrom pm_notebook.widgets import CredentialWidget, ProjectBrowser\n"
            "form = CredentialWidget()\nform",
            "browser = ProjectBrowser(preview_rows=5)\nbrowser",
            "%%pmsql\nSELECT vertex_nme, COUNT(*) AS n\nFROM {vertex}\nGROUP BY 1",
            "%%pmsql\nSELECT COUNT(*) AS n FROM {ve",
            "%%pmsql\nSELECT COUNT(*) AS held FROM {vertex}",
            f'%pm map --project "{PROJECT}"',
        ],
    )
    shot = page.shots
    open_notebook(page, fresh_url(lab, "newcomer.ipynb"))

    # 1. credentials: the form comes prefilled from the kernel's environment; Connect
    run_cell(page, 0, timeout=STEP_TIMEOUT)
    form = page.locator(".pm-credentials")
    expect(form).to_be_visible()
    form.locator("button", has_text="Connect").click()
    expect(form.locator(".pm-status")).to_contain_text(
        f"Connected to workgroup '{demo.name}'", timeout=STEP_TIMEOUT
    )
    expect(form.locator(".pm-status")).not_to_contain_text(demo.client_id)
    shot("connected")

    # 2. browse: the project by name, then its tasks table, labelled by kind and project
    run_cell(page, 1, timeout=STEP_TIMEOUT)
    browser = page.locator(".pm-browser")
    projects, tables = browser.locator("select").nth(0), browser.locator("select").nth(1)
    # by name (notebook 04 has added a project of its own by now)
    expect(projects.locator("option", has_text=exactly(PROJECT))).to_have_count(1, timeout=STEP_TIMEOUT)
    projects.select_option(value=PROJECT)  # an option's value is its label, spaces kept
    expect(tables.locator("option")).to_have_text(
        [exactly(f"{kind} \u2014 {PROJECT}") for kind in ("cases", "tasks", "transitions")],
        timeout=STEP_TIMEOUT,
    )
    expect(browser.locator(".pm-status")).to_contain_text(
        "%%pmsql cells now use it: {cases}, {vertex}, {edge}"
    )
    tables.select_option(value=f"tasks \u2014 {PROJECT}")
    expect(browser.locator(".pm-status")).to_contain_text(
        re.compile(rf"tasks \u2014 {PROJECT}: \d+ columns, [\d,]+ rows\."), timeout=STEP_TIMEOUT
    )
    browser.locator(".lm-TabBar-tab", has_text="Preview").click()
    preview = browser.locator("table.pm-preview")
    expect(preview.locator("tbody tr")).to_have_count(5, timeout=STEP_TIMEOUT)
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", preview.text_content()), "a whole UUID in the preview"
    show(browser)
    shot("browsed")

    # 3. insert the offered cell below the browser, and run it as it is
    cells = page.locator(".jp-Notebook .jp-Cell")
    before = cells.count()
    browser.locator(".pm-insert-button").click()
    expect(cells).to_have_count(before + 1)
    inserted = cell(page, 2)
    expect(inserted.locator(".jp-InputArea-editor")).to_contain_text(f'%%pmsql --project "{PROJECT}"')
    expect(inserted.locator(".jp-InputArea-editor")).to_contain_text("FROM {vertex}")
    expect(browser.locator(".pm-status")).to_have_text(
        re.compile(r"The %%pmsql cell below the browser is ready: run it\.$")
    )
    run_cell(page, 2, timeout=STEP_TIMEOUT)
    expect(inserted.locator("table.pm-result")).to_contain_text("vertex_name", timeout=STEP_TIMEOUT)
    expect(inserted.locator(".pm-footer")).to_be_visible()
    show(inserted)
    shot("inserted-and-run")

    # 4. a typo: QueryError with a caret under it and the column it meant
    typo = cell(page, 3)
    run_cell(page, 3, timeout=STEP_TIMEOUT)
    message = typo.locator(".jp-OutputArea-output")
    expect(message).to_contain_text("QueryError", timeout=STEP_TIMEOUT)
    expect(message).to_contain_text("vertex_nme")
    expect(message).to_contain_text("^")
    expect(message).to_contain_text(re.compile(r"[Dd]id you mean .*vertex_name"))
    expect(message).not_to_contain_text("UsageError")
    show(typo)
    shot("typo")

    # 5. completion: Tab after '{ve' closes the shortcut to '{vertex}'; the completed cell runs
    completing = cell(page, 4)
    editor = completing.locator(".jp-InputArea-editor")
    editor.locator(".cm-line").last.click()
    page.keyboard.press("End")
    page.keyboard.press("Tab")
    popup = page.locator(".jp-Completer")
    # a single match is inserted at once; a list waits for the choice (Enter takes the highlighted one)
    offered = popup.locator(".jp-Completer-item", has_text="{vertex}")
    expect(editor.filter(has_text="FROM {vertex}").or_(offered).first).to_be_visible(timeout=STEP_TIMEOUT)
    if popup.is_visible():
        shot("completion-offered")
        page.keyboard.press("Enter")
    expect(editor).to_contain_text("FROM {vertex}", timeout=STEP_TIMEOUT)
    assert editor.text_content().count("{vertex}") == 1 and "{vertex}}" not in editor.text_content()
    page.keyboard.press("Shift+Enter")
    expect(completing.locator(".jp-InputArea-prompt")).to_have_text(
        re.compile(r"\[\d+\]"), timeout=STEP_TIMEOUT
    )
    expect(completing.locator("table.pm-result")).to_contain_text("n", timeout=STEP_TIMEOUT)
    assert not error_outputs(completing), error_outputs(completing)
    show(completing)
    shot("completed-and-run")

    # 6. interrupt: the query is held on the server until cancelled; Kernel > Interrupt Kernel
    sandbox.hold_statements("AS held")
    slow = cell(page, 5)
    slow.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    sandbox.wait_held(timeout=STEP_TIMEOUT / 1000)  # the statement is at the server, running
    expect(slow.locator(".jp-InputArea-prompt")).to_have_text(re.compile(r"\[\*\]"))
    show(slow)
    shot("query-running")
    menu(page, "Kernel", "Interrupt Kernel")
    expect(slow.locator(".jp-OutputArea-output")).to_contain_text(
        "QueryCancelled: the statement was stopped on the server", timeout=STEP_TIMEOUT
    )
    expect(slow.locator(".jp-InputArea-prompt")).to_have_text(re.compile(r"\[\d+\]"), timeout=STEP_TIMEOUT)
    assert sandbox.held()["statements"]["held"] == 0  # cancelled on the server, not only given up on
    show(slow)
    shot("interrupted")

    # 7. %pm map: the process map fits the cell, its footer says what it shows
    mapped = cell(page, 6)
    run_cell(page, 6, timeout=STEP_TIMEOUT)
    expect(mapped.locator(".pm-map svg, .jp-RenderedSVG img").first).to_be_visible(timeout=STEP_TIMEOUT)
    expect(mapped).to_contain_text(" activities, ")
    show(mapped)
    shot("pm-map")
    shut_down_kernels(lab)
