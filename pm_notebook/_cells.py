"""Single result cells (a ``COUNT(*)``, a frequency) read as Python numbers.

pandas types a cell of a DataFrame as any scalar it could hold (text, dates, ``NA``...); these helpers do
what ``int()``/``float()`` do on a numeric cell and give the type checker the narrowing it needs. Anything
``int()`` or ``float()`` would refuse is refused with a ``TypeError`` too.
"""

from __future__ import annotations

from typing import SupportsFloat, SupportsIndex, SupportsInt

__all__ = ["cell_float", "cell_int"]


def cell_int(value: object) -> int:
    """``int(value)`` for a numeric (or numeric text) cell.

    >>> import numpy as np
    >>> cell_int(np.int64(3)), cell_int(2.0)
    (3, 2)
    """
    if isinstance(value, (str, SupportsInt, SupportsIndex)):
        return int(value)
    raise TypeError(f"int() argument must be a string or a real number, not '{type(value).__name__}'")


def cell_float(value: object) -> float:
    """``float(value)`` for a numeric (or numeric text) cell.

    >>> import numpy as np
    >>> cell_float(np.int64(3)), cell_float("0.5")
    (3.0, 0.5)
    """
    if isinstance(value, (str, SupportsFloat, SupportsIndex)):
        return float(value)
    raise TypeError(f"float() argument must be a string or a real number, not '{type(value).__name__}'")
