"""Druid's SQL functions, as one table, and the rewriter that applies it.

:data:`FUNCTIONS` is the sandbox's whole function vocabulary: every name in it comes from Apache Druid's
SQL reference (the page is in each entry, relative to ``https://druid.apache.org/docs/29.0.1/querying/``);
a call to any other name is refused before DuckDB sees the query (see :mod:`.strict`). Each entry says
how the call becomes DuckDB SQL:

* ``SAME`` — DuckDB has the function under the same name and meaning (sqlglot generates it);
* a template string — a one-line DuckDB expression over ``__A__``, ``__B__``, ``__C__`` (the arguments,
  each spliced in as one operand by :func:`.templates.tmpl`: ``MOD(7 + 5, 10)`` is ``(7 + 5) % 10``);
* a handler — ``(call, args) -> expression`` for calls whose translation depends on their arguments;
* ``UNSUPPORTED`` — real Druid SQL the sandbox cannot serve (refused with an ``UNSUPPORTED`` error).

Approximate aggregations (``APPROX_*``, ``DS_*`` sketches) are answered exactly: a sketch is the list of its
values, and the sketch functions read that list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from ..access import Catalog
from ..errors import SqlError
from ..types import duckdb_to_druid
from . import timefns
from .integers import INTEGER_ARGS
from .multivalue import MultiValue
from .templates import literal_str, operand, tmpl

__all__ = ["FUNCTIONS", "SAME", "UNSUPPORTED", "DruidFunction", "Rewriter"]

Handler = Callable[[exp.Expr, list[exp.Expr]], exp.Expr]
SAME = "same"
UNSUPPORTED = "unsupported"

_N = "sql-scalar#numeric-functions"
_S = "sql-scalar#string-functions"
_T = "sql-scalar#date-and-time-functions"
_R = "sql-scalar#reduction-functions"
_IP = "sql-scalar#ip-address-functions"
_SK = "sql-scalar#sketch-functions"
_O = "sql-scalar#other-scalar-functions"
_AR = "sql-array-functions"
_MV = "sql-multivalue-string-functions"
_J = "sql-json-functions"
_AG = "sql-aggregations"
_W = "sql-window-functions"


@dataclass(frozen=True)
class DruidFunction:
    """One Druid SQL function: its name, kind (``scalar``, ``aggregate``, ``window``), doc page, rewrite."""

    name: str
    kind: str
    doc: str
    rewrite: str | Handler


def _count_distinct(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    return exp.Count(this=exp.Distinct(expressions=[a[0]]))


def _quantile(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    if len(a) < 2:
        raise SqlError(f"{str(node.this).upper()} needs (expr, probability).")
    return tmpl("CAST(quantile_disc(__A__, __B__) AS DOUBLE)", A=a[0], B=a[1])


def _contains(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    if isinstance(a[1], exp.Array):
        return tmpl("list_has_all(__A__, __B__)", A=a[0], B=a[1])
    return tmpl("list_contains(__A__, __B__)", A=a[0], B=a[1])


def _truncate(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``TRUNCATE(x[, digits])`` as Druid computes it: ``x * 10^digits`` in DOUBLE, cut to a long, divided
    by ``10^digits``; of an integer the answer is an integer (Druid's type is the argument's, ARG0, and
    the DOUBLE is cut to a long again on the way out)."""
    if len(a) == 1:
        return tmpl("trunc(__A__)", A=a[0])
    cut = tmpl("trunc(__A__ * pow(10, __B__)) / pow(10, __B__)", A=a[0], B=a[1])
    return tmpl("CAST(trunc(__A__) AS BIGINT)", A=cut) if node.meta.get(INTEGER_ARGS) else cut


def _div(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``DIV(x, y)``: the quotient truncated toward zero, a BIGINT (Druid's ``x / y`` on longs, else
    ``(long) (x / y)``); by an integer zero the query fails, as Druid's ArithmeticException does."""
    _arity("DIV", a, 2)
    if node.meta.get(INTEGER_ARGS):
        return tmpl("CAST(__A__ // __B__ AS BIGINT)", A=a[0], B=a[1])
    return tmpl("CAST(trunc(__A__ / __B__) AS BIGINT)", A=a[0], B=a[1])


def _safe_divide(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``SAFE_DIVIDE(x, y)`` as Druid's ``safe_divide``: of integers the truncated quotient, NULL when
    ``y`` is 0 (x evaluated all the same, as Druid does); otherwise the DOUBLE quotient, and when ``y`` is 0
    (or NaN) 0.0 if ``x`` is 0, else NULL."""
    _arity("SAFE_DIVIDE", a, 2)
    if node.meta.get(INTEGER_ARGS):
        # Druid evaluates x before it looks at y: MOD(0, 0) inside still fails ("/ by zero"). DuckDB folds
        # ``x // NULL`` to NULL without evaluating x, so x is asked for once in the condition.
        return tmpl("CASE WHEN __A__ IS NULL THEN NULL ELSE __A__ // NULLIF(__B__, 0) END", A=a[0], B=a[1])
    return tmpl(
        "CASE WHEN __B__ = 0 OR isnan(CAST(__B__ AS DOUBLE)) THEN CASE WHEN __A__ = 0 THEN 0.0 END "
        "ELSE CAST(__A__ AS DOUBLE) / CAST(__B__ AS DOUBLE) END",
        A=a[0],
        B=a[1],
    )


def _arity(name: str, a: list[exp.Expr], n: int) -> None:
    if len(a) != n:
        raise SqlError(f"Invalid number of arguments to function '{name}'. Was expecting {n} arguments")


def _pad(fn: str) -> Handler:
    def pad(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
        fill = a[2] if len(a) > 2 else exp.Literal.string(" ")
        return tmpl(f"{fn}(CAST(__A__ AS VARCHAR), CAST(__B__ AS INTEGER), __C__)", A=a[0], B=a[1], C=fill)

    return pad


def _regexp_extract(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    # Druid answers NULL when the pattern does not match; DuckDB an empty string.
    index = a[2] if len(a) > 2 else exp.Literal.number(0)
    return tmpl("NULLIF(regexp_extract(__A__, __B__, __C__), '')", A=a[0], B=a[1], C=index)


def _parse_long(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    if len(a) > 1 and not (isinstance(a[1], exp.Literal) and a[1].this == "10"):
        raise SqlError("PARSE_LONG: the sandbox reads base 10 only.", "unsupported")
    return tmpl("TRY_CAST(__A__ AS BIGINT)", A=a[0])


def _any_args(fn: str) -> Handler:
    """A DuckDB list function over all the arguments (``HLL_SKETCH_UNION(a, b, c)``)."""

    def union(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
        return tmpl(f"{fn}(flatten(__A__))", A=exp.Array(expressions=a))

    return union


def _quantiles(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    items = [
        tmpl("CAST(list_aggregate(__A__, 'quantile_disc', __B__) AS DOUBLE)", A=a[0], B=q) for q in a[1:]
    ]
    return exp.Array(expressions=items)


def _time_in_interval(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    text = literal_str(a[1] if len(a) > 1 else None, "the interval", "TIME_IN_INTERVAL")
    start, sep, end = text.partition("/")
    if not sep:
        raise SqlError(f"TIME_IN_INTERVAL: '{text}' is not an ISO-8601 interval like 2024-01-01/2024-02-01.")
    bounds = [exp.Literal.string(s.replace("T", " ").rstrip("Z")) for s in (start, end)]
    return tmpl(
        "(__A__ >= CAST(__B__ AS TIMESTAMP) AND __A__ < CAST(__C__ AS TIMESTAMP))",
        A=a[0],
        B=bounds[0],
        C=bounds[1],
    )


def _string_agg(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    if len(a) < 2:
        raise SqlError("STRING_AGG needs (expr, separator[, maxSizeBytes]).")
    return tmpl("string_agg(__A__, __B__)", A=a[0], B=a[1])


# Java's long << (Druid's): the distance taken modulo 64, the product wrapped to 64 bits, negative numbers
# too (DuckDB's << refuses a negative number and an overflow); computed in HUGEINT, then wrapped
_SHIFT_LEFT = (
    "CAST((CAST(trunc(__A__) AS HUGEINT) * (CAST(1 AS HUGEINT) << (CAST(trunc(__B__) AS BIGINT) & 63)) "
    "% 18446744073709551616 + 27670116110564327424) % 18446744073709551616 - 9223372036854775808 AS BIGINT)"
)
# IPV4_PARSE: four decimal octets, each at most 255, else NULL (Druid's "returns null if addr is not a
# valid IPv4 address"); IPV4_STRINGIFY: NULL outside 0 .. 2^32 - 1
_OCTET = "(0|[1-9][0-9]{0,2})"
_IPV4_PARSE = (
    f"CASE WHEN regexp_full_match(__A__, '{_OCTET}\\.{_OCTET}\\.{_OCTET}\\.{_OCTET}') "
    "AND list_max(list_transform(string_split(__A__, '.'), o -> CAST(o AS BIGINT))) <= 255 THEN "
    "CAST(split_part(__A__, '.', 1) AS BIGINT) * 16777216 + CAST(split_part(__A__, '.', 2) AS BIGINT) "
    "* 65536 + CAST(split_part(__A__, '.', 3) AS BIGINT) * 256 "
    "+ CAST(split_part(__A__, '.', 4) AS BIGINT) END"
)
_IPV4_STRINGIFY = (
    "CASE WHEN __A__ BETWEEN 0 AND 4294967295 THEN "
    "concat(CAST(__A__ // 16777216 % 256 AS VARCHAR), '.', CAST(__A__ // 65536 % 256 AS VARCHAR), '.', "
    "CAST(__A__ // 256 % 256 AS VARCHAR), '.', CAST(__A__ % 256 AS VARCHAR)) END"
)
_LIST_LEN = "CAST(len(__A__) AS BIGINT)"
_OFFSET_OF = "CAST(NULLIF(list_position(__A__, __B__), 0) - 1 AS BIGINT)"
_ORDINAL_OF = "CAST(NULLIF(list_position(__A__, __B__), 0) AS BIGINT)"
# an element by its 0-based offset or 1-based ordinal: NULL out of range (DuckDB counts negative indexes
# from the end, Druid answers NULL; index 0 is NULL in DuckDB); the array is evaluated in any case, as in
# Druid. list_extract, not [ ]: sqlglot re-bases a [ ] index that it copies into another one.
_OFFSET = "list_extract(__A__, CASE WHEN __B__ >= 0 THEN __B__ + 1 ELSE 0 END)"
_ORDINAL = "list_extract(__A__, CASE WHEN __B__ >= 1 THEN __B__ ELSE 0 END)"


def _slice(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    """``ARRAY_SLICE(arr, start[, end])``: Druid's ``Arrays.copyOfRange`` from the 0-based ``start`` to
    ``end`` (exclusive, default the length; past the end the slice is padded with NULLs); NULL when
    ``start`` is negative, past the length or past ``end``."""
    if len(a) not in (2, 3):
        raise SqlError(f"Invalid number of arguments to function '{str(node.this).upper()}'.")
    end = a[2] if len(a) > 2 else tmpl("len(__A__)", A=a[0])
    return tmpl(
        "CASE WHEN __B__ < 0 OR __B__ > len(__A__) OR __B__ > __C__ THEN NULL "
        "ELSE list_resize(list_slice(__A__, __B__ + 1, __C__), __C__ - __B__) END",
        A=a[0],
        B=a[1],
        C=end,
    )


def _identity(node: exp.Expr, a: list[exp.Expr]) -> exp.Expr:
    return a[0]


def _entries() -> list[DruidFunction]:
    s, ag, w = "scalar", "aggregate", "window"
    table: list[tuple[str, str, str, str | Handler]] = [
        # --- numeric
        *(
            (n, s, _N, SAME)
            for n in [
                "ABS",
                "CEIL",
                "FLOOR",
                "EXP",
                "LN",
                "LOG10",
                "POWER",
                "SQRT",
                "ROUND",
                "SIN",
                "COS",
                "TAN",
                "COT",
                "ASIN",
                "ACOS",
                "ATAN",
                "ATAN2",
                "DEGREES",
                "RADIANS",
            ]
        ),
        ("TRUNCATE", s, _N, _truncate),
        ("TRUNC", s, _N, _truncate),
        ("MOD", s, _N, "__A__ % __B__"),
        ("DIV", s, _N, _div),
        ("SAFE_DIVIDE", s, _N, _safe_divide),
        # Druid casts a DOUBLE to a long by truncation (Java's cast); DuckDB's CAST rounds, hence trunc()
        ("BITWISE_AND", s, _N, "CAST(trunc(__A__) AS BIGINT) & CAST(trunc(__B__) AS BIGINT)"),
        ("BITWISE_OR", s, _N, "CAST(trunc(__A__) AS BIGINT) | CAST(trunc(__B__) AS BIGINT)"),
        ("BITWISE_XOR", s, _N, "xor(CAST(trunc(__A__) AS BIGINT), CAST(trunc(__B__) AS BIGINT))"),
        ("BITWISE_COMPLEMENT", s, _N, "~CAST(trunc(__A__) AS BIGINT)"),
        ("BITWISE_SHIFT_LEFT", s, _N, _SHIFT_LEFT),
        ("BITWISE_SHIFT_RIGHT", s, _N, "CAST(trunc(__A__) AS BIGINT) >> (CAST(trunc(__B__) AS BIGINT) & 63)"),
        ("BITWISE_CONVERT_DOUBLE_TO_LONG_BITS", s, _N, UNSUPPORTED),
        ("BITWISE_CONVERT_LONG_BITS_TO_DOUBLE", s, _N, UNSUPPORTED),
        ("HUMAN_READABLE_BINARY_BYTE_FORMAT", s, _N, UNSUPPORTED),
        ("HUMAN_READABLE_DECIMAL_BYTE_FORMAT", s, _N, UNSUPPORTED),
        ("HUMAN_READABLE_DECIMAL_FORMAT", s, _N, UNSUPPORTED),
        # --- reduction
        ("GREATEST", s, _R, SAME),
        ("LEAST", s, _R, SAME),
        # --- string
        ("CONCAT", s, _S, SAME),
        ("TEXTCAT", s, _S, "concat(__A__, __B__)"),
        ("CONTAINS_STRING", s, _S, "contains(__A__, __B__)"),
        ("ICONTAINS_STRING", s, _S, "contains(lower(__A__), lower(__B__))"),
        ("DECODE_BASE64_UTF8", s, _S, "decode(from_base64(__A__))"),
        ("LEFT", s, _S, SAME),
        ("RIGHT", s, _S, SAME),
        ("LENGTH", s, _S, "CAST(length(__A__) AS BIGINT)"),
        ("CHAR_LENGTH", s, _S, "CAST(length(__A__) AS BIGINT)"),
        ("CHARACTER_LENGTH", s, _S, "CAST(length(__A__) AS BIGINT)"),
        ("STRLEN", s, _S, "CAST(length(__A__) AS BIGINT)"),
        ("LOWER", s, _S, SAME),
        ("UPPER", s, _S, SAME),
        ("LPAD", s, _S, _pad("lpad")),
        ("RPAD", s, _S, _pad("rpad")),
        ("PARSE_LONG", s, _S, _parse_long),
        ("POSITION", s, _S, SAME),
        ("REGEXP_EXTRACT", s, _S, _regexp_extract),
        ("REGEXP_LIKE", s, _S, "regexp_matches(__A__, __B__)"),
        ("REGEXP_REPLACE", s, _S, "regexp_replace(__A__, __B__, __C__, 'g')"),
        ("REPLACE", s, _S, SAME),
        ("REPEAT", s, _S, "repeat(__A__, CAST(__B__ AS BIGINT))"),
        ("REVERSE", s, _S, SAME),
        ("STRING_FORMAT", s, _S, lambda n, a: exp.Anonymous(this="printf", expressions=a)),
        ("STRPOS", s, _S, "CAST(strpos(__A__, __B__) AS BIGINT)"),
        ("SUBSTRING", s, _S, SAME),
        ("SUBSTR", s, _S, "substring(__A__, __B__, __C__)"),
        ("TRIM", s, _S, SAME),
        ("BTRIM", s, _S, lambda n, a: exp.Anonymous(this="trim", expressions=a)),
        ("LTRIM", s, _S, SAME),
        ("RTRIM", s, _S, SAME),
        ("LOOKUP", s, _S, "lookup"),  # replaced by Rewriter._lookup (needs the catalogue)
        # --- date and time
        ("DATE_TRUNC", s, _T, SAME),
        ("TIME_FLOOR", s, _T, timefns.time_floor),
        ("TIME_CEIL", s, _T, timefns.time_ceil),
        ("TIME_SHIFT", s, _T, timefns.time_shift),
        ("TIME_EXTRACT", s, _T, timefns.time_extract),
        ("TIME_PARSE", s, _T, timefns.time_parse),
        ("TIME_FORMAT", s, _T, timefns.time_format),
        ("TIME_IN_INTERVAL", s, _T, _time_in_interval),
        ("MILLIS_TO_TIMESTAMP", s, _T, "epoch_ms(CAST(__A__ AS BIGINT))"),
        ("TIMESTAMP_TO_MILLIS", s, _T, "epoch_ms(__A__)"),
        ("TIMESTAMPADD", s, _T, timefns.timestampadd),
        ("TIMESTAMPDIFF", s, _T, timefns.timestampdiff),
        ("EXTRACT", s, _T, SAME),
        # --- IP addresses
        ("IPV4_PARSE", s, _IP, _IPV4_PARSE),
        ("IPV4_STRINGIFY", s, _IP, _IPV4_STRINGIFY),
        ("IPV4_MATCH", s, _IP, UNSUPPORTED),
        ("IPV6_MATCH", s, _IP, UNSUPPORTED),
        # --- sketches (exact: a sketch is the list of its values)
        ("HLL_SKETCH_ESTIMATE", s, _SK, "CAST(len(__A__) AS DOUBLE)"),
        ("THETA_SKETCH_ESTIMATE", s, _SK, "CAST(len(__A__) AS DOUBLE)"),
        ("HLL_SKETCH_UNION", s, _SK, _any_args("list_distinct")),
        ("THETA_SKETCH_UNION", s, _SK, _any_args("list_distinct")),
        ("THETA_SKETCH_INTERSECT", s, _SK, "list_intersect(__A__, __B__)"),
        ("DS_GET_QUANTILE", s, _SK, "CAST(list_aggregate(__A__, 'quantile_disc', __B__) AS DOUBLE)"),
        ("DS_GET_QUANTILES", s, _SK, _quantiles),
        *(
            (n, s, _SK, UNSUPPORTED)
            for n in [
                "HLL_SKETCH_ESTIMATE_WITH_ERROR_BOUNDS",
                "HLL_SKETCH_TO_STRING",
                "THETA_SKETCH_ESTIMATE_WITH_ERROR_BOUNDS",
                "THETA_SKETCH_NOT",
                "DS_HISTOGRAM",
                "DS_CDF",
                "DS_RANK",
                "DS_QUANTILE_SUMMARY",
                "DS_QUANTILES_SKETCH_TO_STRING",
            ]
        ),
        # --- other scalar
        ("NVL", s, _O, lambda n, a: exp.Coalesce(this=a[0], expressions=a[1:])),
        ("COALESCE", s, _O, SAME),
        ("NULLIF", s, _O, SAME),
        ("CAST", s, _O, SAME),
        ("BLOOM_FILTER_TEST", s, _O, UNSUPPORTED),
        ("DECODE_BASE64_COMPLEX", s, _O, UNSUPPORTED),
        ("COMPLEX_DECODE_BASE64", s, _O, UNSUPPORTED),
        # --- arrays
        ("ARRAY", s, _AR, SAME),
        ("ARRAY_LENGTH", s, _AR, _LIST_LEN),
        ("ARRAY_OFFSET", s, _AR, _OFFSET),
        ("ARRAY_ORDINAL", s, _AR, _ORDINAL),
        ("ARRAY_CONTAINS", s, _AR, _contains),
        ("ARRAY_OVERLAP", s, _AR, "list_has_any(__A__, __B__)"),
        ("SCALAR_IN_ARRAY", s, _AR, "list_contains(__B__, __A__)"),
        ("ARRAY_OFFSET_OF", s, _AR, _OFFSET_OF),
        ("ARRAY_ORDINAL_OF", s, _AR, _ORDINAL_OF),
        ("ARRAY_PREPEND", s, _AR, "list_prepend(__A__, __B__)"),
        ("ARRAY_APPEND", s, _AR, "list_append(__A__, __B__)"),
        ("ARRAY_CONCAT", s, _AR, "list_concat(__A__, __B__)"),
        ("ARRAY_SLICE", s, _AR, _slice),
        ("ARRAY_TO_STRING", s, _AR, "array_to_string(__A__, __B__)"),
        ("STRING_TO_ARRAY", s, _AR, "string_split(__A__, __B__)"),
        ("ARRAY_TO_MV", s, _AR, _identity),
        # --- multi-value strings
        ("MV_FILTER_ONLY", s, _MV, "list_intersect(__A__, __B__)"),
        ("MV_FILTER_NONE", s, _MV, UNSUPPORTED),
        ("MV_LENGTH", s, _MV, _LIST_LEN),
        ("MV_OFFSET", s, _MV, _OFFSET),
        ("MV_ORDINAL", s, _MV, _ORDINAL),
        ("MV_CONTAINS", s, _MV, _contains),
        ("MV_OVERLAP", s, _MV, "list_has_any(__A__, __B__)"),
        ("MV_OFFSET_OF", s, _MV, _OFFSET_OF),
        ("MV_ORDINAL_OF", s, _MV, _ORDINAL_OF),
        ("MV_PREPEND", s, _MV, "list_prepend(__A__, __B__)"),
        ("MV_APPEND", s, _MV, "list_append(__A__, __B__)"),
        ("MV_CONCAT", s, _MV, "list_concat(__A__, __B__)"),
        ("MV_SLICE", s, _MV, _slice),
        ("STRING_TO_MV", s, _MV, "string_split(__A__, __B__)"),
        ("MV_TO_STRING", s, _MV, "array_to_string(__A__, __B__)"),
        ("MV_TO_ARRAY", s, _MV, _identity),
        # --- JSON (over JSON text)
        ("JSON_VALUE", s, _J, "json_extract_string(__A__, __B__)"),
        ("JSON_QUERY", s, _J, "CAST(json_extract(__A__, __B__) AS VARCHAR)"),
        ("JSON_KEYS", s, _J, "json_keys(__A__, __B__)"),
        ("PARSE_JSON", s, _J, "CAST(CAST(__A__ AS JSON) AS VARCHAR)"),
        ("TRY_PARSE_JSON", s, _J, "CAST(TRY_CAST(__A__ AS JSON) AS VARCHAR)"),
        ("TO_JSON_STRING", s, _J, "CAST(to_json(__A__) AS VARCHAR)"),
        *((n, s, _J, UNSUPPORTED) for n in ["JSON_PATHS", "JSON_OBJECT", "JSON_QUERY_ARRAY"]),
        # --- aggregations
        *(
            (n, ag, _AG, SAME)
            for n in [
                "COUNT",
                "SUM",
                "MIN",
                "MAX",
                "AVG",
                "VAR_POP",
                "VAR_SAMP",
                "VARIANCE",
                "STDDEV_POP",
                "STDDEV_SAMP",
                "STDDEV",
                "GROUPING",
                "BIT_AND",
                "BIT_OR",
                "BIT_XOR",
            ]
        ),
        ("ANY_VALUE", ag, _AG, "any_value(__A__)"),
        ("APPROX_COUNT_DISTINCT", ag, _AG, _count_distinct),
        ("APPROX_COUNT_DISTINCT_BUILTIN", ag, _AG, _count_distinct),
        ("APPROX_COUNT_DISTINCT_DS_HLL", ag, _AG, _count_distinct),
        ("APPROX_COUNT_DISTINCT_DS_THETA", ag, _AG, _count_distinct),
        ("APPROX_QUANTILE", ag, _AG, _quantile),
        ("APPROX_QUANTILE_DS", ag, _AG, _quantile),
        ("APPROX_QUANTILE_FIXED_BUCKETS", ag, _AG, _quantile),
        ("DS_HLL", ag, _AG, "array_agg(DISTINCT __A__) FILTER (WHERE __A__ IS NOT NULL)"),
        ("DS_THETA", ag, _AG, "array_agg(DISTINCT __A__) FILTER (WHERE __A__ IS NOT NULL)"),
        ("DS_QUANTILES_SKETCH", ag, _AG, "array_agg(CAST(__A__ AS DOUBLE)) FILTER (WHERE __A__ IS NOT NULL)"),
        ("EARLIEST", ag, _AG, "arg_min(__A__, __time)"),
        ("LATEST", ag, _AG, "arg_max(__A__, __time)"),
        ("EARLIEST_BY", ag, _AG, "arg_min(__A__, __B__)"),
        ("LATEST_BY", ag, _AG, "arg_max(__A__, __B__)"),
        ("ARRAY_AGG", ag, _AG, "array_agg(__A__)"),
        ("ARRAY_CONCAT_AGG", ag, _AG, "flatten(array_agg(__A__))"),
        ("STRING_AGG", ag, _AG, _string_agg),
        ("LISTAGG", ag, _AG, _string_agg),
        *(
            (n, ag, _AG, UNSUPPORTED)
            for n in ["BLOOM_FILTER", "TDIGEST_QUANTILE", "TDIGEST_GENERATE_SKETCH", "DS_TUPLE_DOUBLES"]
        ),
        # --- window functions (no query context needed since Druid 32; their input is inlined: pipeline.py)
        *(
            (n, w, _W, SAME)
            for n in [
                "ROW_NUMBER",
                "RANK",
                "DENSE_RANK",
                "PERCENT_RANK",
                "CUME_DIST",
                "NTILE",
                "LAG",
                "LEAD",
                "FIRST_VALUE",
                "LAST_VALUE",
            ]
        ),
    ]
    return [DruidFunction(name, kind, doc, rewrite) for name, kind, doc, rewrite in table]


#: Druid name → entry (names are upper case; Druid's unquoted function names are case-insensitive).
FUNCTIONS: dict[str, DruidFunction] = {f.name: f for f in _entries()}
#: Druid names sqlglot must leave as plain calls, so the table (not sqlglot) decides their translation.
REWRITTEN = frozenset(name for name, f in FUNCTIONS.items() if f.rewrite != SAME)
_ARGS = "ABCDEFGH"


class Rewriter:
    """Bottom-up rewrite of Druid constructs into DuckDB ones (functions from :data:`FUNCTIONS`)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.mv = MultiValue(catalog)
        #: each column's Druid type, by name
        self.columns = {c: duckdb_to_druid(t) for cols in catalog.tables.values() for c, t in cols.items()}

    def rewrite(self, tree: exp.Expr) -> exp.Expr:
        """Rewrite *tree*, children before parents (reversed pre-order), so nested calls are rewritten too."""
        _mark_sketch_merges(tree)
        timefns.mark_wall_clock(tree, self.columns)
        for node in reversed(list(tree.walk())):
            new = self._node(node)
            if new is not node:
                if node is tree:
                    tree = new
                elif isinstance(node.parent, exp.Window | exp.Filter) and node.arg_key == "this":
                    node.replace(new)  # the call of ``f(...) OVER (...)``/``FILTER (...)`` stays a call
                else:
                    # the rewrite takes the call's place as one operand: 2 / TRUNCATE(x, 1) keeps its order
                    node.replace(operand(new))
        return tree

    def _node(self, node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous):
            return self._call(node)
        if isinstance(node, exp.Floor | exp.Ceil) and node.args.get("to") is not None:
            return timefns.floor_ceil_to(node)
        if isinstance(node, exp.Extract):
            return timefns.extract(node)
        if isinstance(node, exp.Cast) and timefns.WALL_CLOCK in node.meta:
            zoned = timefns.wall_clock_cast(node, strict=node.meta[timefns.WALL_CLOCK])
            if zoned is not None:
                return zoned
        if isinstance(node, exp.CurrentDate):
            return timefns.current_date() or node
        if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
            return timefns.add_interval(node)
        if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
            # Druid's CAST never fails: a value that does not convert becomes NULL.
            return exp.TryCast(this=node.this, to=node.to)
        if isinstance(node, exp.EQ | exp.NEQ):
            return self.mv.compare(node)
        if isinstance(node, exp.In) and self.mv.is_mv(node.this) and node.args.get("expressions"):
            return tmpl("list_has_any(__A__, __B__)", A=node.this, B=exp.Array(expressions=node.expressions))
        if isinstance(node, exp.Mul | exp.Add | exp.Sub):
            # Druid integer literals are BIGINT: 30 * 86400000 must not overflow DuckDB's INTEGER.
            for key in ("this", "expression"):
                arg = node.args.get(key)
                if isinstance(arg, exp.Literal) and not arg.is_string and arg.this.lstrip("-").isdigit():
                    node.set(key, exp.cast(arg, "BIGINT"))
        return node

    def _call(self, node: exp.Anonymous) -> exp.Expr:
        name = str(node.this).upper()
        entry = FUNCTIONS.get(name)
        args = list(node.expressions)
        if entry is None:  # strict.py refuses these first; never let an unknown name through
            raise SqlError(f"No match found for function signature {name}()")
        if entry.rewrite == UNSUPPORTED:
            raise SqlError(
                f"Function {name} is valid Druid SQL ({entry.doc}) but the sandbox cannot serve it.",
                "unsupported",
            )
        if name == "LOOKUP":
            return self._lookup(args)
        if node.meta.get(_SKETCH_INPUT):
            # the argument is a quantiles sketch of a subquery (a list of its values here): merge them
            merged = tmpl("flatten(array_agg(__A__))", A=args[0])
            if name == "DS_QUANTILES_SKETCH":
                return merged
            if len(args) < 2:
                raise SqlError(f"{name} needs (expr, probability).")
            return tmpl("CAST(list_aggregate(__A__, 'quantile_disc', __B__) AS DOUBLE)", A=merged, B=args[1])
        if entry.rewrite == SAME:
            return exp.Anonymous(this=name.lower(), expressions=args)
        if callable(entry.rewrite):
            return entry.rewrite(node, args)
        template = entry.rewrite
        wanted = [k for k in _ARGS if f"__{k}__" in template]
        if len(args) < len(wanted):
            raise SqlError(
                f"Invalid number of arguments to function '{name}'. Was expecting {len(wanted)} arguments"
            )
        return tmpl(template, **dict(zip(_ARGS, args, strict=False)))

    def _lookup(self, a: list[exp.Expr]) -> exp.Expr:
        if len(a) < 2:
            raise SqlError("LOOKUP needs (expression, 'lookup name'[, 'replace missing value']).")
        name = literal_str(a[1], "the lookup name", "LOOKUP")
        if name not in self.catalog.lookups:
            raise SqlError(f"Lookup [{name}] not found (the workgroup's lookups are in schema 'lookup').")
        quoted = name.replace('"', '""')
        found = tmpl(
            f'(SELECT _l.v FROM "lookup"."{quoted}" AS _l WHERE _l.k = CAST(__A__ AS VARCHAR) LIMIT 1)',
            A=a[0],
        )
        if len(a) > 2:
            return exp.Coalesce(this=found, expressions=[a[2]])
        return found


#: the mark (in a call's ``meta``) of a quantile aggregate whose argument is a quantiles sketch column
_SKETCH_INPUT = "pm_sketch_input"
#: the aggregates that take a quantiles sketch column as well as numbers
_TAKES_SKETCHES = ("APPROX_QUANTILE_DS", "DS_QUANTILES_SKETCH")


def _mark_sketch_merges(tree: exp.Expr) -> None:
    """Mark the ``APPROX_QUANTILE_DS``/``DS_QUANTILES_SKETCH`` calls whose argument is a column that a
    subquery in their ``FROM`` computes with ``DS_QUANTILES_SKETCH``: Druid takes a numeric expression or a
    quantiles sketch there (sql-aggregations) and merges the sketches; the rewrite merges the value lists."""
    for call in tree.find_all(exp.Anonymous):
        if str(call.this).upper() not in _TAKES_SKETCHES or not call.expressions:
            continue
        arg = call.expressions[0]
        select = call.find_ancestor(exp.Select)
        from_ = select.args.get("from_") if select is not None else None
        if not isinstance(arg, exp.Column) or from_ is None or not isinstance(from_.this, exp.Subquery):
            continue
        inner = from_.this.this
        if arg.table and arg.table != from_.this.alias_or_name:
            continue
        for item in inner.expressions if isinstance(inner, exp.Select) else []:
            body = item.this if isinstance(item, exp.Alias) else item
            if (
                item.alias_or_name == arg.name
                and isinstance(body, exp.Anonymous)
                and (str(body.this).upper() == "DS_QUANTILES_SKETCH" or body.meta.get(_SKETCH_INPUT))
            ):
                call.meta[_SKETCH_INPUT] = True
