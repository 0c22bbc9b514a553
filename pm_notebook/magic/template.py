"""Python values in ``%%pmsql`` cells: ``{name}`` identifiers and ``:name`` bind parameters (pure).

The client's one SQL scanner (:mod:`pm_notebook._sql_text`) finds the *code* parts (outside ``'string
literals'``, ``"quoted identifiers"``, ``-- line`` and ``/* block */`` comments) and, there only:

* replaces ``{name}`` (or JupySQL's ``{{name}}``) by the value of ``name`` quoted as a Druid identifier —
  for table and column names, never for values;
* replaces ``:name`` by one ``?`` placeholder (a list or tuple becomes ``?, ?, ...``) and collects the value,
  so values travel as real bound parameters and are never pasted into the SQL text.

>>> values = {"t": "my-table", "cid": "it's"}
>>> r = render('SELECT * FROM {t} WHERE caseid = :cid -- :not_me', values.__getitem__)
>>> r.sql, r.params
('SELECT * FROM "my-table" WHERE caseid = ? -- :not_me', ["it's"])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import _models, _sql_text

__all__ = ["Rendered", "TemplateError", "quote_identifier", "render"]

# `{name}`, `{ name }` or `{{name}}`; JDBC escapes such as `{fn NOW()}` or `{d '2020-01-01'}` never match.
_BRACE = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}|\{\s*([A-Za-z_]\w*)\s*\}")
_BIND = re.compile(r":([A-Za-z_]\w*)")
_WORD = re.compile(r"\w")


class TemplateError(ValueError):
    """A ``{name}`` or ``:name`` in the SQL cannot be filled in; the message says which and why.

    :param position: ``(line, column)`` (1-based) of the placeholder in the SQL text.
    """

    def __init__(self, message: str, *, position: tuple[int, int] | None = None) -> None:
        super().__init__(message)
        self.position = position


@dataclass
class Rendered:
    """The SQL as it will be sent, its ``?`` parameters in order and what was substituted."""

    sql: str
    params: list[Any] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)
    identifiers: dict[str, str] = field(default_factory=dict)
    #: ``(start in sql, end in sql, start in the template, end in the template)`` of each replaced placeholder
    spans: list[tuple[int, int, int, int]] = field(default_factory=list)

    def template_offset(self, offset: int) -> int:
        """The offset in the template text of *offset* in :attr:`sql` (inside a replacement: its start).

        >>> render("SELECT {t} FROM x", {"t": "a-b"}.__getitem__).template_offset(16)
        14
        """
        shift = 0
        for start, end, t_start, t_end in self.spans:
            if offset < start:
                break
            if offset < end:
                return t_start
            shift = t_end - end
        return offset + shift


def quote_identifier(value: Any, *, name: str = "value") -> str:
    """Quote *value* as a Druid SQL identifier.

    A ``str`` becomes ``"..."`` (inner ``"`` doubled); an object with a string ``sql_name`` (a
    :class:`pm_notebook._models.Table`) gives that; a tuple/list of strings gives a dotted path
    (``("lookup", "x")`` → ``"lookup"."x"``).

    >>> quote_identifier('we"ird-name')
    '"we""ird-name"'
    """
    sql_name = getattr(value, "sql_name", None)
    if isinstance(sql_name, str):
        return sql_name
    if isinstance(value, (tuple, list)) and value and all(isinstance(p, str) for p in value):
        return ".".join(quote_identifier(p, name=name) for p in value)
    if not isinstance(value, str):
        raise TemplateError(
            f"{{{name}}} is a {type(value).__name__}, but {{...}} only inserts table or column names (str). "
            f"To use it as a value, write :{name} instead (sent as a bound parameter)."
        )
    if not value:
        raise TemplateError(f"{{{name}}} is an empty string; a table or column name is expected.")
    return _models.quote_identifier(value)


def _plain(value: Any) -> Any:
    """numpy/pandas scalars → Python scalars, so every transport can type them."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


def _values(value: Any) -> list[Any] | None:
    """The items of a list-like bind value (``IN (:ids)``), or ``None`` for a single value."""
    if isinstance(value, (str, bytes, bytearray, dict)):
        return None
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays, pandas Series/Index; a numpy scalar gives a scalar
        items = value.tolist()
        return items if isinstance(items, list) else None
    return None


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _unterminated(sql: str, part: _sql_text.Part) -> TemplateError:
    """The error for a literal or identifier the cell never closes."""
    line, col = _line_col(sql, part.start)
    what, quote = ("string literal", "'") if part.kind == _sql_text.STRING else ("quoted identifier", '"')
    return TemplateError(
        f"Unterminated {what} starting at line {line}, column {col}: close it with {quote}.",
        position=(line, col),
    )


def render(
    sql: str,
    lookup: Callable[[str], Any],
    *,
    identifier: Callable[[str], str | None] | None = None,
) -> Rendered:
    """Fill ``{name}`` identifiers and ``:name`` parameters of *sql*.

    :param lookup: returns the Python value of a name, raising ``KeyError`` when there is none.
    :param identifier: consulted first for ``{name}``; returns an already-quoted identifier (the project
        shortcuts ``{cases}``, ``{vertex}``, ``{edge}``) or ``None`` to fall back to *lookup*.
    :raises TemplateError: unknown name, a non-name in ``{...}``, an empty list for ``:name``, ``?`` mixed
        with ``:name``, or an unterminated literal.
    """
    out: list[str] = []
    result = Rendered(sql="")
    positional = 0
    start = 0
    for part in _sql_text.parts(sql):
        if part.kind != _sql_text.CODE:
            if not part.closed and part.kind in (_sql_text.STRING, _sql_text.IDENTIFIER):
                raise _unterminated(sql, part)
            continue
        positional, start = _fill_code(sql, part, lookup, identifier, out, result, positional, start)
    out.append(sql[start:])
    if positional and result.param_names:
        raise TemplateError(
            "The SQL mixes ? placeholders with :name parameters; use :name only "
            "(values come from Python variables)."
        )
    result.sql = "".join(out)
    return result


def _fill_code(
    sql: str,
    part: _sql_text.Part,
    lookup: Callable[[str], Any],
    identifier: Callable[[str], str | None] | None,
    out: list[str],
    result: Rendered,
    positional: int,
    start: int,
) -> tuple[int, int]:
    """Fill the placeholders of one code *part* of *sql* into *out* and *result*; *start*: where the text
    not yet copied to *out* begins. Returns the ``?`` count so far and the new *start*."""
    i = part.start
    while i < part.end:
        c = sql[i]
        if c == "{" and (m := _BRACE.match(sql, i)):
            name = m.group(1) or m.group(2)
            quoted = identifier(name) if identifier else None
            if quoted is None:
                quoted = quote_identifier(_lookup(lookup, name, "{" + name + "}", sql, i), name=name)
            _replace(out, result, sql[start:i], quoted, i, m.end())
            result.identifiers[name] = quoted
            i = start = m.end()
        elif c == ":" and sql.startswith("::", i):
            i += 2  # a `::` cast, not a parameter
        elif c == ":" and (m := _BIND.match(sql, i)) and not (i and _WORD.match(sql[i - 1])):
            name = m.group(1)
            value = _lookup(lookup, name, ":" + name, sql, i)
            items = _values(value)
            if items is None:
                marks, values = "?", [_plain(value)]
            elif not items:
                raise TemplateError(
                    f":{name} is an empty {type(value).__name__}; SQL has no empty IN (...) list — "
                    "filter it out in Python or give at least one value.",
                    position=_line_col(sql, i),
                )
            else:
                marks, values = ", ".join("?" * len(items)), items
            _replace(out, result, sql[start:i], marks, i, m.end())
            result.params.extend(values)
            result.param_names.extend([name] * len(values))
            i = start = m.end()
        else:
            if c == "?":
                positional += 1
            i += 1
    return positional, start


def _replace(out: list[str], result: Rendered, text: str, replacement: str, start: int, end: int) -> None:
    """Append *text*, then *replacement* of the template's ``[start, end)``, and record where it went."""
    out.append(text)
    at = sum(len(part) for part in out)
    out.append(replacement)
    result.spans.append((at, at + len(replacement), start, end))


def _lookup(lookup: Callable[[str], Any], name: str, shown: str, sql: str, pos: int) -> Any:
    try:
        return lookup(name)
    except KeyError:
        line, col = _line_col(sql, pos)
        raise TemplateError(
            f"{shown} (line {line}, column {col}): no Python variable named {name!r}. "
            "Define it in the notebook first"
            + (
                ", or choose a project with %pmsql --project for {cases}/{vertex}/{edge}."
                if shown[0] == "{"
                else "."
            ),
            position=(line, col),
        ) from None
