"""``ProcessLog``: an immutable, chainable view of one project whose answers are computed by Druid SQL.

Every answer is one to three aggregate statements over the project's three tables (cases ``<pid>``,
tasks ``<pid>_vertex``, transitions ``<pid>_edge``); no event is pulled to the client except by
:meth:`ProcessLog.to_pm4py`, which exists to do exactly that. Only Druid SQL is emitted: no window
functions, no DuckDB-isms, quantiles through ``APPROX_QUANTILE_DS`` (approximate on a real cluster:
within the sketch's error, about 1 % at the default size), non-aggregating queries ordered by ``__time``
only, joins only as ``IN (subquery)`` semi-joins on ``caseid``.

Filters (``where``, ``between``, ``variants_in``, ``with_activity``, ``completed_only``) are *case*
filters: a case is in or out as a whole. On the cases table they are plain ``WHERE`` conditions; on the
task and transition tables a filter on columns those tables share (the variant keys) is applied directly
and any other one becomes ``caseid IN (SELECT caseid FROM <cases> WHERE ...)``. Excluded cases (the
``<pid>_excluded_cases`` lookup) are left out by default, with ``caseid NOT IN (...)`` over the (small)
excluded set when no other case filter needs a semi-join. Druid materialises a semi-join's subquery
(``maxSubqueryRows``, 100,000 rows by default), so filters that keep more cases than that need a raised
limit on a real cluster.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._cells import cell_int
from .._checks import find_project, positive_int
from .._models import Project
from ..errors import ConfigurationError
from ._schema import Schema, quote, read_schema

if TYPE_CHECKING:  # pragma: no cover
    from ..connection import Connection
    from ._map import ProcessMap

__all__ = ["ProcessLog"]

START, END = "START", "END"
_PERIOD = re.compile(r"^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?$")
_PERIOD_ALIASES = {
    "hour": "PT1H",
    "day": "P1D",
    "week": "P1W",
    "month": "P1M",
    "quarter": "P3M",
    "year": "P1Y",
}
_STATS = ("mean", "median", "p90", "total", "min", "max")

Fragment = tuple[str, tuple[Any, ...]]


@dataclass(frozen=True)
class _Filter:
    """One case filter: its label (for ``repr``) and how to write it on each table kind.

    ``build(schema, kind)`` returns ``(sql, params)``, or ``None`` when the *kind* table cannot express it
    (then the cases-table form is applied through a ``caseid`` semi-join).
    """

    label: str
    build: Callable[[Schema, str], Fragment | None]


def _ms(values: pd.Series) -> pd.Series:
    """Milliseconds (BIGINT or DOUBLE, NULLs kept) as a ``timedelta64[ms]`` Series."""
    floats = pd.to_numeric(values, errors="coerce").astype("float64")
    return pd.to_timedelta(floats.round(), unit="ms").astype("timedelta64[ms]")


def _period(freq: str) -> str:
    value = _PERIOD_ALIASES.get(str(freq).lower(), str(freq).upper())
    if not _PERIOD.match(value):
        raise ConfigurationError(
            f"{freq!r} is not an ISO-8601 period.", hint="Use e.g. 'P1D', 'P1W', 'P1M' or 'week'."
        )
    return value


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


def _count_placeholders(condition: str) -> int:
    """``?`` outside quoted strings and identifiers (what the server will count)."""
    return len(re.findall(r"\?", re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "", condition)))


class ProcessLog:
    """One project's process log, filtered; each answer is a typed DataFrame computed by Druid SQL.

    Build it with :meth:`pm_notebook.Connection.mining`. It is immutable: every filter returns a new log,
    so ``log.between("2025-01-01", "2025-04-01").variants()`` leaves ``log`` as it was. Each answer
    carries the statements that produced it in ``df.attrs["sql"]``; durations are ``Timedelta``.

    >>> log = conn.mining("Purchase to Pay")                     # doctest: +SKIP
    >>> log.with_activity("Block Invoice").throughput(by="week")  # doctest: +SKIP
    """

    def __init__(
        self,
        conn: Connection,
        project: Project,
        *,
        schema: Schema | None = None,
        filters: tuple[_Filter, ...] = (),
        include_excluded: bool = False,
    ) -> None:
        self._conn = conn
        self._project = project
        self._schema_cache = schema
        self._filters = filters
        self._include_excluded = include_excluded

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def open(cls, conn: Connection, project: Project | str, *, include_excluded: bool = False) -> ProcessLog:
        """Resolve *project* (a :class:`Project`, a project id or a project name) and read its schema."""
        if isinstance(project, Project):
            resolved = project
        elif isinstance(project, str) and project.strip():
            resolved = find_project(conn.projects(), project)
        else:
            raise ConfigurationError(
                f"mining() needs a project name, id or Project, got {type(project).__name__}.",
                hint='conn.mining("Purchase to Pay")',
            )
        log = cls(conn, resolved, include_excluded=include_excluded)
        log._schema()  # fail early on a project whose tables lack a needed column
        return log

    def _schema(self) -> Schema:
        if self._schema_cache is None:
            self._schema_cache = read_schema(self._project.id, lambda sql, p: self._conn.query(sql, p))
        return self._schema_cache

    def _with(
        self, *, filters: tuple[_Filter, ...] | None = None, include_excluded: bool | None = None
    ) -> ProcessLog:
        """A copy of this log (same schema) with *filters* and/or *include_excluded* replaced."""
        return ProcessLog(
            self._conn,
            self._project,
            schema=self._schema(),
            filters=self._filters if filters is None else filters,
            include_excluded=self._include_excluded if include_excluded is None else include_excluded,
        )

    def _add(self, label: str, build: Callable[[Schema, str], Fragment | None]) -> ProcessLog:
        build(self._schema(), "cases")  # resolve the columns now: a bad filter fails where it is written
        return self._with(filters=(*self._filters, _Filter(label, build)))

    @property
    def project(self) -> Project:
        """The project this log reads."""
        return self._project

    @property
    def schema(self) -> Schema:
        """The project's tables, their columns and lookups (read once from INFORMATION_SCHEMA)."""
        return self._schema()

    def __repr__(self) -> str:
        parts = [f.label for f in self._filters]
        if self._include_excluded:
            parts.append("including excluded cases")
        shown = "; ".join(parts) if parts else "all cases"
        return f"<ProcessLog {self._project.name or self._project.id!r}: {shown}>"

    # --- filters --------------------------------------------------------------------------------
    def where(self, condition: str, *params: Any) -> ProcessLog:
        """Keep the cases matching a Druid SQL *condition* on the cases table, with ``?`` parameters.

        >>> log.where("supplier_lpkr = ? AND duration > ?", "Acme Industrial", 86_400_000)  # doctest: +SKIP
        """
        if not isinstance(condition, str) or not condition.strip():
            raise ConfigurationError("where() needs a SQL condition on the cases table, e.g. 'rework > 0'.")
        expected = _count_placeholders(condition)
        if expected != len(params):
            raise ConfigurationError(
                f"where({condition!r}) has {expected} ? placeholder(s) but {len(params)} value(s) were given."
            )
        values = tuple(params)  # checked by Connection.query (a clear ConfigurationError) on first use

        def build(schema: Schema, kind: str) -> Fragment | None:
            return (f"({condition})", values) if kind == "cases" else None

        return self._add(f"where {condition}", build)

    def between(self, start: Any = None, end: Any = None) -> ProcessLog:
        """Keep the cases that *started* in ``[start, end)`` (either bound may be ``None``; UTC if naive)."""
        bounds = [None if v is None else _timestamp(v, name) for v, name in ((start, "start"), (end, "end"))]
        if bounds == [None, None]:
            raise ConfigurationError("between() needs a start, an end or both.")
        if bounds[0] is not None and bounds[1] is not None and bounds[0] >= bounds[1]:
            raise ConfigurationError(f"between(): start {bounds[0]} is not before end {bounds[1]}.")

        def build(schema: Schema, kind: str) -> Fragment | None:
            if kind != "cases":
                return None
            t = schema.col("cases", "time")
            conds, values = [], []
            if bounds[0] is not None:
                conds.append(f"{t} >= ?")
                values.append(bounds[0])
            if bounds[1] is not None:
                conds.append(f"{t} < ?")
                values.append(bounds[1])
            return "(" + " AND ".join(conds) + ")", tuple(values)

        return self._add(f"started in [{bounds[0]}, {bounds[1]})", build)

    def variants_in(self, *variants: str, by: str = "process") -> ProcessLog:
        """Keep the cases of the given variants: process variant keys (``by="process"``), or model variant
        keys or names such as ``"Variant 1"`` (``by="model"``)."""
        values = _strings(variants, "variants_in")
        role = _variant_role(by)
        names = self._schema().lookup("_variant_name") if role == "model" else None

        def build(schema: Schema, kind: str) -> Fragment | None:
            col = schema.col(kind, role)
            cond = f"{col} IN ({_placeholders(len(values))})"
            if names is None:
                return f"({cond})", tuple(values)
            named = f"LOOKUP({col}, '{names}') IN ({_placeholders(len(values))})"
            return f"({cond} OR {named})", tuple(values) * 2

        return self._add(f"{by} variant in {list(values)}", build)

    def with_activity(self, name: str) -> ProcessLog:
        """Keep the cases in which activity *name* was executed at least once."""
        (value,) = _strings((name,), "with_activity")

        def build(schema: Schema, kind: str) -> Fragment | None:
            if kind != "cases":
                return None
            if schema.has("cases", "activities"):
                return f"MV_CONTAINS({schema.col('cases', 'activities')}, ?)", (value,)
            sub = (
                f"SELECT {schema.col('vertex', 'case')} FROM {schema.table('vertex')} "
                f"WHERE {schema.col('vertex', 'activity')} = ?"
            )
            return f"{schema.col('cases', 'case')} IN ({sub})", (value,)

        return self._add(f"with activity {value!r}", build)

    def completed_only(self, end_activities: Iterable[str] | None = None) -> ProcessLog:
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

            def by_lookup(schema: Schema, kind: str) -> Fragment | None:
                if kind != "cases":
                    return None
                return f"LOOKUP({schema.col('cases', 'case_version')}, '{lookup}') = 'true'", ()

            return self._add("completed (lookup)", by_lookup)
        ends = _strings(tuple(end_activities), "completed_only")

        def by_end(schema: Schema, kind: str) -> Fragment | None:
            if kind != "cases":
                return None
            sub = (
                f"SELECT {schema.col('edge', 'case')} FROM {schema.table('edge')} "
                f"WHERE {schema.col('edge', 'target')} = '{END}' "
                f"AND {schema.col('edge', 'source')} IN ({_placeholders(len(ends))})"
            )
            return f"{schema.col('cases', 'case')} IN ({sub})", tuple(ends)

        return self._add(f"completed (ends with {list(ends)})", by_end)

    def with_excluded(self, include: bool = True) -> ProcessLog:
        """Include (or, with ``False``, leave out again) the cases of the ``_excluded_cases`` lookup."""
        return self._with(include_excluded=bool(include))

    # --- SQL assembly ---------------------------------------------------------------------------
    def _where(self, kind: str, *extra: Fragment) -> Fragment:
        """``WHERE ...`` (or ``""``) for a query on the *kind* table, with its parameters in text order."""
        schema = self._schema()
        direct: list[Fragment] = []
        case_level: list[Fragment] = []
        for f in self._filters:
            built = f.build(schema, kind)
            if built is not None:
                direct.append(built)
            else:
                on_cases = f.build(schema, "cases")
                if on_cases is None:  # every filter has a cases-table form (see _Filter)
                    raise TypeError(f"filter {f.label!r} cannot be written on the cases table")
                case_level.append(on_cases)
        excluded = None if self._include_excluded else schema.lookup("_excluded_cases")
        # The lookup named like the project maps outdated case versions (a later file brought more events of
        # the case) to the current one: IS NULL keeps each case once, in its current version.
        outdated = schema.lookup("")
        current = (f"LOOKUP({schema.col('cases', 'case_version')}, '{outdated}') IS NULL", ())
        if kind == "cases":
            if outdated:
                direct.append(current)
            if excluded:
                direct.append((f"LOOKUP({schema.col('cases', 'case_version')}, '{excluded}') IS NULL", ()))
        elif case_level:
            if outdated:
                case_level.append(current)
            if excluded:
                case_level.append(
                    (f"LOOKUP({schema.col('cases', 'case_version')}, '{excluded}') IS NULL", ())
                )
            inner = " AND ".join(s for s, _ in case_level)
            sub = f"SELECT {schema.col('cases', 'case')} FROM {schema.table('cases')} WHERE {inner}"
            direct.append((f"{schema.col(kind, 'case')} IN ({sub})", sum((p for _, p in case_level), ())))
        elif excluded:
            sub = (
                f"SELECT {schema.col('cases', 'case')} FROM {schema.table('cases')} "
                f"WHERE LOOKUP({schema.col('cases', 'case_version')}, '{excluded}') IS NOT NULL"
            )
            direct.append((f"{schema.col(kind, 'case')} NOT IN ({sub})", ()))
        parts = [*direct, *extra]
        if not parts:
            return "", ()
        return " WHERE " + " AND ".join(s for s, _ in parts), sum((p for _, p in parts), ())

    def _run(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        return self._conn.query(sql, list(params))

    def _answer(self, frame: pd.DataFrame, statements: list[str], **attrs: Any) -> pd.DataFrame:
        frame = frame.reset_index(drop=True)
        frame.attrs.clear()
        frame.attrs["sql"] = ";\n\n".join(statements)
        frame.attrs["transport"] = self._conn.resolve_transport()  # every statement went through it
        frame.attrs.update(attrs)
        return frame

    def _q(self, q: float, col: str) -> str:
        return f"APPROX_QUANTILE_DS({col}, {q})"

    # --- answers ---------------------------------------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """One row: cases, events, variants, mean/median/p90 throughput, rework share, first/last event."""
        s = self._schema()
        d, t, end = s.col("cases", "duration"), s.col("cases", "time"), s.col("cases", "end")
        where_c, pc = self._where("cases")
        rework = s.col("cases", "rework")
        sql_cases = (
            f'SELECT COUNT(*) AS "cases", AVG(CAST({d} AS DOUBLE)) AS "mean_throughput", '
            f'{self._q(0.5, d)} AS "median_throughput", {self._q(0.9, d)} AS "p90_throughput", '
            f'SUM(CASE WHEN {rework} > 0 THEN 1 ELSE 0 END) AS "rework_cases", '
            f'MIN({t}) AS "first_event", MAX({end}) AS "last_event_ms" FROM {s.table("cases")}{where_c}'
        )
        where_v, pv = self._where("vertex")
        sql_events = f'SELECT COUNT(*) AS "events" FROM {s.table("vertex")}{where_v}'
        key = s.col("cases", "variant")
        sql_variants = (
            f'SELECT COUNT(*) AS "variants" FROM '
            f"(SELECT {key} FROM {s.table('cases')}{where_c} GROUP BY {key})"
        )
        c = self._run(sql_cases, pc)
        events = cell_int(self._run(sql_events, pv).iloc[0, 0])
        variants = cell_int(self._run(sql_variants, pc).iloc[0, 0])
        n = cell_int(c["cases"].iloc[0])
        row = {
            "cases": n,
            "events": events,
            "variants": variants,
            "mean_throughput": _ms(c["mean_throughput"]).iloc[0],
            "median_throughput": _ms(c["median_throughput"]).iloc[0],
            "p90_throughput": _ms(c["p90_throughput"]).iloc[0],
            "rework_share": (float(c["rework_cases"].iloc[0]) / n) if n else math.nan,
            "first_event": c["first_event"].iloc[0] if n else pd.NaT,
            "last_event": pd.to_datetime(c["last_event_ms"].astype("float64"), unit="ms", utc=True).iloc[0]
            if n
            else pd.NaT,
        }
        frame = pd.DataFrame([row]).astype({"cases": "Int64", "events": "Int64", "variants": "Int64"})
        for col in ("first_event", "last_event"):
            frame[col] = pd.to_datetime(frame[col], utc=True).astype("datetime64[ms, UTC]")
        return self._answer(frame, [sql_cases, sql_events, sql_variants])

    def _total_cases(self) -> tuple[int, str]:
        s = self._schema()
        where_c, pc = self._where("cases")
        sql = f'SELECT COUNT(*) AS "cases" FROM {s.table("cases")}{where_c}'
        return cell_int(self._run(sql, pc).iloc[0, 0]), sql

    def variants(self, top: int = 20, by: str = "process") -> pd.DataFrame:
        """The *top* variants by cases: ordered activities, cases, share, cumulative share, median and p90
        duration, an example case; ``by="model"`` groups by model variant and names it (``Variant 1``...)."""
        top = positive_int(top, "top")
        role = _variant_role(by)
        s = self._schema()
        key, d, case = s.col("cases", role), s.col("cases", "duration"), s.col("cases", "case")
        where_c, pc = self._where("cases")
        names = s.lookup("_variant_name") if role == "model" else None
        name_sel = f", LOOKUP({key}, '{names}') AS \"name\"" if names else ""
        name_grp = f", LOOKUP({key}, '{names}')" if names else ""
        sql = (
            f'SELECT {key} AS "variant"{name_sel}, COUNT(*) AS "cases", '
            f'{self._q(0.5, d)} AS "median_duration", '
            f'{self._q(0.9, d)} AS "p90_duration", EARLIEST({case}, 1024) AS "example_case" '
            f"FROM {s.table('cases')}{where_c} GROUP BY {key}{name_grp} "
            f"ORDER BY cases DESC, {key} LIMIT {top}"
        )
        frame = self._run(sql, pc)
        total, sql_total = self._total_cases()
        sequences, sql_seq = self._sequences([str(x) for x in frame["example_case"].dropna()])
        frame.insert(
            2 if names else 1,
            "activities",
            # pandas-stubs: insert() refuses an ExtensionArray, which pandas accepts as a column
            pd.array([sequences.get(str(x), "") for x in frame["example_case"]], dtype="string"),  # type: ignore[arg-type]
        )
        frame["cases"] = frame["cases"].astype("Int64")
        share = (
            frame["cases"].astype("float64") / total if total else frame["cases"].astype("float64") * np.nan
        )
        frame.insert(_after(frame, "cases"), "share", share)
        frame.insert(_after(frame, "share"), "cumulative_share", share.cumsum())
        frame["median_duration"] = _ms(frame["median_duration"])
        frame["p90_duration"] = _ms(frame["p90_duration"])
        return self._answer(frame, [sql, sql_total, *sql_seq], total_cases=total)

    def _sequences(self, case_ids: list[str]) -> tuple[dict[str, str], list[str]]:
        """``caseid -> "A → B → C"`` for a few example cases (their tasks, ordered by start then end)."""
        if not case_ids:
            return {}, []
        s = self._schema()
        case, act, t, end = (s.col("vertex", r) for r in ("case", "activity", "time", "end"))
        sql = (
            f'SELECT {case} AS "case_id", {act} AS "activity", {t} AS "started", {end} AS "ended" '
            f"FROM {s.table('vertex')} WHERE {case} IN ({_placeholders(len(case_ids))}) ORDER BY {t}"
        )
        rows = self._run(sql, case_ids)
        rows = rows.assign(_order=np.arange(len(rows))).sort_values(["case_id", "started", "ended", "_order"])
        out = {str(k): " → ".join(g["activity"].astype(str)) for k, g in rows.groupby("case_id", sort=False)}
        return out, [sql]

    def throughput(
        self, by: str | None = None, quantiles: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9)
    ) -> pd.DataFrame:
        """Case duration (throughput time) statistics: cases, mean, min, the *quantiles* (``p10``...), max.

        :param by: ``None`` (whole log), ``"variant"`` / ``"model"`` (variant keys), a period (``"week"``,
            ``"month"``, ``"P1D"``... by case start) or a case dimension (``"supplier"``).
        """
        qs = [float(q) for q in quantiles]
        if not qs or any(not 0 < q < 1 for q in qs):
            raise ConfigurationError(f"quantiles must lie strictly between 0 and 1, got {list(quantiles)}.")
        s = self._schema()
        d = s.col("cases", "duration")
        key, label, order = self._group_key(by)
        where_c, pc = self._where("cases")
        qcols = ", ".join(f'{self._q(q, d)} AS "{_qname(q)}"' for q in qs)
        select_key = f"{key} AS {quote(label)}, " if key else ""
        group = f" GROUP BY {key} ORDER BY {order}" if key else ""
        sql = (
            f'SELECT {select_key}COUNT(*) AS "cases", AVG(CAST({d} AS DOUBLE)) AS "mean", MIN({d}) AS "min", '
            f'{qcols}, MAX({d}) AS "max" FROM {s.table("cases")}{where_c}{group}'
        )
        frame = self._run(sql, pc)
        frame["cases"] = frame["cases"].astype("Int64")
        for col in ["mean", "min", *(_qname(q) for q in qs), "max"]:
            frame[col] = _ms(frame[col])
        if not key and int(frame["cases"].iloc[0]) == 0:
            frame = frame.iloc[0:0]
        return self._answer(frame, [sql])

    def _group_key(self, by: str | None) -> tuple[str | None, str, str]:
        s = self._schema()
        if by is None:
            return None, "", ""
        if not isinstance(by, str) or not by.strip():
            raise ConfigurationError(f"by must be None, 'variant', a period or a dimension name, got {by!r}.")
        if by in ("variant", "process"):
            return s.col("cases", "variant"), "variant", "cases DESC, variant"
        if by == "model":
            return s.col("cases", "model"), "model", "cases DESC, model"
        if by.lower() in _PERIOD_ALIASES or _PERIOD.match(by.upper()):
            period = _period(by)
            return f"TIME_FLOOR({s.col('cases', 'time')}, '{period}')", "period", '"period"'
        return s.dimension("cases", by), by, f"cases DESC, {quote(by)}"

    def distribution(self, bucket: str = "P1D") -> pd.DataFrame:
        """Histogram of case durations: cases per duration bucket (``P1D`` = whole days) from 0 upwards."""
        period = _period(bucket)
        width = _period_ms(period)
        s = self._schema()
        d = s.col("cases", "duration")
        where_c, pc = self._where("cases")
        sql = (
            f'SELECT {d} / {width} AS "bucket", COUNT(*) AS "cases" FROM {s.table("cases")}{where_c} '
            f"GROUP BY {d} / {width} ORDER BY bucket"
        )
        frame = self._run(sql, pc)
        out = pd.DataFrame(
            {
                "from": _ms(frame["bucket"].astype("float64") * width),
                "to": _ms((frame["bucket"].astype("float64") + 1) * width),
                "cases": frame["cases"].astype("Int64"),
            }
        )
        return self._answer(out, [sql], bucket=period)

    def activities(self) -> pd.DataFrame:
        """Per activity: executions, cases, cases with rework, mean/median/p90/total service time.

        Cases per activity are exact without ``COUNT(DISTINCT)`` (approximate in Druid): each of the *k*
        executions of an activity in a case carries ``total_occurences_by_caseid = k``, so summing ``1/k``
        counts every (case, activity) pair once.
        """
        s = self._schema()
        act, d, occ = s.col("vertex", "activity"), s.col("vertex", "duration"), s.col("vertex", "occurrences")
        where_v, pv = self._where("vertex")
        sql = (
            f'SELECT {act} AS "activity", COUNT(*) AS "executions", SUM(1.0 / {occ}) AS "cases", '
            f'SUM(CASE WHEN {occ} > 1 THEN 1.0 / {occ} ELSE 0 END) AS "cases_with_rework", '
            f'AVG(CAST({d} AS DOUBLE)) AS "mean_service", {self._q(0.5, d)} AS "median_service", '
            f'{self._q(0.9, d)} AS "p90_service", SUM({d}) AS "total_service" '
            f"FROM {s.table('vertex')}{where_v} GROUP BY {act} ORDER BY executions DESC, {act}"
        )
        frame = self._run(sql, pv)
        frame["executions"] = frame["executions"].astype("Int64")
        for col in ("cases", "cases_with_rework"):
            frame[col] = _rounded(frame[col])
        for col in ("mean_service", "median_service", "p90_service", "total_service"):
            frame[col] = _ms(frame[col])
        return self._answer(frame, [sql])

    def _edge_stats(self, *extra: Fragment, order: str, limit: int | None = None) -> tuple[pd.DataFrame, str]:
        s = self._schema()
        src, dst, d = s.col("edge", "source"), s.col("edge", "target"), s.col("edge", "duration")
        where_e, pe = self._where("edge", *extra)
        sql = (
            f'SELECT {src} AS "source", {dst} AS "target", COUNT(*) AS "frequency", '
            f'AVG(CAST({d} AS DOUBLE)) AS "mean", {self._q(0.5, d)} AS "median", {self._q(0.9, d)} AS "p90", '
            f'SUM({d}) AS "total", MIN({d}) AS "min", MAX({d}) AS "max" '
            f"FROM {s.table('edge')}{where_e} GROUP BY {src}, {dst} ORDER BY {order}"
            + (f" LIMIT {limit}" if limit else "")
        )
        frame = self._run(sql, pe)
        frame["frequency"] = frame["frequency"].astype("Int64")
        for col in _STATS:
            frame[col] = _ms(frame[col])
        return frame, sql

    def transitions(self) -> pd.DataFrame:
        """Every directly-follows transition (START/END included): frequency and waiting time
        (mean, median, p90, total, min, max) from the source's end to the target's start."""
        frame, sql = self._edge_stats(order='"frequency" DESC, "source", "target"')
        return self._answer(frame, [sql])

    def bottlenecks(self, k: int = 10, metric: str = "p90") -> pd.DataFrame:
        """The *k* transitions between activities (START/END left out) with the longest waits, ranked by
        ``metric``: ``"p90"``, ``"median"``, ``"mean"`` or ``"total"`` (sum of waiting, i.e. impact)."""
        k = positive_int(k, "k")
        if metric not in ("p90", "median", "mean", "total", "max"):
            raise ConfigurationError(
                f"metric must be 'p90', 'median', 'mean', 'total' or 'max', got {metric!r}."
            )
        s = self._schema()
        src, dst = s.col("edge", "source"), s.col("edge", "target")
        cond = (f"{src} <> '{START}' AND {dst} <> '{END}'", ())
        frame, sql = self._edge_stats(cond, order=f'"{metric}" DESC, "source", "target"', limit=k)
        return self._answer(frame, [sql], metric=metric)

    def rework(self, by: str = "activity", top: int = 50) -> pd.DataFrame:
        """Rework: executions of an activity beyond its first in a case.

        ``by="activity"``: per reworked activity, rework executions, cases, cases with rework and their
        share; ``by="case"``: the *top* cases with the most rework (case, variant, rework, duration).
        """
        s = self._schema()
        if by == "activity":
            act, occ = s.col("vertex", "activity"), s.col("vertex", "occurrences")
            where_v, pv = self._where("vertex")
            sql = (
                f'SELECT {act} AS "activity", COUNT(*) AS "executions", '
                f'SUM(CASE WHEN {occ} > 1 THEN ({occ} - 1.0) / {occ} ELSE 0 END) AS "rework_executions", '
                f'SUM(1.0 / {occ}) AS "cases", SUM(CASE WHEN {occ} > 1 THEN 1.0 / {occ} ELSE 0 END) '
                f"AS cases_with_rework FROM {s.table('vertex')}{where_v} GROUP BY {act} "
                f"HAVING MAX({occ}) > 1 ORDER BY rework_executions DESC, {act}"
            )
            frame = self._run(sql, pv)
            frame["executions"] = frame["executions"].astype("Int64")
            for col in ("rework_executions", "cases", "cases_with_rework"):
                frame[col] = _rounded(frame[col])
            frame["rework_share"] = frame["cases_with_rework"].astype("float64") / frame["cases"].astype(
                "float64"
            )
            return self._answer(frame, [sql])
        if by == "case":
            top = positive_int(top, "top")
            case, rw, d = s.col("cases", "case"), s.col("cases", "rework"), s.col("cases", "duration")
            var = s.col("cases", "variant")
            where_c, pc = self._where("cases", (f"{rw} > 0", ()))
            sql = (
                f'SELECT {case} AS "case_id", {var} AS "variant", MAX({rw}) AS "rework", '
                f'MAX({d}) AS "duration" '
                f"FROM {s.table('cases')}{where_c} GROUP BY {case}, {var} "
                f"ORDER BY rework DESC, case_id LIMIT {top}"
            )
            frame = self._run(sql, pc)
            frame["rework"] = frame["rework"].astype("Int64")
            frame["duration"] = _ms(frame["duration"])
            return self._answer(frame, [sql])
        raise ConfigurationError(f"rework(by=...) must be 'activity' or 'case', got {by!r}.")

    def cases_over_time(self, freq: str = "P1W") -> pd.DataFrame:
        """Cases started and finished per period (``freq``: ISO period or ``"week"``...), and cases open at
        the end of each period (started so far minus finished so far)."""
        period = _period(freq)
        s = self._schema()
        t, end = s.col("cases", "time"), s.col("cases", "end")
        where_c, pc = self._where("cases")
        sql_start = (
            f'SELECT TIME_FLOOR({t}, \'{period}\') AS "period", COUNT(*) AS "started" FROM {s.table("cases")}'
            f"{where_c} GROUP BY TIME_FLOOR({t}, '{period}') ORDER BY \"period\""
        )
        fin = f"TIME_FLOOR(MILLIS_TO_TIMESTAMP({end}), '{period}')"
        sql_end = (
            f'SELECT {fin} AS "period", COUNT(*) AS "finished" FROM {s.table("cases")}{where_c} '
            f'GROUP BY {fin} ORDER BY "period"'
        )
        started = self._run(sql_start, pc)
        finished = self._run(sql_end, pc)
        frame = pd.merge(started, finished, on="period", how="outer").sort_values("period")
        for col in ("started", "finished"):
            frame[col] = frame[col].fillna(0).astype("Int64")
        frame["open"] = (frame["started"].cumsum() - frame["finished"].cumsum()).astype("Int64")
        frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
        return self._answer(frame, [sql_start, sql_end], freq=period)

    def conformance(self, allowed: Any) -> pd.DataFrame:
        """Transitions outside *allowed*, with how often they occur, in how many cases and their share.

        :param allowed: ``(source, target)`` pairs, a DataFrame with ``source``/``target`` columns, or a
            :class:`ProcessMap` (its kept edges). START/END transitions are checked only when *allowed*
            mentions START or END. ``df.attrs`` holds ``cases``, ``deviating_cases`` and ``fitness``
            (share of cases with no disallowed transition).
        """
        pairs = _pairs(allowed)
        s = self._schema()
        src, dst, case = s.col("edge", "source"), s.col("edge", "target"), s.col("edge", "case")
        conds: list[Fragment] = []
        if pairs:
            ors = " OR ".join(f"({src} = ? AND {dst} = ?)" for _ in pairs)
            conds.append((f"NOT ({ors})", tuple(v for p in pairs for v in p)))
        if not any(START in p or END in p for p in pairs):
            conds.append((f"{src} <> '{START}' AND {dst} <> '{END}'", ()))
        where_e, pe = self._where("edge", *conds)
        sql = (
            f'SELECT "source", "target", SUM("n") AS "transitions", COUNT(*) AS "cases" FROM ('
            f'SELECT {src} AS "source", {dst} AS "target", {case} AS "case_id", COUNT(*) AS "n" '
            f"FROM {s.table('edge')}{where_e} GROUP BY {src}, {dst}, {case}) "
            f'GROUP BY "source", "target" ORDER BY cases DESC, "source", "target"'
        )
        sql_dev = (
            f'SELECT COUNT(*) AS "deviating" FROM '
            f"(SELECT {case} FROM {s.table('edge')}{where_e} GROUP BY {case})"
        )
        frame = self._run(sql, pe)
        deviating = cell_int(self._run(sql_dev, pe).iloc[0, 0])
        total, sql_total = self._total_cases()
        frame["transitions"] = frame["transitions"].astype("Int64")
        frame["cases"] = frame["cases"].astype("Int64")
        frame["case_share"] = frame["cases"].astype("float64") / total if total else math.nan
        fitness = (1 - deviating / total) if total else math.nan
        return self._answer(
            frame, [sql, sql_dev, sql_total], cases=total, deviating_cases=deviating, fitness=fitness
        )

    # --- process map and event export -------------------------------------------------------------
    def process_map(
        self, metric: str = "frequency", stat: str = "median", activities: float = 1.0, paths: float = 0.3
    ) -> ProcessMap:
        """The directly-follows graph from the transitions table (START/END included), as a
        :class:`~pm_notebook.mining.ProcessMap`: both views' numbers are fetched once (two queries), so
        :meth:`ProcessMap.view` and the interactive widget never query again."""
        from ._map import ProcessMap

        s = self._schema()
        act, d, occ = s.col("vertex", "activity"), s.col("vertex", "duration"), s.col("vertex", "occurrences")
        where_v, pv = self._where("vertex")
        sql_nodes = (
            f'SELECT {act} AS "activity", COUNT(*) AS "frequency", SUM(1.0 / {occ}) AS "cases", '
            f'AVG(CAST({d} AS DOUBLE)) AS "mean", {self._q(0.5, d)} AS "median", {self._q(0.9, d)} AS "p90", '
            f'SUM({d}) AS "total", MIN({d}) AS "min", MAX({d}) AS "max" '
            f"FROM {s.table('vertex')}{where_v} GROUP BY {act} ORDER BY frequency DESC, {act}"
        )
        nodes = self._run(sql_nodes, pv)
        nodes["frequency"] = nodes["frequency"].astype("Int64")
        nodes["cases"] = _rounded(nodes["cases"])
        for col in _STATS:
            nodes[col] = _ms(nodes[col])
        edges, sql_edges = self._edge_stats(order='"frequency" DESC, "source", "target"')
        return ProcessMap(
            nodes,
            edges,
            metric=metric,
            stat=stat,
            activities=activities,
            paths=paths,
            sql=";\n\n".join([sql_nodes, sql_edges]),
            title=self._project.name or self._project.id,
        )

    def event_sql(self, dimensions: Iterable[str] | str | None = "all") -> tuple[str, tuple[Any, ...]]:
        """The statement (and its parameters) :meth:`to_pm4py` runs: one row per task with pm4py's names."""
        s = self._schema()
        case, act, t, end = (s.col("vertex", r) for r in ("case", "activity", "time", "end"))
        cols = [
            f'{case} AS "case:concept:name"',
            f'{act} AS "concept:name"',
            f'MILLIS_TO_TIMESTAMP({end}) AS "time:timestamp"',
            f'{t} AS "start_timestamp"',
        ]
        for column, name in self._event_dimensions(dimensions):
            cols.append(f"{quote(column)} AS {quote(name)}")
        where_v, pv = self._where("vertex")
        return f"SELECT {', '.join(cols)} FROM {s.table('vertex')}{where_v}", pv

    def _event_dimensions(self, dimensions: Iterable[str] | str | None) -> list[tuple[str, str]]:
        s = self._schema()
        columns = s.columns["vertex"]
        if dimensions is None:
            return []
        if dimensions == "all":
            chosen = [c for c in columns if re.search(r"_lpkr$|^detail_\d+_lpkr_", c.lower())]
        else:
            if isinstance(dimensions, str):
                dimensions = [dimensions]
            chosen = [s.dimension("vertex", d).strip('"').replace('""', '"') for d in dimensions]
        out = []
        for c in chosen:
            name = re.sub(r"^detail_\d+_lpkr_|_lpkr$", "", c, flags=re.IGNORECASE)
            out.append((c, "org:resource" if name.lower() == "resource" else name))
        return out

    def to_pm4py(
        self, dimensions: Iterable[str] | str | None = "all", *, chunk_rows: int = 200_000
    ) -> pd.DataFrame:
        """Every task of the filtered log as pm4py's event DataFrame (``case:concept:name``,
        ``concept:name``, ``time:timestamp`` = task end, ``start_timestamp``, dimensions; ``resource``
        becomes ``org:resource``), fetched in chunks of *chunk_rows* and sorted by case and time.

        pm_notebook never imports pm4py; pass the frame to ``pm4py.format_dataframe`` or its functions.
        """
        frames = list(self.iter_events(dimensions, chunk_rows=chunk_rows))
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        frame = frame.sort_values(["case:concept:name", "time:timestamp", "start_timestamp"], kind="stable")
        sql, _ = self.event_sql(dimensions)
        return self._answer(frame, [sql])

    def iter_events(
        self, dimensions: Iterable[str] | str | None = "all", *, chunk_rows: int = 200_000
    ) -> Iterator[pd.DataFrame]:
        """The events of :meth:`to_pm4py` as DataFrames of at most *chunk_rows* rows each (unsorted)."""
        sql, params = self.event_sql(dimensions)
        yield from self._conn.query_chunks(sql, list(params), chunk_rows=chunk_rows)


# --- small helpers ----------------------------------------------------------------------------------
def _qname(q: float) -> str:
    text = f"{q * 100:g}".replace(".", "_")
    return f"p{text}"


def _rounded(values: pd.Series) -> pd.Series:
    return pd.to_numeric(values, errors="coerce").astype("float64").round().astype("Int64")


def _variant_role(by: str) -> str:
    if by == "process":
        return "variant"
    if by == "model":
        return "model"
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


def _after(frame: pd.DataFrame, column: str) -> int:
    """The position just after *column* (a name the frame holds once)."""
    position = frame.columns.get_loc(column)
    if not isinstance(position, int):  # a repeated name: these frames never have one
        raise TypeError(f"column {column!r} is not unique")
    return position + 1


def _period_ms(period: str) -> int:
    m = _PERIOD.match(period)
    assert m is not None
    y, mo, w, d, _, h, mi, sec = (int(g[:-1]) if g and g[-1].isalpha() else 0 for g in m.groups())
    if y or mo:
        raise ConfigurationError(
            f"A duration bucket must be fixed-length (weeks, days, hours), not {period}."
        )
    return ((w * 7 + d) * 24 * 3600 + h * 3600 + mi * 60 + sec) * 1000


def _pairs(allowed: Any) -> list[tuple[str, str]]:
    from ._map import ProcessMap

    if isinstance(allowed, ProcessMap):
        frame = allowed.edges
        pairs = list(zip(frame["source"].astype(str), frame["target"].astype(str), strict=True))
    elif isinstance(allowed, pd.DataFrame):
        if not {"source", "target"} <= set(allowed.columns):
            raise ConfigurationError(
                "conformance(): an allowed DataFrame needs 'source' and 'target' columns."
            )
        pairs = list(zip(allowed["source"].astype(str), allowed["target"].astype(str), strict=True))
    else:
        try:
            pairs = [tuple(p) for p in allowed]
        except TypeError:
            raise ConfigurationError(
                "conformance() needs (source, target) pairs, a DataFrame or a ProcessMap."
            ) from None
        if not all(len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs):
            raise ConfigurationError(
                "conformance(): every allowed transition must be a (source, target) pair."
            )
    return list(dict.fromkeys(pairs))
