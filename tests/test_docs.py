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


def _rooms() -> list[str]:
    """The lines of the rooms drawing of pm_notebook/ in docs/architecture.md (its first code block, up to the
    next folder at the left edge)."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## The rooms", 1)[1].split("```", 2)[1].splitlines()
    start = block.index("pm_notebook/")
    end = next((i for i, line in enumerate(block) if i > start and line[:1].strip()), len(block))
    return block[start + 1 : end]


def _region(lines: list[str], package: str) -> str:
    """The text of one top-level room of pm_notebook/ (``  sql/`` and its lines up to the next room)."""
    out: list[str] = []
    for line in lines:
        starts = re.match(r"  (\S+)", line)
        if starts and not line.startswith("   "):
            if out:
                break
            if starts.group(1) == package + "/":
                out.append(line)
        elif out:
            out.append(line)
    return "\n".join(out)


def test_the_architecture_names_every_module() -> None:
    """Every module of pm_notebook/ is named in its rooms drawing: a top-level module by its file name on a
    room line of its own, a package by its ``name/`` room, a module of a package by its name inside its room;
    and every room drawn exists."""
    lines = _rooms()
    package_root = ROOT / "pm_notebook"
    rooms = [m.group(1) for line in lines if (m := re.match(r"  (\S+)", line)) and not line.startswith("   ")]
    missing = []
    for path in sorted(package_root.rglob("*.py")):
        parts = path.relative_to(package_root).with_suffix("").parts
        if len(parts) == 1:
            if f"{parts[0]}.py" not in rooms:
                missing.append(".".join(parts))
            continue
        region = _region(lines, parts[0])
        names = [p for p in parts[1:] if p != "__init__"]
        if not region or any(not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", region) for n in names):
            missing.append(".".join(parts))
    assert missing == [], "not named in docs/architecture.md's rooms"
    drawn = [r for r in rooms if not (package_root / r.rstrip("/")).exists()]
    assert drawn == [], "drawn in docs/architecture.md but not in pm_notebook/"
    assert "frames/" in rooms and "rows" in _region(lines, "frames") and "_pool" in _region(lines, "frames")
