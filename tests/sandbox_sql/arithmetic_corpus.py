"""Nested arithmetic over the function table's operator templates, with the answers Druid 33 gives.

Issue #35 found the stand-in splicing a compound argument into an operator template without parentheses
(``MOD(7 + 5, 10)`` was 12; Druid answers 2). This module is the test's model and its exported corpus:

* :func:`operator_functions` — the names in ``FUNCTIONS`` whose DuckDB rewrite applies an operator
  (``%``, ``//``, ``*``, ``+``, ``&``, ``<<`` …) to an argument, found by reading each template and by
  calling each handler on placeholder arguments: a new one is picked up without editing this module, and
  the test then fails until :data:`MODELLED` has a model for it;
* :func:`statement` — one random ``SELECT <expression>`` (no ``FROM``) nesting those functions and
  ``+ - * /`` to a bounded depth, written as Druid SQL with compound arguments *not* parenthesised, with
  its exact expected answer (:class:`Case`). Random choices come from a :class:`Draw`, so Hypothesis
  (the property test) and a seeded :class:`random.Random` (the corpus) share one generator;
* :data:`ARITHMETIC_CORPUS` — a deterministic sample of 200 statements and answers, for replaying the
  same statements on a real Druid 33 (``tests/druid``) as well as on the stand-in.

The reference follows Druid's evaluation as its source and docs describe it (``Function.java``,
``BinaryMathOperatorExpr.java``, ``TruncateOperatorConversion``): integers are Java longs (division
truncates toward zero, ``%`` takes the dividend's sign, an integer ``/``, ``DIV`` or ``MOD`` by 0 fails
the query with ``/ by zero``); decimals are doubles (the generator keeps them dyadic and small, so the
doubles are exact and the reference can use :class:`fractions.Fraction`); ``SAFE_DIVIDE`` by 0 is NULL
(0.0 for a DOUBLE 0 / 0); ``TRUNCATE(x, d)`` is ``(double) (long) (x * 10^d) / 10^d`` in doubles,
cut to a long again when ``x`` is an integer (its SQL type is ``x``'s); a bitwise function truncates a
DOUBLE to a long; array offsets out of range are NULL; ``ARRAY_SLICE`` is ``Arrays.copyOfRange``.
Values the model leaves out (a long overflow, which Java wraps and DuckDB refuses; a DOUBLE divided by
0; NULL as an array index) make the generator reject the draw (:class:`Unmodelled`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol, TypeVar

from sqlglot import exp

from pm_sandbox.sql.dialect import FUNCTIONS
from pm_sandbox.sql.dialect.functions import SAME, UNSUPPORTED
from pm_sandbox.sql.dialect.integers import INTEGER_ARGS
from pm_sandbox.sql.dialect.templates import tmpl
from pm_sandbox.sql.errors import SqlError

__all__ = [
    "ARITHMETIC_CORPUS",
    "DIVIDE_BY_ZERO",
    "ISSUE_EXAMPLES",
    "MODELLED",
    "Case",
    "Draw",
    "RandomDraw",
    "Unmodelled",
    "operator_functions",
    "same_answer",
    "statement",
]

T = TypeVar("T")

#: the answer of a statement Druid refuses while running (Java's ArithmeticException message)
DIVIDE_BY_ZERO = "error: / by zero"
_LIMIT = 2**62  # past this a long may overflow: Java wraps, DuckDB refuses


class Unmodelled(Exception):
    """A draw whose answer the model does not give (the generator rejects it)."""


@dataclass(frozen=True)
class Case:
    """One statement and Druid 33's answer: its single value and native type (``typesHeader``)."""

    sql: str
    #: int (LONG), float (DOUBLE), str, list, None (NULL) or :data:`DIVIDE_BY_ZERO`
    expected: Any
    native_type: str


#: the four statements of issue #35, with what Druid 33.0.0 answered (druid-local/README.md, probe 03):
#: value, native type (``typesHeader``) and SQL type (``sqlTypesHeader``)
ISSUE_EXAMPLES: tuple[tuple[str, Any, str, str], ...] = (
    ("SELECT MOD(7 + 5, 10)", 2, "LONG", "INTEGER"),
    ("SELECT DIV(7 + 5, 4)", 3, "LONG", "BIGINT"),
    ("SELECT SAFE_DIVIDE(6 + 4, 2)", 5, "LONG", "INTEGER"),
    ("SELECT TRUNCATE(1.5 + 1.25, 1)", 2.7, "DOUBLE", "DECIMAL"),
)


# --- which functions: read from the function table ------------------------------------------------------

_OPERATORS = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.IntDiv,
    exp.Mod,
    exp.Neg,
    exp.BitwiseAnd,
    exp.BitwiseOr,
    exp.BitwiseXor,
    exp.BitwiseNot,
    exp.BitwiseLeftShift,
    exp.BitwiseRightShift,
)
_PROBES = ("__A__", "__B__", "__C__", "__D__")


def _applies_operator(tree: exp.Expr) -> bool:
    """Whether an operator of *tree* has a placeholder argument among its operands."""
    return any(any(c.name in _PROBES for c in op.find_all(exp.Column)) for op in tree.find_all(*_OPERATORS))


def _rewrites(name: str, rewrite: Callable[[exp.Expr, list[exp.Expr]], exp.Expr]) -> list[exp.Expr]:
    """What a handler makes of 1 to 4 placeholder arguments, typed as integers or not (a handler that
    needs a literal there, a period or a unit, refuses: it computes nothing from its arguments' values)."""
    out = []
    for n in range(1, len(_PROBES) + 1):
        for integers in (False, True):
            call = exp.Anonymous(this=name, expressions=[exp.column(p) for p in _PROBES[:n]])
            if integers:
                call.meta[INTEGER_ARGS] = True
            try:
                out.append(rewrite(call, list(call.expressions)))
            except (SqlError, IndexError):
                continue
    return out


def operator_functions() -> frozenset[str]:
    """The function table's names whose rewrite applies an operator to an argument."""
    found = set()
    for name, entry in FUNCTIONS.items():
        rewrite = entry.rewrite
        if isinstance(rewrite, str):
            if rewrite in (SAME, UNSUPPORTED, "lookup"):
                continue
            trees = [tmpl(rewrite)]
        else:
            trees = _rewrites(name, rewrite)
        if any(_applies_operator(t) for t in trees):
            found.add(name)
    return frozenset(found)


# --- random choices ---------------------------------------------------------------------------------------


class Draw(Protocol):
    """Where the generator's choices come from (Hypothesis, or a seeded random generator)."""

    def integer(self, lo: int, hi: int) -> int: ...

    def choice(self, options: Sequence[T]) -> T: ...


class RandomDraw:
    """:class:`Draw` from a :class:`random.Random`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


# --- expressions and their values ---------------------------------------------------------------------


@dataclass(frozen=True)
class E:
    """A generated expression: its Druid SQL, its Druid type and its value.

    :param compound: the text is an operator expression (it needs parentheses as an operand of ``+``…;
        as a function argument it is written bare: that is what the test is about)
    """

    sql: str
    type: str  # LONG, DOUBLE, STRING, ARRAY<LONG>, ARRAY<STRING>
    value: Any  # int, Fraction (exact double), float, str, list, None, DIVIDE_BY_ZERO
    compound: bool = False


class _ByZero(Exception):
    pass


def _num(v: Any) -> Fraction | float:
    return v if isinstance(v, float) else Fraction(v)


def _long(v: int) -> int:
    if abs(v) >= _LIMIT:
        raise Unmodelled("long overflow")
    return v


def _double(v: Fraction | float) -> Fraction | float:
    if isinstance(v, Fraction) and v.numerator.bit_length() + v.denominator.bit_length() > 50:
        raise Unmodelled("the double would not be exact")
    if isinstance(v, float) and (math.isnan(v) or abs(v) >= 2.0**53):
        raise Unmodelled("a DOUBLE out of the exact range")
    return v


def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        raise _ByZero
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _operand(e: E) -> str:
    return f"({e.sql})" if e.compound else e.sql


def _apply(sql: str, typ: str, fn: Callable[..., Any], *args: E, compound: bool = False) -> E:
    """An expression whose value is ``fn`` of its arguments' values: NULL in, NULL out; a division by zero
    anywhere is the statement's answer (Druid evaluates every argument)."""
    values = [a.value for a in args]
    if DIVIDE_BY_ZERO in values and None in values:
        # Druid evaluates both and throws; DuckDB folds an operator over a NULL to NULL first, and Calcite
        # may reduce it too: which one wins is for the differential suite to tell
        raise Unmodelled("a division by zero beside a NULL")
    if DIVIDE_BY_ZERO in values:
        return E(sql, typ, DIVIDE_BY_ZERO, compound)
    if None in values:
        return E(sql, typ, None, compound)
    try:
        return E(sql, typ, fn(*values), compound)
    except _ByZero:
        return E(sql, typ, DIVIDE_BY_ZERO, compound)


def _both_long(*args: E) -> bool:
    return all(a.type == "LONG" for a in args)


def long_atom(d: Draw) -> E:
    v = d.integer(-40, 40)
    return E(str(v), "LONG", v, compound=v < 0)


def double_atom(d: Draw) -> E:
    v = Fraction(d.integer(-160, 160), 4)
    text = f"{float(v):.2f}"
    return E(text, "DOUBLE", v, compound=v < 0)


def _binary(d: Draw, a: E, b: E) -> E:
    op = d.choice(["+", "-", "*", "/"] if _both_long(a, b) else ["+", "-", "*"])
    sql = f"{_operand(a)} {op} {_operand(b)}"
    if _both_long(a, b):
        fns: dict[str, Callable[[int, int], int]] = {
            "+": lambda x, y: _long(x + y),
            "-": lambda x, y: _long(x - y),
            "*": lambda x, y: _long(x * y),
            "/": _trunc_div,
        }
        return _apply(sql, "LONG", fns[op], a, b, compound=True)

    def double(x: Any, y: Any) -> Fraction | float:
        x, y = _num(x), _num(y)
        if isinstance(x, float) or isinstance(y, float):
            x, y = float(x), float(y)
        return _double(x + y if op == "+" else x - y if op == "-" else x * y)

    return _apply(sql, "DOUBLE", double, a, b, compound=True)


def _mod(a: E, b: E) -> E:
    def mod(x: Any, y: Any) -> Any:
        if _both_long(a, b):
            return x - y * _trunc_div(x, y)
        if y == 0 or isinstance(x, float) or isinstance(y, float):
            raise Unmodelled("MOD of a DOUBLE by 0 (NaN in Druid, an error in DuckDB), or inexact")
        x, y = Fraction(x), Fraction(y)
        return _double(x - y * math.trunc(x / y))

    return _apply(f"MOD({a.sql}, {b.sql})", "LONG" if _both_long(a, b) else "DOUBLE", mod, a, b)


def _div(a: E, b: E) -> E:
    def div(x: Any, y: Any) -> int:
        if _both_long(a, b):
            return _trunc_div(x, y)
        if y == 0:
            raise Unmodelled("DIV of a DOUBLE by 0 (a saturated long in Druid)")
        return _long(math.trunc(float(x) / float(y)))

    return _apply(f"DIV({a.sql}, {b.sql})", "LONG", div, a, b)


def _safe_divide(a: E, b: E) -> E:
    def safe(x: Any, y: Any) -> Any:
        if _both_long(a, b):
            return None if y == 0 else _trunc_div(x, y)
        fx, fy = float(x), float(y)
        if fy == 0:
            return 0.0 if fx == 0 else None
        return _double(fx / fy)

    return _apply(f"SAFE_DIVIDE({a.sql}, {b.sql})", "LONG" if _both_long(a, b) else "DOUBLE", safe, a, b)


def _truncate(name: str, a: E, digits: E | None) -> E:
    def cut(x: Any, *d: int) -> Any:
        if not d:
            return x if a.type == "LONG" else _double(Fraction(math.trunc(Fraction(x))))
        factor = 10.0 ** d[0]
        scaled = float(x) * factor
        if abs(scaled) >= 2.0**53:
            raise Unmodelled("x * 10^digits past the exact range")
        value = math.trunc(scaled) / factor
        return math.trunc(value) if a.type == "LONG" else value

    if digits is None:
        return _apply(f"{name}({a.sql})", a.type, cut, a)
    return _apply(f"{name}({a.sql}, {digits.sql})", a.type, cut, a, digits)


def _wrap(v: int) -> int:
    """*v* as a Java long (two's complement, 64 bits)."""
    return (v + 2**63) % 2**64 - 2**63


def _as_long(x: Any) -> int:
    return _long(math.trunc(x))


def _bitwise(name: str, a: E, b: E | None) -> E:
    ops: dict[str, Callable[..., int]] = {
        "BITWISE_AND": lambda x, y: _as_long(x) & _as_long(y),
        "BITWISE_OR": lambda x, y: _as_long(x) | _as_long(y),
        "BITWISE_XOR": lambda x, y: _as_long(x) ^ _as_long(y),
        "BITWISE_COMPLEMENT": lambda x: ~_as_long(x),
        "BITWISE_SHIFT_LEFT": lambda x, y: _wrap(_as_long(x) << (y & 63)),
        "BITWISE_SHIFT_RIGHT": lambda x, y: _as_long(x) >> (y & 63),
    }
    args = (a,) if b is None else (a, b)
    return _apply(f"{name}({', '.join(x.sql for x in args)})", "LONG", ops[name], *args)


def _small(d: Draw, lo: int, hi: int) -> E:
    """A small integer, often compound (``2 + 1``), in [lo, hi] (digits, shift distances, offsets)."""
    if d.integer(0, 1):
        v = d.integer(lo, hi)
        return E(str(v), "LONG", v, compound=v < 0)
    x = d.integer(lo, hi)
    y = d.integer(0, hi - x) if x < hi else 0
    return E(f"{x} + {y}", "LONG", x + y, compound=True)


def _array(d: Draw, depth: int) -> E:
    items = [long_expr(d, depth - 1) for _ in range(d.integer(1, 4))]
    values = [i.value for i in items]
    if DIVIDE_BY_ZERO in values and None in values:
        raise Unmodelled("a division by zero beside a NULL")
    value: Any = DIVIDE_BY_ZERO if DIVIDE_BY_ZERO in values else values
    return E(f"ARRAY[{', '.join(i.sql for i in items)}]", "ARRAY<LONG>", value)


def _no_null(*args: E) -> None:
    if any(a.value is None for a in args):
        raise Unmodelled("NULL as an index (Druid reads it as 0)")


def _offset(d: Draw, depth: int, name: str) -> E:
    base = 0 if name.endswith("OFFSET") else 1
    if name.startswith("MV_"):
        arr = E("STRING_TO_MV('p,q,r', ',')", "ARRAY<STRING>", ["p", "q", "r"])
    else:
        arr = _array(d, depth)
    idx = _small(d, -2, 5)
    _no_null(idx)

    def pick(items: list[Any], i: int) -> Any:
        return items[i - base] if 0 <= i - base < len(items) else None

    element = "STRING" if name.startswith("MV_") else "LONG"
    return _apply(f"{name}({arr.sql}, {idx.sql})", element, pick, arr, idx)


def _offset_of(d: Draw, depth: int, name: str) -> E:
    if name.startswith("MV_"):
        arr = E("STRING_TO_MV('p,q,r,q', ',')", "ARRAY<STRING>", ["p", "q", "r", "q"])
        needle = d.choice(["p", "q", "r", "s"])
        target = E(f"'{needle}'", "STRING", needle)
    else:
        arr = _array(d, depth)
        target = long_expr(d, depth - 1)
        _no_null(target)

    def position(items: list[Any], v: Any) -> Any:
        return items.index(v) if v in items else None

    return _apply(f"{name}({arr.sql}, {target.sql})", "LONG", position, arr, target)


def _slice(d: Draw, depth: int, name: str) -> E:
    if name.startswith("MV_"):
        arr = E("STRING_TO_MV('p,q,r,s', ',')", "ARRAY<STRING>", ["p", "q", "r", "s"])
    else:
        arr = _array(d, depth)
    start = _small(d, -1, 5)
    end = _small(d, -1, 6) if d.integer(0, 1) else None
    _no_null(start, *([end] if end else []))

    def cut(items: list[Any], s: int, *e: int) -> Any:
        stop = e[0] if e else len(items)
        if s < 0 or s > len(items) or s > stop:
            return None
        return (items + [None] * stop)[s:stop]

    args = (arr, start) if end is None else (arr, start, end)
    return _apply(f"{name}({', '.join(a.sql for a in args)})", arr.type, cut, *args)


def _ipv4_parse(d: Draw) -> E:
    octets = [str(d.integer(0, 300)) for _ in range(4)]
    text = ".".join(octets)
    cut = d.integer(1, len(text) - 1)
    valid = all(int(o) <= 255 for o in octets)
    value = sum(int(o) << (8 * (3 - i)) for i, o in enumerate(octets)) if valid else None
    return E(f"IPV4_PARSE('{text[:cut]}' || '{text[cut:]}')", "LONG", value)


def _ipv4_stringify(d: Draw, depth: int) -> E:
    a = long_expr(d, depth - 1)

    def dotted(v: int) -> Any:
        return ".".join(str((v >> s) & 255) for s in (24, 16, 8, 0)) if 0 <= v < 2**32 else None

    return _apply(f"IPV4_STRINGIFY({a.sql})", "STRING", dotted, a)


def _millisecond(d: Draw, depth: int) -> E:
    a = long_expr(d, depth - 1)
    if isinstance(a.value, int) and abs(a.value) >= 10**14:
        raise Unmodelled("an instant past DuckDB's timestamps (year 5000 and more): not arithmetic")
    return _apply(f"TIME_EXTRACT(MILLIS_TO_TIMESTAMP({a.sql}), 'MILLISECOND')", "LONG", lambda v: v % 1000, a)


def _call(d: Draw, depth: int, name: str, double: bool) -> E:
    """A call of *name* whose value arguments are LONG, or DOUBLE when *double* (where it has one)."""
    operand = double_expr if double else long_expr
    if name in ("MOD", "DIV", "SAFE_DIVIDE"):
        a, b = operand(d, depth - 1), operand(d, depth - 1)
        return {"MOD": _mod, "DIV": _div, "SAFE_DIVIDE": _safe_divide}[name](a, b)
    if name in ("TRUNCATE", "TRUNC"):
        a = operand(d, depth - 1)
        digits = _small(d, -2, 3) if d.integer(0, 3) else None
        return _truncate(name, a, digits)
    if name.startswith("BITWISE_"):
        a = operand(d, depth - 1)
        if name == "BITWISE_COMPLEMENT":
            return _bitwise(name, a, None)
        b = _small(d, 0, 70) if "SHIFT" in name else long_expr(d, depth - 1)
        return _bitwise(name, a, b)
    if name in ("ARRAY_OFFSET", "MV_OFFSET", "ARRAY_ORDINAL", "MV_ORDINAL"):
        return _offset(d, depth, name)
    if name in ("ARRAY_OFFSET_OF", "MV_OFFSET_OF"):
        return _offset_of(d, depth, name)
    if name in ("ARRAY_SLICE", "MV_SLICE"):
        return _slice(d, depth, name)
    if name == "IPV4_PARSE":
        return _ipv4_parse(d)
    if name == "IPV4_STRINGIFY":
        return _ipv4_stringify(d, depth)
    if name == "TIME_EXTRACT":
        return _millisecond(d, depth)
    raise AssertionError(f"no model for {name}")


#: the functions this module can generate, each with its answer model
MODELLED = frozenset(
    {
        "MOD",
        "DIV",
        "SAFE_DIVIDE",
        "TRUNCATE",
        "TRUNC",
        "BITWISE_AND",
        "BITWISE_OR",
        "BITWISE_XOR",
        "BITWISE_COMPLEMENT",
        "BITWISE_SHIFT_LEFT",
        "BITWISE_SHIFT_RIGHT",
        "ARRAY_OFFSET",
        "ARRAY_ORDINAL",
        "MV_OFFSET",
        "MV_ORDINAL",
        "ARRAY_OFFSET_OF",
        "MV_OFFSET_OF",
        "ARRAY_SLICE",
        "MV_SLICE",
        "IPV4_PARSE",
        "IPV4_STRINGIFY",
        "TIME_EXTRACT",
    }
)
#: the calls whose value is a LONG (usable inside other arithmetic); the others only at the top
_LONG_CALLS = (
    "MOD",
    "DIV",
    "SAFE_DIVIDE",
    "TRUNCATE",
    "TRUNC",
    "BITWISE_AND",
    "BITWISE_OR",
    "BITWISE_XOR",
    "BITWISE_COMPLEMENT",
    "BITWISE_SHIFT_LEFT",
    "BITWISE_SHIFT_RIGHT",
    "ARRAY_OFFSET",
    "ARRAY_ORDINAL",
    "ARRAY_OFFSET_OF",
    "MV_OFFSET_OF",
    "IPV4_PARSE",
    "TIME_EXTRACT",
)
_DOUBLE_CALLS = ("MOD", "DIV", "SAFE_DIVIDE", "TRUNCATE", "TRUNC", "BITWISE_AND", "BITWISE_COMPLEMENT")
_TOP_CALLS = ("MV_OFFSET", "MV_ORDINAL", "ARRAY_SLICE", "MV_SLICE", "IPV4_STRINGIFY")


def long_expr(d: Draw, depth: int) -> E:
    """A LONG-valued expression nested at most *depth* deep."""
    kind = d.integer(0, 3) if depth > 0 else 0
    if kind == 0:
        return long_atom(d)
    if kind == 1:
        return _binary(d, long_expr(d, depth - 1), long_expr(d, depth - 1))
    e = _call(d, depth, d.choice(_LONG_CALLS), double=False)
    if e.type != "LONG":  # DIV of doubles is a LONG too; nothing else changes type here
        raise AssertionError(e)
    return e


def double_expr(d: Draw, depth: int) -> E:
    """A DOUBLE-valued expression (dyadic decimals) nested at most *depth* deep."""
    kind = d.integer(0, 3) if depth > 0 else 0
    if kind == 0:
        return double_atom(d)
    if kind == 1:
        return _binary(d, double_expr(d, depth - 1), d.choice([long_expr, double_expr])(d, depth - 1))
    e = _call(d, depth, d.choice(_DOUBLE_CALLS), double=True)
    if e.type == "DOUBLE":
        return e
    return _binary(d, e, double_atom(d))  # DIV, BITWISE_*: a LONG, brought back to DOUBLE


def statement(d: Draw, depth: int = 3) -> Case:
    """One ``SELECT <expression>`` and Druid's answer; its top is a call or an operator over one."""
    top = d.integer(0, 5)
    if top == 0:
        e = _call(d, depth, d.choice(_TOP_CALLS), double=False)
    elif top == 1:
        e = _binary(d, long_atom(d), _call(d, depth, d.choice(_LONG_CALLS), double=False))
    elif top == 2:
        e = double_expr(d, depth)
    else:
        e = _call(d, depth, d.choice(_LONG_CALLS), double=d.integer(0, 2) == 0)
    value = e.value
    if isinstance(value, Fraction):
        value = float(value)
    native = e.type if value != DIVIDE_BY_ZERO else "LONG"
    return Case(f"SELECT {e.sql}", value, native)


def _corpus(n: int = 200, seed: int = 35) -> tuple[Case, ...]:
    draw = RandomDraw(random.Random(seed))
    cases: list[Case] = []
    while len(cases) < n:
        try:
            cases.append(statement(draw))
        except Unmodelled:
            continue
    return tuple(cases)


#: 200 generated statements with Druid 33's answers (seed 35): replay them on the stand-in and on Druid
ARITHMETIC_CORPUS: tuple[Case, ...] = _corpus()


def same_answer(expected: Any, got: Any) -> bool:
    """Whether the stand-in's value *got* is Druid's *expected* one: the same value of the same kind
    (a LONG is a Python int, a DOUBLE a float or a Decimal, compared exactly)."""
    if expected is None or isinstance(expected, str):
        return bool(got == expected)
    if isinstance(expected, bool):
        raise AssertionError("no BOOLEAN answers here")
    if isinstance(expected, int):
        return isinstance(got, int) and not isinstance(got, bool) and got == expected
    if isinstance(expected, float):
        return isinstance(got, float | Decimal) and Fraction(got) == Fraction(expected)
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(same_answer, expected, got))
    raise AssertionError(f"unexpected answer {expected!r}")
