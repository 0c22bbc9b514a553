"""Tab completion inside ``%pmsql`` lines and ``%%pmsql`` cells, as an IPython completion matcher (API v2).

Every completion is text that runs where it is inserted, and carries its kind (``table``, ``column``,
``shortcut``, ``function``, ``lookup``, ``option``) so JupyterLab shows it:

* after ``FROM`` / ``JOIN``: the chosen project's shortcuts as ``{vertex}`` (braces closed), then the tables
  quoted (``"<project id>_vertex"``): a table name is a UUID with hyphens, which Druid reads only quoted;
* after ``{``: the shortcuts, closed (``{ve`` gives ``{vertex}``);
* inside ``"...``: the tables and columns, quote closed;
* inside ``LOOKUP(expr, '...``: the workgroup's lookups;
* elsewhere: the columns of the table(s) the statement names (all known columns when it names none), then the
  Druid functions; options after ``-`` on the magic's line.

The words come from the :class:`Session` (the chosen project, the tables listed, their columns fetched once
per table); a matcher works in the terminal and in Jupyter kernels alike and never raises into the editor.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import _current, _sql_text
from .._models import Table, quote_identifier
from .args import OPTION_NAMES
from .session import Session

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.completer import CompletionContext, SimpleMatcherResult

    from ..connection import Connection

__all__ = [
    "FUNCTIONS",
    "Word",
    "complete",
    "did_you_mean",
    "matcher",
    "sql_identifier",
    "statement_tables",
    "words_at",
]

logger = logging.getLogger(__name__)

#: the Druid SQL functions offered (each one the service and the sandbox run)
FUNCTIONS: tuple[str, ...] = (
    "ABS", "ANY_VALUE", "APPROX_COUNT_DISTINCT", "ARRAY_AGG", "ARRAY_LENGTH", "AVG", "CAST", "CEIL",
    "CHAR_LENGTH", "COALESCE", "CONCAT", "COUNT", "DATE_TRUNC", "EARLIEST", "EXTRACT", "FLOOR", "LATEST",
    "LENGTH", "LOOKUP", "LOWER", "LTRIM", "MAX", "MILLIS_TO_TIMESTAMP", "MIN", "MOD", "NULLIF", "NVL",
    "REGEXP_EXTRACT", "REGEXP_LIKE", "REPLACE", "ROUND", "RTRIM", "STRING_AGG", "STRPOS", "SUBSTRING", "SUM",
    "TIME_CEIL", "TIME_EXTRACT", "TIME_FLOOR", "TIME_FORMAT", "TIME_IN_INTERVAL", "TIME_PARSE", "TIME_SHIFT",
    "TIMESTAMPADD", "TIMESTAMPDIFF", "TIMESTAMP_TO_MILLIS", "TRIM", "UPPER",
)  # fmt: skip

# words Druid (Calcite) reserves that are also plausible column names: such a column is inserted quoted
_RESERVED = frozenset(
    str.split(
        "ALL AND AS BY CASE CAST COUNT CURRENT DATE DAY DESC END FROM GROUP HOUR IN INTERVAL IS JOIN LIMIT "
        "MINUTE MONTH NOT NULL OFFSET ON OR ORDER SECOND SELECT TABLE TIME TIMESTAMP TO USER VALUE WEEK "
        "WHERE YEAR"
    )
)
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHORTCUT_USE = re.compile(r"\{\{?\s*([A-Za-z_]\w*)\s*\}?\}")
_TABLE_KEYWORD = re.compile(r"(?i)\b(FROM|JOIN)\s*$")
_LOOKUP_ARGUMENT = re.compile(r"(?i)\bLOOKUP\s*\([^()']*,\s*$")


@dataclass(frozen=True)
class Word:
    """One completion: the text inserted in place of *fragment* and its kind."""

    text: str
    kind: str


def sql_identifier(name: str) -> str:
    """*name* as it must be written in Druid SQL: bare when it is a plain, unreserved word, else quoted.

    >>> sql_identifier("vertex_name"), sql_identifier("end"), sql_identifier("6b3f-1_vertex")
    ('vertex_name', '"end"', '"6b3f-1_vertex"')
    """
    if _PLAIN.match(name) and name.upper() not in _RESERVED:
        return name
    return quote_identifier(name)


def complete(context: CompletionContext, session: Session, *, magic: str = "pmsql") -> SimpleMatcherResult:
    """The completions for an IPython ``CompletionContext`` *context*; nothing outside ``%magic`` code."""
    from IPython.core.completer import SimpleCompletion

    empty: SimpleMatcherResult = {"completions": [], "suppress": False}
    lines = context.full_text.split("\n")
    cursor = sum(len(line) + 1 for line in lines[: context.cursor_line]) + context.cursor_position
    head = re.match(rf"\s*%%{magic}(?=\s|$)", lines[0])
    if head is not None and context.cursor_line > 0:
        start, end, line_form = len(lines[0]) + 1, len(context.full_text), False
    else:
        line = lines[context.cursor_line]
        found = re.match(rf"(?:\s*[\w.]+\s*=)?\s*%{magic}(?=\s|$)", line)
        if found is None:
            return empty
        line_start = cursor - context.cursor_position
        start, end, line_form = line_start + found.end(), line_start + len(line), True
    if cursor < start:
        return empty
    before, after = context.full_text[start:cursor], context.full_text[cursor:end]
    try:
        fragment, words = words_at(before, after, session, line_form=line_form)
    except Exception:  # completion must never raise into the editor; it just offers nothing
        logger.debug("completion failed", exc_info=True)
        return empty
    if not words:
        return empty
    completions = [SimpleCompletion(w.text, type=w.kind) for w in words]
    # `ordered`: the columns of the statement's tables come first, as listed here
    return {"completions": completions, "suppress": True, "matched_fragment": fragment, "ordered": True}


def words_at(before: str, after: str, session: Session, *, line_form: bool = False) -> tuple[str, list[Word]]:
    """``(fragment, words)``: what replaces the *fragment* that ends *before* (the SQL up to the cursor).

    *after* is the SQL after the cursor (it tells which tables the statement names, and whether a closing
    brace or quote is already there).
    """
    if line_form and (m := re.search(r"(?:^|\s)(-[-\w]*)$", before)) and _in_options(before[: m.start(1)]):
        return m.group(1), [Word(o, "option") for o in OPTION_NAMES if o.startswith(m.group(1))]
    state, opened = _scan(before)
    if state in ("--", "/*"):
        return "", []
    conn = _current.get_current()
    if conn is None:
        return "", []
    knows = _Knowledge(session, conn)
    if state == "'":
        fragment = before[opened:]
        if not _LOOKUP_ARGUMENT.search(before[:opened]):
            return fragment, []
        close = "" if after.startswith("'") else "'"
        prefix = fragment[1:].casefold()
        names = [n for n in knows.lookups() if n.casefold().startswith(prefix)]
        return fragment, [Word("'" + n.replace("'", "''") + close, "lookup") for n in names]
    if state == '"':
        fragment = before[opened:]
        prefix = fragment[1:].replace('""', '"').casefold()
        close = "" if after.startswith('"') else '"'
        table_context = bool(_TABLE_KEYWORD.search(before[:opened]))
        words = _tables(knows, prefix) if table_context else []
        words += [] if table_context else _columns(knows, before + after, prefix, quoted=True)
        return fragment, [Word(w.text if close else w.text[:-1], w.kind) for w in words]
    if m := re.search(r"\{\{?\s*(\w*)$", before):
        fragment, prefix = m.group(0), m.group(1)
        close = "" if after.lstrip().startswith("}") else "}" * m.group(0).count("{")
        names = [k for k in knows.shortcuts() if k.startswith(prefix)]
        return fragment, [Word(m.group(0)[: m.group(0).count("{")] + k + close, "shortcut") for k in names]
    table_context = bool(_TABLE_KEYWORD.search(re.sub(r"[\w-]*$", "", before)))
    if table_context:
        fragment = re.search(r"[\w-]*$", before).group(0)  # type: ignore[union-attr]  # always matches
        prefix = fragment.casefold()
        shortcuts = [Word("{" + k + "}", "shortcut") for k in knows.shortcuts() if k.startswith(prefix)]
        return fragment, shortcuts + _tables(knows, prefix)
    fragment = re.search(r"\w*$", before).group(0)  # type: ignore[union-attr]  # always matches
    prefix = fragment.casefold()
    words = _columns(knows, before + after, prefix, quoted=False)
    if fragment:
        words += [Word(f, "function") for f in FUNCTIONS if f.casefold().startswith(prefix)]
    return fragment, words


def statement_tables(sql: str, session: Session, conn: Connection) -> list[Table]:
    """The tables *sql* names: through a shortcut (``{vertex}``) or by their quoted name."""
    knows = _Knowledge(session, conn)
    return knows.named(sql)


_UNKNOWN_COLUMN = re.compile(r"Column '([^']+)' not found")
_UNKNOWN_OBJECT = re.compile(r"Object '([^']+)' not found")
_UNKNOWN_FUNCTION = re.compile(r"No match found for function signature (\w+)\(")


def did_you_mean(message: str, sql: str, session: Session, conn: Connection | None) -> str | None:
    """What an unknown column, table or function in the server's *message* was probably meant to be, from what
    completion knows (the columns of the tables *sql* names, the tables, the shortcuts, the functions)."""
    import difflib

    def closest(name: str, candidates: dict[str, str]) -> str | None:
        by_key = {k.casefold(): v for k, v in candidates.items()}
        found = difflib.get_close_matches(name.casefold(), list(by_key), n=1, cutoff=0.6)
        return by_key[found[0]] if found else None

    if m := _UNKNOWN_FUNCTION.search(message):
        return closest(m.group(1), {f: f for f in FUNCTIONS})
    if conn is None:
        return None
    knows = _Knowledge(session, conn)
    if m := _UNKNOWN_COLUMN.search(message):
        tables = knows.named(sql) or knows.tables()
        return closest(m.group(1), {c: sql_identifier(c) for t in tables for c in knows.columns(t)})
    if m := _UNKNOWN_OBJECT.search(message):
        name = m.group(1)
        shortcuts = {k: "{" + k + "}" for k in knows.shortcuts()}
        if name in shortcuts:  # `FROM vertex`: the shortcut without its braces
            return shortcuts[name]
        return closest(name, {**shortcuts, **{t.name: t.sql_name for t in knows.tables()}})
    return None


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


# --- what the session knows ---------------------------------------------------------------------------------
class _Knowledge:
    """The session's tables, shortcuts, columns and lookups for *conn*, fetched lazily and cached there."""

    def __init__(self, session: Session, conn: Connection) -> None:
        self.session = session
        self.conn = conn
        self.choice = session.choice(conn)

    def shortcuts(self) -> dict[str, Table]:
        return self.choice.shortcuts() if self.choice is not None else {}

    def tables(self) -> list[Table]:
        return self.session.known_tables(self.conn)

    def columns(self, table: Table) -> list[str]:
        return self.session.known_columns(self.conn, table)

    def lookups(self) -> list[str]:
        return self.session.known_lookups(self.conn)

    def named(self, sql: str) -> list[Table]:
        shortcuts = self.shortcuts()
        code = _sql_text.code_text(sql)
        named = [shortcuts[m.group(1)] for m in _SHORTCUT_USE.finditer(code) if m.group(1) in shortcuts]
        by_name = {t.name: t for t in self.tables()}
        named += [by_name[n] for n in _sql_text.identifiers(sql) if n in by_name]
        return list(dict.fromkeys(named))


def _tables(knows: _Knowledge, prefix: str) -> list[Word]:
    return [Word(t.sql_name, "table") for t in knows.tables() if t.name.casefold().startswith(prefix)]


def _columns(knows: _Knowledge, sql: str, prefix: str, *, quoted: bool) -> list[Word]:
    """The columns of the tables *sql* names (of every known table when it names none), first seen first."""
    tables = knows.named(sql) or (list(knows.shortcuts().values()) or knows.tables())
    names: Iterable[str] = dict.fromkeys(c for t in tables for c in knows.columns(t))
    found = [n for n in names if n.casefold().startswith(prefix)]
    if quoted:
        return [Word(quote_identifier(n), "column") for n in found]
    return [Word(sql_identifier(n), "column") for n in found]


def _in_options(text: str) -> bool:
    """Whether *text* (the magic's line before a word) holds options only, so the word is an option too."""
    words = text.split()
    return all(w.startswith("-") or (i > 0 and words[i - 1].startswith("-")) for i, w in enumerate(words))


_STATES = {_sql_text.STRING: "'", _sql_text.IDENTIFIER: '"'}


def _scan(text: str) -> tuple[str | None, int]:
    """``(state, start)`` at the end of *text*: inside a ``'`` literal, a ``"`` identifier, a ``--`` or ``/*``
    comment (opened at *start*), or in plain code (``None``)."""
    found = _sql_text.parts(text)
    if found and not found[-1].closed:
        return _STATES.get(found[-1].kind, found[-1].kind), found[-1].start
    return None, len(text)
