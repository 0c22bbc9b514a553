"""Tab completion inside ``%pmsql`` lines and ``%%pmsql`` cells, as an IPython completion matcher (API v2).

Offered words: options (after ``-`` on the magic's line), the chosen project's shortcuts, the tables seen in
listings and the project choice, and their columns (fetched once per table, cached in the :class:`Session`).
A matcher works in the terminal and in Jupyter kernels alike.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import _context
from .args import OPTION_NAMES
from .session import Session

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.completer import CompletionContext, SimpleMatcherResult

__all__ = ["complete", "completion_words", "matcher"]

logger = logging.getLogger(__name__)


def complete(context: CompletionContext, session: Session, *, magic: str = "pmsql") -> SimpleMatcherResult:
    """The completions for an IPython ``CompletionContext`` *context*; nothing outside ``%magic`` code."""
    from IPython.core.completer import SimpleCompletion

    first_line = context.full_text.split("\n", 1)[0]
    in_cell = re.match(rf"\s*%%{magic}(\s|$)", first_line) is not None and context.cursor_line > 0
    in_line = re.match(rf"\s*%{magic}(\s|$)", context.line_with_cursor) is not None
    if not (in_cell or in_line):
        return {"completions": [], "suppress": False}
    token = context.token
    words: dict[str, str] = {}
    if in_line and token.startswith("-"):
        words.update((opt, "option") for opt in OPTION_NAMES)
    else:
        words.update(completion_words(session))
    found = [SimpleCompletion(w, type=kind) for w, kind in sorted(words.items()) if w.startswith(token)]
    return {"completions": found, "suppress": bool(found)}


def completion_words(session: Session) -> dict[str, str]:
    """``{word: kind}`` for the current connection: shortcuts, tables and their columns."""
    words: dict[str, str] = {}
    conn = _context.get_current()
    if conn is None:
        return words
    choice = session.choice(conn)
    if choice is not None:
        words.update((k, "shortcut") for k in choice.shortcuts())
    for t in session.tables_seen:
        words[t.name] = "table"
        if t.name not in session.columns:
            try:
                session.columns[t.name] = [c.name for c in conn.columns(t)]
            except Exception:  # completion must never raise into the editor; it just offers less
                logger.debug("no columns for completion of %s", t.name, exc_info=True)
                session.columns[t.name] = []
        words.update((c, "column") for c in session.columns[t.name])
    return words


def matcher(
    complete: Callable[[CompletionContext], SimpleMatcherResult], identifier: str
) -> Callable[[CompletionContext], SimpleMatcherResult]:
    """Wrap *complete* as an IPython matcher (API v2) named *identifier* (so unloading can find it)."""

    def match(context: CompletionContext) -> SimpleMatcherResult:
        return complete(context)

    match.matcher_api_version = 2  # type: ignore[attr-defined]
    match.matcher_identifier = identifier  # type: ignore[attr-defined]
    match.matcher_priority = 1  # type: ignore[attr-defined]
    return match
