"""Settings for the whole pytest run, the notebooks that nbval executes included.

Kernels started during the run (nbval's, nbclient's in ``tests/magic/test_notebook.py``, JupyterLab's in the
browser tests) read their IPython configuration from a temporary ``IPYTHONDIR``: no developer profile,
extension or startup file leaks in, and the ``%%pmsql`` progress line is off. That line is transient UI
shown only once a query has run for ``PmSql.progress_delay`` (1 s); left on, a slow machine would add an
output to a notebook cell and fail the stored-output comparison, so a notebook's verdict would depend on
the machine's speed. The progress line has tests of its own (``tests/magic``), which set the delay
themselves.

Ctrl-C: a run started as a background job of a non-interactive shell (``nohup make test &``, many CI runners
and remote shells) inherits SIGINT *ignored*, and Python then installs no handler of its own: a Ctrl-C a test
sends to itself (``signal.pthread_kill`` or ``_thread.interrupt_main()``) would never arrive and each such
query would run to its server time limit. :func:`pytest_configure` installs Python's own handler then, as an
interactive start would have, so the processes the run starts (sandboxes, Jupyter servers, kernels) inherit
SIGINT's default action, as in a foreground run.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

#: a year: no notebook query runs that long, so no progress line is ever shown by a kernel of the run
KERNEL_CONFIG = "c.PmSql.progress_delay = 365 * 24 * 3600.0\n"


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # started in the background: see the docstring
        config.stash[_SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    ipython_dir = Path(tempfile.mkdtemp(prefix="pm-ipython-"))
    profile = ipython_dir / "profile_default"
    profile.mkdir()
    (profile / "ipython_kernel_config.py").write_text(KERNEL_CONFIG)
    config.stash[_IPYTHON_DIR] = (ipython_dir, os.environ.get("IPYTHONDIR"))
    os.environ["IPYTHONDIR"] = str(ipython_dir)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SIGINT in config.stash:
        signal.signal(signal.SIGINT, config.stash[_SIGINT])
    ipython_dir, previous = config.stash.get(_IPYTHON_DIR, (None, None))
    if ipython_dir is None:
        return
    if previous is None:
        os.environ.pop("IPYTHONDIR", None)
    else:
        os.environ["IPYTHONDIR"] = previous
    shutil.rmtree(ipython_dir, ignore_errors=True)


_IPYTHON_DIR = pytest.StashKey[tuple]()
_SIGINT = pytest.StashKey[object]()
