"""Notebook widgets: a credential form, a project/table browser and a process-map explorer (needs
``pm-notebook[notebook]``).

>>> from pm_notebook.widgets import CredentialWidget, ProjectBrowser   # doctest: +SKIP
>>> CredentialWidget()    # fill in the workgroup's values, click Connect          # doctest: +SKIP
>>> ProjectBrowser()      # projects -> tables -> columns and a preview             # doctest: +SKIP
>>> ProcessMapExplorer(conn.mining("Purchase to Pay").process_map())                # doctest: +SKIP
"""

from __future__ import annotations

from .browser import ProjectBrowser, pmsql_for
from .credentials import CredentialWidget
from .process_map import ProcessMapExplorer

__all__ = ["CredentialWidget", "ProcessMapExplorer", "ProjectBrowser", "pmsql_for"]

for _obj in (CredentialWidget, ProcessMapExplorer, ProjectBrowser, pmsql_for):
    _obj.__module__ = __name__
