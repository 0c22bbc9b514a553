"""Process-mining answers computed by Druid SQL: :class:`ProcessLog` (``conn.mining(project)``),
:class:`ProcessMap` (``log.process_map()``), :class:`Comparison` (``a.compare(b)``) and its
:class:`ComparedMap`.

Core module: it runs its SQL through a :class:`Source` it is handed (a :class:`~pm_notebook.Connection`
is one) and imports neither the connection nor IPython, widgets or the sandbox (the interactive map
explorer lives in :mod:`pm_notebook.widgets`). Inside: ``_sql/`` writes each answer's statements as pure
functions of the project's :class:`Schema` and the log's filters (``_filters``), each statement with its
facts (the table it reads, whether Druid inlines a subquery of it, the context keys it needs); each answer is
a plain function in the module of its perspective (``_cases``, ``_flow``, ``_organisation``, ``_time``,
``_drivers``, ``_events``) that runs its statements through the one ``_runner`` and shapes the results;
``_log`` holds the :class:`ProcessLog` (its filters, its options, a method per answer that forwards to the
function); ``_map`` draws the process map.
"""

from __future__ import annotations

from ._compare import Comparison
from ._comparemap import ComparedMap
from ._log import ProcessLog
from ._map import ProcessMap, format_duration, render
from ._schema import Schema
from ._source import Source

__all__ = [
    "ComparedMap",
    "Comparison",
    "ProcessLog",
    "ProcessMap",
    "Schema",
    "Source",
    "format_duration",
    "render",
]
