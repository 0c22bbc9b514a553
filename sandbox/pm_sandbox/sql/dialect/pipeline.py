"""The translation pipeline: one Druid SQL statement in, one DuckDB statement out.

:func:`translate` is pure (no DuckDB): it takes the statement and the caller's :class:`Catalog` and
returns a :class:`Translated` statement, or raises :class:`SqlError` in Druid's words. Steps: tokenise;
bound the nesting depth and refuse non-Druid syntax and function names (:mod:`.strict`, on the tokens as
written); parse; resolve tables (:mod:`..access`); apply Druid's validator and planner rules (:mod:`.strict`);
name unnamed columns ``EXPR$i``; integer division (:mod:`.integers`); multi-value grouping
(:mod:`.multivalue`); rewrite functions (:mod:`.functions`); generate DuckDB SQL.

``?`` parameters are renamed ``$p1 … $pN`` in text order before parsing, so rewrites that reorder
arguments (``TIMESTAMPADD``) keep each value bound to its own placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.druid import Druid
from sqlglot.errors import ParseError, TokenError
from sqlglot.parsers.druid import DruidParser
from sqlglot.tokenizer_core import TokenType

from ..access import Catalog, check_first_keyword, check_tree
from ..errors import SqlError, invalid_sql, unexpected_token
from ..types import duckdb_to_druid
from .functions import REWRITTEN, Rewriter
from .integers import integer_division, mark_integer_calls
from .multivalue import unnest_mv_groups
from .strict import Source, check_depth, check_tokens
from .strict import check_tree as check_strict_tree
from .timefns import session_zone

__all__ = ["Checked", "Translated", "check_access", "translate"]


_DIV_CALL = "PMSANDBOX_DRUID_DIV"  # a private function name the pipeline rewrites away


def _plain_call(name: str) -> Callable[[list[exp.Expr]], exp.Anonymous]:
    return lambda args: exp.Anonymous(this=name, expressions=args)


_DRUID_TOKENIZER = Druid.tokenizer_class


class _DruidIn(Druid):
    """sqlglot's Druid dialect, with Calcite's TIMESTAMPDIFF/TIMESTAMPADD argument order kept as written."""

    class Tokenizer(_DRUID_TOKENIZER):  # type: ignore[valid-type,misc]
        # Calcite reads ``//`` as a line comment, as ``--`` (Druid 33: ``SELECT 7 // 2`` answers 7).
        COMMENTS = [*Druid.tokenizer_class.COMMENTS, "//"]

    class Parser(DruidParser):  # what Druid.Parser names, as a class mypy can see
        # Every function the table rewrites stays a plain call, so the table (not sqlglot) decides its
        # DuckDB form; this also keeps Calcite's TIMESTAMPDIFF/TIMESTAMPADD argument order as written.
        FUNCTIONS = {
            **DruidParser.FUNCTIONS,
            **{name: _plain_call(name) for name in REWRITTEN},
            _DIV_CALL: _plain_call("DIV"),
        }
        FUNCTION_PARSERS = {k: v for k, v in DruidParser.FUNCTION_PARSERS.items() if k not in REWRITTEN}


@dataclass(frozen=True)
class Translated:
    """A statement ready for DuckDB.

    :param sql: DuckDB SQL with named parameters ``$p1 … $pN``.
    :param param_count: how many ``?`` the statement has.
    :param explain: the statement was ``EXPLAIN PLAN FOR <query>``.
    :param tables: the Druid tables the query reads (for EXPLAIN's RESOURCES).
    :param param_types: Druid SQL type guessed for each parameter (``OTHER`` when unknown).
    :param inlined: the subqueries Druid's broker would inline (materialise) and cap by ``maxSubqueryRows``,
        as ``(kind, DuckDB SQL)``: ``"in"`` for ``IN (subquery)`` (Calcite plans it as a join on the
        subquery's distinct rows), ``"join"`` for a subquery either side of a join, ``"window-input"`` for
        the rows a window reads (every SELECT with a window function), ``"window"`` for a windowed subquery
        in ``FROM`` (its result).
    """

    sql: str
    param_count: int
    explain: bool
    tables: tuple[str, ...]
    param_types: tuple[str, ...]
    inlined: tuple[tuple[str, str], ...] = ()

    def bind(self, values: list[Any]) -> dict[str, object]:
        """The DuckDB parameter mapping for *values* (one per ``?``)."""
        if len(values) != self.param_count:
            raise SqlError(
                f"The statement has {self.param_count} parameter(s) (?) but {len(values)} value(s) "
                "were given."
            )
        return {f"p{i + 1}": v for i, v in enumerate(values)}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXPLAIN = re.compile(r"^EXPLAIN\s+PLAN\s+FOR\s+", re.IGNORECASE)
_C_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_C_LETTERS = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "\\": "\\", "'": "'", '"': '"'}


def _c_unescape(body: str) -> str:
    """The value of Calcite's ``E'…'`` string: C-style escapes (``\\n``, ``\\x41``, ``\\101``, ``\\u0041``,
    ``\\U00000041``); an unknown escape stays as written (Druid 33: ``E'\\q'`` is ``\\q``)."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU" and len(e) > 1:
            return chr(int(e[1:], 16))
        if e[0] in "01234567":
            return chr(int(e, 8))
        return _C_LETTERS.get(e, "\\" + e)

    return _C_ESCAPE.sub(one, body)


def translate(sql: str, catalog: Catalog, *, time_zone: str | None = None) -> Translated:
    """Translate one Druid SQL statement for DuckDB, refusing anything that is not Druid SQL.

    :param time_zone: the query context's ``sqlTimeZone`` (``None``: UTC), the zone of the time functions.

    >>> translate("SELECT COUNT(*) FROM t", Catalog(tables={"t": {"x": "BIGINT"}})).sql
    'SELECT COUNT(*) FROM "druid"."t"'
    """
    try:
        with session_zone(time_zone):
            return _translate(sql, catalog)
    except RecursionError:
        # Long operator chains nest as deeply as parentheses do; check_depth bounds the rest.
        raise invalid_sql(
            "The query is nested too deeply (a very long chain of operators or nested expressions): "
            "simplify it (e.g. use an IN list)."
        ) from None


@dataclass(frozen=True)
class Checked:
    """A statement that passed the access checks (:func:`check_access`), as the forwarding SQL port needs it.

    :param tables: the Druid tables the statement reads (all the caller's own).
    :param meta: each ``INFORMATION_SCHEMA`` table reference as ``(start, end, view, aliased)``: its span in
        the statement's text (end exclusive, a ``druid.`` catalogue prefix included), the view's name in upper
        case, and whether an alias follows it.
    """

    tables: tuple[str, ...]
    meta: tuple[tuple[int, int, str, bool], ...]


def check_access(sql: str, catalog: Catalog) -> Checked:
    """Check *sql* for what a workgroup may touch, as :func:`translate` does, without translating it.

    The same refusals as :func:`translate` up to and including the table rights (statement kind, one
    statement, functions that reach files or the catalogue, tables and lookups of the caller's catalogue,
    ``sys`` refused); Druid's own validation (types, function signatures) is left to the engine that runs
    the text unchanged. The forwarding SQL port (``pm_sandbox.forward``) uses it.
    """
    try:
        with session_zone(None):
            front = _front(sql, catalog, strict=False)
    except RecursionError:
        raise invalid_sql("The query is nested too deeply: simplify it (e.g. use an IN list).") from None
    # LOOKUP(x, 'name') names a lookup by a string: on Druid every lookup is global, so it is checked here
    # (translate refuses it later, in the function table)
    for call in front.tree.find_all(exp.Anonymous):
        if str(call.this).upper() == "LOOKUP":
            args = call.expressions
            name = args[1] if len(args) > 1 else None
            if not isinstance(name, exp.Literal) or not name.is_string:
                raise SqlError("LOOKUP needs (expression, 'lookup name'[, 'replace missing value']).")
            if name.this not in catalog.lookups:
                raise SqlError(
                    f"Lookup [{name.this}] not found (the workgroup's lookups are in schema 'lookup')."
                )
    tokens, base = front.tokens, front.src.offset
    meta: list[tuple[int, int, str, bool]] = []
    for i, tok in enumerate(tokens[:-2]):
        if tok.text.upper() != "INFORMATION_SCHEMA" or tokens[i + 1].token_type != TokenType.DOT:
            continue
        start, name = tok.start, tokens[i + 2]
        if i >= 2 and tokens[i - 1].token_type == TokenType.DOT and tokens[i - 2].text.lower() == "druid":
            start = tokens[i - 2].start
        after = tokens[i + 3] if i + 3 < len(tokens) else None
        if after is not None and after.token_type == TokenType.DOT:
            raise SqlError(
                f"INFORMATION_SCHEMA.{name.text}.<column>: qualify the columns of INFORMATION_SCHEMA views "
                "by the view's name or an alias (FROM INFORMATION_SCHEMA.COLUMNS c ... c.TABLE_NAME).",
                "unsupported",
            )
        aliased = after is not None and after.token_type in (
            TokenType.ALIAS,
            TokenType.VAR,
            TokenType.IDENTIFIER,
        )
        meta.append((base + start, base + name.end + 1, name.text.upper(), aliased))
    return Checked(tables=front.tables, meta=tuple(meta))


@dataclass
class _Front:
    """A statement tokenised, parsed and checked for access (the first half of :func:`_translate`)."""

    tree: exp.Expr
    tokens: list[Any]
    params: list[Any]
    src: Source
    explain: bool
    tables: tuple[str, ...]


def _translate(sql: str, catalog: Catalog) -> Translated:
    front = _front(sql, catalog, strict=True)
    tree, src, tokens = front.tree, front.src, front.tokens

    def locate(name: str) -> tuple[int, int, int, int] | None:
        found = next((t for t in tokens if t.text == name), None)
        return src.pos(found) if found is not None else None

    check_strict_tree(tree, catalog, locate)
    _name_expressions(tree)
    param_types = _param_types(tree, catalog, len(front.params))
    integer_division(tree, catalog)
    mark_integer_calls(tree, catalog)
    unnest_mv_groups(tree, catalog)
    tree = Rewriter(catalog).rewrite(tree)
    _hash_in_lists(tree)
    return Translated(
        sql=tree.sql(dialect="duckdb"),
        param_count=len(front.params),
        explain=front.explain,
        tables=front.tables,
        param_types=param_types,
        inlined=_inlined(tree),
    )


def _front(sql: str, catalog: Catalog, *, strict: bool) -> _Front:
    offset = len(sql) - len(sql.lstrip())
    text = sql.strip()
    explain_match = _EXPLAIN.match(text)
    if explain_match:
        text = text[explain_match.end() :]
        offset += explain_match.end()
    src = Source(sql, offset)
    try:
        tokens = _DruidIn().tokenize(text)
    except TokenError as e:
        raise invalid_sql(f"Lexical error: {_ANSI.sub('', str(e)).splitlines()[0]}") from None
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        text = text[: tokens[-1].start].rstrip()
        tokens = tokens[:-1]
    if not tokens:
        raise SqlError('Empty SQL statement: send one query, e.g. SELECT COUNT(*) FROM "<table>".')
    if any(t.token_type == TokenType.SEMICOLON for t in tokens):
        raise invalid_sql("SQL query string must contain only a single statement", kind="refused")
    if tokens[0].text.upper() == "EXPLAIN":
        raise SqlError("Only EXPLAIN PLAN FOR <query> is supported.", "unsupported")
    check_first_keyword(tokens[0].text)
    check_depth(tokens, src)
    # Number the ? placeholders in text order (see module docstring); refuse named ones.
    params = [t for t in tokens if t.token_type == TokenType.PLACEHOLDER]
    for t in params:
        if t.text != "?":
            raise SqlError(f"Named parameter {t.text} is not supported: use ? placeholders.")
    if strict:
        check_tokens(tokens, src, catalog)
    edits = [(t.start, t.end, f":p{i + 1}") for i, t in enumerate(params)]
    # sqlglot reads DIV as MySQL's infix operator: Druid's DIV(x, y) is renamed for the parser.
    edits += [
        (t.start, t.end, _DIV_CALL)
        for t, nxt in zip(tokens, tokens[1:], strict=False)
        if t.token_type == TokenType.DIV and nxt.token_type == TokenType.L_PAREN
    ]
    # E'…' (a VAR "E" right before a string): its C-style escapes become an ordinary literal of the value.
    edits += [
        (t.start, nxt.end, "'" + _c_unescape(nxt.text).replace("'", "''") + "'")
        for t, nxt in zip(tokens, tokens[1:], strict=False)
        if t.token_type == TokenType.VAR
        and t.text in ("E", "e")
        and nxt.token_type == TokenType.STRING
        and nxt.start == t.end + 1
    ]
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end + 1 :]
    try:
        tree = sqlglot.parse_one(text, read=_DruidIn)
    except ParseError as e:
        raise _parse_error(e, tokens, src) from None
    if tree is None:
        raise SqlError("Empty SQL statement.")
    placeholders = list(tree.find_all(exp.Placeholder))
    if len(placeholders) != len(params) or any(not str(p.this).startswith("p") for p in placeholders):
        raise SqlError("Named parameters are not supported: use ? placeholders.")

    def locate(name: str) -> tuple[int, int, int, int] | None:
        found = next((t for t in tokens if t.text == name), None)
        return src.pos(found) if found is not None else None

    try:
        tables = check_tree(tree, catalog)
    except SqlError as e:
        subject = e.context.pop("subject", None)
        if subject is None:
            raise
        raise invalid_sql(e.message, locate(subject)) from None
    return _Front(tree, tokens, params, src, bool(explain_match), tuple(dict.fromkeys(tables)))


#: the longest ``IN (v1, …)`` list DuckDB gets as written; a longer one is ``IN (SELECT unnest([…]))``
HASH_IN_FROM = 32


def _hash_in_lists(tree: exp.Expr) -> None:
    """``x [NOT] IN (v1, …, vn)`` with more than :data:`HASH_IN_FROM` values, all literals or parameters, as
    ``x [NOT] IN (SELECT unnest([v1, …, vn]))``: DuckDB evaluates a value list as a chain of comparisons (a
    1,206-id ``NOT IN`` list over 1M rows: 2.1 s) and the subquery as a hash (semi/anti) join (0.05 s), with
    the same answer, NULLs included (a NULL value or a NULL ``x`` makes the test NULL either way). Druid
    plans a value list as a plain filter, not as a subquery, so :func:`_inlined` does not count these."""
    for node in list(tree.find_all(exp.In)):
        values = node.expressions
        if len(values) <= HASH_IN_FROM or not all(
            isinstance(v, exp.Literal | exp.Placeholder) for v in values
        ):
            continue
        listed = exp.select(exp.Explode(this=exp.Array(expressions=list(values))))
        node.set("expressions", None)
        node.set("query", exp.Subquery(this=listed))
        node.meta["value_list"] = True


def _inlined(tree: exp.Expr) -> tuple[tuple[str, str], ...]:
    """The subqueries Druid materialises on the broker: ``IN (subquery)``, a join's subqueries (Druid needs
    the right side of a join globally available, and runs any subquery under a join first), the input of
    every window (Druid 33 never windows a table directly: ``DruidQuery.toWindowQuery`` plans a scan, or the
    query's groupBy, under the window operator query, and that toolchest runs no subquery itself, so the
    broker inlines it, top-level query or not) and a windowed subquery in ``FROM`` (Druid's groupBy and scan
    engines run only a groupBy as their subquery, so the broker inlines any other)."""
    found: list[tuple[str, str]] = []
    windowed: set[int] = set()
    for select in tree.find_all(exp.Select):
        window_input = _window_input(select)
        if window_input is not None:
            found.append(("window-input", window_input))
    for sub in tree.find_all(exp.Subquery):
        body = sub.this
        # a subquery that computes window functions itself (a window deeper down is that subquery's own: a
        # GROUP BY over a GROUP BY over a window inlines the window, not the inner GROUP BY)
        own = _window_input(body) if isinstance(body, exp.Select) else None
        if isinstance(sub.parent, exp.From) and own is not None:
            # a window keeps its input's rows: without LIMIT or DISTINCT its result counts as its input
            same = not any(body.args.get(k) for k in ("limit", "distinct"))
            found.append(("window", own if same else body.sql(dialect="duckdb")))
            windowed.add(id(sub))
    for node in tree.find_all(exp.In):
        query = node.args.get("query")
        if query is not None and _semi_join(node):
            body = query.this if isinstance(query, exp.Subquery) else query
            found.append(("in", body.sql(dialect="duckdb")))
    inputs: list[exp.Subquery] = []
    for join in tree.find_all(exp.Join):
        right = join.this
        if isinstance(right, exp.Subquery):
            inputs.append(right)
    # the left-hand input of a join, when it is a subquery, is inlined too (Druid's broker runs every query
    # datasource under a join and replaces it with its rows: query-execution, "join")
    for select in tree.find_all(exp.Select):
        from_ = select.args.get("from_")
        left = from_.this if from_ is not None else None
        if select.args.get("joins") and isinstance(left, exp.Subquery) and id(left) not in windowed:
            inputs.append(left)
    for sub in inputs:
        found.append(("join", sub.this.sql(dialect="duckdb")))
        found.extend(("join", nested.this.sql(dialect="duckdb")) for nested in _joined_within(sub))
    return tuple(found)


def _window_input(select: exp.Select) -> str | None:
    """The rows a SELECT's window functions read (the SELECT with its windows as NULLs, before its ORDER BY,
    LIMIT and DISTINCT), as DuckDB SQL; ``None`` when the SELECT itself computes no window function (one in
    a nested subquery belongs to that subquery)."""
    own = [
        w for e in select.expressions for w in e.find_all(exp.Window) if w.find_ancestor(exp.Select) is select
    ]
    if not own:
        return None
    body = select.copy()
    for w in list(body.find_all(exp.Window)):
        if w.find_ancestor(exp.Select) is body and w.find_ancestor(exp.Subquery) is None:
            w.replace(exp.Null())
    for key in ("order", "limit", "offset", "distinct"):
        body.set(key, None)
    sql: str = body.sql(dialect="duckdb")
    return sql


def _semi_join(node: exp.In) -> bool:
    """Whether *node* is ``IN (subquery)`` as written (Druid plans it as a join), not a long value list that
    :func:`_hash_in_lists` wrote as one for DuckDB (Druid plans a list as a filter)."""
    return node.args.get("query") is not None and not node.meta.get("value_list")


def _joined_within(sub: exp.Subquery) -> list[exp.Subquery]:
    """The ``FROM`` subqueries nested in a join input that themselves join (a join, or an ``IN (subquery)``,
    which Druid plans as one): Druid 33 inlines those too when it inlines the input — measured: a GROUP BY
    over a GROUP BY whose inner query has a ``NOT IN`` counts the inner rows under a ``CROSS JOIN``, and does
    not count them without the ``NOT IN`` or without the join (``tests/druid/test_mining.py``)."""
    out = []
    for nested in sub.this.find_all(exp.Subquery):
        if nested is sub or not isinstance(nested.parent, exp.From):
            continue
        body = nested.this
        joins = any(isinstance(s, exp.Select) and s.args.get("joins") for s in body.find_all(exp.Select))
        semi = any(_semi_join(node) for node in body.find_all(exp.In))
        if joins or semi:
            out.append(nested)
    return out


def _parse_error(e: ParseError, tokens: list[Any], src: Source) -> SqlError:
    """sqlglot's parse error, as Druid's parser words it (the unexpected token and its position)."""
    info = e.errors[0] if e.errors else {}
    line, col = info.get("line"), info.get("col")
    token = _ANSI.sub("", str(info.get("highlight") or "")).strip()
    if line is not None and col is not None:
        for t in tokens:
            if t.line == line and t.col == col:
                token = token or t.text
                line, col = src.pos(t)[:2]
                break
        return unexpected_token(token or "<EOF>", line, col)
    return invalid_sql(_ANSI.sub("", info.get("description", "") or str(e)).split("\n")[0])


def _name_expressions(tree: exp.Expr) -> None:
    """Name unnamed result expressions ``EXPR$<i>`` as Druid (Calcite) does."""
    select = tree
    while isinstance(select, exp.SetOperation | exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        return
    for i, e in enumerate(select.expressions):
        if not isinstance(e, exp.Alias | exp.Column | exp.Star):
            e.replace(exp.alias_(e.copy(), f"EXPR${i}", quoted=True))


def _param_types(tree: exp.Expr, catalog: Catalog, count: int) -> tuple[str, ...]:
    types = ["OTHER"] * count
    columns = {c: t for cols in catalog.tables.values() for c, t in cols.items()}
    for p in tree.find_all(exp.Placeholder):
        idx = int(str(p.this)[1:]) - 1
        parent = p.parent
        if isinstance(parent, exp.Limit | exp.Offset):
            types[idx] = "BIGINT"
        elif isinstance(parent, exp.Binary | exp.In):
            other = parent.this if parent.this is not p else parent.args.get("expression")
            if isinstance(other, exp.Column) and other.name in columns:
                types[idx] = duckdb_to_druid(columns[other.name])
    return tuple(types)
