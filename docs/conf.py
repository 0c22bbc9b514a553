"""Sphinx configuration of the docs site (``make docs``; ``make test`` builds it, warnings as errors).

Why Sphinx + MyST-NB: our docstrings are reStructuredText (``:param:``, ``:class:`` roles), which autodoc
renders as written; MyST keeps the pages in Markdown; MyST-NB renders the notebooks from their saved,
nbval-checked outputs without executing them again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pm_notebook

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

project = "pm_notebook"
author = "The pm_notebook authors"
copyright = "2026, The pm_notebook authors"  # noqa: A001 (Sphinx's name)
release = version = pm_notebook.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks are rendered from their saved outputs (nbval keeps them true)
nb_render_image_options = {"width": "100%"}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
html_theme = "furo"
html_title = f"pm_notebook {release}"
html_static_path = ["_static"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]

# The notebooks live in notebooks/ (nbval runs them there); the site renders copies of them.
_notebooks = HERE / "_notebooks"
shutil.rmtree(_notebooks, ignore_errors=True)
_notebooks.mkdir()
for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
    shutil.copy2(nb, _notebooks / nb.name)
