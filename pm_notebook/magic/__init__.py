"""``%load_ext pm_notebook``: the notebook magics (IPython is imported only once this package is).

One module per job: :mod:`.pmsql` (the ``%pmsql`` / ``%%pmsql`` magic class: dispatch and fetching),
:mod:`.args` (parsing), :mod:`.template` (``{name}`` / ``:name``), :mod:`.session` (connection adoption and
the chosen project), :mod:`.projects` (project shortcuts and listings), :mod:`.display` (what a cell shows),
:mod:`.completion` (tab completion), and :mod:`.pm` (the ``%pm`` process-mining answers). Every magic class
in :data:`MAGICS` shares the shell's :class:`~.session.Session` (connection and chosen project).

Tab completion inside ``%pmsql`` lines and ``%%pmsql`` cells (quoted table names, ``{cases}``-style
shortcuts, the columns of the tables a statement names, functions, lookups, options) is an IPython completion
matcher (API v2), so it works in the terminal and in Jupyter kernels alike.

>>> %load_ext pm_notebook                                  # doctest: +SKIP
>>> %pmsql --project "Purchase to pay"                     # doctest: +SKIP
>>> %%pmsql -o slow                                        # doctest: +SKIP
... SELECT caseid, duration FROM {cases} WHERE duration > :threshold ORDER BY __time DESC
"""

from __future__ import annotations

from typing import Any

from .completion import matcher
from .pm import Pm
from .pmsql import PmSql
from .session import Session

__all__ = ["MAGICS", "Pm", "PmSql", "load_ipython_extension", "unload_ipython_extension"]

#: the magic classes the extension registers; each has ``matcher_identifier`` and ``complete(context)``
MAGICS: tuple[type, ...] = (PmSql, Pm)


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics, their ``%config`` classes and their completers on *ipython*."""
    unload_ipython_extension(ipython)
    session = Session()  # one per shell: every magic sees the same connection and project
    completer = getattr(ipython, "Completer", None)
    for cls in MAGICS:
        magic = cls(shell=ipython, session=session)  # Magics.__init__ joins ipython.configurables (%config)
        ipython.register_magics(magic)
        if completer is not None:
            identifier = cls.matcher_identifier  # type: ignore[attr-defined]
            completer.custom_matchers.append(matcher(magic.complete, identifier))


def unload_ipython_extension(ipython: Any) -> None:
    """Remove what :func:`load_ipython_extension` added (``%reload_ext`` calls both)."""
    ipython.configurables[:] = [c for c in ipython.configurables if not isinstance(c, MAGICS)]
    completer = getattr(ipython, "Completer", None)
    if completer is not None:
        ours = {cls.matcher_identifier for cls in MAGICS}  # type: ignore[attr-defined]
        completer.custom_matchers[:] = [
            m for m in completer.custom_matchers if getattr(m, "matcher_identifier", None) not in ours
        ]
