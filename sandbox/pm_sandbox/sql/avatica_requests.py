"""The request side of the Avatica endpoint: request fields checked for their JSON type and range, Avatica
TypedValues turned into Python values, and the caller's credentials."""

from __future__ import annotations

import base64
import datetime as dt
from typing import TYPE_CHECKING, Any

from .errors import SqlError

if TYPE_CHECKING:
    from ..data.store import Store

__all__ = ["_Caller"]

_EPOCH = dt.datetime(1970, 1, 1)


def _typed_value(tv: Any) -> Any:
    """Python value of an Avatica TypedValue (see the encodings table in avatica-json.md).

    :raises ValueError, TypeError, OverflowError: a value that does not fit its ``type`` (the caller names
        the parameter in a :class:`SqlError`).
    """
    if tv is None:
        return None
    if not isinstance(tv, dict):
        if isinstance(tv, list):
            raise TypeError("expected a TypedValue object, got a list")
        return tv
    kind, value = tv.get("type"), tv.get("value")
    if value is None:
        return None
    if kind == "ARRAY":
        if not isinstance(value, list):
            raise TypeError("an ARRAY value must be a list")
        return [_typed_value(v) for v in value]
    if isinstance(value, dict | list):
        raise TypeError(f"a {kind} value must be a JSON scalar")
    if kind == "JAVA_SQL_TIMESTAMP" or kind == "JAVA_UTIL_DATE":
        return _EPOCH + dt.timedelta(milliseconds=_whole(value))
    if kind == "JAVA_SQL_DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=_whole(value))
    if kind == "JAVA_SQL_TIME":
        return (_EPOCH + dt.timedelta(milliseconds=_whole(value))).time()
    if kind == "BYTE_STRING":
        return base64.b64decode(str(value), validate=True)
    if kind in ("DOUBLE", "FLOAT", "PRIMITIVE_DOUBLE", "PRIMITIVE_FLOAT"):
        return float(value)
    if kind in _INTEGRAL:
        # orjson reads an integer beyond 64 bits as a float: never round it silently
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"a {kind} value must be an integer")
        if not -(2**63) <= value < 2**63:
            raise OverflowError("integer out of the 64-bit range")
    return value


_INTEGRAL = frozenset(
    (
        "LONG",
        "INTEGER",
        "SHORT",
        "BYTE",
        "PRIMITIVE_LONG",
        "PRIMITIVE_INT",
        "PRIMITIVE_SHORT",
        "PRIMITIVE_BYTE",
    )
)


def _whole(value: Any) -> int:
    """An integral count (ms or days) of a TypedValue; bools and fractions are not counts."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError("expected an integer")
    return int(value)


_INT64 = (-(2**63), 2**63 - 1)


_INT32 = (-(2**31), 2**31 - 1)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _str_field(req: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    """A string field of *req*; a missing required one or a value of another type is a :class:`SqlError`."""
    value = req.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise SqlError(f'{req.get("request")}: "{name}" must be a non-empty string, got {_kind(value)}.')
    return value


def _int_field(req: dict[str, Any], name: str, default: int, bounds: tuple[int, int] = _INT64) -> int:
    """An integer field of *req* within *bounds* (*default* when absent or null)."""
    value = req.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SqlError(f'{req.get("request")}: "{name}" must be an integer, got {_kind(value)}.')
    if not bounds[0] <= value <= bounds[1]:
        raise SqlError(f'{req.get("request")}: "{name}" is out of range ({value}).')
    return value


def _obj_field(req: dict[str, Any], name: str) -> dict[str, Any]:
    """An object field of *req* (``{}`` when absent or null)."""
    value = req.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SqlError(f'{req.get("request")}: "{name}" must be an object, got {_kind(value)}.')
    return value


def _list_field(req: dict[str, Any], name: str) -> list[Any] | None:
    """A list field of *req* (``None`` when absent or null)."""
    value = req.get(name)
    if value is not None and not isinstance(value, list):
        raise SqlError(f'{req.get("request")}: "{name}" must be a list, got {_kind(value)}.')
    return value


def _pattern_field(req: dict[str, Any], name: str) -> str | None:
    """A LIKE pattern field (a string or null)."""
    return _str_field(req, name, required=False)


class _Caller:
    """Who sends a request: the HTTP Basic pair it carried, if any (checked only when it matters)."""

    def __init__(self, store: Store, basic: tuple[str, str] | None) -> None:
        self.store = store
        self.basic = basic

    def may_use(self, client_id: str) -> bool:
        """Whether a connection of workgroup *client_id* is visible to this caller.

        Without credentials the (client-generated, unguessable) connection id is the capability, as with
        Druid; with credentials, only the workgroup they authenticate sees its connections.
        """
        if self.basic is None:
            return True
        wg = self.store.authenticate(*self.basic)
        return wg is not None and wg.id == client_id


def _params(values: list[Any]) -> list[Any]:
    """Python values of ``execute``'s ``parameterValues``; a bad one is a :class:`SqlError` naming it."""
    out = []
    for i, tv in enumerate(values):
        try:
            out.append(_typed_value(tv))
        except (TypeError, ValueError, OverflowError) as e:  # binascii.Error is a ValueError
            kind = tv.get("type") if isinstance(tv, dict) else None
            raise SqlError(f"parameterValues[{i}]: not a valid {kind or 'TypedValue'} value ({e}).") from None
    return out
