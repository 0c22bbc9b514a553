"""DuckDB expression templates with placeholders, and argument helpers for the function table.

:func:`tmpl` is the one place where arguments are spliced into DuckDB SQL, and :func:`operand` the one rule
that keeps an operator's precedence from leaking: a compound argument (``7 + 5``) goes in as one operand,
in parentheses, so ``MOD(7 + 5, 10)`` is ``(7 + 5) % 10`` and never ``7 + 5 % 10``. The rewriter applies
the same rule to a rewritten call in its place in the query (``2 / TRUNCATE(x, 1)``).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from ..errors import SqlError

#: nodes that are one operand as they stand: names, literals, parameters, calls and the postfix forms of a
#: call (``OVER``, ``FILTER``, ``[i]``), anything already in parentheses, and what only a call's argument
#: list holds (``DISTINCT x``, a keyword such as a time unit)
_ATOMIC = (
    exp.Column,
    exp.Var,
    exp.Identifier,
    exp.Distinct,
    exp.Placeholder,
    exp.Parameter,
    exp.Null,
    exp.Boolean,
    exp.Star,
    exp.Paren,
    exp.Subquery,
    exp.Window,
    exp.Filter,
    exp.Bracket,
)


def operand(node: exp.Expr) -> exp.Expr:
    """*node* as one operand of any operator: itself when atomic, else in parentheses.

    Atomic: a column, a parameter, ``NULL``, a non-negative number or a string, a function call (``CASE`` and
    ``CAST`` included), a windowed or filtered call, a subscript, a subquery, a parenthesised expression.
    Everything else (``a + b``, ``-a``, ``a = b``, ``a AND b``, ``x IN (…)``, ``INTERVAL …``) is wrapped.
    """
    if isinstance(node, exp.Literal):
        negative = not node.is_string and str(node.this).lstrip().startswith("-")
        return exp.Paren(this=node) if negative else node
    if isinstance(node, _ATOMIC):
        return node
    if isinstance(node, exp.Func) and not isinstance(node, exp.Binary | exp.Unary):
        return node
    return exp.Paren(this=node)


def tmpl(template: str, **args: exp.Expr) -> exp.Expr:
    """Parse a DuckDB template and substitute the columns ``__A__``, ``__B__``... with *args*, each as one
    operand (:func:`operand`)."""
    tree = sqlglot.parse_one(template, read="duckdb")

    def sub(node: exp.Expr) -> exp.Expr:
        if (
            isinstance(node, exp.Column)
            and not node.table
            and node.name.startswith("__")
            and node.name.endswith("__")
        ):
            key = node.name.strip("_")
            if key in args:
                return operand(args[key].copy())
        return node

    return tree.transform(sub)


def literal_str(node: exp.Expr | None, what: str, fn: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    raise SqlError(
        f"{fn}: {what} must be a string literal (got {node.sql() if node else 'nothing'}).", "unsupported"
    )
