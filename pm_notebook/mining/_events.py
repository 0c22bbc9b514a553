"""The events of :class:`~pm_notebook.mining.ProcessLog` for pm4py: ``event_sql``, ``to_pm4py`` and
``iter_events``, plain functions of an :class:`~._runner.Ask` (see :mod:`._runner`) over the statement of
:func:`._sql.events.events`; the only answer that pulls every task of the filtered log."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pandas as pd

from ..errors import PMError
from ._runner import Ask
from ._shaping import in_task_order
from ._sql import events as events_sql
from ._sql._base import Statement

__all__ = ["event_statement", "iter_events", "to_pm4py", "uploaded_names"]


def event_statement(ask: Ask, dimensions: Iterable[str] | str | None = "all") -> Statement:
    """The statement of :meth:`ProcessLog.event_sql <pm_notebook.mining.ProcessLog.event_sql>`: one row per
    task with pm4py's names (the dimensions under the names the log was uploaded with)."""
    return events_sql.events(ask.schema, ask.filters, dimensions, uploaded_names(ask))


def uploaded_names(ask: Ask) -> dict[str, str]:
    """Druid column → the name the log was uploaded with, from the project's mapping (``{}`` when the
    service has none for it)."""
    try:
        named = ask.runner.source.column_names(ask.project)
    except PMError:  # a project without a mapping (an empty one, say): the columns' own names
        return {}
    return {column: name for name, column in named.items()}


def to_pm4py(
    ask: Ask, dimensions: Iterable[str] | str | None = "all", *, chunk_rows: int = 200_000
) -> pd.DataFrame:
    """The answer of ``ProcessLog.to_pm4py()`` (documented there)."""
    statement = event_statement(ask, dimensions)
    frames = list(ask.chunks(statement, chunk_rows))
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    frame = in_task_order(
        frame, "case:concept:name", "start_timestamp", "time:timestamp", "concept:name", "org:resource"
    )
    return ask.answer(frame, events=True)


def iter_events(
    ask: Ask, dimensions: Iterable[str] | str | None = "all", *, chunk_rows: int = 200_000
) -> Iterator[pd.DataFrame]:
    """The answer of ``ProcessLog.iter_events()`` (documented there)."""
    yield from ask.chunks(event_statement(ask, dimensions), chunk_rows)
