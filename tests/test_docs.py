"""The docs stay true to the code: the configuration reference names every ``PM_*`` variable the code (the
client's and the stand-in's) and Binder's scripts read, every ``%config`` option of every magic and every
``connect()`` option; every page is in a toctree. (``make test`` also builds the site with warnings as
errors.)"""

from __future__ import annotations

import ast
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


# --- links to tests: docs/*.md name tests as `tests/<path>.py::<name>` (or `<file>.py::<name>` for a file
# the page has named in full); a renamed or deleted test must not leave a claim pointing at nothing
_LINK = re.compile(r"\b((?:tests/[\w/]+/)?test_\w+\.py)::(\w+\*?)")
#: the pages whose claims about Druid's planner, limits, merge buffers, windows and approximate columns must
#: each name the differential test that proves them on Druid 33
VERIFIED_PAGES = ("mining.md", "druid-dialect.md")
_CLAIM = re.compile(
    r"maxSubquery|merge buffer|numMergeBuffers|\binlin|\bwindow|APPROX_|sketch"
    r"|Druid 33 (?:plans|runs|refuses|counts)",
    re.IGNORECASE,
)


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assigned = [t for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign) for t in _targets(n)]
    return names | {t.id for t in assigned if isinstance(t, ast.Name)}


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _resolve(file: str) -> list[Path]:
    if file.startswith("tests/"):
        return [ROOT / file] if (ROOT / file).is_file() else []
    return sorted((ROOT / "tests").rglob(file))


def test_every_linked_test_exists() -> None:
    links = [(page.name, *m.groups()) for page in DOCS.glob("*.md") for m in _LINK.finditer(page.read_text())]
    assert len([link for link in links if link[0] in VERIFIED_PAGES]) > 20, "the scan is broken"
    broken = []
    for page, file, name in links:
        paths = _resolve(file)
        names = set().union(*(_defined(p) for p in paths)) if paths else set()
        found = any(n.startswith(name[:-1]) for n in names) if name.endswith("*") else name in names
        if len(paths) != 1 or not found:
            broken.append(f"{page}: {file}::{name}")
    assert broken == []


def _paragraphs(text: str) -> list[str]:
    """A page's paragraphs, list items and table rows (code blocks left out)."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return [p for p in re.split(r"\n\s*\n|\n(?=\s*- |\|)", text) if p.strip()]


def test_every_druid_claim_names_its_test() -> None:
    """Each paragraph of docs/mining.md and docs/druid-dialect.md that speaks of Druid's planner, limits,
    merge buffers, windows or approximate columns names a test of tests/druid
    (``tests/druid/<file>.py::<name>``), or says that it comes from Druid's documentation only, or is about
    the stand-in alone."""
    unproven = []
    for page in VERIFIED_PAGES:
        for paragraph in _paragraphs((DOCS / page).read_text(encoding="utf-8")):
            if not _CLAIM.search(paragraph) or "Druid" not in paragraph:
                continue
            if re.search(r"tests/druid/test_\w+\.py::\w+|Druid's documentation|stand-in alone", paragraph):
                continue
            unproven.append(f"{page}: {' '.join(paragraph.split())[:120]}")
    assert unproven == []


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
