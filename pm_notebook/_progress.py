"""The progress of an upload: a callback and/or a tqdm bar, for the phases ``"upload"`` (bytes sent) and
``"ingest"`` (0 → 1). tqdm is optional: without it there is no bar and no error. :func:`tqdm_class` is the
one choice of a tqdm bar for the whole package (the JDBC driver's extraction uses it too)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Progress", "ProgressCallback", "in_notebook", "tqdm_class"]

#: ``(phase, done, total)``
ProgressCallback = Callable[[str, int, "int | None"], None]


def in_notebook() -> bool:
    """Whether a Jupyter kernel runs us (looked up, never imported: core modules know nothing of IPython)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def tqdm_class() -> Any:
    """tqdm's bar for where we run now: its notebook widget in a Jupyter kernel (with ipywidgets), its text
    bar on stderr elsewhere; ``None`` without tqdm.

    Chosen per bar by :func:`in_notebook`, not by ``tqdm.auto``: that one chooses once, when first imported,
    by whether ipykernel is imported at all, so in a process that imported ipykernel without running in a
    kernel (a test session, a script) every later bar is a widget that no frontend shows.
    """
    try:
        from tqdm.std import tqdm
    except ImportError:  # tqdm is optional (the jdbc extra)
        return None
    if in_notebook():
        from tqdm.notebook import IProgress
        from tqdm.notebook import tqdm as notebook_tqdm

        if IProgress is not None:  # None: ipywidgets is missing, and the widget bar would fail
            return notebook_tqdm
    return tqdm


class Progress:
    """Reports ``(phase, done, total)``: phase ``"upload"`` counts bytes, ``"ingest"`` 0 → 1."""

    def __init__(self, progress: bool | ProgressCallback | None, label: str) -> None:
        self._callback: ProgressCallback | None = progress if callable(progress) else None
        self._use_tqdm = progress is True or (progress is None and in_notebook())
        self._label = label
        self._bar: Any = None

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if self._callback is not None:
            self._callback(phase, done, total)
        if not self._use_tqdm:
            return
        if self._bar is None or self._bar.desc != f"{self._label} {phase}":
            self.close()
            bar = tqdm_class()
            if bar is None:  # without tqdm there is no bar, and no error
                self._use_tqdm = False
                return
            unit = "B" if phase == "upload" else "file"
            self._bar = bar(
                total=total, desc=f"{self._label} {phase}", unit=unit, unit_scale=True, leave=True
            )
        self._bar.total = total
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        """Close the bar (it stays shown); the next report opens a new one."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def count_upload(self, chunks: Iterator[bytes], total: int | None) -> Iterator[bytes]:
        """*chunks* as they are, reporting ``"upload"`` from 0 to the bytes sent after each one."""
        self("upload", 0, total)
        done = 0
        for chunk in chunks:
            done += len(chunk)
            yield chunk
            self("upload", done, total)
