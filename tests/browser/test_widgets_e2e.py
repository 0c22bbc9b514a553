"""End to end: sandbox + JupyterLab + headless Chromium; connect with the form, browse, save, check the file.

Screenshots of every step land in ``test-artifacts/browser/<test name>/``.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from .conftest import open_notebook, run_cell, start_jupyter

pytestmark = [pytest.mark.browser, pytest.mark.slow]

JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.")


@pytest.fixture(scope="module")
def lab(sandbox, tmp_path_factory):
    """JupyterLab whose kernels see the sandbox's URLs, but neither its workgroup id nor its key."""
    server = start_jupyter(
        tmp_path_factory.mktemp("lab"),
        {"PM_BASE_URL": sandbox.base_url, "PM_AUTH_URL": sandbox.auth_url, "PM_JDBC_URL": sandbox.jdbc_url},
    )
    yield server
    server.stop()


def save(page, path, needle: str, timeout: float = 60) -> str:
    """Save the notebook (File > Save Notebook); wait until the file contains *needle*; return its text."""
    page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Save Notebook$")).click()
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text()
        if needle in text:
            return text
        assert time.monotonic() < deadline, f"notebook not saved with {needle!r} within {timeout} s"
        time.sleep(0.3)


def assert_no_secrets(text: str, key: str) -> None:
    """Neither the workgroup key (nor any 8 characters of it) nor any JWT appears in *text*."""
    leaks = [key[i : i + 8] for i in range(len(key) - 7) if key[i : i + 8] in text]
    assert not leaks, f"parts of the workgroup key are in the saved notebook: {leaks[:3]}"
    assert not JWT.search(text), "a JWT (access or refresh token) is in the saved notebook"
    assert not re.search(r"(?i)access_token|refresh_token|client_secret", text)


def test_connect_browse_preview_insert_save(lab, page, sandbox, sandbox_store):
    demo = sandbox.workgroups["demo"]
    project = sandbox_store.workgroup(demo.client_id).projects[0]
    db = sandbox_store.database(demo.client_id)
    rows = db.execute(f'SELECT COUNT(*) FROM druid."{project.id}"').fetchone()[0]
    path = lab.write_notebook(
        "e2e.ipynb",
        [
            "from pm_notebook.widgets import CredentialWidget, ProjectBrowser\n"
            "form = CredentialWidget()\nform",
            "browser = ProjectBrowser(preview_rows=5)\nbrowser",
        ],
    )
    shot = page.shots
    open_notebook(page, lab.lab_url("e2e.ipynb"))

    # 1. the form renders, prefilled from the kernel's environment (no key there)
    run_cell(page, 0)
    form = page.locator(".pm-credentials")
    expect(form).to_be_visible()
    labels = {"base": "API URL", "auth": "Auth URL", "id": "Workgroup ID", "jdbc": "JDBC URL"}
    field = {
        name: form.locator(".widget-text", has_text=label).locator("input") for name, label in labels.items()
    }
    expect(field["base"]).to_have_value(sandbox.base_url)
    expect(field["jdbc"]).to_have_value(sandbox.jdbc_url)
    shot("form-prefilled")

    # 2. type the values a user pastes from the settings page, connect
    field["base"].fill(sandbox.base_url + "/")
    field["id"].fill(demo.client_id)
    secret = form.locator("input[type=password]")
    secret.fill(demo.client_secret)
    secret.press("Tab")  # leaving the field sends the key to the kernel, which empties the field
    expect(secret).to_have_attribute("placeholder", re.compile("entered .kept in the kernel only"))
    expect(secret).to_have_value("")
    shot("form-filled")
    # saved before connecting: widget state is in the file, the key is not
    text = save(page, path, "application/vnd.jupyter.widget-state+json")
    assert demo.client_id in text
    assert_no_secrets(text, demo.client_secret)
    form.locator("button", has_text="Connect").click()
    status = form.locator(".pm-status")
    expect(status).to_contain_text(f"Connected to workgroup '{demo.name}'", timeout=60_000)
    expect(status).to_contain_text(re.compile(r"token valid until .* s left"))
    expect(secret).to_have_value("")
    expect(secret).to_have_attribute("placeholder", re.compile("kept in the kernel only"))
    shot("connected")

    # 3. the browser lists the projects of the connected workgroup
    run_cell(page, 1)
    browser = page.locator(".pm-browser")
    projects, tables = browser.locator("select").nth(0), browser.locator("select").nth(1)
    expect(projects.locator("option")).to_have_count(len(demo.project_ids), timeout=60_000)
    shot("projects")
    projects.select_option(label=project.name)
    expect(tables.locator("option")).to_have_count(len(project.tables), timeout=60_000)
    shot("tables")

    # 4. the cases table: columns with Druid types, then the preview with the row count
    tables.select_option(label=f"cases \u2014 {project.name}")
    expect(browser.locator(".pm-status")).to_contain_text(f"{rows:,} rows", timeout=60_000)
    expect(browser.locator("table.pm-columns")).to_contain_text("TIMESTAMP")
    shot("columns")
    browser.locator(".lm-TabBar-tab", has_text="Preview").click()
    expect(browser.locator("table.pm-preview tbody tr")).to_have_count(min(5, rows))
    expect(browser).to_contain_text(f"{rows:,} rows in cases \u2014 {project.name}")
    shot("preview")

    # 5. the ready %%pmsql query goes into a new cell right below the browser
    cells = page.locator(".jp-Notebook .jp-Cell")
    before = cells.count()  # Shift+Enter on the last cell added an empty one
    browser.locator(".pm-insert-button").click()
    expect(cells).to_have_count(before + 1)
    expect(cells.nth(2).locator(".jp-InputArea-editor")).to_contain_text("FROM {cases}")
    expect(browser.locator(".pm-status")).to_contain_text("The %%pmsql cell below the browser is ready")
    shot("query-inserted")

    # 6. save again; the file holds the live widget state and the inserted cell, but no key and no token
    text = save(page, path, "%%pmsql")
    nb = json.loads(text)
    assert "application/vnd.jupyter.widget-state+json" in nb["metadata"].get("widgets", {})
    assert (
        "Connected to workgroup" in text and f"{rows:,}</b> rows" in text
    )  # the saved state is the live one
    assert_no_secrets(text, demo.client_secret)
    shot("saved")


def test_notebook7_renders_the_widgets(lab, page, sandbox):
    lab.write_notebook(
        "nb7.ipynb",
        [
            "from pm_notebook.widgets import CredentialWidget, ProjectBrowser\nCredentialWidget()",
            "ProjectBrowser()",
        ],
    )
    open_notebook(page, lab.notebook7_url("nb7.ipynb"), lab=False)
    run_cell(page, 0)
    expect(page.locator(".pm-credentials")).to_be_visible()
    expect(page.locator(".pm-credentials .widget-text", has_text="API URL").locator("input")).to_have_value(
        sandbox.base_url
    )
    run_cell(page, 1)
    # the browser renders; with no connection yet it says so in plain words
    expect(page.locator(".pm-browser .pm-status")).to_contain_text("No connection to browse", timeout=60_000)
    page.shots("notebook7")
