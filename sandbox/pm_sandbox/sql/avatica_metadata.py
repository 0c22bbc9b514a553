"""Avatica ``DatabaseMetaData`` calls (``getTables``, ``getColumns``, …), answered from Druid's
``INFORMATION_SCHEMA`` views of the caller's workgroup, with the column sets the 1.26 driver expects."""

from __future__ import annotations

from typing import Any

from .avatica_requests import _Caller, _list_field, _pattern_field, _str_field
from .avatica_statements import Connections, _Connection, _signature
from .errors import SqlError
from .types import ARRAY, TYPES, Column

__all__ = ["MetadataCalls"]


_META_COLUMNS = {
    "getCatalogs": [("TABLE_CAT", "VARCHAR")],
    "getSchemas": [("TABLE_SCHEM", "VARCHAR"), ("TABLE_CATALOG", "VARCHAR")],
    "getTableTypes": [("TABLE_TYPE", "VARCHAR")],
    "getTables": [
        ("TABLE_CAT", "VARCHAR"),
        ("TABLE_SCHEM", "VARCHAR"),
        ("TABLE_NAME", "VARCHAR"),
        ("TABLE_TYPE", "VARCHAR"),
        ("REMARKS", "VARCHAR"),
        ("TYPE_CAT", "VARCHAR"),
        ("TYPE_SCHEM", "VARCHAR"),
        ("TYPE_NAME", "VARCHAR"),
        ("SELF_REFERENCING_COL_NAME", "VARCHAR"),
        ("REF_GENERATION", "VARCHAR"),
    ],
    "getColumns": [
        ("TABLE_CAT", "VARCHAR"),
        ("TABLE_SCHEM", "VARCHAR"),
        ("TABLE_NAME", "VARCHAR"),
        ("COLUMN_NAME", "VARCHAR"),
        ("DATA_TYPE", "BIGINT"),
        ("TYPE_NAME", "VARCHAR"),
        ("COLUMN_SIZE", "BIGINT"),
        ("BUFFER_LENGTH", "BIGINT"),
        ("DECIMAL_DIGITS", "BIGINT"),
        ("NUM_PREC_RADIX", "BIGINT"),
        ("NULLABLE", "BIGINT"),
        ("REMARKS", "VARCHAR"),
        ("COLUMN_DEF", "VARCHAR"),
        ("SQL_DATA_TYPE", "BIGINT"),
        ("SQL_DATETIME_SUB", "BIGINT"),
        ("CHAR_OCTET_LENGTH", "BIGINT"),
        ("ORDINAL_POSITION", "BIGINT"),
        ("IS_NULLABLE", "VARCHAR"),
        ("SCOPE_CATALOG", "VARCHAR"),
        ("SCOPE_SCHEMA", "VARCHAR"),
        ("SCOPE_TABLE", "VARCHAR"),
        ("SOURCE_DATA_TYPE", "BIGINT"),
        ("IS_AUTOINCREMENT", "VARCHAR"),
        ("IS_GENERATEDCOLUMN", "VARCHAR"),
    ],
    "getTypeInfo": [
        ("TYPE_NAME", "VARCHAR"),
        ("DATA_TYPE", "BIGINT"),
        ("PRECISION", "BIGINT"),
        ("LITERAL_PREFIX", "VARCHAR"),
        ("LITERAL_SUFFIX", "VARCHAR"),
        ("CREATE_PARAMS", "VARCHAR"),
        ("NULLABLE", "BIGINT"),
        ("CASE_SENSITIVE", "BOOLEAN"),
        ("SEARCHABLE", "BIGINT"),
        ("UNSIGNED_ATTRIBUTE", "BOOLEAN"),
        ("FIXED_PREC_SCALE", "BOOLEAN"),
        ("AUTO_INCREMENT", "BOOLEAN"),
        ("LOCAL_TYPE_NAME", "VARCHAR"),
        ("MINIMUM_SCALE", "BIGINT"),
        ("MAXIMUM_SCALE", "BIGINT"),
        ("SQL_DATA_TYPE", "BIGINT"),
        ("SQL_DATETIME_SUB", "BIGINT"),
        ("NUM_PREC_RADIX", "BIGINT"),
    ],
}


_SCHEMAS = ("INFORMATION_SCHEMA", "druid", "lookup")


_TYPE_INFO = [
    (
        name,
        tid,
        0 if name != "VARCHAR" else 2147483647,
        "'" if name == "VARCHAR" else None,
        "'" if name == "VARCHAR" else None,
        None,
        1,
        name == "VARCHAR",
        3,
        False,
        False,
        False,
        name,
        0,
        0,
        None,
        None,
        10,
    )
    for name, tid in sorted((t.druid, t.jdbc) for t in TYPES)
    if name != "OTHER"
] + [
    (
        ARRAY.druid,
        ARRAY.jdbc,
        0,
        None,
        None,
        None,
        1,
        False,
        3,
        False,
        False,
        False,
        "ARRAY",
        0,
        0,
        None,
        None,
        10,
    )
]


def _like_match(value: str, pattern: Any) -> bool:
    if pattern is None:
        return True
    import re

    regex, i, p = [], 0, str(pattern)
    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p):
            regex.append(re.escape(p[i + 1]))
            i += 2
            continue
        regex.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(regex), value, flags=re.DOTALL) is not None


class MetadataCalls(Connections):
    """The ``DatabaseMetaData`` calls, each a result set of the shape Druid's JDBC metadata has."""

    def _meta(self, conn: _Connection, call: str, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
        """A metadata result as Druid 33 answers it: a fresh statement id that Druid closes itself
        (``ownStatement`` false: the driver sends no ``closeStatement``), the SQL it ran in the signature,
        every row in the first frame."""
        columns = [Column(n, t) for n, t in _META_COLUMNS[call]]
        with conn.lock:
            sid = conn.new_id()  # fresh id; nothing is kept: every row is in the first frame
        sql = f"SELECT {', '.join(n for n, _ in _META_COLUMNS[call])} FROM INFORMATION_SCHEMA"
        return {
            "response": "resultSet",
            "connectionId": conn.id,
            "statementId": sid,
            "ownStatement": False,
            "signature": _signature(columns, sql),
            "firstFrame": {"offset": 0, "done": True, "rows": rows},
            "updateCount": -1,
            "rpcMetadata": self.rpc_metadata(),
        }

    def _query(self, conn: _Connection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        result = self.engine.execute(conn.client_id, sql, params)
        return [tuple(r.values()) for r in result.table.to_pylist()]

    @staticmethod
    def _like(clauses: list[str], params: list[Any], column: str, pattern: Any) -> None:
        if pattern is not None:
            clauses.append(f"{column} LIKE ? ESCAPE '\\'")
            params.append(str(pattern))

    def _do_getCatalogs(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        return self._meta(self._conn(req, caller), "getCatalogs", [("druid",)])

    def _do_getSchemas(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        catalog, pattern = _str_field(req, "catalog", required=False), _pattern_field(req, "schemaPattern")
        rows = [(s, "druid") for s in _SCHEMAS if catalog in (None, "druid") and _like_match(s, pattern)]
        return self._meta(conn, "getSchemas", rows)

    def _do_getTableTypes(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        return self._meta(self._conn(req, caller), "getTableTypes", [("SYSTEM_TABLE",), ("TABLE",)])

    def _do_getTypeInfo(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        return self._meta(self._conn(req, caller), "getTypeInfo", list(_TYPE_INFO))

    def _do_getTables(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        if _str_field(req, "catalog", required=False) not in (None, "druid"):
            return self._meta(conn, "getTables", [])
        clauses, params = ["1 = 1"], list[Any]()
        self._like(clauses, params, "TABLE_SCHEMA", _pattern_field(req, "schemaPattern"))
        self._like(clauses, params, "TABLE_NAME", _pattern_field(req, "tableNamePattern"))
        types = _list_field(req, "typeList")
        if types is not None:
            if not all(isinstance(t, str) for t in types):
                raise SqlError('getTables: "typeList" must be a list of strings.')
            if not types:
                return self._meta(conn, "getTables", [])
            clauses.append("TABLE_TYPE IN (" + ", ".join("?" for _ in types) + ")")
            params.extend(str(t) for t in types)
        sql = (
            "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM INFORMATION_SCHEMA.TABLES WHERE "
            + " AND ".join(clauses)
            + " ORDER BY TABLE_TYPE, TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME"
        )
        rows = [r + (None,) * 6 for r in self._query(conn, sql, params)]
        return self._meta(conn, "getTables", rows)

    def _do_getColumns(self, req: dict[str, Any], caller: _Caller) -> dict[str, Any]:
        conn = self._conn(req, caller)
        if _str_field(req, "catalog", required=False) not in (None, "druid"):
            return self._meta(conn, "getColumns", [])
        clauses, params = ["1 = 1"], list[Any]()
        self._like(clauses, params, "TABLE_SCHEMA", _pattern_field(req, "schemaPattern"))
        self._like(clauses, params, "TABLE_NAME", _pattern_field(req, "tableNamePattern"))
        self._like(clauses, params, "COLUMN_NAME", _pattern_field(req, "columnNamePattern"))
        sql = (
            "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, JDBC_TYPE, DATA_TYPE, IS_NULLABLE, "
            "ORDINAL_POSITION FROM INFORMATION_SCHEMA.COLUMNS WHERE "
            + " AND ".join(clauses)
            + " ORDER BY TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"
        )
        rows = []
        for cat, schema, table, column, jdbc, dtype, is_nullable, ordinal in self._query(conn, sql, params):
            nullable = 1 if is_nullable == "YES" else 0
            rows.append(
                (
                    cat,
                    schema,
                    table,
                    column,
                    jdbc,
                    dtype,
                    -1,
                    -1,
                    -1,
                    -1,
                    nullable,
                    None,
                    "",  # COLUMN_DEF, SQL_DATA_TYPE, SQL_DATETIME_SUB: what Druid 33 answers
                    -1,
                    -1,
                    -1,
                    ordinal,
                    is_nullable,
                    None,
                    None,
                    None,
                    -1,
                    "NO",
                    "NO",
                )
            )
        return self._meta(conn, "getColumns", rows)
