"""What ``%%pmsql`` shows: the result view with its footer, short error texts, the progress line.

Pure formatting (pandas is the only import): the magic decides *when* to show, this module decides *what*.
"""

from __future__ import annotations

import html
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import PMError, QueryCancelled, QueryError

__all__ = ["Footer", "ProgressLine", "ResultView", "TextView", "format_error", "mark_position"]

logger = logging.getLogger(__name__)

# "From line 1, column 15 to line 1, column 18: ..." (Calcite), "... (line [1], column [15])" (Druid) or
# "at line 2, column 8" (our errors).
_POSITION = re.compile(r"line \[?(\d+)\]?, column \[?(\d+)\]?")
# a name the server quotes in its message: 'x' or "x"
_QUOTED = re.compile(r"'([^'\n]{1,128})'|\"([^\"\n]{1,128})\"")


@dataclass
class Footer:
    """The facts under a result: size, time, transport and why fewer rows may be shown than fetched."""

    rows: int
    columns: int
    elapsed: float
    transport: str | None = None
    shown: int | None = None  # rows displayed, when fewer than ``rows``
    limit: int | None = None  # the autolimit that stopped the fetch, when it did
    note: str | None = None

    def text(self) -> str:
        parts = [
            f"{self.rows:,} row{'s' if self.rows != 1 else ''} × {self.columns} column"
            f"{'s' if self.columns != 1 else ''}",
            f"{self.elapsed:.2f} s",
        ]
        if self.transport:
            parts.append(f"via {self.transport}")
        out = " · ".join(parts)
        if self.limit is not None:
            out += (
                f"\nStopped at the row limit ({self.limit:,}): more rows exist. "
                "Use --limit 0 for all of them."
            )
        if self.shown is not None and self.shown < self.rows:
            out += (
                f"\nShowing the first {self.shown:,} rows; the whole result is in the DataFrame "
                "(set %config PmSql.displaylimit to show more)."
            )
        if self.note:
            out += "\n" + self.note
        return out


class ResultView:
    """The displayed form of a result: the first rows as a table, then the footer.

    The DataFrame itself is kept whole (``-o NAME`` stores it); only the display is truncated.
    """

    def __init__(self, frame: Any, footer: Footer, *, displaylimit: int) -> None:
        self.frame = frame
        self.footer = footer
        if displaylimit and len(frame) > displaylimit:
            footer.shown = displaylimit
            self._head = frame.head(displaylimit)
        else:
            self._head = frame

    def _repr_html_(self) -> str:
        table = self._head.to_html(max_rows=None, max_cols=None, border=0, classes="pm-result")
        lines = "<br>".join(html.escape(line) for line in self.footer.text().split("\n"))
        return f'{table}\n<div class="pm-footer" style="font-size:smaller;opacity:.75">{lines}</div>'

    def __repr__(self) -> str:
        return f"{self._head.to_string(max_rows=None, max_cols=None)}\n{self.footer.text()}"


class TextView:
    """Plain text shown as-is (plans, notes), as ``<pre>`` in HTML."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>" if self.text else ""

    def __repr__(self) -> str:
        return self.text


def mark_position(sql: str, line: int, column: int) -> str:
    """The *line*-th line of *sql* with a caret under *column* (both 1-based), indented for an error text.

    >>> print(mark_position("SELECT 1\\nFROM x WHER y", 2, 8))
        2 | FROM x WHER y
          |        ^
    """
    lines = sql.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1]
    column = min(max(column, 1), len(text) + 1)
    return f"    {line} | {text}\n    {' ' * len(str(line))} | {' ' * (column - 1)}^"


def _position(err: QueryError, sql: str) -> tuple[tuple[int, int] | None, bool]:
    """``(position, exact)``: the server's position, or else where the first name it quotes is in *sql*."""
    text = err.server_message or err.message or ""
    if err.position:
        return err.position, True
    if m := _POSITION.search(text):
        return (int(m.group(1)), int(m.group(2))), True
    for quoted in _QUOTED.finditer(text):
        name = quoted.group(1) or quoted.group(2)
        if hit := re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", sql):
            line = sql.count("\n", 0, hit.start()) + 1
            return (line, hit.start() - (sql.rfind("\n", 0, hit.start()) + 1) + 1), False
    return None, False


def format_error(
    err: BaseException,
    *,
    sql: str | None = None,
    line_offset: int = 0,
    column_offset: int = 0,
    verbose: bool = False,
) -> str:
    """A short, complete text for *err*: what failed, where in the query, and the hint.

    :param sql: the query text as the user wrote it after templating (what the server's positions refer to,
        minus *line_offset* lines and, on its first line, *column_offset* columns added by the magic).
    """
    if isinstance(err, (QueryCancelled, KeyboardInterrupt)):
        return "Query cancelled: the statement was stopped on the server. The connection is still usable."
    if isinstance(err, QueryError):
        head = f"Query failed: {(err.server_message or err.message).strip()}"
        if err.sqlstate and err.sqlstate != "00000":  # 00000 is Avatica's "no state", not an error class
            head += f" (SQLSTATE {err.sqlstate})"
        parts = [head]
        pos, exact = _position(err, sql) if sql else (None, False)
        if pos and sql:
            if exact:  # server positions count the lines/columns the magic added; guesses are in *sql*
                pos = (pos[0] - line_offset, pos[1] - (column_offset if pos[0] - line_offset == 1 else 0))
            line, column = pos
            marked = mark_position(sql, line, column)
            if marked:
                where = "at" if exact else "near"
                parts.append(f"  {where} line {line}, column {column} of the query:\n{marked}")
        if err.hint:
            parts.append(f"  Hint: {err.hint}")
        text = "\n".join(parts)
    elif isinstance(err, PMError):
        text = f"{type(err).__name__}: {err}"
    else:
        text = str(err)
    if not verbose:
        text += "\n(Run with --verbose for the full traceback.)" if isinstance(err, PMError) else ""
    return text


class ProgressLine:
    """Elapsed time and rows fetched, shown only once a query has run for *delay* seconds.

    *show* receives the text to display (an empty string clears it). A daemon ticker refreshes the elapsed
    time while the server has not answered yet; :meth:`stop` ends it and clears the line, so fast queries
    leave no trace in the notebook.
    """

    def __init__(self, show: Callable[[str], None], *, delay: float = 1.0, interval: float = 0.5) -> None:
        self._show = show
        self._delay = delay
        self._interval = interval
        self._start = time.monotonic()
        self._rows = 0
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="pmsql-progress", daemon=True)
        self._ticker.start()

    def text(self) -> str:
        return f"Running… {time.monotonic() - self._start:.1f} s, {self._rows:,} rows fetched"

    def rows(self, fetched: int) -> None:
        """Record that *fetched* rows have arrived in total, and refresh the line if it is due."""
        self._rows = fetched
        self._refresh()

    def _refresh(self) -> None:
        with self._lock:
            if self._stop.is_set() or time.monotonic() - self._start < self._delay:
                return
            self._shown = True
            self._show(self.text())

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._refresh()
            except Exception:  # display must never break the query; the next refresh may work
                logger.debug("progress display failed", exc_info=True)

    def stop(self) -> None:
        """Stop the ticker and clear the line, if it was shown."""
        self._stop.set()
        self._ticker.join()
        with self._lock:
            if self._shown:
                self._show("")
