"""Notebook widgets: a credential form and a project/table browser (needs ``pm-notebook[notebook]``).

>>> from pm_notebook.widgets import CredentialWidget, ProjectBrowser   # doctest: +SKIP
>>> CredentialWidget()    # fill in the workgroup's values, click Connect          # doctest: +SKIP
>>> ProjectBrowser()      # projects -> tables -> columns and a preview             # doctest: +SKIP
"""

from __future__ import annotations

from .browser import ProjectBrowser, pmsql_for
from .credentials import CredentialWidget

__all__ = ["CredentialWidget", "ProjectBrowser", "pmsql_for"]

for _obj in (CredentialWidget, ProjectBrowser, pmsql_for):
    _obj.__module__ = __name__
