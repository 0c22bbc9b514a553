"""A string holder that never shows its value."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["Masked", "MaskedBytes", "Secret"]


class Secret:
    """Hold a secret string (client secret, token) so that no repr, str or format shows it.

    The value is only read through :meth:`reveal`, at the point where bytes go on the wire.

    >>> s = Secret("hunter2")
    >>> s, str(s), f"{s}"
    (Secret('***'), '***', '***')
    >>> s.reveal()
    'hunter2'
    """

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError(f"Secret expects a str, got {type(value).__name__}")
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        return self._value

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Secret is immutable")

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Secret):
            return self._value == other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> NoReturn:
        raise TypeError("Secret values are not picklable")


class Masked(str):
    """A revealed secret on its way to the wire (a header value): a ``str`` whose repr hides it.

    Frames of ``requests``/``urllib3`` hold header values in locals until ``http.client`` encodes them; a
    traceback with locals then shows ``Masked('***')`` instead of the value.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "Masked('***')"


class MaskedBytes(bytes):
    """A request body that carries a secret (an Avatica ``openConnection``): ``bytes`` whose repr hides it."""

    def __repr__(self) -> str:
        return f"MaskedBytes(<{len(self)} bytes, secret inside>)"
