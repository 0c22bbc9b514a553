"""The one scanner of SQL text on the client: where its ``'string literals'``, ``"quoted identifiers"``,
``-- line`` and ``/* block */`` comments are, so that whoever looks for something in the *code* (a ``{name}``
or ``:name`` of a ``%%pmsql`` cell, the state at the cursor for completion, the tables a statement names)
never finds it inside a string or a comment. Pure, stdlib only.

A doubled quote inside a literal or identifier is the quote itself (``'it''s'``, ``"a""b"``), as in Druid SQL;
a text may end inside a literal, an identifier or a comment (the cell is being typed): that last part is
reported as not closed.

>>> [(p.kind, p.start, p.end) for p in parts("SELECT 'a' -- b")]
[('code', 0, 7), ('string', 7, 10), ('code', 10, 11), ('--', 11, 15)]
>>> code_text("SELECT \\"x?\\" FROM t WHERE a = '?' /* ? */ AND b = ?").count("?")
1
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BLOCK_COMMENT",
    "CODE",
    "IDENTIFIER",
    "LINE_COMMENT",
    "STRING",
    "Part",
    "code_text",
    "identifiers",
    "parts",
]

CODE = "code"
STRING = "string"
IDENTIFIER = "identifier"
LINE_COMMENT = "--"
BLOCK_COMMENT = "/*"


@dataclass(frozen=True)
class Part:
    """``text[start:end]`` is of one *kind*; *closed* is ``False`` for a literal, identifier or comment that
    the text ends inside (a line comment without its newline included)."""

    kind: str
    start: int
    end: int
    closed: bool = True


def parts(sql: str) -> list[Part]:
    """*sql* cut into code, string-literal, quoted-identifier and comment parts, in order and back to back
    (together they are the whole text; a line comment ends before its newline, which is code)."""
    found: list[Part] = []
    i, n, start = 0, len(sql), 0
    while i < n:
        c = sql[i]
        if c in "'\"":
            kind = STRING if c == "'" else IDENTIFIER
            end, closed = _quoted_end(sql, i, c)
        elif sql.startswith("--", i):
            kind = LINE_COMMENT
            k = sql.find("\n", i)
            end, closed = (n, False) if k < 0 else (k, True)
        elif sql.startswith("/*", i):
            kind = BLOCK_COMMENT
            k = sql.find("*/", i + 2)
            end, closed = (n, False) if k < 0 else (k + 2, True)
        else:
            i += 1
            continue
        if i > start:
            found.append(Part(CODE, start, i))
        found.append(Part(kind, i, end, closed))
        i = start = end
    if start < n:
        found.append(Part(CODE, start, n))
    return found


def _quoted_end(sql: str, i: int, quote: str) -> tuple[int, bool]:
    """The end of the literal or identifier opened at ``sql[i]`` and whether it is closed there."""
    j = i + 1
    while (k := sql.find(quote, j)) >= 0:
        if not sql.startswith(quote * 2, k):
            return k + 1, True
        j = k + 2
    return len(sql), False


def code_text(sql: str) -> str:
    """*sql* with every literal, quoted identifier and comment blanked (spaces; newlines kept), so offsets,
    lines and columns stay those of *sql*."""
    out = []
    for part in parts(sql):
        text = sql[part.start : part.end]
        out.append(text if part.kind == CODE else "".join(c if c == "\n" else " " for c in text))
    return "".join(out)


def identifiers(sql: str) -> list[str]:
    """The names the closed quoted identifiers of *sql* spell (``"a""b"`` → ``a"b``), in order."""
    return [
        sql[p.start + 1 : p.end - 1].replace('""', '"')
        for p in parts(sql)
        if p.kind == IDENTIFIER and p.closed
    ]
