"""The sandbox's data: process templates, simulation, CSV import, table building and the per-workgroup store.

* :mod:`.templates` — the processes to simulate; :mod:`.simulate` plays one into an :class:`EventLog`;
* :mod:`.csv_import` — a user's CSV event log into the same :class:`EventLog`;
* :mod:`.tables` — any event log → the service's three Druid tables and lookups (Arrow);
* :mod:`.store` — the per-workgroup DuckDB databases those tables are loaded into.
"""

from __future__ import annotations

from .csv_import import read_event_log_csv
from .eventlog import EventLog
from .ids import stable_uuid
from .simulate import simulate
from .tables import ProjectTables, build_tables
from .templates import TEMPLATES, ProcessTemplate

__all__ = [
    "TEMPLATES",
    "EventLog",
    "ProcessTemplate",
    "ProjectTables",
    "build_tables",
    "read_event_log_csv",
    "simulate",
    "stable_uuid",
]
