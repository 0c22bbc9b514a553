"""The docs stay true to the code: the configuration reference names every ``PM_*`` variable the code (the
client's and the stand-in's) and Binder's scripts read, every ``%config`` option of every magic and every
``connect()`` option; every page is in a toctree. (``make test`` also builds the site with warnings as
errors.)"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONFIG_PAGE = (DOCS / "configuration.md").read_text(encoding="utf-8")


def _code_files() -> list[Path]:
    files = [*(ROOT / "pm_notebook").rglob("*.py"), *(ROOT / "sandbox" / "pm_sandbox").rglob("*.py")]
    return files + [p for p in (ROOT / "binder").iterdir() if p.is_file()] + [ROOT / "Makefile"]


def test_every_pm_variable_is_documented() -> None:
    names = set()
    for path in _code_files():
        names |= set(re.findall(r"\bPM_[A-Z][A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")))
    assert names, "no PM_* variable found: the scan is broken"
    missing = sorted(n for n in names if f"`{n}`" not in CONFIG_PAGE)
    assert missing == []


def test_every_config_option_of_every_magic_is_documented() -> None:
    from pm_notebook.magic import MAGICS

    for magic in MAGICS:
        traits = magic.class_traits(config=True)
        assert traits
        missing = sorted(name for name in traits if f"`{name}`" not in CONFIG_PAGE)
        assert missing == [], magic.__name__


def test_every_connect_option_is_documented() -> None:
    from pm_notebook import config, connect

    names = [p for p in inspect.signature(connect).parameters if p != "options"]
    names += list(config._OPTION_NAMES) + ["env_file", "use_keyring"]
    missing = sorted(n for n in names if f"`{n}`" not in CONFIG_PAGE)
    assert missing == []


def test_every_page_is_in_a_toctree() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    pages = sorted(p.stem for p in DOCS.glob("*.md") if p.stem != "index")
    assert [p for p in pages if not re.search(rf"^{re.escape(p)}$", index, re.M)] == []
