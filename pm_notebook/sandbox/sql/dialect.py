"""Druid SQL in, DuckDB SQL out: parse with sqlglot, guard, rewrite Druid's functions, generate.

:func:`translate` is pure (no DuckDB): it takes the statement and the caller's :class:`Catalog` and
returns a :class:`Translated` statement, or raises :class:`SqlError` naming what it cannot serve.

``?`` parameters are renamed ``$p1 … $pN`` in text order before parsing, so rewrites that reorder
arguments (``TIMESTAMPADD``) keep each value bound to its own placeholder.

Druid semantics kept: ``__time`` and other TIMESTAMPs in UTC; ``TIME_FLOOR`` buckets counted from the
epoch (weeks from a Monday, months from a month start); ``EXTRACT(DOW ...)`` is ISO (Monday = 1);
``APPROX_*`` aggregates are answered exactly (a sandbox may be more precise than a sketch);
``col = 'x'`` on a multi-value column matches rows where any value is ``'x'``; grouping on a
multi-value column (directly, by alias or by ordinal) unnests it, one group per value, an empty or NULL
array giving one NULL group (:func:`_unnest_mv_groups`); ``a / b`` of two operands known to be integers
(integer literals, integer columns, ``COUNT``, ``SUM``/``MIN``/``MAX`` of integers...) truncates
(:func:`_integer_division`).
Known differences: grouping on an expression over a multi-value column (other than the ``MV_*`` and
``ARRAY_*`` functions, which see the whole array) is refused; ``/`` stays a DOUBLE division when an
operand's type is not known (parameters, columns of subqueries); time zones other than UTC in the
``TIME_*`` functions are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.druid import Druid
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from .access import Catalog, check_first_keyword, check_tree
from .errors import SqlError

__all__ = ["Catalog", "Translated", "translate"]


class _DruidIn(Druid):
    """sqlglot's Druid dialect, with Calcite's TIMESTAMPDIFF/TIMESTAMPADD argument order kept as written."""

    class Parser(Druid.Parser):
        FUNCTIONS = {
            **Druid.Parser.FUNCTIONS,
            "TIMESTAMPDIFF": lambda args: exp.Anonymous(this="TIMESTAMPDIFF", expressions=args),
            "TIMESTAMPADD": lambda args: exp.Anonymous(this="TIMESTAMPADD", expressions=args),
        }


@dataclass(frozen=True)
class Translated:
    """A statement ready for DuckDB.

    :param sql: DuckDB SQL with named parameters ``$p1 … $pN``.
    :param param_count: how many ``?`` the statement has.
    :param explain: the statement was ``EXPLAIN PLAN FOR <query>``.
    :param tables: the Druid tables the query reads (for EXPLAIN's RESOURCES).
    :param param_types: Druid SQL type guessed for each parameter (``OTHER`` when unknown).
    """

    sql: str
    param_count: int
    explain: bool
    tables: tuple[str, ...]
    param_types: tuple[str, ...]

    def bind(self, values: list) -> dict[str, object]:
        """The DuckDB parameter mapping for *values* (one per ``?``)."""
        if len(values) != self.param_count:
            raise SqlError(
                f"The statement has {self.param_count} parameter(s) (?) but {len(values)} value(s) "
                "were given."
            )
        return {f"p{i + 1}": v for i, v in enumerate(values)}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXPLAIN = re.compile(r"^EXPLAIN\s+PLAN\s+FOR\s+", re.IGNORECASE)


def translate(sql: str, catalog: Catalog) -> Translated:
    """Translate one Druid SQL statement for DuckDB, enforcing :mod:`guard`'s rules.

    >>> translate("SELECT COUNT(*) FROM t", Catalog(tables={"t": {"x": "BIGINT"}})).sql
    'SELECT COUNT(*) FROM "druid"."t"'
    """
    text = sql.strip()
    explain_match = _EXPLAIN.match(text)
    if explain_match:
        text = text[explain_match.end() :]
    try:
        tokens = _DruidIn().tokenize(text)
    except TokenError as e:
        raise SqlError(f"SQL could not be read: {_ANSI.sub('', str(e))}") from None
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        text = text[: tokens[-1].start].rstrip()
        tokens = tokens[:-1]
    if not tokens:
        raise SqlError('Empty SQL statement: send one query, e.g. SELECT COUNT(*) FROM "<table>".')
    if any(t.token_type == TokenType.SEMICOLON for t in tokens):
        raise SqlError("Only one statement per request is allowed (found ';' between statements).", "refused")
    if tokens[0].text.upper() == "EXPLAIN":
        raise SqlError("Only EXPLAIN PLAN FOR <query> is supported.", "unsupported")
    check_first_keyword(tokens[0].text)
    # Number the ? placeholders in text order (see module docstring); refuse named ones.
    params = [t for t in tokens if t.token_type == TokenType.PLACEHOLDER]
    for t in params:
        if t.text != "?":
            raise SqlError(f"Named parameter {t.text} is not supported: use ? placeholders.")
    for i in range(len(params) - 1, -1, -1):
        t = params[i]
        text = text[: t.start] + f":p{i + 1}" + text[t.end + 1 :]
    try:
        tree = sqlglot.parse_one(text, read=_DruidIn)
    except ParseError as e:
        errors = e.errors[0] if e.errors else {}
        where = f" (line {errors.get('line')}, column {errors.get('col')})" if errors else ""
        msg = _ANSI.sub("", errors.get("description", "") or str(e)).split("\n")[0]
        raise SqlError(f"SQL parse error{where}: {msg}") from None
    if tree is None:
        raise SqlError("Empty SQL statement.")
    placeholders = list(tree.find_all(exp.Placeholder))
    if len(placeholders) != len(params) or any(not str(p.this).startswith("p") for p in placeholders):
        raise SqlError("Named parameters are not supported: use ? placeholders.")
    tables = check_tree(tree, catalog)
    _name_expressions(tree)
    param_types = _param_types(tree, catalog, len(params))
    _integer_division(tree, catalog)
    _unnest_mv_groups(tree, catalog)
    tree = _Rewriter(catalog).rewrite(tree)
    return Translated(
        sql=tree.sql(dialect="duckdb"),
        param_count=len(params),
        explain=bool(explain_match),
        tables=tuple(dict.fromkeys(tables)),
        param_types=param_types,
    )


def _name_expressions(tree: exp.Expression) -> None:
    """Name unnamed result expressions ``EXPR$<i>`` as Druid (Calcite) does."""
    select = tree
    while isinstance(select, exp.SetOperation | exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        return
    for i, e in enumerate(select.expressions):
        if not isinstance(e, exp.Alias | exp.Column | exp.Star):
            e.replace(exp.alias_(e.copy(), f"EXPR${i}", quoted=True))


def _param_types(tree: exp.Expression, catalog: Catalog, count: int) -> tuple[str, ...]:
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


def duckdb_to_druid(duck: str) -> str:
    """The Druid SQL type name for a DuckDB type name (``VARCHAR[]`` → ``ARRAY<VARCHAR>``)."""
    t = duck.upper().strip()
    if t.endswith("[]"):
        return f"ARRAY<{duckdb_to_druid(t[:-2])}>"
    base = t.split("(")[0].strip()
    if base in ("BOOLEAN", "BOOL"):
        return "BOOLEAN"
    if base in (
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "INT",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "UHUGEINT",
    ):
        return "BIGINT"
    if base in ("FLOAT", "REAL"):
        return "FLOAT"
    if base in ("DOUBLE", "DECIMAL", "NUMERIC"):
        return "DOUBLE"
    if base.startswith("TIMESTAMP"):
        return "TIMESTAMP"
    if base == "DATE":
        return "DATE"
    if base.startswith(("STRUCT", "MAP", "UNION")):
        return "OTHER"
    return "VARCHAR"


# --------------------------------------------------------------------------------------------------
# Integer division and GROUP BY on multi-value columns (tree-level rewrites, before :class:`_Rewriter`)
# --------------------------------------------------------------------------------------------------

_INT_FUNCS = {
    "STRLEN",
    "MV_LENGTH",
    "ARRAY_LENGTH",
    "TIMESTAMPDIFF",
    "TIMESTAMP_TO_MILLIS",
    "TIME_EXTRACT",
    "DIV",
    "PARSE_LONG",
    "CHAR_LENGTH",
    "CHARACTER_LENGTH",
}


def _integer_division(tree: exp.Expression, catalog: Catalog) -> None:
    """Rewrite ``a / b`` to DuckDB's ``a // b`` where both operands are known integers (Druid: BIGINT)."""
    for div in list(tree.find_all(exp.Div)):
        if _is_int(div.this, catalog) and _is_int(div.expression, catalog):
            div.replace(exp.IntDiv(this=div.this, expression=div.expression))


def _is_int(node: exp.Expression | None, catalog: Catalog) -> bool:
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
        return str(node.this).upper() in _INT_FUNCS
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


def _under_array_fn(node: exp.Expression, top: exp.Expression) -> bool:
    """Whether *node* is an argument of an ``MV_*``/``ARRAY_*`` function (which sees the whole array)."""
    p = node.parent
    while p is not None and p is not top.parent:
        if isinstance(p, exp.Anonymous) and str(p.this).upper().startswith(("MV_", "ARRAY_")):
            return True
        if isinstance(p, exp.ArrayToString | exp.ArraySize | exp.ArrayContains | exp.ArrayOverlaps):
            return True
        p = p.parent
    return False


def _unnest_mv_groups(tree: exp.Expression, catalog: Catalog) -> None:
    """Druid's GROUP BY on a multi-value column: one group per value (see module docstring)."""
    mv = {c.lower() for c in catalog.multi_value_columns}
    if not mv:
        return
    for select in list(tree.find_all(exp.Select)):
        distinct = select.args.get("distinct")
        if (
            distinct is not None
            and not distinct.args.get("on")
            and not select.args.get("group")
            and not any(e.find(exp.AggFunc) for e in select.expressions)
            and any(
                isinstance(e.unalias(), exp.Column) and e.unalias().name.lower() in mv
                for e in select.expressions
            )
        ):
            # SELECT DISTINCT is a GROUP BY of every item in Druid: it unnests multi-value columns too.
            select.set("distinct", None)
            select.set(
                "group",
                exp.Group(expressions=[exp.Literal.number(i + 1) for i in range(len(select.expressions))]),
            )
        if select.args.get("group"):
            _unnest_select(select, mv, catalog)


def _unnest_select(select: exp.Select, mv: set[str], catalog: Catalog) -> None:
    group: exp.Group = select.args["group"]
    items = select.expressions
    aliases = {e.alias.lower(): e.this for e in items if isinstance(e, exp.Alias)}
    for kind in ("rollup", "cube", "grouping_sets"):
        for part in group.args.get(kind) or []:
            for col in part.find_all(exp.Column):
                if col.name.lower() in mv:
                    raise SqlError(
                        f"GROUP BY {kind.upper().replace('_', ' ')} on the multi-value column {col.name} is "
                        "not supported by the sandbox.",
                        "unsupported",
                    )

    targets: dict[tuple[str, str], exp.Column] = {}
    for key in group.expressions:
        node = key
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            i = int(node.this) - 1
            node = items[i] if 0 <= i < len(items) else node
        if isinstance(node, exp.Alias):
            node = node.this
        if isinstance(node, exp.Column) and not node.table and node.name.lower() not in mv:
            node = aliases.get(node.name.lower(), node)
        if isinstance(node, exp.Column) and node.name.lower() in mv:
            targets.setdefault((node.table, node.name.lower()), node)
            continue
        for col in node.find_all(exp.Column):
            if col.name.lower() in mv and not _under_array_fn(col, node):
                raise SqlError(
                    f"GROUP BY {node.sql(dialect=_DruidIn)}: grouping on an expression of the multi-value "
                    f"column {col.name} is not supported by the sandbox (group by the column itself, or "
                    "use MV_TO_STRING to group by the whole value).",
                    "unsupported",
                )
    if not targets:
        return

    from_ = select.args.get("from_")
    sources = ([from_.this] if from_ else []) + [j.this for j in select.args.get("joins") or []]
    for n, ((qualifier, name), col) in enumerate(targets.items()):
        if qualifier:
            found = [s for s in sources if s.alias_or_name == qualifier]
        elif len(sources) == 1:
            found = sources
        else:
            found = [
                s
                for s in sources
                if isinstance(s, exp.Table) and name in {c.lower() for c in catalog.tables.get(s.name, {})}
            ]
        if len(found) != 1 or not isinstance(found[0], exp.Table | exp.Subquery):
            raise SqlError(
                f"GROUP BY on the multi-value column {col.name}: the sandbox cannot tell which table of the "
                "FROM clause it comes from (qualify it with its table's alias).",
                "unsupported",
            )
        src = found[0]
        alias = src.args.get("alias")
        if alias is not None and alias.args.get("columns"):
            raise SqlError(
                f"GROUP BY on the multi-value column {col.name} of a source with column aliases is not "
                "supported by the sandbox.",
                "unsupported",
            )
        hidden = f"__mv{n}_{col.name}"
        inner = src.copy()
        inner.set("alias", None)
        values = _tmpl(
            "unnest(CASE WHEN len(__A__) > 0 THEN __A__ ELSE [NULL] END)", A=exp.column(col.name, quoted=True)
        )
        sub = exp.select(exp.Star(), exp.alias_(values, hidden, quoted=True)).from_(inner)
        name_out = src.alias_or_name
        wrapped = exp.Subquery(
            this=sub,
            alias=exp.TableAlias(this=exp.to_identifier(name_out, quoted=True)) if name_out else None,
        )
        src.replace(wrapped)
        sources[sources.index(src)] = wrapped
        _point_at(select, col, hidden)


def _point_at(select: exp.Select, col: exp.Column, hidden: str) -> None:
    """Make the select list, GROUP BY, HAVING and ORDER BY refer to the unnested *hidden* column."""
    name, qualifier = col.name.lower(), col.table

    def same(node: exp.Expression) -> bool:
        return (
            isinstance(node, exp.Column)
            and node.name.lower() == name
            and (node.table == qualifier or not node.table or not qualifier)
        )

    def ref() -> exp.Column:
        return exp.column(hidden, table=qualifier or None, quoted=True)

    def swap_refs(top: exp.Expression) -> exp.Expression:
        if same(top):
            return ref()
        for c in list(top.find_all(exp.Column)):
            if same(c) and not c.find_ancestor(exp.AggFunc) and not _under_array_fn(c, top):
                c.replace(ref())
        return top

    for e in list(select.expressions):
        if same(e):
            e.replace(exp.alias_(ref(), e.name, quoted=True))
        elif isinstance(e, exp.Alias):
            e.set("this", swap_refs(e.this))
    group = select.args["group"]
    group.set("expressions", [swap_refs(k) for k in group.expressions])
    for key in ("having", "order"):
        part = select.args.get(key)
        if part is not None:
            swap_refs(part)


# --------------------------------------------------------------------------------------------------
# Rewrites
# --------------------------------------------------------------------------------------------------

_PERIOD = re.compile(
    r"^P(?:(?P<Y>\d+)Y)?(?:(?P<M>\d+)M)?(?:(?P<W>\d+)W)?(?:(?P<D>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
_UNITS = {"SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR", "MILLISECOND", "MICROSECOND"}
_EXTRACT = {
    "EPOCH": "CAST(epoch(__A__) AS BIGINT)",
    "MILLISECOND": "CAST(epoch_ms(__A__) % 1000 AS BIGINT)",
    "SECOND": "second(__A__)",
    "MINUTE": "minute(__A__)",
    "HOUR": "hour(__A__)",
    "DAY": "day(__A__)",
    "DOW": "isodow(__A__)",
    "ISODOW": "isodow(__A__)",
    "DOY": "dayofyear(__A__)",
    "WEEK": "week(__A__)",
    "MONTH": "month(__A__)",
    "QUARTER": "quarter(__A__)",
    "YEAR": "year(__A__)",
    "ISOYEAR": "isoyear(__A__)",
    "DECADE": "decade(__A__)",
    "CENTURY": "century(__A__)",
    "MILLENNIUM": "millennium(__A__)",
}
_UNSUPPORTED = {
    "DS_HLL",
    "DS_THETA",
    "DS_QUANTILES_SKETCH",
    "DS_TUPLE_DOUBLES",
    "HLL_SKETCH_ESTIMATE",
    "THETA_SKETCH_ESTIMATE",
    "DS_GET_QUANTILE",
    "DS_GET_QUANTILES",
    "DS_RANK",
    "DS_CDF",
    "BLOOM_FILTER",
    "BLOOM_FILTER_TEST",
    "TDIGEST_SKETCH",
    "TDIGEST_QUANTILE",
    "COMPLEX_DECODE_BASE64",
    "DECODE_BASE64_COMPLEX",
    "HLL_SKETCH_UNION",
    "THETA_SKETCH_UNION",
    "THETA_SKETCH_INTERSECT",
    "THETA_SKETCH_NOT",
    "IPV4_MATCH",
    "IPV4_PARSE",
    "IPV4_STRINGIFY",
    "SPATIAL_BOUND",
    "MV_FILTER_ONLY",
    "MV_FILTER_NONE",
    "TIME_IN_INTERVAL",
    "JSON_QUERY",
    "JSON_VALUE",
    "JSON_PATHS",
    "JSON_KEYS",
    "PARSE_JSON",
    "TO_JSON_STRING",
    "DS_QUANTILE_SUMMARY",
    "APPROX_QUANTILE_FIXED_BUCKETS",
}
_JODA = [
    ("yyyy", "%Y"),
    ("YYYY", "%Y"),
    ("yy", "%y"),
    ("MMMM", "%B"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("M", "%-m"),
    ("dd", "%d"),
    ("d", "%-d"),
    ("HH", "%H"),
    ("H", "%-H"),
    ("hh", "%I"),
    ("h", "%-I"),
    ("mm", "%M"),
    ("m", "%-M"),
    ("ss", "%S"),
    ("s", "%-S"),
    ("SSS", "%g"),
    ("EEEE", "%A"),
    ("EEE", "%a"),
    ("a", "%p"),
    ("ZZ", "+00:00"),
    ("Z", "+0000"),
    ("DDD", "%j"),
    ("ww", "%V"),
    ("xxxx", "%G"),
]
_ISO_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
# The store keeps low-cardinality strings as ENUMs (see store.py); to clients they are VARCHARs, so in a
# type name from typeof()/pg_typeof() every ENUM('a', 'it''s', ...) is replaced by VARCHAR.
_PLAIN_TYPE_NAME = r"regexp_replace({fn}(__A__), '{enum}\((''([^'']|'''')*''(, )?)*\)', '{varchar}', 'g')"


def _tmpl(template: str, **args: exp.Expression) -> exp.Expression:
    """Parse a DuckDB template and substitute the columns ``__A__``, ``__B__``... with *args*."""
    tree = sqlglot.parse_one(template, read="duckdb")

    def sub(node: exp.Expression) -> exp.Expression:
        if (
            isinstance(node, exp.Column)
            and not node.table
            and node.name.startswith("__")
            and node.name.endswith("__")
        ):
            key = node.name.strip("_")
            if key in args:
                return args[key].copy()
        return node

    return tree.transform(sub)


def _literal_str(node: exp.Expression | None, what: str, fn: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise SqlError(
        f"{fn}: {what} must be a string literal (got {node.sql() if node else 'nothing'}).", "unsupported"
    )


def _interval(period: str, fn: str) -> tuple[str, bool]:
    """DuckDB interval text for an ISO-8601 period, and whether it counts months/years."""
    m = _PERIOD.match(period.upper())
    if not m or not any(m.groupdict().values()):
        raise SqlError(f"{fn}: '{period}' is not an ISO-8601 period (e.g. PT1H, P1D, P1W, P1M, P3M, P1Y).")
    g = {k: v for k, v in m.groupdict().items() if v}
    parts = []
    names = {"Y": "year", "M": "month", "W": "week", "D": "day", "h": "hour", "m": "minute", "s": "second"}
    for key in ("Y", "M", "W", "D", "h", "m", "s"):
        if key in g:
            parts.append(f"{g[key]} {names[key]}")
    return " ".join(parts), ("Y" in g or "M" in g)


def _check_tz(node: exp.Expression | None, fn: str) -> None:
    if node is None or isinstance(node, exp.Null):
        return
    tz = _literal_str(node, "the time zone", fn)
    if tz.upper() not in ("UTC", "ETC/UTC", "Z", "+00:00", "GMT"):
        raise SqlError(f"{fn}: time zone '{tz}' is not supported by the sandbox (only UTC).", "unsupported")


def joda_to_strftime(pattern: str) -> str:
    """Convert a Joda-Time pattern (Druid's TIME_FORMAT/TIME_PARSE) to a strftime format."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            j = pattern.find("'", i + 1)
            if j == -1:
                raise SqlError(f"Unterminated quote in time format '{pattern}'.")
            out.append(pattern[i + 1 : j].replace("%", "%%") or "'")
            i = j + 1
            continue
        for joda, strf in _JODA:
            if pattern.startswith(joda, i):
                out.append(strf)
                i += len(joda)
                break
        else:
            if ch.isalpha():
                raise SqlError(
                    f"Time format letter '{ch}' in '{pattern}' is not supported by the sandbox.",
                    "unsupported",
                )
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)


def _unit(node: exp.Expression | None, fn: str) -> str:
    name = (
        (
            node.name
            if isinstance(node, exp.Column | exp.Var | exp.Identifier)
            else node.this
            if isinstance(node, exp.Literal)
            else ""
        )
        .upper()
        .removeprefix("SQL_TSI_")
    )
    if name == "FRAC_SECOND":
        name = "MICROSECOND"
    if name not in _UNITS:
        raise SqlError(
            f"{fn}: unknown time unit {node.sql() if node else ''!r} (use SECOND, MINUTE, HOUR, DAY, WEEK, "
            "MONTH, QUARTER or YEAR)."
        )
    return name


class _Rewriter:
    """Bottom-up rewrite of Druid constructs into DuckDB ones."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.mv = {c.lower() for c in catalog.multi_value_columns}
        self.handlers: dict[str, Callable[[exp.Anonymous, list[exp.Expression]], exp.Expression]] = {
            "TIME_FLOOR": self._time_floor,
            "TIME_CEIL": self._time_ceil,
            "TIME_SHIFT": self._time_shift,
            "TIME_EXTRACT": self._time_extract,
            "TIME_FORMAT": self._time_format,
            "TIME_PARSE": self._time_parse,
            "MILLIS_TO_TIMESTAMP": lambda n, a: _tmpl("epoch_ms(CAST(__A__ AS BIGINT))", A=a[0]),
            "TIMESTAMP_TO_MILLIS": lambda n, a: _tmpl("epoch_ms(__A__)", A=a[0]),
            "TIMESTAMPDIFF": self._timestampdiff,
            "TIMESTAMPADD": self._timestampadd,
            "EARLIEST": lambda n, a: _tmpl("arg_min(__A__, __time)", A=a[0]),
            "LATEST": lambda n, a: _tmpl("arg_max(__A__, __time)", A=a[0]),
            "EARLIEST_BY": lambda n, a: _tmpl("arg_min(__A__, __B__)", A=a[0], B=a[1]),
            "LATEST_BY": lambda n, a: _tmpl("arg_max(__A__, __B__)", A=a[0], B=a[1]),
            "APPROX_COUNT_DISTINCT_DS_HLL": self._count_distinct,
            "APPROX_COUNT_DISTINCT_DS_THETA": self._count_distinct,
            "APPROX_COUNT_DISTINCT_BUILTIN": self._count_distinct,
            "APPROX_COUNT_DISTINCT": self._count_distinct,
            "APPROX_QUANTILE": self._quantile,
            "APPROX_QUANTILE_DS": self._quantile,
            "LOOKUP": self._lookup,
            "MV_CONTAINS": self._contains,
            "ARRAY_CONTAINS": self._contains,
            "MV_OVERLAP": lambda n, a: _tmpl("list_has_any(__A__, __B__)", A=a[0], B=a[1]),
            "ARRAY_OVERLAP": lambda n, a: _tmpl("list_has_any(__A__, __B__)", A=a[0], B=a[1]),
            "MV_LENGTH": lambda n, a: _tmpl("CAST(len(__A__) AS BIGINT)", A=a[0]),
            "ARRAY_LENGTH": lambda n, a: _tmpl("CAST(len(__A__) AS BIGINT)", A=a[0]),
            "MV_OFFSET": lambda n, a: _tmpl("__A__[__B__ + 1]", A=a[0], B=a[1]),
            "ARRAY_OFFSET": lambda n, a: _tmpl("__A__[__B__ + 1]", A=a[0], B=a[1]),
            "MV_ORDINAL": lambda n, a: _tmpl("__A__[__B__]", A=a[0], B=a[1]),
            "ARRAY_ORDINAL": lambda n, a: _tmpl("__A__[__B__]", A=a[0], B=a[1]),
            "MV_TO_STRING": lambda n, a: _tmpl("array_to_string(__A__, __B__)", A=a[0], B=a[1]),
            "ARRAY_TO_STRING": lambda n, a: _tmpl("array_to_string(__A__, __B__)", A=a[0], B=a[1]),
            "STRING_TO_MV": lambda n, a: _tmpl("string_split(__A__, __B__)", A=a[0], B=a[1]),
            "STRING_TO_ARRAY": lambda n, a: _tmpl("string_split(__A__, __B__)", A=a[0], B=a[1]),
            "MV_TO_ARRAY": lambda n, a: a[0],
            "ARRAY_TO_MV": lambda n, a: a[0],
            "MV_SLICE": lambda n, a: _tmpl("list_slice(__A__, __B__ + 1, __C__)", A=a[0], B=a[1], C=a[2]),
            "CONTAINS_STRING": lambda n, a: _tmpl("contains(__A__, __B__)", A=a[0], B=a[1]),
            "ICONTAINS_STRING": lambda n, a: _tmpl("contains(lower(__A__), lower(__B__))", A=a[0], B=a[1]),
            "STRLEN": lambda n, a: _tmpl("CAST(length(__A__) AS BIGINT)", A=a[0]),
            "TEXTCAT": lambda n, a: _tmpl("concat(__A__, __B__)", A=a[0], B=a[1]),
            "PARSE_LONG": lambda n, a: _tmpl("TRY_CAST(__A__ AS BIGINT)", A=a[0]),
            "SAFE_DIVIDE": lambda n, a: _tmpl(
                "CASE WHEN __B__ = 0 THEN NULL ELSE __A__ / __B__ END", A=a[0], B=a[1]
            ),
            "DIV": lambda n, a: _tmpl("CAST(__A__ // __B__ AS BIGINT)", A=a[0], B=a[1]),
            "NVL": lambda n, a: exp.Coalesce(this=a[0], expressions=a[1:]),
            "REGEXP_LIKE": lambda n, a: _tmpl("regexp_matches(__A__, __B__)", A=a[0], B=a[1]),
            "STRING_FORMAT": lambda n, a: exp.Anonymous(this="printf", expressions=a),
            "PG_TYPEOF": lambda n, a: _tmpl(
                _PLAIN_TYPE_NAME.format(fn="pg_typeof", enum="enum", varchar="varchar"), A=a[0]
            ),
        }

    def rewrite(self, tree: exp.Expression) -> exp.Expression:
        # Children before parents (reversed pre-order), so nested Druid calls are rewritten too.
        for node in reversed(list(tree.walk())):
            new = self._node(node)
            if new is not node:
                if node is tree:
                    tree = new
                else:
                    node.replace(new)
        return tree

    def _node(self, node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous):
            name = str(node.this).upper()
            if name in _UNSUPPORTED:
                raise SqlError(
                    f"Function {name} is not supported by the sandbox's SQL engine.", "unsupported"
                )
            handler = self.handlers.get(name)
            if handler:
                return handler(node, list(node.expressions))
            return node
        if isinstance(node, exp.Typeof):
            return _tmpl(_PLAIN_TYPE_NAME.format(fn="typeof", enum="ENUM", varchar="VARCHAR"), A=node.this)
        if isinstance(node, exp.ApproxDistinct):
            return exp.Count(this=exp.Distinct(expressions=[node.this]))
        if isinstance(node, exp.ApproxQuantile):
            return _tmpl("CAST(quantile_disc(__A__, __B__) AS DOUBLE)", A=node.this, B=node.args["quantile"])
        if isinstance(node, exp.Floor | exp.Ceil) and node.args.get("to") is not None:
            unit = _unit(node.args["to"], "FLOOR/CEIL ... TO")
            if isinstance(node, exp.Floor):
                return _tmpl(f"date_trunc('{unit.lower()}', __A__)", A=node.this)
            return _tmpl(
                f"CASE WHEN date_trunc('{unit.lower()}', __A__) = __A__ THEN CAST(__A__ AS TIMESTAMP) "
                f"ELSE date_trunc('{unit.lower()}', __A__) + INTERVAL 1 {unit} END",
                A=node.this,
            )
        if isinstance(node, exp.Extract):
            unit = (node.this.name if isinstance(node.this, exp.Var | exp.Column) else str(node.this)).upper()
            if unit in _EXTRACT:
                return _tmpl(_EXTRACT[unit], A=node.expression)
            return node
        if isinstance(node, exp.EQ | exp.NEQ):
            return self._mv_compare(node)
        if isinstance(node, exp.In) and self._is_mv(node.this) and node.args.get("expressions"):
            return _tmpl("list_has_any(__A__, __B__)", A=node.this, B=exp.Array(expressions=node.expressions))
        if isinstance(node, exp.ArrayContains):
            return self._contains(node, [node.this, node.expression])
        if isinstance(node, exp.Mul | exp.Add | exp.Sub):
            # Druid integer literals are BIGINT: 30 * 86400000 must not overflow DuckDB's INTEGER.
            for key in ("this", "expression"):
                arg = node.args.get(key)
                if isinstance(arg, exp.Literal) and not arg.is_string and arg.this.lstrip("-").isdigit():
                    node.set(key, exp.cast(arg, "BIGINT"))
        return node

    # --- helpers ---------------------------------------------------------------------------------
    def _is_mv(self, node: exp.Expression | None) -> bool:
        return isinstance(node, exp.Column) and node.name.lower() in self.mv

    def _mv_compare(self, node: exp.Binary) -> exp.Expression:
        left, right = node.this, node.expression
        if self._is_mv(left) and not self._is_mv(right):
            col, val = left, right
        elif self._is_mv(right) and not self._is_mv(left):
            col, val = right, left
        else:
            return node
        if isinstance(val, exp.Array) or (
            isinstance(val, exp.Anonymous)
            and str(val.this).upper() in ("ARRAY", "STRING_TO_MV", "MV_TO_ARRAY")
        ):
            return node  # array against array: left to DuckDB's whole-list comparison
        found = _tmpl("list_contains(__A__, __B__)", A=col, B=val)
        return found if isinstance(node, exp.EQ) else exp.Not(this=found)

    def _contains(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        if isinstance(a[1], exp.Array):
            return _tmpl("list_has_all(__A__, __B__)", A=a[0], B=a[1])
        return _tmpl("list_contains(__A__, __B__)", A=a[0], B=a[1])

    def _count_distinct(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        return exp.Count(this=exp.Distinct(expressions=[a[0]]))

    def _quantile(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        if len(a) < 2:
            raise SqlError(f"{str(node.this).upper()} needs (expr, probability).")
        return _tmpl("CAST(quantile_disc(__A__, __B__) AS DOUBLE)", A=a[0], B=a[1])

    def _time_floor(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        if len(a) < 2:
            raise SqlError("TIME_FLOOR needs (timestamp, period[, origin[, timezone]]).")
        iv, monthly = _interval(_literal_str(a[1], "the period", "TIME_FLOOR"), "TIME_FLOOR")
        _check_tz(a[3] if len(a) > 3 else None, "TIME_FLOOR")
        if len(a) > 2 and not isinstance(a[2], exp.Null):
            return _tmpl(
                f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP), CAST(__B__ AS TIMESTAMP))",
                A=a[0],
                B=a[2],
            )
        if monthly or "week" in iv:
            return _tmpl(f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP))", A=a[0])
        return _tmpl(
            f"time_bucket(INTERVAL '{iv}', CAST(__A__ AS TIMESTAMP), TIMESTAMP '1970-01-01')", A=a[0]
        )

    def _time_ceil(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        floor = self._time_floor(node, a)
        iv, _ = _interval(_literal_str(a[1], "the period", "TIME_CEIL"), "TIME_CEIL")
        return _tmpl(f"CASE WHEN __F__ = __A__ THEN __F__ ELSE __F__ + INTERVAL '{iv}' END", F=floor, A=a[0])

    def _time_shift(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        if len(a) < 3:
            raise SqlError("TIME_SHIFT needs (timestamp, period, step[, timezone]).")
        iv, _ = _interval(_literal_str(a[1], "the period", "TIME_SHIFT"), "TIME_SHIFT")
        _check_tz(a[3] if len(a) > 3 else None, "TIME_SHIFT")
        return _tmpl(f"CAST(__A__ AS TIMESTAMP) + INTERVAL '{iv}' * CAST(__B__ AS BIGINT)", A=a[0], B=a[2])

    def _time_extract(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        unit = _literal_str(a[1], "the unit", "TIME_EXTRACT").upper() if len(a) > 1 else "MILLISECOND"
        _check_tz(a[2] if len(a) > 2 else None, "TIME_EXTRACT")
        if unit not in _EXTRACT:
            raise SqlError(f"TIME_EXTRACT: unknown unit '{unit}' (use one of {', '.join(sorted(_EXTRACT))}).")
        return _tmpl(_EXTRACT[unit], A=a[0])

    def _time_format(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        pattern = _ISO_FORMAT
        if len(a) > 1 and not isinstance(a[1], exp.Null):
            pattern = _literal_str(a[1], "the pattern", "TIME_FORMAT")
        _check_tz(a[2] if len(a) > 2 else None, "TIME_FORMAT")
        fmt = joda_to_strftime(pattern).replace("'", "''")
        return _tmpl(f"strftime(CAST(__A__ AS TIMESTAMP), '{fmt}')", A=a[0])

    def _time_parse(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        _check_tz(a[2] if len(a) > 2 else None, "TIME_PARSE")
        if len(a) > 1 and not isinstance(a[1], exp.Null):
            fmt = joda_to_strftime(_literal_str(a[1], "the pattern", "TIME_PARSE")).replace("'", "''")
            return _tmpl(f"CAST(try_strptime(__A__, '{fmt}') AS TIMESTAMP)", A=a[0])
        return _tmpl("TRY_CAST(replace(replace(__A__, 'T', ' '), 'Z', '') AS TIMESTAMP)", A=a[0])

    def _timestampdiff(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        if len(a) != 3:
            raise SqlError("TIMESTAMPDIFF needs (unit, timestamp1, timestamp2).")
        unit = _unit(a[0], "TIMESTAMPDIFF").lower()
        return _tmpl(
            f"CAST(date_sub('{unit}', CAST(__A__ AS TIMESTAMP), CAST(__B__ AS TIMESTAMP)) AS BIGINT)",
            A=a[1],
            B=a[2],
        )

    def _timestampadd(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        if len(a) != 3:
            raise SqlError("TIMESTAMPADD needs (unit, count, timestamp).")
        unit = _unit(a[0], "TIMESTAMPADD")
        if unit == "QUARTER":
            return _tmpl(
                "CAST(__B__ AS TIMESTAMP) + INTERVAL 3 MONTH * CAST(__A__ AS BIGINT)", A=a[1], B=a[2]
            )
        return _tmpl(f"CAST(__B__ AS TIMESTAMP) + INTERVAL 1 {unit} * CAST(__A__ AS BIGINT)", A=a[1], B=a[2])

    def _lookup(self, node: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
        if len(a) < 2:
            raise SqlError("LOOKUP needs (expression, 'lookup name'[, 'replace missing value']).")
        name = _literal_str(a[1], "the lookup name", "LOOKUP")
        if name not in self.catalog.lookups:
            raise SqlError(f"Lookup '{name}' not found (the workgroup's lookups are in schema 'lookup').")
        quoted = name.replace('"', '""')
        found = _tmpl(
            f'(SELECT _l.v FROM "lookup"."{quoted}" AS _l WHERE _l.k = CAST(__A__ AS VARCHAR) LIMIT 1)',
            A=a[0],
        )
        if len(a) > 2:
            return exp.Coalesce(this=found, expressions=[a[2]])
        return found
