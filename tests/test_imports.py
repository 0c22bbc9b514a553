"""The import graph stays honest.

1. ``import pm_notebook`` (in a fresh interpreter) loads no notebook, JVM, stand-in (``pm_sandbox``) or server
   packages, and no module of the client imports the stand-in (nor the stand-in the client).
2. An AST walk over ``pm_notebook/`` enforces the "Allowed imports" arrows of ``shared/style.md``:
   a module may import from inside the package only what its row below allows. Imports under
   ``if TYPE_CHECKING:`` are ignored (they never run); imports inside functions count, because a lazy
   import is still a dependency. The stdlib-only leaves (``errors``, ``_secret``, ``_version``,
   ``_models``, ``_cells``) may be imported by any module; they themselves import nothing from the package.
3. No import circle, not even through a type-only import: the graph of every import between modules
   (those under ``if TYPE_CHECKING:`` included) has no cycle, and ``mining`` reaches the service only
   through its own ``Source`` protocol, never by importing ``connection``.
4. The layers hold at run time, not only in the source: every client module is imported on its own in a
   fresh interpreter and what got loaded is checked against :data:`NEVER_LOADS` (a lazy import or a
   package's ``__init__`` cannot hide a dependency from this one).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "pm_notebook"

HEAVY = (
    *("IPython", "ipywidgets", "anywidget", "traitlets", "jpype", "jaydebeapi"),
    *("duckdb", "fastapi", "uvicorn", "starlette", "sqlglot", "jwt"),
    *("pm_sandbox", "pm_notebook.magic", "pm_notebook.widgets", "pm_notebook.testing"),
)


def test_import_pm_notebook_stays_light() -> None:
    code = "import json, sys; import pm_notebook; print(json.dumps(sorted(sys.modules)))"
    cmd = [sys.executable, "-c", code]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    loaded = json.loads(out.stdout)
    offenders = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert offenders == []


UI = ("IPython", "ipywidgets", "anywidget", "traitlets", "pm_notebook.magic", "pm_notebook.widgets")
JVM = ("jpype", "jaydebeapi")
SERVER = ("duckdb", "fastapi", "uvicorn", "starlette", "sqlglot", "pm_sandbox")
#: the frontends (a notebook's UI) and the entry points that compose the client with the stand-in
FRONTENDS = ("magic", "widgets", "testing")
ENTRY = ("demo",)

#: The run-time rules: (which client modules, what importing one must not load, why). "client" is every
#: module of pm_notebook; "core" is the client less its frontends and entry points; any
#: other name is that module or package with everything under it.
NEVER_LOADS: list[tuple[str, tuple[str, ...], str]] = [
    ("client", JVM, "the JVM starts with the first jdbc query, never at import"),
    ("core", SERVER, "the client never loads the stand-in or a server package"),
    ("core", UI, "the core runs outside a notebook: no IPython, no widgets, no magics"),
    ("magic", SERVER + ("pm_notebook.widgets",), "the magics are a frontend over the client only"),
    ("widgets", SERVER + ("pm_notebook.magic",), "the widgets are a frontend over the client only"),
    ("query_context", ("pm_notebook.sql", "pm_notebook.config"), "the query context's checks are a leaf"),
    ("config", ("pm_notebook.sql", "pm_notebook.connection"), "settings are read without the SQL package"),
    ("sql", ("pm_notebook.connection", "pm_notebook.frames", "pm_notebook.mining"), "a transport knows rows"),
    (
        "frames",
        ("pm_notebook.connection", "pm_notebook.mining", "pm_notebook.api"),
        "results know no service",
    ),
    (
        "mining",
        ("pm_notebook.connection", "pm_notebook.sql", "pm_notebook.frames"),
        "mining runs SQL through Source",
    ),
]

#: Imports each named module in a child forked from one fresh interpreter (the child is that interpreter,
#: untouched, plus the module) and prints what every child had loaded. The package's __init__ (the front
#: door, which loads the connection) is replaced by a bare package, so each module's own imports are what
#: is measured. The third-party libraries every core module uses are loaded before the forks (a fork then
#: costs milliseconds, not a pandas import); none of them is a name the rules forbid (checked).
_PROBE = """
import json, os, sys, types
pkg, forbidden, names = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
import numpy, orjson, pandas, pyarrow, pyarrow.compute, pyarrow.csv, requests
early = [m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in forbidden)]
assert not early, early
out = {}
for name in names:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            if name != "__init__":
                bare = types.ModuleType("pm_notebook")
                bare.__path__ = [pkg]
                sys.modules["pm_notebook"] = bare
            __import__("pm_notebook" if name == "__init__" else "pm_notebook." + name)
            found = sorted(sys.modules)
        except BaseException as exc:
            found = {"error": repr(exc)}
        os.write(write, json.dumps(found).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    out[name] = json.loads(data)
print(json.dumps(out))
"""


def _client_modules() -> list[str]:
    names = []
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def _selects(selector: str, module: str) -> bool:
    family = module.split(".")[0]
    if selector == "client":
        return True
    if selector == "core":
        return family not in FRONTENDS and module not in ENTRY
    return module == selector or module.startswith(selector + ".")


@pytest.fixture(scope="module")
def loaded_by_module() -> dict[str, list[str]]:
    """module -> every module name loaded by importing it alone, from the probe above."""
    forbidden = sorted({f for _, names, _ in NEVER_LOADS for f in names})
    cmd = [sys.executable, "-c", _PROBE, str(PKG), ",".join(forbidden), *_client_modules()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    found: dict[str, list[str]] = json.loads(out.stdout)
    return found


@pytest.mark.parametrize("module", _client_modules())
def test_importing_a_module_alone_loads_only_its_layers(module: str, loaded_by_module: dict) -> None:
    loaded = loaded_by_module[module]
    assert isinstance(loaded, list), f"pm_notebook.{module} does not import on its own: {loaded}"
    assert "pm_notebook." + module in loaded or module == "__init__"
    broken = {
        why: sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in names))
        for selector, names, why in NEVER_LOADS
        if _selects(selector, module)
    }
    assert {why: mods for why, mods in broken.items() if mods} == {}, f"importing pm_notebook.{module}"


def test_the_load_probe_sees_what_a_module_loads(loaded_by_module: dict) -> None:
    """The probe can fail: it sees the loads the rules forbid elsewhere, where they do happen."""
    assert "IPython" in loaded_by_module["magic"] and "ipywidgets" in loaded_by_module["widgets"]
    assert "pm_notebook.config" in loaded_by_module["sql.base"]  # the Target derives its URLs from config
    assert "pm_notebook.connection" in loaded_by_module["__init__"]
    assert "pm_notebook.connection" not in loaded_by_module["config"]  # the bare package: no front door
    assert not _selects("core", "magic.pmsql") and _selects("core", "mining._log")
    assert _selects("mining", "mining._sql.stats") and not _selects("sql", "sqlish")


LEAVES = {"errors", "_secret", "_version", "_models", "_cells", "_display", "_sql_text"}
#: module (or "family.*") -> package modules it may import besides the leaves;
#: a family (sql, magic, widgets) may also import its own members
RULES: dict[str, set[str]] = {
    "errors": set(),
    "_secret": set(),
    "_version": set(),
    "_models": set(),
    "_cells": set(),
    "_display": set(),  # how a map sits in a notebook: pure HTML, for the magics and the widgets
    "_sql_text": set(),  # the one SQL text scanner (literals, identifiers, comments): stdlib only
    # config checks the default query context (PM_QUERY_CONTEXT) with the one context check, which is pure
    "config": {"query_context"},
    # the query context's checks: stdlib and leaves only, so config (and the sql package) may use them
    "query_context": set(),
    "_http": {"config"},
    "auth": {"_http", "config"},
    "api": {"auth", "_http", "_checks"},
    "sql.base": {"config"},  # the contract: data types only (config derives the Target's URLs)
    "sql.params": set(),
    "_workers": set(),  # the worker threads of a query: its blocking reads and the parse of its batches
    "sql.druid_protocol": {"sql.base", "sql.params", "sql._errors"},  # sans-IO: no I/O module
    "sql.avatica_protocol": {"sql.base", "sql.params", "sql._errors"},  # sans-IO: no I/O module
    # the write side (create, upload, files): requests through the REST client; what it sends is built by
    # the pure column mapping, the request bodies and the progress piece
    "mapping": set(),
    "_progress": set(),
    "_bodies": {"mapping"},
    "lifecycle": {"api", "_http", "mapping", "_bodies", "_progress"},
    # _progress: the driver extraction's tqdm bar; _workers: the threads of the blocking reads
    "sql.*": {"auth", "_http", "config", "query_context", "_progress", "_workers"},
    # results: the type table, the parser, the rows, the outputs; parsed on the query's worker threads
    "frames.*": {"_workers"},
    # the offline result cache: files in, Arrow tables out; the connection decides when to use it
    "_cache": set(),
    # the offline policy: when to store, how to replay (SQL as Rows, REST as the HTTP adapters' answers)
    "_offline": {"_cache", "frames", "config", "query_context"},  # results keyed by the answer's context keys
    "connection": {
        "config",
        "auth",
        "api",
        "lifecycle",
        "sql",
        "query_context",
        "frames",
        "_http",
        "mining",
        "_offline",
        "_checks",
    },
    # process-mining answers: core, run through the mining.Source protocol a Connection implements (never
    # the connection itself, not even for typing); never IPython, widgets or the sandbox
    "mining.*": {"_checks"},
    "_current": set(),  # the notebook's current connection and project, for the magics and the widgets
    # the shared argument checks (a positive count, a project by id or name): leaves only
    "_checks": set(),
    # the magics: a frontend over the client (sql only for its transport names and their one check, see
    # the test below; the query context's checks for %config PmSql.context)
    "magic.*": {"connection", "config", "_current", "_checks", "api", "sql", "query_context"},
    "widgets.*": {"connection", "api", "config", "_current", "_checks", "mining"},
    "testing": {"magic", "connection"},
}
#: entry points that compose everything (front door, CLIs): only checked for "core never imports UI/sandbox"
FREE = {"__init__", "__main__", "demo"}
LEAF_ONLY = {"errors", "_secret", "_version", "_models", "_cells", "_display", "_sql_text"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _rule_for(module: str) -> tuple[str, set[str]] | None:
    if module in RULES:
        return module, RULES[module]
    family = module.split(".")[0]
    if f"{family}.*" in RULES:
        return family, RULES[f"{family}.*"]
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _package_imports(module: str, path: Path, *, type_only: bool = False) -> set[str]:
    """Package-relative names of the pm_notebook modules *module* imports (``from . import x`` resolved);
    those under ``if TYPE_CHECKING:`` too when *type_only*."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    here = module.split(".") if is_pkg else module.split(".")[:-1]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "pm_notebook" or alias.name.startswith("pm_notebook."):
                    found.add(alias.name.removeprefix("pm_notebook").lstrip(".") or "__init__")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else list(here)
            elif node.module and (node.module == "pm_notebook" or node.module.startswith("pm_notebook.")):
                base = []
            else:
                base = None
            if base is not None:
                mod = node.module.removeprefix("pm_notebook").lstrip(".") if node.level == 0 else node.module
                target = base + (mod.split(".") if mod else [])
                if mod:
                    found.add(".".join(target))
                else:  # from . import a, b -> submodules a, b (or names of the package)
                    for alias in node.names:
                        found.add(".".join(target + [alias.name]))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {f for f in found if f}


def _allowed(importer: str, target: str, modules: dict[str, Path]) -> bool:
    rule = _rule_for(importer)
    if rule is None:
        return True
    family, allowed = rule
    if target not in modules:  # "from .sql import Batch" style names resolve to the package itself
        target = target.rsplit(".", 1)[0]
    top = target.split(".")[0]
    if importer in LEAF_ONLY:
        return False
    if target in LEAVES or top == family and "." in importer + target:
        return True
    return target in allowed or top in allowed


MODULES = _modules()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m not in FREE))
def test_allowed_import_arrows(module: str) -> None:
    imported = _package_imports(module, MODULES[module])
    bad = sorted(t for t in imported if not _allowed(module, t, MODULES))
    assert bad == [], f"pm_notebook.{module} may not import {bad} (style.md 'Allowed imports')"


def test_every_module_has_a_rule() -> None:
    assert sorted(m for m in MODULES if m not in FREE and _rule_for(m) is None) == []


#: what the magics may take from the sql package: the transport names and their one check
MAGIC_FROM_SQL = {"TRANSPORTS", "transport_name"}


def test_the_magics_take_only_the_transport_names_from_sql() -> None:
    """The magics run SQL through ``Connection`` only; the sql package gives them the one transport list and
    its one check (``transport_name``)."""
    taken: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        if not module.startswith("magic"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and "sql" in (node.module or "").split("."):
                taken.setdefault(module, set()).update(a.name for a in node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                "sql" in a.name.split(".") for a in node.names
            ):
                taken.setdefault(module, set()).add("the sql package itself")
    assert taken and all(names <= MAGIC_FROM_SQL for names in taken.values()), taken
    assert set().union(*taken.values()) & {"TRANSPORTS"}


def _module_of(target: str) -> str:
    """The module an imported name lives in (``mining.ProcessLog`` -> ``mining``)."""
    while target not in MODULES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def _import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, type-only imports included."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets = {_module_of(t) for t in _package_imports(module, path, type_only=True)}
        graph[module] = {t for t in targets if t in MODULES and t != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path back to its start) per strongly connected component with more than one node."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return found


def test_no_import_circle() -> None:
    """No chain of imports (type-only ones included) leads from a module back to itself."""
    assert _cycles(_import_graph()) == []


def test_mining_never_imports_the_connection() -> None:
    """``mining`` runs its SQL through its own ``Source`` protocol, so it does not know ``connection``."""
    for module, path in MODULES.items():
        if module.split(".")[0] == "mining":
            assert "connection" not in {_module_of(t) for t in _package_imports(module, path, type_only=True)}


def test_the_circle_checks_can_fail(tmp_path: Path) -> None:
    """A type-only import back is a circle, and the cycle finder reports it."""
    fake = tmp_path / "_log.py"
    fake.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..connection import Connection\n"
    )
    assert _package_imports("mining._log", fake) == set()
    assert _package_imports("mining._log", fake, type_only=True) == {"connection"}
    graph = {
        "connection": {"mining"},
        "mining": {"mining._log"},
        "mining._log": {"connection"},
        "errors": set(),
    }
    assert _cycles(graph) == [["connection", "mining", "mining._log", "connection"]]
    assert _cycles({**graph, "mining._log": {"errors"}}) == []


SANDBOX = PKG.parent / "sandbox" / "pm_sandbox"


def _top_level_imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in *path*, lazy and type-only ones included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_client_never_imports_the_stand_in() -> None:
    """No module of ``pm_notebook`` imports ``pm_sandbox`` (the demo runs it as a child process)."""
    assert sorted(m for m, path in MODULES.items() if "pm_sandbox" in _top_level_imports(path)) == []


def test_the_stand_in_never_imports_the_client() -> None:
    """``pm_sandbox`` is its own distribution: it imports nothing of ``pm_notebook``, so each side of a
    protocol is written on its own (and checked against the other by the tests)."""
    paths = sorted(SANDBOX.rglob("*.py"))
    assert len(paths) > 40
    assert [str(p.relative_to(SANDBOX)) for p in paths if "pm_notebook" in _top_level_imports(p)] == []


def test_the_checker_catches_a_bad_arrow(tmp_path: Path) -> None:
    fake = tmp_path / "config.py"
    fake.write_text("from .connection import Connection\nfrom . import errors\n")
    imported = _package_imports("config", fake)
    assert imported == {"connection", "errors"}
    assert not _allowed("config", "connection", MODULES) and _allowed("config", "errors", MODULES)
    assert _allowed("sql.avatica", "sql.avatica_protocol", MODULES)
    # a lazy or a type-only import of the other package counts
    fake.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pm_notebook.api import RestClient\n"
        "def demo():\n    import pm_sandbox.server\n"
    )
    assert _top_level_imports(fake) == {"typing", "pm_notebook", "pm_sandbox"}


def _private_imports(module: str, path: Path) -> list[str]:
    """The private names *module* imports from outside its own package: a name (module or attribute) with
    one leading underscore belongs to the package that holds it (a private module's package, a private
    name's module's package), and only that package's modules may import it. Type-only imports count."""
    parts = module.split(".")
    here = parts if path.name == "__init__.py" else parts[:-1]
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[list[str]] = []
        if isinstance(node, ast.Import):
            targets = [a.name.split(".")[1:] for a in node.names if a.name.startswith("pm_notebook.")]
        elif isinstance(node, ast.ImportFrom):
            named = (node.module or "").split(".") if node.module else []
            if node.level:
                start = here[: len(here) - node.level + 1] + named
            elif named[:1] == ["pm_notebook"]:
                start = named[1:]
            else:
                continue
            targets = [[*start, a.name] for a in node.names]
        for target in targets:
            for i, name in enumerate(target):
                if name.startswith("_") and not name.startswith("__"):
                    owner = target[:i] if _is_package(target[:i]) else target[: i - 1]
                    if parts[: len(owner)] != owner:
                        bad.append(".".join(target))
                    break
    return bad


def _is_package(parts: list[str]) -> bool:
    return not parts or (PKG.joinpath(*parts) / "__init__.py").exists()


def test_no_private_name_is_imported_from_another_package() -> None:
    """A module takes from another package only its public names (``widgets`` may not reach into
    ``mining._map``); inside one package, private modules and names are shared freely."""
    found = {m: bad for m, p in MODULES.items() if (bad := _private_imports(m, p))}
    assert found == {}


def test_the_private_import_check_can_fail(tmp_path: Path) -> None:
    fake = tmp_path / "process_map.py"
    fake.write_text(
        "from ..mining._map import STATS\nfrom ..mining import ProcessMap\nfrom .._http import CHUNK_BYTES\n"
        "from ._common import Busy\nfrom pm_notebook.sql._open import closed_error\n"
        "import pm_notebook.mining._log\n"
    )
    assert _private_imports("widgets.process_map", fake) == [
        "mining._map.STATS",
        "sql._open.closed_error",
        "mining._log",
    ]
    assert _private_imports("mining.stats", fake) == ["sql._open.closed_error"]
