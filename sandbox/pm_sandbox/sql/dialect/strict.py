"""Druid's grammar and planner rules, checked before any translation: the sandbox accepts Druid SQL only.

Two passes, both before DuckDB sees anything:

* :func:`check_tokens` reads the statement's tokens as the user wrote them. It bounds the nesting depth,
  refuses syntax Druid's parser does not have (``::`` casts, ``[1, 2]`` list literals, ``* EXCLUDE``,
  ``DISTINCT ON``, ``USING SAMPLE``, lambdas, JSON arrows, ``//``...) and checks every name called as a
  function against :data:`.functions.FUNCTIONS` — quoted, qualified or escaped spellings included, so no
  DuckDB function is reachable by spelling it differently. Window functions need no query context (Druid 32
  removed ``enableWindowing``).
* :func:`check_tree` reads the parsed statement: CAST target types, ``UNION``/``INTERSECT``/``EXCEPT``
  (Druid has ``UNION ALL`` only), join conditions (equi-joins only), the ordering of non-aggregating
  queries (by ``__time`` only) and a numeric column where a condition belongs (``WHERE flag``, ``NOT flag``,
  ``FILTER (WHERE flag)``, ``flag AND …``: Calcite wants a BOOLEAN, DuckDB would cast).

Every refusal carries Druid's wording (see :mod:`..errors`).
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from ..access import Catalog
from ..errors import SqlError, invalid_sql, not_planned, unexpected_token
from ..types import duckdb_to_druid
from .functions import FUNCTIONS

__all__ = ["MAX_DEPTH", "Source", "check_tokens", "check_tree"]

#: Deepest nesting of parentheses and CASE expressions a statement may have.
MAX_DEPTH = 40

_REFUSED_TOKENS = {
    getattr(TokenType, name)
    for name in [
        "DCOLON",
        "ARROW",
        "DARROW",
        "HASH_ARROW",
        "DHASH_ARROW",
        "LR_ARROW",
        "AT_GT",
        "LT_AT",
        "AMP",
        "PIPE",
        "CARET",
        "TILDE",
        "DAMP",
        "L_BRACE",
        "R_BRACE",
        "HEX_STRING",
        "BIT_STRING",
        "BYTE_STRING",
        "RAW_STRING",
        "HEREDOC_STRING",
        "NATIONAL_STRING",
        "UNICODE_STRING",
        "ILIKE",
        "GLOB",
        "RLIKE",
        "QUALIFY",
        "TABLE_SAMPLE",
        "PIVOT",
        "UNPIVOT",
        "ASOF",
        "POSITIONAL",
        "SEMI",
        "ANTI",
        "LATERAL",
        "PARAMETER",
        "SESSION_PARAMETER",
        "COLON",
        "DSTAR",
        "STRAIGHT_JOIN",
        "MATCH_RECOGNIZE",
        "CONNECT_BY",
        "START_WITH",
        "RETURNING",
        "SETTINGS",
        "NULLSAFE_EQ",
        "DPIPE_SLASH",
        "COLON_EQ",
        "PIPE_SLASH",
        "CARET_AT",
        "DQMARK",
        "HASH",
    ]
    if hasattr(TokenType, name)
}
# Words that may stand before "(" without being a function call.
_SYNTAX = set(
    [
        "IN",
        "EXISTS",
        "VALUES",
        "FROM",
        "JOIN",
        "AS",
        "ON",
        "AND",
        "OR",
        "NOT",
        "SELECT",
        "WHERE",
        "HAVING",
        "OVER",
        "FILTER",
        "THEN",
        "ELSE",
        "WHEN",
        "CASE",
        "BY",
        "ALL",
        "ANY",
        "SOME",
        "UNION",
        "INTERSECT",
        "EXCEPT",
        "USING",
        "DISTINCT",
        "LIKE",
        "BETWEEN",
        "SETS",
        "ROLLUP",
        "CUBE",
        "WITH",
        "IS",
        "UNNEST",
    ]
)
_STAR_MODIFIERS = {"EXCLUDE", "REPLACE", "RENAME", "EXCEPT", "COLUMNS", "ILIKE", "LIKE", "SIMILAR"}
_INTERVAL_UNITS = {"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Calcite reserved words Druid 33 refuses as an unquoted alias (``AS hour``; ``AS "hour"`` is accepted), as
# the broker answered them (tests/druid/test_corpus.py; ``WEEK``, ``QUARTER``, ``DOW``, ``EPOCH`` pass).
# DATE, TIME and TIMESTAMP are reserved too but also follow AS in CAST, so they are left to the parser.
_RESERVED_ALIASES = frozenset(
    ["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "VALUE", "USER", "COUNT", "SUM", "MIN", "MAX"]
)
_CAST_TYPES = {
    exp.DataType.Type.BIGINT,
    exp.DataType.Type.INT,
    exp.DataType.Type.SMALLINT,
    exp.DataType.Type.TINYINT,
    exp.DataType.Type.FLOAT,
    exp.DataType.Type.DOUBLE,
    exp.DataType.Type.DECIMAL,
    exp.DataType.Type.VARCHAR,
    exp.DataType.Type.CHAR,
    exp.DataType.Type.BOOLEAN,
    exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.DATE,
    exp.DataType.Type.ARRAY,
}
# Druid 33 plans these join conditions (and an OR of them) with a nested-loop join; LIKE and the rest it
# refuses (tests/druid/test_corpus.py: non_equi_join, or_join, not_equals_join).
_JOIN_PLANNED = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NEQ, exp.Or)
_JOIN_KINDS = {
    exp.GT: "GREATER_THAN",
    exp.GTE: "GREATER_THAN_OR_EQUAL",
    exp.LT: "LESS_THAN",
    exp.LTE: "LESS_THAN_OR_EQUAL",
    exp.NEQ: "NOT_EQUALS",
    exp.Or: "OR",
    exp.Like: "LIKE",
    exp.Between: "GREATER_THAN_OR_EQUAL",
    exp.Not: "NOT",
    exp.In: "OR",
    exp.Is: "IS_NULL",
}


class Source:
    """The statement's text as the client sent it, for Calcite-style positions (1-based line and column)."""

    def __init__(self, sql: str, offset: int) -> None:
        self.sql = sql
        self.offset = offset  # where the tokenised text starts in *sql*

    def pos(self, first: Token, last: Token | None = None) -> tuple[int, int, int, int]:
        """``(line, column, end line, end column)`` of the tokens *first* … *last*."""
        line, col = self._at(first.start)
        end_line, end_col = self._at((last or first).end)
        return line, col, end_line, end_col

    def _at(self, index: int) -> tuple[int, int]:
        i = index + self.offset
        line = self.sql.count("\n", 0, i) + 1
        return line, i - (self.sql.rfind("\n", 0, i) + 1) + 1


def _matching(tokens: list[Token], i: int) -> int:
    """Index of the ``)`` closing the ``(`` at *i* (the last token if unbalanced)."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[j].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def check_depth(tokens: list[Token], src: Source) -> None:
    """Refuse statements nested deeper than :data:`MAX_DEPTH` (parentheses and CASE) before parsing them."""
    depth = 0
    for t in tokens:
        if t.token_type in (TokenType.L_PAREN, TokenType.CASE):
            depth += 1
            if depth > MAX_DEPTH:
                raise invalid_sql(
                    f"The query is nested too deeply: more than {MAX_DEPTH} levels of parentheses, "
                    "subqueries "
                    "or CASE expressions. Simplify it (e.g. use IN lists or a lookup instead of nested CASE)",
                    src.pos(t),
                )
        elif t.token_type in (TokenType.R_PAREN, TokenType.END):
            depth -= 1


def _arg_type(group: list[Token], catalog: Catalog) -> str:
    if len(group) == 1:
        t = group[0]
        if t.token_type == TokenType.NUMBER:
            return "NUMERIC"
        if t.token_type == TokenType.STRING:
            return "CHARACTER"
        if t.token_type in (TokenType.TRUE, TokenType.FALSE):
            return "BOOLEAN"
        if t.token_type == TokenType.NULL:
            return "NULL"
        if t.token_type == TokenType.PLACEHOLDER:
            return "UNKNOWN"
        for cols in catalog.tables.values():
            if t.text in cols:
                druid = duckdb_to_druid(cols[t.text])
                return {
                    "BIGINT": "NUMERIC",
                    "DOUBLE": "NUMERIC",
                    "FLOAT": "NUMERIC",
                    "VARCHAR": "CHARACTER",
                }.get(druid, "CHARACTER" if druid.startswith("ARRAY") else druid)
    if group and group[0].text.upper() in ("TIMESTAMP", "DATE") and len(group) == 2:
        return group[0].text.upper()
    return "ANY"


def _signature(tokens: list[Token], name: str, open_at: int, catalog: Catalog) -> tuple[str, int]:
    close = _matching(tokens, open_at)
    groups: list[list[Token]] = [[]]
    depth = 0
    for t in tokens[open_at + 1 : close]:
        if t.token_type == TokenType.L_PAREN:
            depth += 1
        elif t.token_type == TokenType.R_PAREN:
            depth -= 1
        if t.token_type == TokenType.COMMA and depth == 0:
            groups.append([])
        else:
            groups[-1].append(t)
    args = [] if groups == [[]] else [f"<{_arg_type(g, catalog)}>" for g in groups]
    return f"{name}({', '.join(args)})", close


def _no_match(tokens: list[Token], start: int, name_end: int, catalog: Catalog, src: Source) -> SqlError:
    name = "".join(t.text for t in tokens[start : name_end + 1])
    signature, close = _signature(tokens, name, name_end + 1, catalog)
    return invalid_sql(
        f"No match found for function signature {signature}", src.pos(tokens[start], tokens[close])
    )


def check_tokens(tokens: list[Token], src: Source, catalog: Catalog) -> None:
    """Refuse, at the first offending token, what Druid's parser or function table does not have."""
    n = len(tokens)
    calls: list[bool] = []  # for each open "(": whether it opens a function call's arguments
    for i, t in enumerate(tokens):
        kind, text, up = t.token_type, t.text, t.text.upper()
        prev = tokens[i - 1] if i else None
        nxt = tokens[i + 1] if i + 1 < n else None
        line, col, *_ = src.pos(t)
        if kind == TokenType.VAR and text.startswith("$"):
            # Calcite reads $1 as a name (Druid 33: "Column '$1' not found in any table")
            raise invalid_sql(f"Column '{text}' not found in any table", src.pos(t))
        if text == "~":
            raise invalid_sql(
                f'Lexical error at line {line}, column {col}.  Encountered: "~" (126), after : ""'
            )
        if kind in (TokenType.INTERSECT, TokenType.EXCEPT):
            # Druid 33 parses a set operation other than UNION as a call it has no signature for
            raise invalid_sql(f"No match found for function signature {up}", src.pos(tokens[0], tokens[-1]))
        if kind in _REFUSED_TOKENS:
            raise unexpected_token(text, line, col)
        adjacent_twin = nxt is not None and nxt.start == t.end + 1 and nxt.token_type == kind
        if nxt is not None and adjacent_twin and kind in (TokenType.SLASH, TokenType.STAR):
            raise unexpected_token(text + nxt.text, line, col)
        if prev is not None and prev.token_type == TokenType.STAR and up in _STAR_MODIFIERS:
            raise unexpected_token(text, line, col, ["FROM", ",", "AS"])
        if kind == TokenType.DISTINCT and nxt is not None and nxt.token_type == TokenType.ON:
            raise unexpected_token(nxt.text, *src.pos(nxt)[:2])
        if kind == TokenType.USING and nxt is not None and nxt.text.upper() == "SAMPLE":
            raise unexpected_token(text, line, col)
        if kind == TokenType.L_BRACKET and (prev is None or prev.text.upper() != "ARRAY"):
            raise unexpected_token(text, line, col)
        if kind == TokenType.DIV and (nxt is None or nxt.token_type != TokenType.L_PAREN):
            raise unexpected_token(text, line, col)  # MySQL's infix DIV; Druid has DIV(x, y)
        if (
            kind == TokenType.ALIAS
            and nxt is not None
            and nxt.token_type != TokenType.IDENTIFIER  # a quoted name
            and nxt.text.upper() in _RESERVED_ALIASES
        ):
            raise invalid_sql(f"Incorrect syntax near the keyword 'AS' at line {line}, column {col}.")
        if kind in (TokenType.GROUP_BY, TokenType.ORDER_BY) and nxt is not None and nxt.text.upper() == "ALL":
            # Druid 33: "Received an unexpected token [ALL]" after GROUP BY, "… keyword 'ALL'" after ORDER BY
            raise unexpected_token(nxt.text, *src.pos(nxt)[:2], keyword=kind == TokenType.ORDER_BY)
        if up == "WITHIN" and nxt is not None and nxt.text.upper() == "GROUP":
            raise unexpected_token(text, line, col)
        if kind == TokenType.INTERVAL:
            unit = tokens[i + 2] if i + 2 < n else None
            if nxt is None or nxt.token_type != TokenType.STRING:
                raise unexpected_token(
                    nxt.text if nxt else "<EOF>", *(src.pos(nxt)[:2] if nxt else (line, col))
                )
            if unit is None or unit.text.upper().rstrip("S") not in _INTERVAL_UNITS:
                where = src.pos(unit)[:2] if unit else src.pos(nxt)[:2]
                raise unexpected_token(unit.text if unit else "<EOF>", *where, sorted(_INTERVAL_UNITS))
        if kind == TokenType.TABLE and nxt is not None and nxt.token_type == TokenType.L_PAREN:
            raise unexpected_token(text, line, col)
        if kind == TokenType.L_PAREN:
            calls.append(prev is not None and prev.text.upper() in FUNCTIONS)
        elif kind == TokenType.R_PAREN and calls:
            calls.pop()
        elif kind == TokenType.ORDER_BY and calls and calls[-1]:
            # ARRAY_AGG/STRING_AGG take no ORDER BY in Druid: its planner refuses the ordered aggregation
            raise not_planned("Aggregation with ORDER BY inside the call is not supported")
        if nxt is not None and nxt.token_type == TokenType.L_PAREN:
            _check_call(tokens, i, src, catalog)


def _check_call(tokens: list[Token], i: int, src: Source, catalog: Catalog) -> None:
    t = tokens[i]
    quoted = t.token_type == TokenType.IDENTIFIER
    if not quoted and not _NAME.match(t.text):
        return  # an operator or punctuation before "("
    prev = tokens[i - 1] if i else None
    up = t.text.upper()
    if not quoted and up in _SYNTAX and t.token_type != TokenType.VAR:
        return
    if prev is not None and prev.token_type in (TokenType.ALIAS,):
        return  # AS t (a, b): column aliases
    if prev is not None and prev.token_type in (TokenType.WITH, TokenType.COMMA):
        close = _matching(tokens, i + 1)
        if close + 1 < len(tokens) and tokens[close + 1].token_type == TokenType.ALIAS:
            return  # WITH t (a, b) AS (...): a CTE's column list
    if prev is not None and prev.token_type == TokenType.DOT:
        start = i
        while start >= 2 and tokens[start - 1].token_type == TokenType.DOT:
            start -= 2
        raise _no_match(tokens, start, i, catalog, src)
    if quoted:
        # A quoted name is case-sensitive in Druid: only the function's own (upper-case) spelling resolves.
        if t.text in FUNCTIONS:
            return
        raise _no_match(tokens, i, i, catalog, src)
    if up in FUNCTIONS:
        return
    if up in _SYNTAX:
        return
    raise _no_match(tokens, i, i, catalog, src)


# --- the parsed statement --------------------------------------------------------------------------


def check_tree(tree: exp.Expr, catalog: Catalog, locate: object) -> None:
    """Refuse what Druid's validator and planner refuse (see the module docstring).

    :param locate: ``locate(text) -> position | None`` finds a name in the statement for error positions.
    """
    _check_column_case(tree, catalog, locate)
    _check_conditions(tree, catalog, locate)
    for node in tree.walk():
        if isinstance(node, exp.Cast) and not _cast_type_ok(node.to):
            name = node.to.sql(dialect="druid")
            raise invalid_sql(f"Unknown identifier '{name}'", locate(name.split("(")[0]))  # type: ignore[operator]
        if isinstance(node, exp.Intersect | exp.Except):
            word = "INTERSECT" if isinstance(node, exp.Intersect) else "EXCEPT"
            raise not_planned(f"SQL requires '{word}' but only 'UNION ALL' is supported.")
        if isinstance(node, exp.Join):
            _check_join(node)
        if isinstance(node, exp.Select) and node.args.get("order"):
            _check_ordering(node, tree)


def _check_column_case(tree: exp.Expr, catalog: Catalog, locate: object) -> None:
    """Druid's names are case-sensitive where DuckDB's are not: ``CASEID`` is not ``caseid``."""
    known = {c for cols in catalog.tables.values() for c in cols} | {"k", "v"}
    for node in tree.walk():
        if isinstance(node, exp.Alias | exp.TableAlias | exp.CTE):
            known.add(node.alias_or_name)
        if isinstance(node, exp.TableAlias):
            known.update(c.name for c in node.columns)
    folded = {k.lower() for k in known}
    for col in tree.find_all(exp.Column):
        name = col.name
        if name and name not in known and name.lower() in folded:
            raise invalid_sql(f"Column '{name}' not found in any table", locate(name))  # type: ignore[operator]


def _numeric_column(node: exp.Expr, catalog: Catalog, aliases: set[str]) -> str | None:
    """The Druid type of *node* if it is a table's numeric column (a flag is a BIGINT 1/0 on Druid)."""
    if not isinstance(node, exp.Column) or node.name in aliases:
        return None
    types = {duckdb_to_druid(cols[node.name]) for cols in catalog.tables.values() if node.name in cols}
    if len(types) == 1 and (found := types.pop()) in ("BIGINT", "DOUBLE", "FLOAT"):
        return found
    return None


def _check_conditions(tree: exp.Expr, catalog: Catalog, locate: object) -> None:
    """A numeric column where Calcite wants a condition: refused with Druid 33's wording
    (tests/druid/test_corpus.py: the ``*_condition`` statements of the refusal corpus)."""
    aliases = {n.alias_or_name for n in tree.walk() if isinstance(n, exp.Alias | exp.TableAlias | exp.CTE)}
    aliases |= {c.name for n in tree.find_all(exp.TableAlias) for c in n.columns}

    def numeric(node: exp.Expr | None) -> str | None:
        return None if node is None else _numeric_column(node.unnest(), catalog, aliases)

    for node in tree.walk():
        if isinstance(node, exp.Not) and (typ := numeric(node.this)):
            raise invalid_sql(
                f"Cannot apply 'NOT' to arguments of type 'NOT<{typ}>'. Supported form(s): 'NOT<BOOLEAN>'",
                locate("NOT") or locate("not"),  # type: ignore[operator]
            )
        if isinstance(node, exp.And | exp.Or):
            left, right = numeric(node.this), numeric(node.expression)
            if left or right:
                word = "AND" if isinstance(node, exp.And) else "OR"
                sides = f"<{left or 'BOOLEAN'}> {word} <{right or 'BOOLEAN'}>"
                raise invalid_sql(
                    f"Cannot apply '{word}' to arguments of type '{sides}'. Supported form(s): "
                    f"'<BOOLEAN> {word} <BOOLEAN>'"
                )
        if not isinstance(node, exp.Where | exp.Having | exp.Filter):
            continue
        clause = (
            "WHERE" if isinstance(node, exp.Where) else "HAVING" if isinstance(node, exp.Having) else "FILTER"
        )
        condition = node.expression if isinstance(node, exp.Filter) else node.this
        if isinstance(condition, exp.Where):
            condition = condition.this
        if numeric(condition):
            name = condition.unnest().name
            raise invalid_sql(f"{clause} clause must be a condition", locate(name))  # type: ignore[operator]


def _cast_type_ok(to: exp.DataType) -> bool:
    if to.this not in _CAST_TYPES:
        return False
    if to.this == exp.DataType.Type.ARRAY:
        return all(isinstance(e, exp.DataType) and _cast_type_ok(e) for e in to.expressions)
    return True


def _check_join(join: exp.Join) -> None:
    on = join.args.get("on")
    if on is None:
        return
    parts = list(on.flatten()) if isinstance(on, exp.And) else [on]
    for part in parts:
        part = part.unnest()
        if isinstance(part, (exp.EQ, exp.Boolean, *_JOIN_PLANNED)):
            continue
        kind = next((k for cls, k in _JOIN_KINDS.items() if isinstance(part, cls)), "OTHER_FUNCTION")
        raise not_planned(f"SQL requires a join with '{kind}' condition that is not supported.")


def _is_aggregate_call(node: exp.Expr) -> bool:
    if isinstance(node, exp.AggFunc):
        return True
    if isinstance(node, exp.Anonymous):
        entry = FUNCTIONS.get(str(node.this).upper())
        return entry is not None and entry.kind == "aggregate"
    return False


def _aggregates(select: exp.Select) -> bool:
    if select.args.get("group") or select.args.get("distinct"):
        return True
    for item in select.expressions:
        for node in item.walk():
            if _is_aggregate_call(node) and node.find_ancestor(exp.Window, exp.Subquery) is None:
                return True
    return False


def _reads_datasource(select: exp.Select, tree: exp.Expr) -> bool:
    """Whether *select* scans a Druid table (directly, or through non-aggregating subqueries or CTEs)."""
    from_ = select.args.get("from_")
    sources = ([from_.this] if from_ else []) + [j.this for j in select.args.get("joins") or []]
    ctes = {cte.alias_or_name: cte.this for cte in tree.find_all(exp.CTE)}
    for src in sources:
        if isinstance(src, exp.Table):
            if src.db in ("druid", "lookup"):
                return True
            inner = ctes.get(src.name)
            if isinstance(inner, exp.Select) and not _aggregates(inner) and _reads_datasource(inner, tree):
                return True
        elif (
            isinstance(src, exp.Subquery)
            and isinstance(src.this, exp.Select)
            and not _aggregates(src.this)
            and _reads_datasource(src.this, tree)
        ):
            return True
    return False


def _is_time(key: exp.Expr, select: exp.Select) -> bool:
    if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
        i = int(key.this) - 1
        if 0 <= i < len(select.expressions):
            key = select.expressions[i].unalias()
    if isinstance(key, exp.Column) and not key.table:
        for item in select.expressions:
            if isinstance(item, exp.Alias) and item.alias == key.name:
                key = item.this
                break
    return isinstance(key, exp.Column) and key.name == "__time"


def _check_ordering(select: exp.Select, tree: exp.Expr) -> None:
    if _aggregates(select) or not _reads_datasource(select, tree):
        return
    keys = [o.this if isinstance(o, exp.Ordered) else o for o in select.args["order"].expressions]
    bad = [k for k in keys if not _is_time(k, select)]
    if bad:
        names = ", ".join(k.name if isinstance(k, exp.Column) else k.sql(dialect="druid") for k in bad)
        raise not_planned(
            f"SQL query requires ordering a table by non-time column [[{names}]], which is not supported."
        )
