"""nbval runs the notebooks as a user of Binder or ``make lab`` would: a sandbox is already running and its
``PM_*`` values are in the kernel's environment, so no notebook has a setup cell.

The sandbox starts before the first notebook's kernel (nbval starts a kernel when it sets up the notebook,
before any fixture of its cells could run, hence a ``pytest_runtest_setup`` hook) and stops at the end of the
session. ``binder/start`` uses the same number of cases, so saved outputs match both.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

NOTEBOOK_CASES = 500  # binder/start's default (PM_SANDBOX_CASES)
_state: dict[str, object] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if "sandbox" in _state or not str(item.path).endswith(".ipynb"):
        return
    from pm_sandbox import start

    log = Path(tempfile.mkdtemp(prefix="pm-notebook-sandbox-")) / "sandbox.log"
    sandbox = start(cases=NOTEBOOK_CASES, log_path=log)
    _state["sandbox"] = sandbox
    _state["saved"] = {k: os.environ.get(k) for k in sandbox.env}
    os.environ.update(sandbox.env)


def pytest_sessionfinish(session: pytest.Session) -> None:
    sandbox = _state.pop("sandbox", None)
    if sandbox is None:
        return
    sandbox.stop()  # type: ignore[attr-defined]
    for key, value in _state.pop("saved", {}).items():  # type: ignore[union-attr]
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
