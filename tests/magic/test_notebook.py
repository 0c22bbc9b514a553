"""``notebooks/02-pmsql.ipynb`` run in a real kernel through nbclient: rendered output, stored output."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "02-pmsql.ipynb"
IGNORE = "nbval-ignore-output"


def _texts(cell) -> list[str]:
    """What nbval compares: plain text of results and displays, and stream text."""
    out = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            out.append(o["text"])
        elif o["output_type"] == "error":  # what the notebook shows for it: the traceback lines
            out.append("\n".join(o["traceback"]))
        elif "data" in o:
            out.append(o["data"].get("text/plain", ""))
    return out


NOTEBOOK_CASES = 500  # as notebooks/conftest.py and binder/start: the stored outputs were made with it


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory):
    """The notebook run as Binder runs it: a sandbox is up, its PM_* values in the kernel's environment."""
    from nbclient import NotebookClient

    from pm_sandbox import start

    log = tmp_path_factory.mktemp("notebook-sandbox") / "sandbox.log"
    with start(cases=NOTEBOOK_CASES, log_path=log) as sb, pytest.MonkeyPatch.context() as env:
        for key, value in sb.env.items():
            env.setenv(key, value)
        yield _run(NotebookClient)


def _run(client_class):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = client_class(
        nb,
        timeout=180,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    return nb


def _cell(nb, startswith: str):
    return next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(startswith))


@pytest.mark.slow
def test_query_cell_renders_dataframe_html_and_footer(executed):
    cell = _cell(executed, "%%pmsql\nSELECT vertex_name, COUNT(*)")
    (out,) = [o for o in cell.outputs if o["output_type"] == "display_data"]
    html = out["data"]["text/html"]
    assert '<table class="dataframe pm-result">' in html
    assert '<div class="pm-footer"' in html and "rows × 3 columns" in html and " s · via " in html


@pytest.mark.slow
def test_limit_footer_and_error_cell(executed):
    limited = _texts(_cell(executed, "%%pmsql --limit 8"))[0]
    assert "8 rows × 2 columns" in limited and "Stopped at the row limit (8)" in limited
    assert "Showing the first 5 rows" in limited
    (error,) = _texts(_cell(executed, "%%pmsql\nSELECT caseid,\n       durration"))
    assert error.startswith("QueryError: Column 'durration' not found in any table\n")
    assert "3 |        durration" in error and "Did you mean duration?" in error
    assert "Traceback" not in error and "UsageError" not in error


@pytest.mark.slow
def test_stored_outputs_match_a_fresh_run(executed):
    stored = nbformat.read(NOTEBOOK, as_version=4)
    fresh = [c for c in executed.cells if c.cell_type == "code"]
    kept = [c for c in stored.cells if c.cell_type == "code"]
    assert len(fresh) == len(kept)
    for new, old in zip(fresh, kept, strict=True):
        assert new.source == old.source
        if IGNORE in old.metadata.get("tags", []):
            continue
        assert _texts(new) == _texts(old), new.source
