"""Druid's SQL HTTP API (``POST /druid/v2/sql/``): request parsing and result encoding.

Request: ``{"query", "resultFormat", "header", "typesHeader", "sqlTypesHeader", "parameters", "context"}``
with HTTP Basic ``client_id:client_secret``. Results are encoded from the Arrow table in slices of
``_CHUNK`` rows and streamed, in the five formats Druid has:

* ``object`` (default) / ``array``: one JSON array of row objects / row arrays;
* ``objectLines`` / ``arrayLines``: one JSON value per line, then an empty line marking the end;
* ``csv``: comma-separated (written by ``pyarrow.csv``), then an empty line.

With ``header`` the first row holds the column names (object formats: ``{"col": null}``, or
``{"col": {"type": ..., "sqlType": ...}}`` with the type flags; array and csv formats: extra rows of
names, native types, SQL types). TIMESTAMP and DATE values are ISO-8601 strings in UTC
(``2025-01-06T08:38:03.516Z``); arrays are JSON-stringified unless ``context.sqlStringifyArrays`` is false.
"""

from __future__ import annotations

import datetime as dt
import io
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.csv as pacsv

from .jsonrows import csv_ready, encode_rows, join_lines
from .sqlengine import Column, QueryResult, SqlEngine
from .sqlerrors import SqlError

__all__ = ["DruidRequest", "encode_result", "parse_request"]

FORMATS = ("object", "array", "objectLines", "arrayLines", "csv")
_CHUNK = 50_000
_MEDIA = {
    "object": "application/json",
    "array": "application/json",
    "objectLines": "text/plain",
    "arrayLines": "text/plain",
    "csv": "text/csv",
}


@dataclass(frozen=True)
class DruidRequest:
    """A validated SQL API request."""

    query: str
    result_format: str
    header: bool
    types_header: bool
    sql_types_header: bool
    parameters: list
    context: dict
    query_id: str

    @property
    def media_type(self) -> str:
        return _MEDIA[self.result_format]


def _param_value(p: Any, i: int) -> Any:
    if not isinstance(p, dict) or "type" not in p:
        raise SqlError(f'parameters[{i}] must be an object like {{"type": "VARCHAR", "value": "x"}}.')
    kind, value = str(p["type"]).upper(), p.get("value")
    if value is None:
        return None
    try:
        if kind in ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "LONG"):
            return int(value)
        if kind in ("DOUBLE", "FLOAT", "REAL", "DECIMAL"):
            return float(value)
        if kind == "BOOLEAN":
            return value if isinstance(value, bool) else str(value).lower() == "true"
        if kind in ("TIMESTAMP", "DATE"):
            if isinstance(value, int | float):
                ts = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=value)
            else:
                ts = dt.datetime.fromisoformat(str(value).replace("Z", "").replace(" ", "T"))
            return ts.date() if kind == "DATE" else ts
        if kind in ("VARCHAR", "CHAR", "STRING"):
            return str(value)
        if kind.startswith("ARRAY"):
            return list(value)
    except (TypeError, ValueError):
        raise SqlError(f"parameters[{i}]: value {value!r} is not a valid {kind}.") from None
    raise SqlError(
        f"parameters[{i}]: unknown type '{p['type']}' (use VARCHAR, BIGINT, DOUBLE, BOOLEAN, TIMESTAMP, "
        "DATE or ARRAY)."
    )


def parse_request(body: bytes) -> DruidRequest:
    """Validate a request body; :class:`SqlError` names the bad field."""
    try:
        req = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise SqlError('The request body is not valid JSON: send {"query": "SELECT ..."}.') from None
    if not isinstance(req, dict):
        raise SqlError('The request body must be a JSON object: {"query": "SELECT ..."}.')
    query = req.get("query")
    if not isinstance(query, str) or not query.strip():
        raise SqlError('Missing "query": send {"query": "SELECT ..."}.')
    fmt = req.get("resultFormat") or "object"
    if fmt not in FORMATS:
        raise SqlError(f"Unknown resultFormat '{fmt}': use one of {', '.join(FORMATS)}.")
    header = bool(req.get("header", False))
    types, sql_types = bool(req.get("typesHeader", False)), bool(req.get("sqlTypesHeader", False))
    if (types or sql_types) and not header:
        raise SqlError("typesHeader and sqlTypesHeader can only be set when header is also true.")
    params = req.get("parameters") or []
    if not isinstance(params, list):
        raise SqlError('"parameters" must be a list of {"type", "value"} objects.')
    context = req.get("context") or {}
    if not isinstance(context, dict):
        raise SqlError('"context" must be a JSON object.')
    tz = context.get("sqlTimeZone")
    if tz and str(tz).upper() not in ("UTC", "ETC/UTC", "Z", "GMT"):
        raise SqlError(f"sqlTimeZone '{tz}' is not supported by the sandbox (only UTC).", "unsupported")
    return DruidRequest(
        query=query,
        result_format=fmt,
        header=header,
        types_header=types,
        sql_types_header=sql_types,
        parameters=[_param_value(p, i) for i, p in enumerate(params)],
        context=context,
        query_id=str(context.get("sqlQueryId") or uuid.uuid4()),
    )


def run(engine: SqlEngine, client_id: str, req: DruidRequest) -> QueryResult:
    """Execute the request's query (timeout from ``context.timeout`` in ms, capped by the options)."""
    timeout = req.context.get("timeout")
    seconds = float(timeout) / 1000 if isinstance(timeout, int | float) and timeout > 0 else None
    result = engine.execute(client_id, req.query, req.parameters, timeout=seconds)
    result.query_id = req.query_id
    return result


# --------------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------------


def _header_rows(req: DruidRequest, columns: list[Column]) -> tuple[Any, list[list[str]]]:
    names = [c.name for c in columns]
    if req.types_header or req.sql_types_header:
        obj: dict[str, Any] = {}
        for c in columns:
            info = {}
            if req.types_header:
                info["type"] = c.native_type
            if req.sql_types_header:
                info["sqlType"] = c.sql_type
            obj[c.name] = info
    else:
        obj = dict.fromkeys(names)
    rows = [names]
    if req.types_header:
        rows.append([c.native_type for c in columns])
    if req.sql_types_header:
        rows.append([c.sql_type for c in columns])
    return obj, rows


def encode_result(req: DruidRequest, result: QueryResult) -> Iterator[bytes]:
    """Yield the response body of *result* in the request's format, a slice of rows at a time."""
    columns, table, fmt = result.columns, result.table, req.result_format
    stringify = bool(req.context.get("sqlStringifyArrays", True))
    header_obj, header_rows = _header_rows(req, columns) if req.header else (None, [])
    if fmt == "csv":
        yield from _encode_csv(table, columns, header_rows)
        return
    lines = fmt.endswith("Lines")
    objects = fmt.startswith("object")
    sep = b"\n" if lines else b","
    wrote = False
    if not lines:
        yield b"["
    if req.header:
        head = [orjson.dumps(header_obj)] if objects else [orjson.dumps(r) for r in header_rows]
        yield sep.join(head)
        wrote = True
    for start in range(0, table.num_rows, _CHUNK):
        chunk = table.slice(start, _CHUNK)
        body = join_lines(
            encode_rows(chunk, columns, mode="druid", objects=objects, stringify=stringify), sep
        )
        yield sep + body if wrote else body
        wrote = True
    if lines:
        yield b"\n\n" if wrote else b"\n"
    else:
        yield b"]"


def _encode_csv(table: pa.Table, columns: list[Column], header_rows: list[list[str]]) -> Iterator[bytes]:
    for row in header_rows:
        yield (",".join(_csv_cell(v) for v in row) + "\n").encode()
    for start in range(0, table.num_rows, _CHUNK):
        chunk = csv_ready(table.slice(start, _CHUNK), columns)
        buf = io.BytesIO()
        pacsv.write_csv(chunk, buf, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
        yield buf.getvalue()
    yield b"\n"


def _csv_cell(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\n') else v
