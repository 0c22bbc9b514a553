"""The client's one SQL text scanner (pm_notebook._sql_text): literals, quoted identifiers and comments."""

from __future__ import annotations

import random

import pytest

from pm_notebook._sql_text import (
    BLOCK_COMMENT,
    CODE,
    IDENTIFIER,
    LINE_COMMENT,
    STRING,
    Part,
    code_text,
    identifiers,
    parts,
)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("", []),
        ("SELECT 1", [Part(CODE, 0, 8)]),
        ("'it''s'", [Part(STRING, 0, 7)]),
        ('"a""b" x', [Part(IDENTIFIER, 0, 6), Part(CODE, 6, 8)]),
        ("a -- c\nb", [Part(CODE, 0, 2), Part(LINE_COMMENT, 2, 6), Part(CODE, 6, 8)]),
        ("a /* '\n\" */ b", [Part(CODE, 0, 2), Part(BLOCK_COMMENT, 2, 11), Part(CODE, 11, 13)]),
        (
            "'-- not a comment' /* x",
            [Part(STRING, 0, 18), Part(CODE, 18, 19), Part(BLOCK_COMMENT, 19, 23, False)],
        ),
        ("x = 'open", [Part(CODE, 0, 4), Part(STRING, 4, 9, False)]),
        ('x = "op""', [Part(CODE, 0, 4), Part(IDENTIFIER, 4, 9, False)]),
        ("x -- end", [Part(CODE, 0, 2), Part(LINE_COMMENT, 2, 8, False)]),
        ("a-b/c*d", [Part(CODE, 0, 7)]),  # a lone - or / opens nothing
    ],
)
def test_parts(sql: str, expected: list[Part]) -> None:
    assert parts(sql) == expected


def _states(sql: str) -> list[str]:
    """An independent character-at-a-time reading: the kind of each character of *sql*."""
    out, state, i = [], CODE, 0
    while i < len(sql):
        c, two = sql[i], sql[i : i + 2]
        if state == CODE:
            if c == "'":
                state = STRING
            elif c == '"':
                state = IDENTIFIER
            elif two == "--":
                state = LINE_COMMENT
            elif two == "/*":
                out += [BLOCK_COMMENT, BLOCK_COMMENT]
                state, i = BLOCK_COMMENT, i + 2
                continue
            out.append(state)
        elif state in (STRING, IDENTIFIER):
            quote = "'" if state == STRING else '"'
            if two == quote * 2:
                out += [state, state]
                i += 2
                continue
            out.append(state)
            if c == quote:
                state = CODE
        elif state == LINE_COMMENT:
            if c == "\n":
                state = CODE
            out.append(state)
        else:
            if two == "*/":
                out += [state, state]
                state, i = CODE, i + 2
                continue
            out.append(state)
        i += 1
    return out


def test_parts_agree_with_a_character_by_character_reading() -> None:
    """Random texts of the characters that matter: the parts cover the text back to back and give each
    character the kind a plain state machine gives it."""
    rng = random.Random(38)
    alphabet = ["'", '"', "-", "/", "*", "\n", "a", " ", "?", "{", ":"]
    for _ in range(3000):
        sql = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        found = parts(sql)
        assert [(p.start, p.end) for p in found] == list(
            zip([0, *[p.end for p in found]], [p.end for p in found], strict=False)
        )
        assert sum(p.end - p.start for p in found) == len(sql)
        kinds = [p.kind for p in found for _ in range(p.end - p.start)]
        assert kinds == _states(sql), sql
        assert all(p.closed for p in found[:-1])


def test_code_text_and_identifiers() -> None:
    sql = 'SELECT "a""b", \'x?\' -- ?\nFROM "t" /* "u" */ WHERE c = ?'
    blanked = code_text(sql)
    assert len(blanked) == len(sql) and blanked.count("\n") == 1 and blanked.count("?") == 1
    assert "FROM" in blanked and "x" not in blanked and '"' not in blanked
    assert identifiers(sql) == ['a"b', "t"]
    assert identifiers('SELECT "open') == []
