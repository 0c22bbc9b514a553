"""Modules loaded by path for the fixtures and tests: ``druid/cluster.py`` (a script, not a package module)
and the stand-in's corpora in ``tests/sandbox_sql/``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_module(name: str, path: Path) -> ModuleType:
    """The module of the file *path*, as *name* (registered once: its dataclasses need it in sys.modules)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load() -> ModuleType:
    """``druid/cluster.py``."""
    return load_module("pm_druid_cluster", ROOT / "druid" / "cluster.py")


def corpus(name: str) -> ModuleType:
    """``tests/sandbox_sql/<name>.py``, the stand-in's corpus of that name."""
    return load_module(name, ROOT / "tests" / "sandbox_sql" / f"{name}.py")
