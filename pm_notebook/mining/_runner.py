"""The one runner of a process log's statements, and the :class:`Ask` an answer function is handed.

An answer (``summary()``, ``handovers()``, ``drivers()``...) is a plain function of an :class:`Ask` and its
own arguments, in the module of its perspective: it writes its statements with the pure builders of
:mod:`._sql` from ``ask.schema`` and ``ask.filters``, runs each through ``ask.run`` and shapes the frames;
``ask.answer(frame, **attrs)`` makes the result. Every answer's ``attrs`` are written here, once: the
statements that really ran (``sql``), the transport that served them (``transport``, as the
:class:`~._source.Source` reported it with each frame) and the excluded cases.

The :class:`Runner` applies the log's options to every statement from the facts the statement carries (no
SQL text is read back): the log's query context, the context keys the statement needs (``enableWindowing``
for a window), and ``large_subqueries``' ``maxSubqueryBytes`` budget on the statements whose subqueries Druid
inlines; it turns Druid's refusals (the subquery limit, the merge buffers) into errors that say what to do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import ConfigurationError, QueryError
from ._answer import Answer
from ._map import ProcessMap
from ._sql import resources as resources_sql
from ._sql._base import Statement

if TYPE_CHECKING:  # pragma: no cover
    from .._models import Project
    from ._filters import Filters
    from ._schema import Schema
    from ._shaping import MapView
    from ._source import Source

__all__ = ["LARGE_SUBQUERY_BYTES", "Ask", "Runner"]

#: Druid's refusal of inlined subquery results over ``maxSubqueryRows`` (Druid 0.20-27 and 28+ wordings) or
#: over ``maxSubqueryBytes`` ("... beyond maximum[N] bytes")
_SUBQUERY_LIMIT = re.compile(
    r"[Ss]ubquer(?:y|ies) generated results beyond maximum\[(\d+)\](?: (rows|bytes))?"
)
#: Druid's refusal of a plan that needs more of the broker's merge buffers than it has (2 by default)
_MERGE_BUFFERS = re.compile(r"Not enough merge buffer memory", re.IGNORECASE)
#: the ``maxSubqueryBytes`` that ``large_subqueries=True`` sets: Druid's broker sizes the budget from its own
#: heap, so an answer either fits in memory or is refused — the broker never holds more than it can
LARGE_SUBQUERY_BYTES = "auto"


def subquery_budget(large: bool | int) -> str | int | None:
    """The ``maxSubqueryBytes`` of *large* (``False``: none sent, the server's row limit applies; ``True``:
    ``"auto"``, a budget the broker derives from its heap; an integer: that many bytes)."""
    if large is True:
        return LARGE_SUBQUERY_BYTES
    if large is False or large is None:
        return None
    if isinstance(large, int) and large > 0:
        return large
    raise ConfigurationError(
        f"large_subqueries must be True, False or a positive number of bytes, got {large!r}.",
        hint="conn.mining(project, large_subqueries=True)",
    )


class Runner:
    """Runs one log's statements through its :class:`~._source.Source` under the log's options: its query
    *context* (``None``: the source's default) and *large_subqueries* (see
    :meth:`~pm_notebook.mining.ProcessLog.open`)."""

    def __init__(
        self, source: Source, context: Mapping[str, Any] | None, large_subqueries: bool | int
    ) -> None:
        self.source = source
        self.context = None if context is None else dict(context)
        self.large_subqueries = large_subqueries
        self.subquery_bytes = subquery_budget(large_subqueries)

    def context_kw(self, context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """*context* (default: the log's) as keyword arguments of the source, sent only when set, so a
        Source without a context parameter still serves a log without one."""
        context = self.context if context is None else context
        return {} if context is None else {"context": dict(context)}

    def query(self, statement: Statement) -> pd.DataFrame:
        """Run one statement with the log's query context and the keys it needs; one whose subqueries
        Druid inlines gets the ``maxSubqueryBytes`` budget when the log allows large subqueries (a part of an
        answer cut into parts, ``Statement.in_parts``, only when the row limit refuses it), and Druid's
        refusal of a too-large one names what to raise."""
        context = self.context
        if statement.context:
            context = {**(context or {}), **statement.context}
        large = self.subquery_bytes is not None and statement.subquery_limited
        if large and not statement.in_parts:
            context = {**(context or {}), "maxSubqueryBytes": self.subquery_bytes}
        try:
            try:
                return self._send(statement, context)
            except QueryError as exc:
                # a part of an answer cut into parts that still does not fit the row limit: once more under
                # the byte budget (first under the rows: on a small broker a window's frames under the
                # budget can take its heap)
                retry = large and statement.in_parts and _SUBQUERY_LIMIT.search(f"{exc} {exc.server_message}")
                if not retry:
                    raise
                return self._send(statement, {**(context or {}), "maxSubqueryBytes": self.subquery_bytes})
        except QueryError as exc:
            raise _refusal(statement, exc) from exc

    def chunks(self, statement: Statement, chunk_rows: int) -> Iterator[pd.DataFrame]:
        """The rows of *statement* as DataFrames of at most *chunk_rows* rows, as they are fetched."""
        yield from self.source.query_chunks(
            statement.sql, list(statement.params), chunk_rows=chunk_rows, **self.context_kw()
        )

    def _send(self, statement: Statement, context: dict[str, Any] | None) -> pd.DataFrame:
        return self.source.query(statement.sql, list(statement.params), **self.context_kw(context))


def _refusal(statement: Statement, exc: QueryError) -> QueryError:
    """Druid's refusal *exc* of *statement*, said in the log's terms where it is a known one."""
    text = f"{exc} {exc.server_message or ''}"
    limit = _SUBQUERY_LIMIT.search(text)
    if limit is None and _MERGE_BUFFERS.search(text):
        return QueryError(
            "Druid refused the answer: its plan nests more GROUP BYs over joins than the broker has "
            "merge buffers for (druid.processing.numMergeBuffers, 2 by default).",
            sql=statement.sql,
            sqlstate=exc.sqlstate,
            server_message=exc.server_message,
            hint="Ask the service's operator to raise the broker's druid.processing.numMergeBuffers "
            "(each one takes druid.processing.buffer.sizeBytes of direct memory); the plan's shape, "
            "not the log's size, needs them, so a filter does not help.",
        )
    if limit is None:
        return exc
    return _limit_error(statement, exc, int(limit.group(1)), limit.group(2) == "bytes")


def _limit_error(statement: Statement, exc: QueryError, limit: int, in_bytes: bool) -> QueryError:
    what = (
        "a subquery it must inline (a case filter on the task or transition table, a join, or a window: "
        "the one over each case's tasks, or the one of inter-arrival times)"
    )
    narrower = (
        "ask arrivals(freq, quantiles=()) for the counts and mean gaps alone (no window)."
        if statement.windowing
        else "filter with variants_in()/top_variants(), which need no subquery."
    )
    if in_bytes:
        message = (
            f"Druid refused the answer: {what} produced more than {limit:,} bytes, the broker's memory "
            f"budget for inlined results (maxSubqueryBytes)."
        )
        hint = (
            "Pass a larger budget in bytes, conn.mining(project, large_subqueries=<bytes>), only if the "
            "broker's heap has room for it (the 'auto' budget comes from that heap: ask the operator "
            "for a larger broker heap), or " + narrower
        )
    else:
        message = f"Druid refused the answer: {what} produced more than {limit:,} rows (maxSubqueryRows)."
        hint = (
            "Open the log with conn.mining(project, large_subqueries=True): those statements are then "
            "bounded by the broker's memory (maxSubqueryBytes 'auto') instead of rows, or " + narrower
        )
    return QueryError(
        message,
        sql=statement.sql,
        sqlstate=exc.sqlstate,
        server_message=exc.server_message,
        hint=statement.refusal_hint or hint,
    )


@dataclass
class Ask:
    """What one answer is computed from, made by the log for each call: the project's *schema*, the log's
    *filters* and options, and :meth:`run`, which runs a statement through the log's :class:`Runner` and
    keeps it (and the transport that served it) for the answer's ``attrs``."""

    schema: Schema
    filters: Filters
    project: Project
    runner: Runner
    #: the project's excluded cases (read once per log), for every answer's ``attrs``
    excluded_cases: int
    #: the ``resource=`` option of the log (``None``: the default column)
    resource_name: str | None
    #: the log's check that every named activity is one the project has (``fn``: the answer's name)
    check_activities: Callable[[Sequence[str], str], None]
    #: the statements :meth:`run` ran, in order, and the transports that served them
    ran: list[Statement] = field(default_factory=list)
    transports: list[str] = field(default_factory=list)

    @property
    def context(self) -> dict[str, Any] | None:
        """The log's query context (``None``: the source's default)."""
        return self.runner.context

    def resource(self) -> str:
        """The task column that names who did each task (quoted); a clear error when the project has none."""
        return resources_sql.resource_column(self.schema, self.resource_name)

    def run(self, statement: Statement) -> pd.DataFrame:
        """Run *statement* under the log's options; it is kept for the answer's ``attrs["sql"]``."""
        frame = self.runner.query(statement)
        self._kept(statement, frame)
        return frame

    def chunks(self, statement: Statement, chunk_rows: int) -> Iterator[pd.DataFrame]:
        """Run *statement* and yield its rows in DataFrames of at most *chunk_rows* rows (kept as
        :meth:`run` keeps a statement)."""
        self.ran.append(statement)
        for frame in self.runner.chunks(statement, chunk_rows):
            self._transport(frame)
            yield frame

    def _kept(self, statement: Statement, frame: pd.DataFrame) -> None:
        self.ran.append(statement)
        self._transport(frame)

    def _transport(self, frame: pd.DataFrame) -> None:
        name = frame.attrs.get("transport")
        if isinstance(name, str):
            self.transports.append(name)

    def transport(self) -> str:
        """The transport the statements went through: the one the source reported with their rows (asked
        of the source only when it reported none)."""
        return self.transports[-1] if self.transports else self.runner.source.resolve_transport()

    def answer(self, frame: pd.DataFrame, *, events: bool = False, **attrs: Any) -> pd.DataFrame:
        """*frame* as the answer: an :class:`~._answer.Answer` (the events handed to pm4py stay a plain
        DataFrame, the only type pm4py takes for a DataFrame log) whose ``attrs`` hold the statements that
        ran, their transport, the excluded cases and *attrs*."""
        frame = frame.reset_index(drop=True) if events else Answer(frame.reset_index(drop=True))
        frame.attrs.clear()
        frame.attrs["sql"] = ";\n\n".join(s.sql for s in self.ran)
        frame.attrs["transport"] = self.transport()
        # every answer says how many cases a user excluded and whether they count in it
        frame.attrs["excluded_cases"] = self.excluded_cases
        frame.attrs["include_excluded"] = self.filters.include_excluded
        frame.attrs["excluded_note"] = exclusion_note(self.excluded_cases, self.filters.include_excluded)
        frame.attrs.update(attrs)
        return frame

    def process_map(
        self, nodes: pd.DataFrame, edges: pd.DataFrame, view: MapView, *, of: str = ""
    ) -> ProcessMap:
        """The :class:`~._map.ProcessMap` of *nodes* and *edges*, shown as *view* (its ``metric``, ``stat``,
        ``activities`` and ``paths``), titled after the project (and what its nodes are *of*, when they are
        not activities) and carrying the statements that fetched it and their transport."""
        title = self.project.name or self.project.id
        return ProcessMap(
            nodes,
            edges,
            **view,
            sql=";\n\n".join(s.sql for s in self.ran),
            title=f"{title} ({of})" if of else title,
            transport=self.transport(),
        )


def exclusion_note(excluded: int, included: bool) -> str:
    """How an answer names the excluded cases: ``"no excluded cases"``, ``"12 excluded cases left out"``."""
    if not excluded:
        return "no excluded cases"
    what = "included" if included else "left out"
    return f"{excluded:,} excluded case{'s' if excluded != 1 else ''} {what}"
