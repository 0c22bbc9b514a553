"""Helpers for testing code that uses ``%pmsql`` — ours and our users'.

:class:`TestingShell` is a real IPython shell that re-raises the error of a failed cell (so ``pytest.raises``
works), keeps no history database (no "too many open files" across many shells) and records what cells
display. Like a Jupyter kernel, it runs each cell (on the main thread) with Python's own SIGINT handler, so a
Ctrl-C or ``_thread.interrupt_main()`` raises KeyboardInterrupt in the cell even in a process started with
SIGINT ignored (a background job of a non-interactive shell, ``nohup``). IPython is imported only when the
class is first used.

>>> from pm_notebook.testing import TestingShell      # doctest: +SKIP
>>> shell = TestingShell.create()                      # doctest: +SKIP
>>> shell.run_cell("%pmsql SELECT 1 AS one")           # doctest: +SKIP
"""

from __future__ import annotations

import signal
import threading
from functools import lru_cache
from typing import Any

__all__ = ["TestingShell"]  # noqa: F822 - built lazily by __getattr__


@lru_cache(maxsize=1)
def _testing_shell_class() -> type:
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class TestingShell(InteractiveShell):
        """An ``InteractiveShell`` for tests: cell errors are raised, displays are recorded.

        :attr raise_errors: set to ``False`` to see what a user would see (IPython prints the error instead).
        """

        raise_errors = True
        __test__ = False  # not a pytest test class, despite its name

        @classmethod
        def create(cls, *, load_extension: bool = True, **config: Any) -> TestingShell:
            """A fresh shell, with ``%load_ext pm_notebook`` already run unless *load_extension* is false.

            :param config: traitlets settings by class, e.g. ``PmSql={"autolimit": 10}``.
            """
            c = Config()
            c.HistoryAccessor.enabled = False
            for section, values in config.items():
                c[section] = Config(values)
            shell = cls(config=c)
            shell.display_pub = CapturingDisplayPublisher(shell=shell)
            if load_extension:
                shell.run_line_magic("load_ext", "pm_notebook")
            return shell

        def run_cell(self, raw_cell: str, *args: Any, **kwargs: Any) -> Any:
            # ipykernel's pre/post_handler_hook: Python's SIGINT handler while the cell runs, whatever the
            # process inherited (a kernel resets SIGINT to ignored at start and between cells)
            if threading.current_thread() is not threading.main_thread():
                result = super().run_cell(raw_cell, *args, **kwargs)
            else:
                saved = signal.signal(signal.SIGINT, signal.default_int_handler)
                try:
                    result = super().run_cell(raw_cell, *args, **kwargs)
                finally:
                    if saved is not None:  # None: a handler not set from Python, which Python cannot restore
                        signal.signal(signal.SIGINT, saved)
            if self.raise_errors:
                result.raise_error()
            return result

        @property
        def displayed(self) -> list[dict[str, Any]]:
            """Displays since :meth:`clear_displayed`: dicts with ``data``, ``transient``, ``update``."""
            return self._publisher().outputs

        def clear_displayed(self) -> None:
            """Forget the recorded displays."""
            self._publisher().outputs.clear()

        def _publisher(self) -> CapturingDisplayPublisher:
            publisher = self.display_pub
            if not isinstance(publisher, CapturingDisplayPublisher):  # a shell made without create()
                raise AttributeError(
                    f"{type(publisher).__name__} records no displays; use TestingShell.create()"
                )
            return publisher

    TestingShell.__module__ = __name__
    return TestingShell


def __getattr__(name: str) -> Any:
    if name == "TestingShell":
        return _testing_shell_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
