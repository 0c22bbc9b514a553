"""Sans-IO Avatica JSON: request builders and response parsers, named after the protocol's own calls.

No sockets, no pandas: :func:`encode` gives the bytes to POST, :func:`decode` turns an answer body into a dict
(raising the mapped error for ``{"response":"error"}``), and the ``*_frame``/``signature_columns`` helpers
read results. :func:`decode_frame` and :func:`row_lines` read a frame's rows without a Python object per cell:
the ``rows`` array is cut out of the body as text (the small rest is decoded as usual) and rewritten as one
JSON array per line, the shape of Druid's ``arrayLines`` that :mod:`pm_notebook.frames` parses column-wise.
The message shapes follow the Avatica 1.26 JSON reference (field names exactly as the Java driver sends them,
so a Druid broker cannot tell us from the JDBC driver), corrected by what a Druid 33 broker answers
(``tests/druid/test_protocols.py``): an ``executeResults`` answer lists its result sets under ``results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from .._secret import MaskedBytes, Secret
from ._errors import from_avatica
from .base import ColumnSpec
from .params import check_params, classify

__all__ = [
    "close_connection",
    "close_statement",
    "connection_sync",
    "create_statement",
    "decode",
    "decode_frame",
    "decode_rows",
    "encode",
    "execute",
    "fetch",
    "frame_columns",
    "open_connection",
    "parameter_values",
    "prepare",
    "prepare_and_execute",
    "row_lines",
    "rows_as_lines",
    "signature_columns",
    "typed_value",
]


def encode(message: dict[str, Any]) -> bytes:
    """The body to POST for *message* (compact JSON, UTF-8).

    A :class:`~pm_notebook._secret.Secret` value (the ``openConnection`` password) is revealed here, inside
    the encoder, and the body that carries it is a :class:`~pm_notebook._secret.MaskedBytes`: no frame on the
    way to the socket shows the secret in its locals.
    """
    revealed = False

    def reveal(value: Any) -> Any:
        nonlocal revealed
        if isinstance(value, Secret):
            revealed = True
            return value.reveal()
        raise TypeError(f"{type(value).__name__} is not JSON serialisable")

    body = orjson.dumps(message, default=reveal)
    return MaskedBytes(body) if revealed else body


def decode(body: bytes, expected: str, *, sql: str | None = None, url: str | None = None) -> dict[str, Any]:
    """Parse an answer body; raise the mapped error for an error object or an unexpected ``response`` tag."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        from ..errors import QueryError

        raise QueryError(
            f"The SQL endpoint sent a body that is not JSON ({len(body)} bytes).",
            sql=sql,
            url=url,
            hint="Is the JDBC URL pointing at a Druid Avatica endpoint?",
        ) from exc
    reply: dict[str, Any] = message if isinstance(message, dict) else {}
    kind = reply.get("response")
    if kind == "error":
        raise from_avatica(reply, sql=sql, url=url)
    if kind != expected:
        from ..errors import QueryError

        raise QueryError(f"The SQL endpoint answered {kind!r} to a {expected!r} request.", sql=sql, url=url)
    return reply


_ROWS_KEY = b'"rows":['


def decode_frame(
    body: bytes, expected: str, *, sql: str | None = None, url: str | None = None
) -> tuple[dict[str, Any], bytes | None]:
    """:func:`decode` an answer that carries a frame, leaving the frame's rows as JSON text.

    Returns the message with ``rows`` emptied and the text of the ``rows`` array (``[[...],[...]]``), or
    ``None`` for the text when the body has no rows array (an error, a null frame): then the message is
    :func:`decode`'s own. The key ``"rows":[`` can only be a key: inside a JSON string every quote is
    escaped. The array's end is the last ``]`` whose cut leaves a valid message (only envelope fields, no
    row data, follow the rows), so no string in the rows can mislead the search.
    """
    start = body.find(_ROWS_KEY)
    if start < 0:
        return decode(body, expected, sql=sql, url=url), None
    start += len(_ROWS_KEY) - 1
    end = len(body)
    while (end := body.rfind(b"]", start, end)) > start:
        try:
            message = orjson.loads(body[:start] + b"[]" + body[end + 1 :])
        except orjson.JSONDecodeError:
            continue
        if isinstance(message, dict) and message.get("response") == expected:
            return message, body[start : end + 1]
        break
    return decode(body, expected, sql=sql, url=url), None


def decode_rows(rows: bytes, *, sql: str | None = None) -> list[Any]:
    """The rows text of :func:`decode_frame`, decoded with orjson (the way for nested values)."""
    try:
        values = orjson.loads(rows)
    except orjson.JSONDecodeError as exc:
        from ..errors import QueryError

        raise QueryError(f"The SQL endpoint sent rows that are not JSON: {exc}", sql=sql) from None
    if not isinstance(values, list):
        from ..errors import QueryError

        raise QueryError("The SQL endpoint sent a frame whose rows are not a list.", sql=sql)
    return values


#: SQL types whose Avatica values are JSON scalars (numbers, strings, booleans, epoch numbers): frames of
#: these columns only can be cut into lines without parsing them
LINE_TYPES = frozenset(
    (
        *("TIMESTAMP", "DATE", "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "REAL"),
        *("DECIMAL", "NUMERIC", "BOOLEAN", "VARCHAR", "CHAR"),
    )
)


def rows_as_lines(columns: Sequence[ColumnSpec]) -> bool:
    """Whether frames of these columns can be read with :func:`row_lines` (all scalar, none nested)."""
    return bool(columns) and all(c.type_name.split("(", 1)[0] in LINE_TYPES for c in columns)


def row_lines(rows: bytes) -> tuple[bytes, int] | None:
    """A frame's ``rows`` text (``[[1,"a"],[2,"b"]]``) as newline-separated rows and their count.

    The rows must hold scalars only (see :func:`rows_as_lines`): then every ``],[`` outside a string
    separates two rows. Strings are told apart by the parity of the unescaped quotes before each ``],[``
    (numpy over the bytes, no Python object per row). Returns ``None`` when a string holds ``],[`` (the
    caller decodes that frame with orjson) or when the text is not an array of arrays.
    """
    if rows == b"[]":
        return b"", 0
    if len(rows) < 4 or rows[:2] != b"[[" or rows[-2:] != b"]]":
        return None
    inner = rows[1:-1]
    # Escaped backslashes and quotes do not open or close strings: blank them (same length) first.
    plain = inner.replace(b"\\\\", b"__").replace(b'\\"', b"__") if b"\\" in inner else inner
    view = np.frombuffer(plain, np.uint8)
    quotes = np.flatnonzero(view == ord('"'))
    closes = np.flatnonzero(view[:-2] == ord("]"))
    closes = closes[(view[closes + 1] == ord(",")) & (view[closes + 2] == ord("["))]
    if closes.size and (np.searchsorted(quotes, closes) & 1).any():
        return None
    lines = bytearray(inner)
    np.frombuffer(lines, np.uint8)[closes + 1] = ord("\n")
    return bytes(lines), int(closes.size) + 1


# --- requests


def open_connection(connection_id: str, info: dict[str, Any]) -> dict[str, Any]:
    """``openConnection``: ``info`` carries ``user``/``password`` (how Druid authenticates JDBC); the password
    may stay a ``Secret``: :func:`encode` reveals it."""
    return {"request": "openConnection", "connectionId": connection_id, "info": info}


def connection_sync(connection_id: str) -> dict[str, Any]:
    """``connectionSync`` with the driver's default (unset) properties."""
    return {
        "request": "connectionSync",
        "connectionId": connection_id,
        "connProps": {
            "connProps": "connPropsImpl",
            "autoCommit": None,
            "readOnly": None,
            "transactionIsolation": None,
            "catalog": None,
            "schema": None,
            "dirty": True,
        },
    }


def create_statement(connection_id: str) -> dict[str, Any]:
    """``createStatement``: the server allocates the statement id."""
    return {"request": "createStatement", "connectionId": connection_id}


def prepare_and_execute(
    connection_id: str,
    statement_id: int,
    sql: str,
    *,
    max_rows_in_first_frame: int = -1,
    max_row_count: int = -1,
) -> dict[str, Any]:
    """``prepareAndExecute`` of *sql* on an existing statement (no parameters)."""
    return {
        "request": "prepareAndExecute",
        "connectionId": connection_id,
        "statementId": statement_id,
        "sql": sql,
        "maxRowsInFirstFrame": max_rows_in_first_frame,
        "maxRowCount": max_row_count,
    }


def prepare(connection_id: str, sql: str, *, max_row_count: int = -1) -> dict[str, Any]:
    """``prepare``: the answer's signature gives the columns and one parameter per ``?``."""
    return {"request": "prepare", "connectionId": connection_id, "sql": sql, "maxRowCount": max_row_count}


def execute(
    statement: dict[str, Any], parameter_values: list[dict[str, Any]], *, first_frame_rows: int
) -> dict[str, Any]:
    """``execute`` of a prepared *statement* handle; ``maxRowCount`` here is the first frame's size."""
    return {
        "request": "execute",
        "statementHandle": statement,
        "parameterValues": parameter_values,
        "maxRowCount": first_frame_rows,
    }


def fetch(connection_id: str, statement_id: int, offset: int, fetch_max_row_count: int) -> dict[str, Any]:
    """``fetch`` the frame starting at *offset* (the number of rows received so far)."""
    return {
        "request": "fetch",
        "connectionId": connection_id,
        "statementId": statement_id,
        "offset": offset,
        "fetchMaxRowCount": fetch_max_row_count,
    }


def close_statement(connection_id: str, statement_id: int) -> dict[str, Any]:
    """``closeStatement``: frees (and on Druid, cancels) the statement's query."""
    return {"request": "closeStatement", "connectionId": connection_id, "statementId": statement_id}


def close_connection(connection_id: str) -> dict[str, Any]:
    """``closeConnection``."""
    return {"request": "closeConnection", "connectionId": connection_id}


#: Druid type of a classified parameter -> the Avatica TypedValue rep the JDBC driver's setter sends
_REPS = {
    "NULL": "OBJECT",
    "BOOLEAN": "BOOLEAN",
    "BIGINT": "LONG",
    "DOUBLE": "DOUBLE",
    "VARCHAR": "STRING",
    "TIMESTAMP": "JAVA_SQL_TIMESTAMP",
    "DATE": "JAVA_SQL_DATE",
}


def typed_value(value: Any) -> dict[str, Any]:
    """A parameter → Avatica ``TypedValue``, as the JDBC driver's setters would send it.

    TIMESTAMP is wall-clock UTC milliseconds, DATE days since 1970-01-01 (see :mod:`.params`).

    :raises ConfigurationError: for values SQL parameters cannot carry (see :func:`.params.classify`).
    """
    param = classify(value)
    return {"type": _REPS[param.type], "value": param.value, "componentType": None}


# --- answers


def _column_spec(column: dict[str, Any]) -> ColumnSpec:
    avatica_type = column.get("type") or {}
    name = column.get("label") or column.get("columnName") or f"EXPR${column.get('ordinal', 0)}"
    component = avatica_type.get("component")
    element = component.get("name") if isinstance(component, dict) else None
    type_name = str(avatica_type.get("name") or "VARCHAR").upper()
    if avatica_type.get("type") == "array" or avatica_type.get("id") == 2003:
        type_name = "ARRAY"
    return ColumnSpec(
        name=name, type_name=type_name, element_type=element, nullable=column.get("nullable", 1) != 0
    )


def signature_columns(signature: dict[str, Any] | None) -> tuple[ColumnSpec, ...]:
    """The result columns of a signature, in ``ordinal`` order."""
    if not signature:
        return ()
    columns = sorted(signature.get("columns") or [], key=lambda c: c.get("ordinal", 0))
    return tuple(_column_spec(c) for c in columns)


def frame_columns(frame: dict[str, Any] | None, width: int) -> tuple[list[Sequence[Any]], int, bool]:
    """A frame's rows transposed to ``width`` columns: ``(columns, row count, done)``."""
    if not frame:
        return [[] for _ in range(width)], 0, False
    rows = frame.get("rows") or []
    done = bool(frame.get("done"))
    if not rows:
        return [[] for _ in range(width)], 0, done
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) if width else []
    if len(columns) != width:
        from ..errors import QueryError

        raise QueryError(f"The SQL endpoint sent rows of {len(columns)} values for {width} columns.")
    return columns, len(rows), done


def parameter_values(params: Sequence[Any]) -> list[dict[str, Any]]:
    """The ``parameterValues`` list of an ``execute`` request, one TypedValue per ``?``."""
    return [typed_value(p) for p in check_params(list(params))]
