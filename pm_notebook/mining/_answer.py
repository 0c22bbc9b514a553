"""The DataFrame a process-mining answer is: a plain one that shows its durations rounded.

Only the display changes (``6 min 57 s`` rather than ``0 days 00:06:56.822000``, which wraps the activity
names beside it): the values stay full-precision ``Timedelta``. What an analyst derives from an answer
(``head()``, a column selection, ``sort_values()``, ``.T``, arithmetic) is an ``Answer`` too, so a notebook
cell that trims an answer shows the same rounded durations as the answer; a column alone is a plain
``Series``.
The events :meth:`~pm_notebook.mining.ProcessLog.to_pm4py` returns are a plain ``pandas.DataFrame`` (pm4py
takes no subclass as a log), and ``pandas.DataFrame(answer)`` gives one whenever another library needs it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pandas.io.formats import format as pandas_format

from .._display import duration_formatters

__all__ = ["Answer"]


class Answer(pd.DataFrame):
    """A process-mining answer: a ``pandas.DataFrame`` whose notebook and text displays show durations
    rounded for reading (:func:`pm_notebook._display.readable_duration`), within pandas' display options
    (``display.max_rows``, ``display.min_rows``, ``display.max_columns``, ...)."""

    # pandas' subclassing contract: what an operation builds is an Answer again (attrs kept by pandas); the
    # display is the only difference, so nothing is lost when an operation keeps the type
    _metadata: list[str] = []

    @property
    def _constructor(self) -> Any:
        return Answer

    def _plain_display(self) -> bool:
        """Whether pandas' own display applies: no duration to format, or ``display.large_repr = "info"``."""
        info_repr: Any = pd.DataFrame._info_repr  # type: ignore[attr-defined]  # not in pandas-stubs
        return not duration_formatters(self) or bool(info_repr(self))

    def __repr__(self) -> str:
        if self._plain_display():
            return super().__repr__()
        # the parameters of pandas' own repr (rows, columns, width), documented by pandas for this use
        params: dict[str, Any] = pandas_format.get_dataframe_repr_params()  # type: ignore[attr-defined]
        return str(self.to_string(formatters=duration_formatters(self), **params))

    def _repr_html_(self) -> str | None:
        if self._plain_display() or not pd.get_option("display.notebook_repr_html"):
            html: str | None = super()._repr_html_()  # type: ignore[misc]  # not in pandas-stubs
            return html
        formatters = duration_formatters(self)
        max_rows = pd.get_option("display.max_rows")
        min_rows = pd.get_option("display.min_rows")
        # pandas shows min_rows rows of a frame longer than max_rows (as its own _repr_html_ does)
        if max_rows and len(self) > max_rows and min_rows:
            max_rows = min(min_rows, max_rows)
        return str(
            self.to_html(
                formatters=formatters,
                float_format=pd.get_option("display.float_format"),
                max_rows=max_rows,
                max_cols=pd.get_option("display.max_columns"),
                show_dimensions=pd.get_option("display.show_dimensions"),
                notebook=True,
            )
        )
