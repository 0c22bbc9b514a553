"""What ``%%pmsql`` shows: the result view with its footer, short error texts, the progress line.

Pure formatting (pandas is the only import): the magic decides *when* to show, this module decides *what*.
"""

from __future__ import annotations

import functools
import html
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._display import duration_formatters, fit_svg, footer_html, readable_duration
from ..errors import PMError, QueryCancelled, QueryError

__all__ = [
    "Footer",
    "MapView",
    "ProgressLine",
    "ResultView",
    "Source",
    "TextView",
    "display_frame",
    "format_error",
    "mark_position",
    "readable_duration",
    "shown",
]

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
    context: str | None = None  # the query context sent, as describe_context shows it (no secret values)

    def text(self) -> str:
        parts = [
            f"{self.rows:,} row{'s' if self.rows != 1 else ''} × {self.columns} column"
            f"{'s' if self.columns != 1 else ''}",
            f"{self.elapsed:.2f} s",
        ]
        if self.transport:
            parts.append(f"via {self.transport}")
        out = " · ".join(parts)
        if self.context:
            out += f"\nQuery context: {self.context}"
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


# a UUID (a project, table or case id): long, and rarely what a reader looks at first
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def display_frame(frame: Any) -> tuple[Any, dict[Any, Callable[[Any], str]]]:
    """*frame* as a notebook shows it: columns of UUIDs moved last (the essential columns come first), and
    the formatters of its duration columns (:func:`readable_duration`). The frame itself is not changed."""
    import pandas as pd

    if not frame.columns.is_unique:
        return frame, {}

    def uuids(column: Any) -> bool:
        values = frame[column].dropna()
        return bool(len(values)) and isinstance(values.iloc[0], str) and bool(_UUID.fullmatch(values.iloc[0]))

    columns = list(frame.columns)
    late = [c for c in columns if pd.api.types.is_string_dtype(frame[c]) and uuids(c)]
    if late and len(late) < len(columns):
        frame = frame[[c for c in columns if c not in late] + late]
    return frame, duration_formatters(frame)


class ResultView:
    """The displayed form of a result: the first rows as a table, then the footer.

    The DataFrame itself is kept whole and unchanged (``-o NAME`` stores it, durations as full-precision
    ``Timedelta``); only the display is truncated, shows durations rounded (:func:`readable_duration`, as
    pandas' per-column ``formatters`` of ``to_html`` / ``to_string``) and puts columns of UUIDs last.
    """

    def __init__(self, frame: Any, footer: Footer, *, displaylimit: int) -> None:
        self.frame = frame
        self.footer = footer
        if displaylimit and len(frame) > displaylimit:
            footer.shown = displaylimit
            head = frame.head(displaylimit)
        else:
            head = frame
        self._polars = not hasattr(head, "to_html")  # a polars DataFrame shows itself, in polars' way
        self._head, self._formatters = (head, {}) if self._polars else display_frame(head)

    def _polars_text(self, html: bool) -> str:
        import polars as pl

        # every row and column of the head (the display limit already cut it); the footer gives the shape
        with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=200, tbl_hide_dataframe_shape=True):
            return str(self._head._repr_html_() if html else self._head)

    def _repr_html_(self) -> str:
        if self._polars:
            return f"{self._polars_text(html=True)}\n{footer_html(self.footer.text())}"
        table = self._head.to_html(
            max_rows=None, max_cols=None, border=0, classes="pm-result", formatters=self._formatters
        )
        return f"{table}\n{footer_html(self.footer.text())}"

    def __repr__(self) -> str:
        if self._polars:
            return f"{self._polars_text(html=False)}\n{self.footer.text()}"
        table = self._head.to_string(max_rows=None, max_cols=None, formatters=self._formatters)
        return f"{table}\n{self.footer.text()}"


class MapView:
    """A process map as a notebook shows it: fitted to the cell (:func:`pm_notebook._display.fit_svg`), then
    its footer."""

    def __init__(self, pmap: Any, footer: str) -> None:
        self.pmap = pmap
        self.footer = footer

    def _repr_html_(self) -> str:
        return fit_svg(self.pmap.svg()) + "\n" + footer_html(self.footer)

    def __repr__(self) -> str:
        return self.footer


class TextView:
    """Plain text shown as-is (plans, notes), as ``<pre>`` in HTML."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>" if self.text else ""

    def __repr__(self) -> str:
        return self.text


def mark_position(text: str, line: int, column: int, *, numbered: bool = True) -> str:
    """The *line*-th line of *text* with a caret under *column* (both 1-based), indented for an error text;
    prefixed with the line's number when *numbered*.

    >>> print(mark_position("SELECT 1\\nFROM x WHER y", 2, 8))
        2 | FROM x WHER y
          |        ^
    """
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    row = lines[line - 1]
    column = min(max(column, 1), len(row) + 1)
    if not numbered:
        return f"    {row}\n    {' ' * (column - 1)}^"
    return f"    {line} | {row}\n    {' ' * len(str(line))} | {' ' * (column - 1)}^"


@dataclass
class Source:
    """Where the SQL a magic sent comes from, so an error points into the cell as the user typed it.

    :param text: what is shown: the whole cell (its ``%%pmsql`` line is line 1) or the ``%pmsql`` line.
    :param sql_offset: where the SQL as typed starts in *text*.
    :param numbered: whether *text* is a whole cell, whose line numbers are shown.
    :param to_typed: an offset in the SQL sent (after the magic's own prefix) → the offset in the SQL typed
        (``{vertex}`` and ``:name`` are replaced before sending).
    :param sent_prefix: the characters the magic put before the typed SQL (``EXPLAIN PLAN FOR ``).
    """

    text: str
    sql_offset: int = 0
    numbered: bool = True
    to_typed: Callable[[int], int] = lambda offset: offset
    sent_prefix: int = 0


def _offset(text: str, line: int, column: int) -> int:
    """The offset of 1-based (*line*, *column*) in *text*."""
    lines = text.split("\n")
    line = min(max(line, 1), len(lines))
    return sum(len(row) + 1 for row in lines[: line - 1]) + min(max(column, 1), len(lines[line - 1]) + 1) - 1


def _line_column(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _position(err: QueryError, sql: str | None, source: Source | None) -> tuple[int, int] | None:
    """Where *err* is in ``source.text``: the server's position in the *sql* sent, mapped back to what the
    user typed, or else where the first name the message quotes is in the typed SQL."""
    if source is None:
        return None
    text = err.server_message or err.message or ""
    exact = err.position
    if exact is None and (m := _POSITION.search(text)):
        exact = (int(m.group(1)), int(m.group(2)))
    if exact is not None and sql is not None:
        sent = _offset(sql, *exact) - source.sent_prefix
        if sent >= 0:
            return _line_column(source.text, source.sql_offset + source.to_typed(sent))
    typed = source.text[source.sql_offset :]
    for quoted in _QUOTED.finditer(text):
        name = quoted.group(1) or quoted.group(2)
        if hit := re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", typed):
            return _line_column(source.text, source.sql_offset + hit.start())
    return None


# the position as the server words it, dropped from its message when the caret shows it
_POSITION_TEXT = re.compile(
    r"\s*\(line \[\d+\], column \[\d+\]\)|^From line \d+, column \d+ to line \d+, column \d+: "
)
# the position as the template words it, dropped when the caret shows it
_OUR_POSITION = re.compile(r" \(line \d+, column \d+\)| starting at line \d+, column \d+")
_CANCELLED = "the statement was stopped on the server. The connection is still usable."


def format_error(
    err: BaseException,
    *,
    sql: str | None = None,
    source: Source | None = None,
    suggestion: str | None = None,
    verbose: bool = False,
) -> str:
    """A short, complete text for *err*, in Python's own voice (``QueryError: ...``): what failed, one
    caret where in the cell, the "did you mean" *suggestion*, the hint.

    :param sql: the statement sent (the server's positions refer to it).
    :param source: the cell it came from; without it no position is shown.
    """
    if isinstance(err, (QueryCancelled, KeyboardInterrupt)):
        return f"QueryCancelled: {_CANCELLED}"
    if isinstance(err, QueryError):
        message = (err.server_message or err.message).strip()
        pos = _position(err, sql, source)
        if pos is not None:
            message = _POSITION_TEXT.sub("", message).strip()
        head = f"{type(err).__name__}: {message}"
        if err.sqlstate and err.sqlstate != "00000":  # 00000 is Avatica's "no state", not an error class
            head += f" (SQLSTATE {err.sqlstate})"
        parts = [head]
        if pos is not None and source is not None:
            marked = mark_position(source.text, *pos, numbered=source.numbered)
            if marked:
                parts.append(marked)
        if suggestion:
            parts.append(f"  Did you mean {suggestion}?")
        if err.hint:
            parts.append(f"  Hint: {err.hint}")
        text = "\n".join(parts)
    elif isinstance(err, PMError):
        text = f"{type(err).__name__}: {err}"
        if suggestion:
            text += f"\n  Did you mean {suggestion}?"
    else:
        text = f"{type(err).__name__}: {err}"
        where = getattr(err, "position", None)  # a TemplateError's, in the SQL as typed
        if where is not None and source is not None:
            typed = _offset(source.text[source.sql_offset :], *where)
            line, column = _line_column(source.text, source.sql_offset + typed)
            text = _OUR_POSITION.sub("", text)
            text += "\n" + mark_position(source.text, line, column, numbered=source.numbered)
    if not verbose and isinstance(err, PMError):
        text += "\n(Run with --verbose for the full traceback.)"
    return text


def shown(err: BaseException, text: str) -> BaseException:
    """*err*, which IPython now displays as *text* alone: no traceback, no ``UsageError:`` prefix.

    IPython (and ipykernel, for the notebook's error output) takes the lines of an exception's display from
    its ``_render_traceback_()`` when it has one; the error keeps its type, so ``except QueryError`` still
    catches it and the notebook names it ``QueryError``.
    """
    err._render_traceback_ = functools.partial(_lines, text)  # type: ignore[attr-defined]
    return err


def _lines(text: str) -> list[str]:
    return text.split("\n")


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
