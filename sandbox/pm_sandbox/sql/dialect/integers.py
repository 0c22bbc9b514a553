"""Druid's integer semantics: ``a / b`` of two integers truncates.

``a / b`` of two operands known to be integers (integer literals, integer columns, ``COUNT``,
``SUM``/``MIN``/``MAX`` of integers, the integer-valued functions) becomes DuckDB's ``//``; it stays a DOUBLE
division when an operand's type is not known (parameters, columns of subqueries). Integer literals in ``*``,
``+`` and ``-`` are BIGINT (see :class:`.functions.Rewriter`).

The calls whose Druid answer depends on whether their arguments are integers (``DIV``, ``SAFE_DIVIDE``,
``TRUNCATE``: Druid evaluates them on longs or on doubles) are marked with :data:`INTEGER_ARGS` by
:func:`mark_integer_calls`, for the function table's handlers.
"""

from __future__ import annotations

from sqlglot import exp

from ..access import Catalog
from ..types import duckdb_to_druid

__all__ = ["INTEGER_ARGS", "integer_division", "mark_integer_calls"]

#: the mark (in a call's ``meta``) of a call whose arguments are all known integers
INTEGER_ARGS = "pm_integer_args"
#: the calls that are told whether their arguments are integers
_TYPED_CALLS = {"DIV", "SAFE_DIVIDE", "TRUNCATE", "TRUNC"}

_INT_FUNCS = {
    "STRLEN",
    "MV_LENGTH",
    "ARRAY_LENGTH",
    "TIMESTAMPDIFF",
    "TIMESTAMP_TO_MILLIS",
    "TIME_EXTRACT",
    "DIV",
    "PARSE_LONG",
    "BITWISE_AND",
    "BITWISE_OR",
    "BITWISE_XOR",
    "BITWISE_COMPLEMENT",
    "BITWISE_SHIFT_LEFT",
    "BITWISE_SHIFT_RIGHT",
    "IPV4_PARSE",
    "ARRAY_OFFSET_OF",
    "ARRAY_ORDINAL_OF",
    "MV_OFFSET_OF",
    "MV_ORDINAL_OF",
    "CHAR_LENGTH",
    "CHARACTER_LENGTH",
}


def integer_division(tree: exp.Expr, catalog: Catalog) -> None:
    """Rewrite ``a / b`` to DuckDB's ``a // b`` where both operands are known integers (Druid: BIGINT)."""
    for div in list(tree.find_all(exp.Div)):
        if _is_int(div.this, catalog) and _is_int(div.expression, catalog):
            div.replace(exp.IntDiv(this=div.this, expression=div.expression))


def mark_integer_calls(tree: exp.Expr, catalog: Catalog) -> None:
    """Mark the ``DIV``/``SAFE_DIVIDE``/``TRUNCATE`` calls whose value arguments are all known integers
    (``TRUNCATE``'s digits are an integer anyway: only its first argument counts)."""
    for call in tree.find_all(exp.Anonymous):
        name = str(call.this).upper()
        if name in _TYPED_CALLS and call.expressions:
            values = call.expressions[:1] if name in ("TRUNCATE", "TRUNC") else call.expressions
            if all(_is_int(v, catalog) for v in values):
                call.meta[INTEGER_ARGS] = True


def _is_int(node: exp.Expr | None, catalog: Catalog) -> bool:
    """Whether *node* is known to be integer-typed; ``False`` when unknown (so ``/`` stays a DOUBLE one)."""
    if node is None:
        return False
    if isinstance(node, exp.Literal):
        return not node.is_string and node.this.lstrip("-").isdigit()
    if isinstance(node, exp.Paren | exp.Neg):
        return _is_int(node.this, catalog)
    if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Mod | exp.IntDiv | exp.Div):
        return _is_int(node.this, catalog) and _is_int(node.expression, catalog)
    if isinstance(node, exp.Cast):
        return node.to.is_type(*exp.DataType.INTEGER_TYPES)
    if isinstance(node, exp.Count | exp.Length | exp.ArraySize):
        return True
    if isinstance(node, exp.Sum | exp.Min | exp.Max | exp.Abs):
        return _is_int(node.this, catalog)
    if isinstance(node, exp.Anonymous):
        name = str(node.this).upper()
        if name in ("MOD", "SAFE_DIVIDE"):  # Druid's LONG when both arguments are
            return all(_is_int(a, catalog) for a in node.expressions)
        if name in ("TRUNCATE", "TRUNC"):  # the type of its first argument (ARG0)
            return bool(node.expressions) and _is_int(node.expressions[0], catalog)
        if name in ("ARRAY_OFFSET", "ARRAY_ORDINAL"):  # an element of an ARRAY[...] of integers
            array = node.expressions[0] if node.expressions else None
            return isinstance(array, exp.Array) and all(_is_int(e, catalog) for e in array.expressions)
        return name in _INT_FUNCS
    if isinstance(node, exp.Column):
        return duckdb_to_druid(_column_type(node, catalog) or "") == "BIGINT"
    return False


def _column_type(col: exp.Column, catalog: Catalog) -> str | None:
    """The DuckDB type of *col* when its SELECT reads only catalog tables (else ``None``: unknown)."""
    select = col.find_ancestor(exp.Select)
    if select is None or not select.args.get("from_"):
        return None
    sources = [select.args["from_"].this] + [j.this for j in select.args.get("joins") or []]
    types = set()
    for src in sources:
        if not isinstance(src, exp.Table) or src.name not in catalog.tables:
            return None
        if col.table and col.table != src.alias_or_name:
            continue
        cols = {c.lower(): t for c, t in catalog.tables[src.name].items()}
        if col.name.lower() in cols:
            types.add(cols[col.name.lower()])
    return types.pop() if len(types) == 1 else None
