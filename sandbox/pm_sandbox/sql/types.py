"""The sandbox's one type table: Druid SQL type ↔ DuckDB types ↔ JDBC type id ↔ Arrow ↔ Avatica rep.

Every other type mapping of the sandbox is derived from :data:`TYPES`: the Druid name of a DuckDB type
(:func:`duckdb_to_druid`, and its SQL twin :func:`duckdb_to_druid_sql` for ``INFORMATION_SCHEMA``), the
native type of the Druid SQL API's ``typesHeader``, the Arrow type a result :class:`Column` is normalised to
(:func:`normalise`), the DuckDB cast that gives a value its Druid type's JSON form, and the Avatica column
and parameter metadata.

What Druid does, where the sandbox's earlier copies disagreed (``avatica-json.md``, ``service-model.md``):

- Druid stores every integer as a LONG, so every DuckDB integer type, unsigned ones included, is ``BIGINT``.
- A nested value (DuckDB STRUCT, MAP, UNION) is Druid's ``COMPLEX<json>``: SQL type ``OTHER``, JDBC type
  1111, Avatica rep ``OBJECT``, in query results and in ``INFORMATION_SCHEMA.COLUMNS`` alike.
- An ARRAY has JDBC type 2003 and Avatica rep ``ARRAY`` with the element's scalar type as ``component``;
  its SQL name is ``ARRAY<element>`` and its element type is derived by the same table.
- Any other DuckDB type (UUID, BLOB, INTERVAL, ...) reaches the client as text: ``VARCHAR``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "ARRAY",
    "Column",
    "TYPES",
    "SqlType",
    "by_druid",
    "duckdb_to_druid",
    "duckdb_to_druid_sql",
    "jdbc_type_sql",
    "native_type",
    "normalise",
]


@dataclass(frozen=True)
class SqlType:
    """One Druid SQL type and its name or representation in every layer the sandbox speaks."""

    #: the Druid SQL type name (``sqlTypesHeader``, ``INFORMATION_SCHEMA`` ``DATA_TYPE``, Avatica ``name``)
    druid: str
    #: DuckDB type names (without parameters: ``DECIMAL(18,3)`` is ``DECIMAL``) whose values have this type
    duckdb: tuple[str, ...]
    #: DuckDB type-name prefixes whose values have this type (``TIMESTAMP WITH TIME ZONE``, ``TIMESTAMP_NS``)
    duckdb_prefixes: tuple[str, ...]
    #: the Druid native type (``typesHeader``)
    native: str
    #: the ``java.sql.Types`` id (Avatica ``id``, ``INFORMATION_SCHEMA.COLUMNS.JDBC_TYPE``)
    jdbc: int
    #: the Avatica ``rep`` (how the JSON value is read by the driver)
    rep: str
    #: the Java class the driver reports (``columnClassName``, a parameter's ``className``)
    java_class: str
    #: the Arrow type of a normalised result column (``None``: the DuckDB value's own, dictionaries decoded)
    arrow: pa.DataType | None
    #: the DuckDB type a value is cast to before JSON encoding when its DuckDB type differs (``HUGEINT``
    #: and ``ENUM`` values encode as their Druid type's; ``None``: DuckDB's JSON form is already right)
    json_cast: str | None
    #: the Avatica ``precision`` (and ``displaySize``) Druid 33 reports for a column or parameter of this type
    precision: int = -1
    #: the Avatica ``scale`` Druid 33 reports (Calcite's "not specified", ``Integer.MIN_VALUE``, for most)
    scale: int = -(2**31)


TYPES: tuple[SqlType, ...] = (
    SqlType(
        "TIMESTAMP",
        (),
        ("TIMESTAMP",),
        "LONG",
        93,
        "NUMBER",
        "java.sql.Timestamp",
        pa.timestamp("ms"),
        None,
        precision=3,
    ),
    SqlType(
        "BIGINT",
        ("TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT"),
        ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"),
        "LONG",
        -5,
        "NUMBER",
        "java.lang.Long",
        pa.int64(),
        "BIGINT",
        precision=19,
        scale=0,
    ),
    SqlType(
        "DOUBLE",
        ("DOUBLE", "DECIMAL", "NUMERIC"),
        (),
        "DOUBLE",
        8,
        "NUMBER",
        "java.lang.Double",
        pa.float64(),
        None,
        precision=15,
    ),
    SqlType(
        "FLOAT",
        ("FLOAT", "REAL"),
        (),
        "FLOAT",
        6,
        "NUMBER",
        "java.lang.Double",
        pa.float32(),
        None,
        precision=15,
    ),
    SqlType("VARCHAR", ("VARCHAR",), (), "STRING", 12, "STRING", "java.lang.String", pa.string(), "VARCHAR"),
    SqlType(
        "BOOLEAN",
        ("BOOLEAN", "BOOL"),
        (),
        "LONG",
        16,
        "BOOLEAN",
        "java.lang.Boolean",
        pa.bool_(),
        "BOOLEAN",
        precision=1,
    ),
    SqlType("DATE", ("DATE",), (), "LONG", 91, "NUMBER", "java.sql.Date", pa.date32(), None, precision=0),
    SqlType(
        "OTHER",
        (),
        ("STRUCT", "MAP", "UNION"),
        "COMPLEX<json>",
        1111,
        "OBJECT",
        "java.lang.Object",
        None,
        None,
    ),
)

#: the ARRAY type's JDBC id, Avatica rep and Java class (its element type comes from :data:`TYPES`)
ARRAY = SqlType("ARRAY", (), (), "ARRAY", 2003, "ARRAY", "java.sql.Array", None, None)

_BY_DRUID = {t.druid: t for t in TYPES}
_FALLBACK = _BY_DRUID["VARCHAR"]  # a DuckDB type Druid has no counterpart for reaches the client as text


def by_druid(name: str) -> SqlType:
    """The table row of Druid SQL type *name* (an unknown name is ``OTHER``, as Avatica reports it)."""
    return _BY_DRUID.get(name, _BY_DRUID["OTHER"])


def native_type(druid: str, component: str | None = None) -> str:
    """Druid's native type name for SQL type *druid* (``ARRAY`` with its *component*)."""
    if druid == "ARRAY":
        element = _BY_DRUID.get(component or "VARCHAR")
        return f"ARRAY<{element.native if element else 'STRING'}>"
    return by_druid(druid).native


def _scalar(duck: str) -> SqlType:
    base = duck.split("(")[0].strip()
    for t in TYPES:
        if base in t.duckdb or duck.startswith(t.duckdb_prefixes):
            return t
    return _FALLBACK


def duckdb_to_druid(duck: str) -> str:
    """The Druid SQL type name for a DuckDB type name (``VARCHAR[]`` → ``ARRAY<VARCHAR>``)."""
    t = duck.upper().strip()
    if t.endswith("[]"):
        return f"ARRAY<{duckdb_to_druid(t[:-2])}>"
    return _scalar(t).druid


def _scalar_sql(expr: str) -> str:
    base = f"trim(split_part({expr}, '(', 1))"
    whens = []
    for t in TYPES:
        tests = []
        if t.duckdb:
            tests.append(f"{base} IN ({', '.join(repr(n) for n in t.duckdb)})")
        tests += [f"starts_with({expr}, {p!r})" for p in t.duckdb_prefixes]
        whens.append(f"WHEN {' OR '.join(tests)} THEN {t.druid!r}")
    return f"CASE {' '.join(whens)} ELSE {_FALLBACK.druid!r} END"


def duckdb_to_druid_sql(expr: str) -> str:
    """SQL computing :func:`duckdb_to_druid` of the DuckDB type-name expression *expr* (one array level)."""
    up = f"upper(trim({expr}))"
    element = f"left({up}, length({up}) - 2)"
    array = f"'ARRAY<' || {_scalar_sql(element)} || '>'"
    return f"CASE WHEN ends_with({up}, '[]') THEN {array} ELSE {_scalar_sql(up)} END"


def jdbc_type_sql(expr: str) -> str:
    """SQL computing the JDBC type id of the Druid SQL type-name expression *expr*."""
    whens = " ".join(f"WHEN {t.druid!r} THEN {t.jdbc}" for t in TYPES)
    other = by_druid("OTHER").jdbc
    scalar = f"CASE {expr} {whens} ELSE {other} END"
    return f"CASE WHEN starts_with({expr}, 'ARRAY<') THEN {ARRAY.jdbc} ELSE {scalar} END"


@dataclass(frozen=True)
class Column:
    """One result column: name, Druid SQL type, and the element type of an ARRAY."""

    name: str
    type: str  # TIMESTAMP, BIGINT, DOUBLE, FLOAT, VARCHAR, BOOLEAN, DATE, ARRAY, OTHER
    component: str | None = None
    nullable: bool = True

    @property
    def native_type(self) -> str:
        """Druid's native type name (``typesHeader``)."""
        return native_type(self.type, self.component)

    @property
    def sql_type(self) -> str:
        """Druid's SQL type name (``sqlTypesHeader``): a bare ``ARRAY``, as Druid 33 sends it (the element
        type is in the native ``ARRAY<STRING>`` of ``typesHeader``)."""
        return self.type


_ARROW = {t.druid: t.arrow for t in TYPES if t.arrow is not None}


def normalise(table: pa.Table, columns: list[Column]) -> pa.Table:
    """Cast every column to the Arrow type of its Druid type (cheap when already right).

    ENUM values arrive as Arrow dictionaries; the cast decodes them to plain strings, also inside
    lists, structs and maps.
    """
    arrays = []
    for col, arr in zip(columns, table.columns, strict=True):
        if col.type == "ARRAY":
            target = pa.list_(_ARROW.get(col.component or "VARCHAR", pa.string()))
        else:
            target = _ARROW.get(col.type) or _decoded(arr.type)
        if arr.type == target:
            arrays.append(arr)
            continue
        try:
            if pa.types.is_timestamp(arr.type) and arr.type.tz is not None:
                arr = pc.cast(arr, pa.timestamp(arr.type.unit))
            arrays.append(pc.cast(arr, target, safe=False))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arrays.append(pa.array([None if v is None else str(v) for v in arr.to_pylist()], target))
    return pa.Table.from_arrays(arrays, names=[c.name for c in columns])


def _decoded(t: pa.DataType) -> pa.DataType:
    """*t* with every dictionary type replaced by its value type."""
    if pa.types.is_dictionary(t):
        return _decoded(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        field = t.value_field.with_type(_decoded(t.value_type))
        return pa.list_(field) if pa.types.is_list(t) else pa.large_list(field)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_decoded(t.key_type)), t.item_field.with_type(_decoded(t.item_type))
        )
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_decoded(t.field(i).type)) for i in range(t.num_fields)])
    return t
