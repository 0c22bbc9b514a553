"""Druid's multi-value string semantics over DuckDB lists.

A multi-value column is a ``VARCHAR[]`` in the store. ``col = 'x'`` (and ``IN``) matches rows where any
value is ``'x'``; grouping on a multi-value column (directly, by alias or by ordinal, or by ``SELECT
DISTINCT``) unnests it, one group per value, an empty or NULL array giving one NULL group. Grouping on an
expression over a multi-value column (other than the ``MV_*``/``ARRAY_*`` functions, which see the whole
array) is refused; so are ROLLUP/CUBE/GROUPING SETS over one.
"""

from __future__ import annotations

from sqlglot import exp

from ..access import Catalog
from ..errors import SqlError
from .templates import tmpl

__all__ = ["MultiValue", "under_array_fn", "unnest_mv_groups"]


class MultiValue:
    """Comparisons against the multi-value columns of a catalogue."""

    def __init__(self, catalog: Catalog) -> None:
        self.columns = {c.lower() for c in catalog.multi_value_columns}

    def is_mv(self, node: exp.Expr | None) -> bool:
        """Whether *node* is a bare multi-value column."""
        return isinstance(node, exp.Column) and node.name.lower() in self.columns

    def compare(self, node: exp.Binary) -> exp.Expr:
        """``mv = 'x'`` → any value is ``'x'`` (``<>``: none is)."""
        left, right = node.this, node.expression
        if self.is_mv(left) and not self.is_mv(right):
            col, val = left, right
        elif self.is_mv(right) and not self.is_mv(left):
            col, val = right, left
        else:
            return node
        if isinstance(val, exp.Array) or (
            isinstance(val, exp.Anonymous)
            and str(val.this).upper() in ("ARRAY", "STRING_TO_MV", "MV_TO_ARRAY")
        ):
            return node  # array against array: left to DuckDB's whole-list comparison
        found = tmpl("list_contains(__A__, __B__)", A=col, B=val)
        return found if isinstance(node, exp.EQ) else exp.Not(this=found)


def under_array_fn(node: exp.Expr, top: exp.Expr) -> bool:
    """Whether *node* is an argument of an ``MV_*``/``ARRAY_*`` function (which sees the whole array)."""
    p = node.parent
    while p is not None and p is not top.parent:
        if isinstance(p, exp.Anonymous) and str(p.this).upper().startswith(("MV_", "ARRAY_")):
            return True
        if isinstance(p, exp.ArrayToString | exp.ArraySize | exp.ArrayContains | exp.ArrayOverlaps):
            return True
        p = p.parent
    return False


def unnest_mv_groups(tree: exp.Expr, catalog: Catalog) -> None:
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
            if col.name.lower() in mv and not under_array_fn(col, node):
                raise SqlError(
                    f"GROUP BY {node.sql(dialect='druid')}: grouping on an expression of the multi-value "
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
        values = tmpl(
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

    def same(node: exp.Expr) -> bool:
        return (
            isinstance(node, exp.Column)
            and node.name.lower() == name
            and (node.table == qualifier or not node.table or not qualifier)
        )

    def ref() -> exp.Column:
        return exp.column(hidden, table=qualifier or None, quoted=True)

    def swap_refs(top: exp.Expr) -> exp.Expr:
        if same(top):
            return ref()
        for c in list(top.find_all(exp.Column)):
            if same(c) and not c.find_ancestor(exp.AggFunc) and not under_array_fn(c, top):
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
