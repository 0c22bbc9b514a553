"""Helpers shared by the widgets: background jobs, plain-words errors, status lines, text fallbacks."""

from __future__ import annotations

import html
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as w

from ..errors import PMError

__all__ = ["Jobs", "StatusLine", "close_children", "describe_error", "esc", "scroll_box"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Shown instead of a widget by frontends that cannot render widgets (nbconvert, GitHub, a terminal).
NO_WIDGETS = (
    "(Interactive widgets cannot be shown here: open this notebook in JupyterLab >= 4 or Notebook >= 7 "
    "with ipywidgets >= 8 installed in the kernel, and run the cell again.)"
)


# ipywidgets' HTML widget sets a 28px line-height meant for one-line labels; tables need normal rows.
_TABLE_STYLE = (
    "<style>.pm-box{max-height:26em;overflow:auto;line-height:normal}"
    ".pm-box table{border-collapse:collapse;font-size:var(--jp-ui-font-size1,13px)}"
    ".pm-box th,.pm-box td{white-space:nowrap;padding:2px 10px 2px 0;text-align:left;vertical-align:top}"
    ".pm-box thead th{border-bottom:1px solid var(--jp-border-color1,#ccc)}</style>"
)


def scroll_box(table_html: str) -> str:
    """Wrap an HTML table in a compact, scrollable box for an ``ipywidgets.HTML`` value."""
    return f'{_TABLE_STYLE}<div class="pm-box">{table_html}</div>'


def close_children(box: w.Widget) -> None:
    """Close every widget below *box* (``Box.close`` leaves its children's comms open in the kernel)."""
    todo = list(getattr(box, "children", ()))
    while todo:
        child = todo.pop()
        todo.extend(getattr(child, "children", ()))
        child.close()


def esc(value: object) -> str:
    """HTML-escape ``str(value)`` (server texts and names go into HTML widgets)."""
    return html.escape(str(value), quote=True)


def describe_error(exc: BaseException) -> str:
    """Turn an exception into one plain-words line for a status label (never a traceback).

    ``PMError`` already says what happened and what to do; anything else is a bug or an
    unexpected failure, shown by class name and message so it can be reported.
    """
    if isinstance(exc, PMError):
        return " ".join(str(exc).split())
    return f"Unexpected error ({type(exc).__name__}): {exc}. See the kernel log for details."


class StatusLine(w.HTML):
    """A one-line status, styled ``idle``, ``busy``, ``ok`` or ``error``; ``text`` keeps the words."""

    _COLORS = {"idle": "inherit", "busy": "#555", "ok": "#1a7f37", "error": "#b3261e"}
    _ICONS = {"idle": "", "busy": "\u23f3 ", "ok": "\u2714 ", "error": "\u26a0 "}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = ""
        self.kind = "idle"

    def show(self, text: str, kind: str = "idle") -> None:
        """Display *text* styled as *kind* (``idle`` | ``busy`` | ``ok`` | ``error``)."""
        self.text, self.kind = text, kind
        self.value = (
            f'<span class="pm-status pm-status-{kind}" style="color:{self._COLORS[kind]}">'
            f"{self._ICONS[kind]}{esc(text)}</span>"
        )

    def __repr__(self) -> str:
        return f"StatusLine({self.kind}: {self.text!r})"


class Jobs:
    """Run widget work off the kernel's shell thread, newest request wins per *slot*.

    A click must not freeze the notebook while the service answers, so frontend-triggered work
    runs on a short-lived daemon thread. Programmatic triggers (``submit()``, ``select()`` in
    tests and scripts) pass ``wait=True`` and run inline, returning the result. A job started
    later in the same slot supersedes an earlier one: the earlier one's result is dropped, so a
    slow answer for project A never overwrites the view of project B.

    :attr:`state` is held while a job's result is applied (``done``/``failed``); the widget holds it
    too while the kernel's thread changes what it shows (``select()``, a click), so a background
    answer never lands half-way through such a change, nor the change half-way through the answer.
    """

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._lock = threading.Lock()
        #: held while a result is applied and while the kernel's thread changes the widget
        self.state = threading.RLock()
        self._tickets: dict[str, int] = {}
        self._threads: list[threading.Thread] = []

    def run(
        self,
        slot: str,
        work: Callable[[], T],
        done: Callable[[T], None],
        failed: Callable[[BaseException], None],
        *,
        wait: bool,
    ) -> T | None:
        """Run ``work()``, then ``done(result)`` or ``failed(exc)`` unless a newer job took the slot."""
        with self._lock:
            ticket = self._tickets[slot] = self._tickets.get(slot, 0) + 1

        def current() -> bool:
            with self._lock:
                return self._tickets.get(slot) == ticket

        def body() -> T | None:
            try:
                result = work()
            except Exception as exc:  # shown in the widget; a bug is also logged with its traceback
                if not isinstance(exc, PMError):
                    log.exception("%s: %s job failed", self._owner, slot)
                with self.state:
                    if current():
                        failed(exc)
                return None
            with self.state:
                if current():
                    done(result)
            return result

        if wait:
            return body()
        thread = threading.Thread(target=body, name=f"pm-{self._owner}-{slot}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return None

    def cancel(self, slot: str) -> None:
        """Forget the running job of *slot*: its result will be dropped."""
        with self._lock:
            self._tickets[slot] = self._tickets.get(slot, 0) + 1

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until every background job has finished; ``False`` if some still run after *timeout*."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        return not any(t.is_alive() for t in threads)
