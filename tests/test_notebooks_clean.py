"""The notebooks we ship are saved with outputs: none of them may carry a secret or a token."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.")


def test_notebooks_exist():
    assert len(NOTEBOOKS) >= 2, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_notebook_holds_no_secret_or_token(path, sandbox):
    text = path.read_text(encoding="utf-8")
    # The sandbox's credentials are deterministic, so these are the very values the notebooks ran with.
    for wg in sandbox.workgroups.values():
        assert wg.client_secret not in text, f"{path.name} contains the {wg.key} workgroup's secret"
    assert not JWT.search(text), f"{path.name} contains a JWT"
    assert "PM_CLIENT_SECRET=" not in text
