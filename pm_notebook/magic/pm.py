"""``%pm``: the process-mining answers of :meth:`pm_notebook.Connection.mining` in one line.

``%pm summary``, ``%pm variants --top 10 --by model``, ``%pm map --paths 0.3`` … on the project chosen with
``--project`` (here or in ``%pmsql``), shown with the same footer and error conventions as ``%pmsql``; the
answer is kept with ``-o NAME``; ``--sql`` shows the Druid SQL statements the answer ran instead of its table
(some statements are written from an earlier one's result, so they are found by running them).
``%pm upload df --project NAME --create`` sends a DataFrame to a project first (and chooses it).
``%pm drivers slow --by supplier,company_code --min-cases 20`` ranks the dimension values that go with an
outcome (the outcome is the word after ``drivers``; quote one with spaces: ``"where:tasks_count > 8"``).
``%pm compare A B`` compares two parts of the project (``log_a.compare(log_b)``); each of *A*, *B* is a period
of case starts ``FROM..TO`` (either bound may be left out: ``..2025-04-01``), a condition
``"where:CONDITION"`` on the cases table, or with ``--by DIMENSION`` a value of that case dimension
(``%pm compare --by supplier Acme Globex``); ``--map`` draws the compared map under the tables.
``%pm open_cases --sla 30d [--end-activities "Pay Invoice,Cancel Order"]`` lists the open cases with their
estimated remaining time and chance of missing the deadline.
"""

from __future__ import annotations

import argparse
import shlex
import time
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from traitlets import Int

from .._display import map_summary
from ..connection import Connection
from ..errors import ConfigurationError, PMError, QueryCancelled
from .display import Footer, MapView, ResultView, TextView, format_error, shown
from .session import Session

__all__ = ["ANSWERS", "Pm", "parse_pm_args"]

#: answer name -> (method of the process log, the options it takes)
ANSWERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "summary": ("summary", ()),
    "variants": ("variants", ("top", "by")),
    "throughput": ("throughput", ("by",)),
    "activities": ("activities", ()),
    "transitions": ("transitions", ()),
    "bottlenecks": ("bottlenecks", ("k", "metric")),
    "rework": ("rework", ("by", "top")),
    "cases": ("cases_over_time", ("freq",)),
    "map": ("process_map", ("metric", "stat", "activities", "paths")),
    "resources": ("resources", ("by",)),
    "handovers": ("handovers", ()),
    "arrivals": ("arrivals", ("freq",)),
    "wip": ("work_in_progress", ("freq",)),
    "dotted": ("dotted_chart", ("freq",)),
    "endpoints": ("endpoints", ()),
    "drivers": ("drivers", ("outcome", "by", "min_cases")),
    "compare": ("compare", ("top", "by", "metric", "stat", "activities", "paths")),
    "open_cases": ("open_cases", ("sla", "end_activities")),
}
#: not an answer: ``%pm upload DF --project NAME [--create]`` sends a DataFrame to a project
UPLOAD = "upload"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel
        raise ConfigurationError(f"%pm: {message}.", hint="%pm --help lists the answers and their options.")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%pm", add_help=False, description="Process-mining answers computed by Druid SQL.")
    p.add_argument("answer", nargs="?", choices=[*sorted(ANSWERS), UPLOAD], help="the answer to compute")
    p.add_argument(
        "data",
        nargs="?",
        help="upload: the Python variable holding the DataFrame (or a path); drivers: the outcome "
        '(slow, slow:p90, rework, not_completed, with_activity:NAME, "where:CONDITION"); compare: the '
        'first part (FROM..TO, "where:CONDITION" or, with --by, a value)',
    )
    p.add_argument("more", nargs="*", help="compare: the second part, as the first")
    p.add_argument("--map", action="store_true", help="compare: draw the compared process map too")
    p.add_argument("--create", action="store_true", help="upload: create the project when it does not exist")
    p.add_argument("--project", help="project name or id (default: the one chosen before)")
    p.add_argument("-o", "--output", help="keep the answer in this Python variable")
    p.add_argument(
        "--sql", action="store_true", help="show the answer's Druid SQL statements instead of its table"
    )
    p.add_argument("--completed", action="store_true", help="completed cases only")
    p.add_argument("--include-excluded", action="store_true", help="keep the excluded cases")
    p.add_argument("--resource", help="resources, handovers: the dimension naming who did each task")
    p.add_argument("--top", type=_rows, help="variants, rework: how many rows (all: every one)")
    p.add_argument(
        "--by",
        help="variants: process|model; throughput: variant|week|<dimension>; rework: activity|case; "
        "resources: activity; drivers: dimensions, comma-separated; compare: the case dimension whose "
        "two values are compared",
    )
    p.add_argument(
        "--min-cases", type=int, dest="min_cases", help="drivers: values with fewer cases are left out"
    )
    p.add_argument("--sla", help="open_cases: the deadline, a duration (30d, '30 days', 12h)")
    p.add_argument(
        "--end-activities",
        dest="end_activities",
        help="open_cases: the activities that complete a case, comma-separated (default: the project's "
        "completion lookup)",
    )
    p.add_argument("--k", type=int, help="bottlenecks: how many transitions")
    p.add_argument("--metric", help="bottlenecks: p90|total; map: frequency|performance")
    p.add_argument("--stat", help="map: the waiting-time statistic (median, mean, p90, ...)")
    p.add_argument("--freq", help="cases, arrivals, wip, dotted: the period (ISO 8601, e.g. P1W, P1M)")
    p.add_argument("--activities", type=float, help="map: share of activities kept (0-1)")
    p.add_argument("--paths", type=float, help="map: share of paths kept (0-1)")
    p.add_argument("-h", "--help", action="store_true")
    return p


def _rows(text: str) -> int | str:
    """``--top``: a number of rows, or ``all`` (the answer's ``top=None``)."""
    return "all" if text.strip().lower() == "all" else int(text)


_rows.__name__ = "int or 'all'"  # argparse names the type in its refusal: "invalid int or 'all' value"

PARSER = _parser()
USAGE = PARSER.format_help()


def parse_pm_args(line: str) -> argparse.Namespace:
    """Parse a ``%pm`` line; options that the chosen answer does not take are refused by name."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise ConfigurationError(f"%pm: {exc}.", hint="Close the quote.") from None
    args = PARSER.parse_intermixed_args(words)  # options may come before or between the words
    if args.answer == UPLOAD:
        if not args.data or not args.project:
            raise ConfigurationError(
                "%pm upload needs the data and the project.", hint='%pm upload df --project "My log" --create'
            )
    elif args.answer == "drivers":
        if not args.data:
            raise ConfigurationError(
                "%pm drivers needs an outcome.",
                hint='%pm drivers slow | rework | not_completed | with_activity:NAME | "where:CONDITION"',
            )
        args.outcome = args.data
        if args.by is not None:
            args.by = [name.strip() for name in args.by.split(",") if name.strip()]
    elif args.answer == "compare":
        if args.data is None or len(args.more) != 1:
            raise ConfigurationError(
                "%pm compare needs two parts of the project.",
                hint="%pm compare 2025-01-01..2025-04-01 2025-04-01..2025-07-01 | %pm compare --by supplier "
                'Acme Globex | %pm compare "where:rework > 0" "where:rework = 0"',
            )
        args.parts = (args.data, args.more[0])
    elif args.data is not None:
        raise ConfigurationError(f"%pm {args.answer}: unexpected {args.data!r}.", hint="%pm --help")
    if args.more and args.answer != "compare":
        raise ConfigurationError(f"%pm {args.answer}: unexpected {args.more[0]!r}.", hint="%pm --help")
    if args.map and args.answer != "compare":
        raise ConfigurationError("--map goes with %pm compare.", hint="%pm map draws the process map.")
    if args.end_activities is not None:
        args.end_activities = [name.strip() for name in args.end_activities.split(",") if name.strip()]
    if args.create and args.answer != UPLOAD:
        raise ConfigurationError(
            "--create goes with %pm upload.", hint="%pm upload df --project NAME --create"
        )
    if args.answer is not None and args.answer != UPLOAD:
        allowed = set(ANSWERS[args.answer][1])
        names = (
            *("top", "by", "k", "metric", "stat", "freq", "activities", "paths", "min_cases"),
            *("sla", "end_activities"),
        )
        given = [n for n in names if getattr(args, n) is not None]
        wrong = [n for n in given if n not in allowed]
        if wrong:
            options = [n.replace("_", "-") for n in ANSWERS[args.answer][1] if n != "outcome"]
            takes = ", ".join(f"--{n}" for n in options) or "no answer options"
            raise ConfigurationError(
                f"%pm {args.answer} does not take --{wrong[0].replace('_', '-')}.",
                hint=f"%pm {args.answer} takes {takes}.",
            )
    return args


@magics_class
class Pm(Magics):
    """``%pm <answer> [options]``: summary, variants, throughput, activities, transitions, bottlenecks,
    rework, cases (over time), map, resources, handovers, arrivals, wip (work in progress), dotted (a
    dotted chart), endpoints, drivers, compare, open_cases — on the chosen project (``%config
    Pm.displaylimit`` rows shown)."""

    #: the identifier of this magic's completion matcher (found again by ``%unload_ext``)
    matcher_identifier = "pm_notebook.pm"

    displaylimit = Int(20, config=True, help="Rows of an answer shown under the cell; 0 = all.")

    def __init__(self, shell: Any = None, session: Session | None = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session = session or Session()

    @no_var_expand
    @line_magic
    def pm(self, line: str) -> Any:
        """A process-mining answer of the chosen project; ``%pm --help`` lists them."""
        try:
            args = parse_pm_args(line)
        except ConfigurationError as err:  # a malformed %pm line: a usage error, as IPython words it
            raise UsageError(str(err)) from None
        if args.help or args.answer is None:
            self._show(TextView(USAGE))
            return None
        try:
            return self._answer(args)
        except (PMError, KeyboardInterrupt) as err:
            error: BaseException = err
            if isinstance(err, KeyboardInterrupt):  # the answer's statement was stopped on the server
                error = QueryCancelled("Query cancelled: the statement was stopped on the server.")
            # the answer's SQL is not the user's text: no position, no traceback to offer
            raise shown(error, format_error(error, verbose=True)) from (err if error is not err else None)

    def complete(self, context: Any) -> dict[str, Any]:
        """Complete the answer names after ``%pm``."""
        text = getattr(context, "token", "") or ""
        line = getattr(context, "line_with_cursor", "") or ""
        if not line.lstrip().startswith("%pm ") or line.lstrip().startswith("%pmsql"):
            return {"completions": [], "suppress": False}
        from IPython.core.completer import SimpleCompletion

        names = [n for n in sorted(ANSWERS) if n.startswith(text)]
        return {"completions": [SimpleCompletion(n, type="keyword") for n in names], "suppress": bool(names)}

    # --- steps -------------------------------------------------------------------------------------------
    def _answer(self, args: argparse.Namespace) -> Any:
        conn = self.session.connection(self.shell.user_ns if self.shell else {})
        if args.answer == UPLOAD:
            return self._upload(conn, args)
        if args.project:
            self.session.choose_project(conn, args.project)
        # the session's log of the project (its schema and exclusions read once), with this line's choice
        log = self.session.mining(conn, self._project(conn), resource=args.resource)
        log = log.with_excluded(args.include_excluded)
        if args.completed:
            log = log.completed_only()
        if args.answer == "compare":
            return self._compare(log, args, conn.resolve_transport())
        method, options = ANSWERS[args.answer]
        kwargs = {name: getattr(args, name) for name in options if getattr(args, name) is not None}
        if kwargs.get("top") == "all":
            kwargs["top"] = None  # every row
        answer: Callable[..., Any] = getattr(log, method)
        started = time.monotonic()
        result = answer(**kwargs)
        elapsed = time.monotonic() - started
        if args.answer == "map":  # the transport that served the answer's statements, as they reported it
            return self._map(result, args, elapsed, result.transport or conn.resolve_transport())
        if args.answer == "dotted":
            return self._chart(
                result, args, elapsed, result.data.attrs.get("transport") or conn.resolve_transport()
            )
        if args.sql:
            self._show(TextView(result.attrs.get("sql", "") + ";"))
        else:
            footer = Footer(
                rows=len(result),
                columns=len(result.columns),
                elapsed=elapsed,
                transport=result.attrs.get("transport"),
            )
            self._show(ResultView(result, footer, displaylimit=self.displaylimit))
        return self._keep(result, args)

    def _compare(self, log: Any, args: argparse.Namespace, transport: str) -> Any:
        """``%pm compare A B``: the two parts as filtered logs, their comparison, the map with ``--map``."""
        a, b = (_part(log, text, args.by) for text in args.parts)
        top = None if args.top == "all" else 20 if args.top is None else args.top
        started = time.monotonic()
        result = a.compare(b, labels=args.parts, top=top)
        elapsed = time.monotonic() - started
        if args.sql:
            self._show(TextView(result.sql + ";"))
            return self._keep(result, args)
        self._show(result)
        self._show(TextView(f"{result.statements} statements · {elapsed:.2f} s · via {transport}"))
        if args.map:
            view = {n: getattr(args, n) for n in ("metric", "stat", "activities", "paths")}
            pmap = result.process_map(**{n: v for n, v in view.items() if v is not None})
            self._show(MapView(pmap, map_summary(pmap)))
        return self._keep(result, args)

    def _map(self, pmap: Any, args: argparse.Namespace, elapsed: float, transport: str) -> Any:
        if args.sql:
            self._show(TextView(pmap.sql + ";"))
        else:
            self._show(MapView(pmap, f"{map_summary(pmap)} · {elapsed:.2f} s · via {transport}"))
        return self._keep(pmap, args)

    def _chart(self, chart: Any, args: argparse.Namespace, elapsed: float, transport: str) -> Any:
        if args.sql:
            self._show(TextView(chart.data.attrs.get("sql", "") + ";"))
        else:
            self._show(chart)
            self._show(TextView(f"{len(chart.data):,} bins · {elapsed:.2f} s · via {transport}"))
        return self._keep(chart, args)

    def _upload(self, conn: Connection, args: argparse.Namespace) -> None:
        """Send a DataFrame (or a file) to a project, wait for its ingestion, then choose that project."""
        ns = self.shell.user_ns if self.shell else {}
        data = ns.get(args.data, args.data)  # a variable, else a path
        if not args.create:
            project: Any = args.project
        else:
            existing = [p for p in conn.projects() if args.project in (p.name, p.id)]
            project = existing[0] if existing else conn.create_project(args.project)
        started = time.monotonic()
        uploaded = conn.upload(project, data)
        self.session.forget_logs()  # the project's tables changed: its schema and exclusions are read anew
        elapsed = time.monotonic() - started
        self.session.choose_project(conn, uploaded.project_id)
        events = f"{uploaded.events:,} events" if uploaded.events is not None else "the events"
        self._show(
            TextView(
                f"Uploaded {events} of {args.data} to project {args.project!r} ({uploaded.project_id}): "
                f"{uploaded.status} · {elapsed:.2f} s. %pm and %pmsql now use this project."
            )
        )
        return self._keep(uploaded, args)

    def _project(self, conn: Connection) -> Any:
        choice = self.session.choice(conn)
        if choice is None:
            raise ConfigurationError(
                "%pm needs a project.",
                hint='Choose one: %pm summary --project "Purchase to Pay" (or %pmsql --project).',
            )
        return choice.project

    def _keep(self, value: Any, args: argparse.Namespace) -> None:
        if args.output:
            self.shell.user_ns[args.output] = value  # type: ignore[union-attr]
        return None

    def _show(self, obj: Any) -> None:
        """Publish *obj* through this shell (as ``%pmsql`` does), so any shell can host the magic."""
        data, metadata = self.shell.display_formatter.format(obj)  # type: ignore[union-attr]
        self.shell.display_pub.publish(data, metadata)  # type: ignore[union-attr]


Pm.pm.__doc__ = f"{Pm.pm.__doc__}\n\n{USAGE}"


def _part(log: Any, text: str, by: str | None) -> Any:
    """One part of ``%pm compare``: ``"where:CONDITION"``, a value of the case dimension *by*, or a period of
    case starts ``FROM..TO``."""
    if text.lower().startswith("where:"):
        return log.where(text[len("where:") :].strip())
    if by is not None:
        return log.where(f"{log.schema.dimension('cases', by)} = ?", text)
    start, sep, end = text.partition("..")
    if not sep:
        raise ConfigurationError(
            f"%pm compare: {text!r} is neither a period FROM..TO nor a condition where:CONDITION.",
            hint="%pm compare 2025-01-01..2025-04-01 2025-04-01.. (or --by DIMENSION VALUE_A VALUE_B)",
        )
    return log.between(start.strip() or None, end.strip() or None)
