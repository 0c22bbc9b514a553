"""The case filters of :class:`~._log.ProcessLog` as chainable methods, and the checks of their arguments.

Each method checks what the user wrote (a clear :class:`~pm_notebook.errors.ConfigurationError` for a bad
argument), builds one case filter value of :mod:`._filters` and returns a new log with it; the log itself
stays as it was.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import _sql_text
from ..errors import ConfigurationError, SchemaError
from ._filters import (
    AttributeIn,
    CaseDuration,
    CompletedByLookup,
    Condition,
    DirectlyFollows,
    EndsWith,
    EventuallyFollows,
    LastActivity,
    StartedBetween,
    StartsWith,
    TopVariants,
    VariantsIn,
    WithActivity,
    WithoutActivity,
)
from ._schema import Schema
from ._shaping import LogParts, LogT
from ._sql import controlflow as controlflow_sql
from ._sql import events as events_sql
from ._sql._base import END, START

__all__ = ["CaseFilterMethods"]

#: the most distinct values of a task column read to check a filter's names against (and suggest from);
#: a column with more is checked by a statement over the named values alone
VALUES_READ = 10_000


class CaseFilterMethods(LogParts):
    """The filter methods of ``ProcessLog``: each returns a new log with one more case filter."""

    # --- filters --------------------------------------------------------------------------------
    def where(self: LogT, condition: str, *params: Any) -> LogT:
        """Keep the cases matching a Druid SQL *condition* on the cases table, with ``?`` parameters.

        The names the answers print mean their columns here: ``variant`` (the process variant key of
        :meth:`variants`), ``model`` (the model variant key) and ``case_id``. A ``Timedelta`` (or
        ``timedelta``) is sent as milliseconds, the unit of every duration column; a datetime compared
        with ``enddate`` (milliseconds since 1970) is sent as milliseconds too, and with ``__time`` as a
        timestamp (naive values are UTC, aware ones are converted).

        >>> log.where("duration > ?", pd.Timedelta(days=1))  # doctest: +SKIP
        >>> log.where("variant = ?", log.variants(1)["variant"].iloc[0])  # doctest: +SKIP
        """
        if not isinstance(condition, str) or not condition.strip():
            raise ConfigurationError("where() needs a SQL condition on the cases table, e.g. 'rework > 0'.")
        check_no_comment(condition, "where()")
        expected = _count_placeholders(condition)
        if expected != len(params):
            raise ConfigurationError(
                f"where({condition!r}) has {expected} ? placeholder(s) but {len(params)} value(s) were given."
            )
        condition = _answer_names(self._schema(), condition)
        values = _where_values(self._schema(), condition, params)
        # the values are checked by the Source's query (a clear ConfigurationError) on first use
        return self._add(Condition(condition, values))

    def between(self: LogT, start: Any = None, end: Any = None) -> LogT:
        """Keep the cases that *started* in ``[start, end)`` (either bound may be ``None``; UTC if naive)."""
        first, last = (
            None if v is None else _timestamp(v, name) for v, name in ((start, "start"), (end, "end"))
        )
        if first is None and last is None:
            raise ConfigurationError("between() needs a start, an end or both.")
        if first is not None and last is not None and first >= last:
            raise ConfigurationError(f"between(): start {first} is not before end {last}.")
        return self._add(StartedBetween(first, last))

    def variants_in(self: LogT, *variants: str, by: str = "process") -> LogT:
        """Keep the cases of the given variants: process variant keys (``by="process"``), or model variant
        keys or names such as ``"Variant 1"`` (``by="model"``)."""
        values = _strings(variants, "variants_in")
        return self._add(VariantsIn(values, _variant_by(by)))

    def with_activity(self: LogT, name: str) -> LogT:
        """Keep the cases in which activity *name* was executed at least once."""
        (value,) = _strings((name,), "with_activity")
        self._check_activities((value,), "with_activity")
        return self._add(WithActivity(value))

    def completed_only(self: LogT, end_activities: Iterable[str] | None = None) -> LogT:
        """Keep the completed cases.

        Without arguments this uses the project's ``<pid>_cases_is_completed`` lookup (``case_version`` →
        ``"true"``). With *end_activities*, a case is completed when its last activity (the source of its
        transition to END) is one of them — the rule to use when the project has no such lookup.
        """
        schema = self._schema()
        if end_activities is None:
            lookup = schema.lookup("_cases_is_completed")
            if lookup is None:
                raise ConfigurationError(
                    f"Project {self._project.name or self._project.id!r} has no "
                    f"'{schema.project_id}_cases_is_completed' lookup.",
                    hint='Say which activities end a case: completed_only(["Pay Invoice"]).',
                )
            return self._add(CompletedByLookup(lookup))
        chosen = _strings(tuple(end_activities), "completed_only")
        self._check_activities(chosen, "completed_only")
        return self._add(EndsWith(chosen))

    def with_excluded(self: LogT, include: bool = True) -> LogT:
        """Include (or, with ``False``, leave out again) the cases of the ``_excluded_cases`` lookup."""
        return self._with(self._filters.with_excluded(bool(include)))

    # --- control-flow filters (issue 28) ------------------------------------------------------------
    def directly_follows(self: LogT, source: str, target: str) -> LogT:
        """Keep the cases in which *target* directly follows *source* at least once."""
        a, b = _strings((source, target), "directly_follows")
        self._check_activities((a, b), "directly_follows", also=(START, END))
        return self._add(DirectlyFollows(a, b))

    def eventually_follows(self: LogT, source: str, target: str) -> LogT:
        """Keep the cases in which a *target* task starts no earlier than a *source* task ends."""
        a, b = _strings((source, target), "eventually_follows")
        self._check_activities((a, b), "eventually_follows")
        return self._add(EventuallyFollows(a, b))

    def starts_with(self: LogT, *activities: str) -> LogT:
        """Keep the cases whose first activity is one of *activities*."""
        chosen = _strings(activities, "starts_with")
        self._check_activities(chosen, "starts_with")
        return self._add(StartsWith(chosen))

    def ends_with(self: LogT, *activities: str) -> LogT:
        """Keep the cases whose last activity is one of *activities*."""
        chosen = _strings(activities, "ends_with")
        self._check_activities(chosen, "ends_with")
        return self._add(LastActivity(chosen))

    def without_activity(self: LogT, name: str) -> LogT:
        """Keep the cases in which activity *name* was never executed."""
        (value,) = _strings((name,), "without_activity")
        self._check_activities((value,), "without_activity")
        return self._add(WithoutActivity(value))

    def case_duration(self: LogT, min: Any = None, max: Any = None) -> LogT:  # noqa: A002 - pm4py's names
        """Keep the cases whose duration lies in ``[min, max]``: each a ``Timedelta`` or text with a unit
        (``"40 s"``, ``"2 days"``), or None; a bare number is refused (its unit would be a guess)."""
        low, high = _duration_ms(min, "min"), _duration_ms(max, "max")
        if low is None and high is None:
            raise ConfigurationError("case_duration() needs min=, max= or both, e.g. max='5 days'.")
        if low is not None and high is not None and low > high:
            raise ConfigurationError(f"case_duration(): min {min} is above max {max}.")
        return self._add(CaseDuration(low, high))

    def attribute(self: LogT, column: str, values: Any) -> LogT:
        """Keep the cases with at least one task whose dimension *column* is one of *values*."""
        if not isinstance(column, str) or not column.strip():
            raise ConfigurationError(f"attribute() needs a dimension name, got {column!r}.")
        chosen = _strings((values,) if isinstance(values, str) else (tuple(values),), "attribute")
        quoted = self._schema().dimension("vertex", column)
        self._check_named(quoted, chosen, f"value of {column!r}", "attribute")
        return self._add(AttributeIn(column, chosen))

    def with_resource(self: LogT, *resources: str) -> LogT:
        """Keep the cases in which one of *resources* did at least one task."""
        chosen = _strings(resources, "with_resource")
        self._check_named(self._resource(), chosen, "resource", "with_resource")
        column = self._resource().strip('"').replace('""', '"')
        return self._add(AttributeIn(column, chosen, what="resource"))

    def top_variants(self: LogT, coverage: float = 0.8) -> LogT:
        """Keep the cases of the most frequent process variants that together cover at least *coverage*
        of the cases; variants with as many cases are taken in the order of their key (deterministic for a
        log; pm4py's ``filter_variants_top_k`` orders them by activity sequence, descending: the docs show
        how to keep its cases). One statement now, to choose the variants; the filter is then a plain key
        list on every table."""
        share = float(coverage)
        if not 0 < share <= 1:
            raise ConfigurationError(f"coverage must lie in (0, 1], got {coverage!r}.")
        frame = self._run(controlflow_sql.variant_counts(self._schema(), self._filters))
        counts = frame["cases"].astype("float64")
        total = float(counts.sum())
        keep = int((counts.cumsum() < share * total - 1e-9).sum()) + 1 if total else 0
        keys = tuple(str(k) for k in frame["variant"].head(keep))
        return self._add(TopVariants(keys, share))

    # --- the names a filter is given: values the project has -----------------------------------------------
    def _check_activities(self, names: Sequence[str], fn: str, also: Sequence[str] = ()) -> None:
        """:class:`SchemaError` unless every activity of *names* (or of *also*) is one the project has."""
        activity = self._schema().col("vertex", "activity")
        self._check_named(activity, [n for n in names if n not in also], "activity", fn)

    def _check_named(self, column: str, names: Sequence[str], what: str, fn: str) -> None:
        """:class:`SchemaError` naming each of *names* that the task column *column* (quoted) never holds in
        the project, with the closest values it does hold ("did you mean"): a filter naming a value the
        project lacks would keep no case (or every case) and say nothing.

        The column's distinct values are read by one ``GROUP BY`` statement the first time a filter names
        one of them, and kept for the log and every log filtered from it; a column of more than
        :data:`VALUES_READ` values is checked by a statement over the named values alone."""
        wanted = tuple(dict.fromkeys(names))
        if not wanted:
            return
        if column not in self._values:
            frame = self._run(events_sql.distinct_values(self._schema(), column, VALUES_READ + 1))
            found = frozenset(str(v) for v in frame["value"] if isinstance(v, str))
            self._values[column] = None if len(frame) > VALUES_READ else found
        known = self._values[column]
        if known is None:
            frame = self._run(events_sql.present_values(self._schema(), column, wanted))
            present = {str(v) for v in frame["value"] if isinstance(v, str)}
        else:
            present = set(known)
        absent = [n for n in wanted if n not in present]
        if not absent:
            return
        names_text = " or ".join(repr(n) for n in absent)
        plural = "" if len(absent) == 1 else " (any of them)"
        guesses = {n: _did_you_mean(n, known) for n in absent} if known is not None else {}
        offered = [f"{', '.join(repr(g) for g in gs)} for {n!r}" for n, gs in guesses.items() if gs]
        if offered:
            hint = "Did you mean " + "; ".join(offered) + "? (names are matched exactly, case included)"
        elif known is not None:
            listed = sorted(known)
            more = f" and {len(listed) - 12:,} more" if len(listed) > 12 else ""
            hint = f"The project's {_plural(what)}: {', '.join(map(repr, listed[:12]))}{more}."
        else:
            hint = "Check the spelling and the case (names are matched exactly)."
        raise SchemaError(
            f"{fn}(): the project has no {what} {names_text}{plural}, so the filter would not select by it.",
            hint=hint,
        )


# --- the checks of the filters' arguments --------------------------------------------------------------
def _did_you_mean(name: str, known: frozenset[str]) -> list[str]:
    """The values of *known* that *name* most likely means: those equal to it but for case, else the
    closest by edit distance (difflib's ratio of at least 0.6, ignoring case), at most three."""
    by_fold: dict[str, list[str]] = {}
    for value in known:
        by_fold.setdefault(value.casefold(), []).append(value)
    same = by_fold.get(name.casefold())
    if same:
        return sorted(same)
    close = difflib.get_close_matches(name.casefold(), list(by_fold), n=3, cutoff=0.6)
    return [value for fold in close for value in sorted(by_fold[fold])][:3]


def _plural(what: str) -> str:
    return "activities" if what == "activity" else "values" if what.startswith("value") else f"{what}s"


def check_no_comment(condition: str, call: str) -> None:
    """Refuse a ``--`` or ``/* */`` comment in a condition the log writes into its statements: a line
    comment would silently comment out the rest of the statement (the other filters, the excluded cases)."""
    kinds = {p.kind for p in _sql_text.parts(condition)}
    if kinds & {_sql_text.LINE_COMMENT, _sql_text.BLOCK_COMMENT}:
        raise ConfigurationError(
            f"{call}: the condition {condition!r} holds an SQL comment, which would hide the rest of the "
            "statement (the other filters).",
            hint="Remove the comment; write the condition alone, e.g. 'rework > 0'.",
        )


def _count_placeholders(condition: str) -> int:
    """``?`` outside quoted strings and identifiers (what the server will count), found by the client's one
    SQL scanner (:mod:`pm_notebook._sql_text`). A comment's ``?`` counts: the condition is written into a
    one-line statement, where a ``--`` comment would not end where the user's text ends."""
    return _blanked(condition, _sql_text.STRING, _sql_text.IDENTIFIER).count("?")


def _blanked(condition: str, *kinds: str) -> str:
    """*condition* with its parts of the :mod:`pm_notebook._sql_text` *kinds* blanked (offsets kept)."""
    return "".join(
        " " * (p.end - p.start) if p.kind in kinds else condition[p.start : p.end]
        for p in _sql_text.parts(condition)
    )


#: the names answers print for a case-table role -> the role (``log.where("variant = ?", key)``)
_ANSWER_NAMES = {"variant": "variant", "model": "model", "case_id": "case"}
#: names answers print that are no cases-table column, and the filter that means them
_OTHER_FILTERS = {
    "activity": "with_activity(name)",
    "activities": "with_activity(name)",
    "source": "with_activity(name) or conformance(...)",
    "target": "with_activity(name) or conformance(...)",
}
_QUOTED_OR_WORD = re.compile(r"'(?:[^']|'')*'|\"((?:[^\"]|\"\")*)\"|([A-Za-z_][A-Za-z0-9_]*)(\s*\()?")


def _answer_names(schema: Schema, condition: str) -> str:
    """*condition* with the answer names (``variant``, ``model``, ``case_id``) that are no column of the
    cases table replaced by the columns they name; a clear error for names another filter means."""
    present = {c.lower() for c in schema.columns["cases"]}

    def swap(m: re.Match[str]) -> str:
        name = m.group(1) if m.group(1) is not None else m.group(2)
        if name is None or m.group(3) or name.lower() in present:  # a string, a function or a column
            return m.group(0)
        key = name.lower()
        if key in _ANSWER_NAMES:
            return schema.col("cases", _ANSWER_NAMES[key])
        if key in _OTHER_FILTERS:
            raise ConfigurationError(
                f"where(): {name!r} is not a column of the cases table (one row per case).",
                hint=f"Use log.{_OTHER_FILTERS[key]} for it.",
            )
        return m.group(0)

    return _QUOTED_OR_WORD.sub(swap, condition)


def _where_values(schema: Schema, condition: str, params: Sequence[Any]) -> tuple[Any, ...]:
    """*params* as SQL values: durations in milliseconds, datetimes compared with a millisecond column
    (``enddate``) in milliseconds since 1970 UTC."""
    blanked = _blanked(condition, _sql_text.STRING)  # a quoted column name stays
    end = schema.col("cases", "end").strip('"').lower() if schema.has("cases", "end") else None
    ms_columns: set[int] = set()  # the placeholders compared with the millisecond end column
    compare = re.compile(
        r'("?)([A-Za-z_][A-Za-z0-9_]*)\1\s*(?:=|<>|!=|<=|>=|<|>|(?:NOT\s+)?BETWEEN)\s*\?(?:\s+AND\s+\?)?',
        re.IGNORECASE,
    )
    for m in compare.finditer(blanked):
        if end is not None and m.group(2).lower() == end:
            first = blanked[: m.start()].count("?")
            ms_columns.update(range(first, first + m.group(0).count("?")))
    out = []
    for i, value in enumerate(params):
        if isinstance(value, (pd.Timedelta, dt.timedelta, np.timedelta64)) and not pd.isna(value):
            out.append(int(round(pd.Timedelta(value).total_seconds() * 1000)))
        elif i in ms_columns and isinstance(value, (dt.datetime, np.datetime64)) and not pd.isna(value):
            ts = pd.Timestamp(value)
            ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
            out.append(int(ts.value // 1_000_000))
        else:
            out.append(value)
    return tuple(out)


def _variant_by(by: str) -> str:
    """*by* of the variant answers and filters: ``"process"`` or ``"model"``."""
    if by in ("process", "model"):
        return by
    raise ConfigurationError(f"by must be 'process' (exact sequence) or 'model' (model variant), got {by!r}.")


def _strings(values: Sequence[Any], fn: str) -> tuple[str, ...]:
    if len(values) == 1 and isinstance(values[0], (list, tuple, set, frozenset, pd.Series, pd.Index)):
        values = tuple(values[0])
    if not values or not all(isinstance(v, str) and v for v in values):
        raise ConfigurationError(f"{fn}() needs one or more non-empty strings, got {list(values)!r}.")
    return tuple(values)


def _timestamp(value: Any, name: str) -> dt.datetime:
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise ConfigurationError(f"between(): {name} {value!r} is not a date or timestamp.") from None
    if pd.isna(ts):  # NaT
        raise ConfigurationError(f"between(): {name} {value!r} is not a date or timestamp.")
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.to_pydatetime()


def _duration_ms(value: Any, name: str) -> int | None:
    """A duration bound (Timedelta, ``timedelta``, text with a unit such as ``"2 days"`` or ``"40 s"``, or
    None) in whole milliseconds; a bare number is refused (seconds for a pm4py user, nanoseconds for
    pandas, milliseconds for Druid: the unit must be said)."""
    if value is None:
        return None
    bare = isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.timedelta64))
    if bare or (isinstance(value, str) and re.fullmatch(r"\s*[-+]?[\d.]+(?:e[-+]?\d+)?\s*", value, re.I)):
        raise ConfigurationError(
            f"case_duration(): {name}={value!r} has no unit.",
            hint=f'Say it: {name}=pd.Timedelta(seconds={value}) or {name}="{str(value).strip()} s" '
            '(or "2 days", "3 h").',
        )
    try:
        td: Any = pd.Timedelta(value)
    except (ValueError, TypeError):
        td = None
    if td is None or pd.isna(td):
        raise ConfigurationError(
            f"case_duration(): {name} {value!r} is not a duration.",
            hint="Use e.g. pd.Timedelta('2 days') or '2 days'.",
        )
    return int(td / pd.Timedelta(milliseconds=1))
