"""Process-mining answers computed by Druid SQL: :class:`ProcessLog` (``conn.mining(project)``) and
:class:`ProcessMap` (``log.process_map()``).

Core module: it builds on a :class:`~pm_notebook.Connection` it is handed and knows nothing of IPython,
widgets or the sandbox (the interactive map explorer lives in :mod:`pm_notebook.widgets`).
"""

from __future__ import annotations

from ._log import ProcessLog
from ._map import ProcessMap, format_duration, render
from ._schema import Schema

__all__ = ["ProcessLog", "ProcessMap", "Schema", "format_duration", "render"]
