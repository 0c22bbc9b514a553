"""Date patterns (Java ``SimpleDateFormat``, Joda-Time) as ``strptime``/``strftime`` formats: one tokenizer.

The upload path reads files with the Java pattern of their column mapping
(:func:`~pm_sandbox.data.ingest.java_date_format`); Druid SQL's ``TIME_FORMAT``/``TIME_PARSE`` take a
Joda pattern (:func:`~pm_sandbox.sql.dialect.timefns.joda_to_strftime`). Both languages quote
literal text with ``'`` (``''`` on its own is a quote) and use runs of letters as fields; only their letter
tables differ, so each caller passes its table and turns a :class:`DatePatternError` into its own error.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DatePatternError", "translate"]


class DatePatternError(ValueError):
    """A pattern the table cannot translate: ``letter`` is the unsupported pattern letter, or ``None`` for a
    quote that is never closed."""

    def __init__(self, pattern: str, letter: str | None) -> None:
        self.pattern = pattern
        self.letter = letter
        what = "an unclosed quote" if letter is None else f"the unsupported letter {letter!r}"
        super().__init__(f"date pattern {pattern!r} has {what}")


def translate(pattern: str, table: Sequence[tuple[str, str]]) -> str:
    """*pattern* with each field of *table* (``(pattern letters, % directive)``, longest first) replaced,
    quoted text kept literally and ``%`` escaped.

    >>> translate("yyyy-MM-dd'T'HH'h' 100%", [("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H")])
    '%Y-%m-%dT%Hh 100%%'
    """
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise DatePatternError(pattern, None)
            out.append(pattern[i + 1 : end].replace("%", "%%") or "'")
            i = end + 1
            continue
        for letters, directive in table:
            if pattern.startswith(letters, i):
                out.append(directive)
                i += len(letters)
                break
        else:
            if ch.isalpha():
                raise DatePatternError(pattern, ch)
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)
