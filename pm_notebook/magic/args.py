"""The ``%pmsql`` / ``%%pmsql`` argument parser: text in, :class:`MagicArgs` out (no IPython, no I/O).

Options come first; in the line form everything after the last option is the SQL, kept byte for byte
(SQL quotes are never shell-parsed). ``--`` ends the options explicitly. Option values may be quoted
(``--project "My project"``) and may use ``--opt=value``.

>>> a = parse_args('-o df --limit 5 SELECT \\'a  b\\' AS "x"')
>>> a.output, a.limit, a.sql
('df', 5, 'SELECT \\'a  b\\' AS "x"')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigurationError
from ..sql import TRANSPORTS, transport_name

__all__ = ["OPTION_NAMES", "USAGE", "ArgumentError", "MagicArgs", "parse_args"]

USAGE = """\
%pmsql [options] [SQL]          line form: returns the DataFrame (df = %pmsql SELECT ...)
%%pmsql [options]               cell form: the cell body is the SQL; the result is displayed

Capture:     -o/--output NAME   store the result in the Python variable NAME
             --polars           the result as a polars DataFrame (default: %config PmSql.output)
             --no-display       do not display the result
Values:      {name}             Python variable as a quoted table/column name ({cases} {vertex} {edge}
                                are the chosen project's tables)
             :name              Python variable as a bound parameter (lists expand to ?, ?, ...)
Connection:  --connect          (re)connect from PM_* env vars, .env or keyring
             --env-file PATH    connect with the values of this .env file
             --connection VAR   use the pm_notebook Connection held in VAR
             --project NAME|ID  choose the project behind {cases}, {vertex}, {edge}
Query:       --limit N          fetch at most N rows (0 = all; default: %config PmSql.autolimit)
             --transport T      <transports>
             --chunks N         stream: the result is an iterator of DataFrames of up to N rows
             --to-parquet PATH  write the whole result to a Parquet file
             --explain          show Druid's plan (EXPLAIN PLAN FOR ...)
             --cache            also store the result in the cache folder, for offline replay
             --context KEY=VAL  a Druid query context key for this query (repeatable; VAL is JSON when
                                it parses, else text: --context timeout=5000 --context sqlTimeZone=UTC)
Listings:    --tables           tables of the chosen project (or of every project)
             --columns TABLE    columns of TABLE (a name, or cases / vertex / edge)
Other:       -v/--verbose       show the SQL sent and full tracebacks on errors
             -h/--help          this text
Settings:    %config PmSql.autolimit = 1000 (also displaylimit, transport, verbose, progress)
             %config PmSql.context = {'sqlTimeZone': 'Europe/Paris'}   every query's context
             %config PmSql.output = 'polars'   every result as a polars DataFrame (default 'pandas')
Replay:      %config PmSql.cache = True   store every result (as --cache; or PM_CACHE=1)
             %config PmSql.replay = True  answer from the cache, no network (or PM_REPLAY=1)
             %config PmSql.cache_dir = 'folder'   (default .pm_cache; or PM_CACHE_DIR)
""".replace("<transports>", " | ".join(TRANSPORTS))  # the names come from the sql package only


class ArgumentError(ValueError):
    """The ``%pmsql`` line is malformed; the message names the option and the fix."""


@dataclass
class MagicArgs:
    """The parsed ``%pmsql`` line (``None`` = option not given)."""

    sql: str = ""
    output: str | None = None
    polars: bool = False
    display: bool = True
    limit: int | None = None
    transport: str | None = None
    chunks: int | None = None
    to_parquet: str | None = None
    explain: bool = False
    cache: bool = False
    #: ``--context KEY=VALUE`` options, in order (checked by the connection, before any request)
    context: dict[str, Any] = field(default_factory=dict)
    tables: bool = False
    columns: str | None = None
    project: str | None = None
    connect: bool = False
    env_file: str | None = None
    connection: str | None = None
    verbose: bool = False
    help: bool = False

    @property
    def is_listing(self) -> bool:
        return self.tables or self.columns is not None


# option spelling -> (field, kind); kind: "flag", "str", "int", "name", "transport", "context" (repeatable)
_OPTIONS: dict[str, tuple[str, str]] = {
    "-o": ("output", "name"),
    "--output": ("output", "name"),
    "--polars": ("polars", "flag"),
    "--no-display": ("display", "off"),
    "--limit": ("limit", "int"),
    "--transport": ("transport", "transport"),
    "--chunks": ("chunks", "positive"),
    "--to-parquet": ("to_parquet", "str"),
    "--explain": ("explain", "flag"),
    "--cache": ("cache", "flag"),
    "--context": ("context", "context"),
    "--tables": ("tables", "flag"),
    "--columns": ("columns", "str"),
    "--project": ("project", "str"),
    "--connect": ("connect", "flag"),
    "--env-file": ("env_file", "str"),
    "--connection": ("connection", "name"),
    "-v": ("verbose", "flag"),
    "--verbose": ("verbose", "flag"),
    "-h": ("help", "flag"),
    "--help": ("help", "flag"),
}
OPTION_NAMES = tuple(_OPTIONS)


def _next_token(text: str, pos: int) -> tuple[str, int, int] | None:
    """``(token, start, end)`` of the next shell-like word at or after *pos*; quotes group and are removed."""
    n = len(text)
    while pos < n and text[pos].isspace():
        pos += 1
    if pos >= n:
        return None
    start, parts = pos, []
    while pos < n and not text[pos].isspace():
        c = text[pos]
        if c in "'\"":
            end = text.find(c, pos + 1)
            if end < 0:
                raise ArgumentError(f"Unbalanced {c} in the %pmsql options: {text[start:].strip()!r}.")
            parts.append(text[pos + 1 : end])
            pos = end + 1
        else:
            parts.append(c)
            pos += 1
    return "".join(parts), start, pos


def _context_item(option: str, raw: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--context``: the value as JSON when it parses (``5000``, ``true``), else text."""
    key, eq, text = raw.partition("=")
    key = key.strip()
    if not eq or not key:
        raise ArgumentError(
            f"{option} expects KEY=VALUE, got {raw!r}: for example --context sqlTimeZone=Europe/Paris."
        )
    try:
        value: Any = json.loads(text)
    except ValueError:
        value = text
    return key, value


def _convert(option: str, kind: str, raw: str) -> object:
    if kind in ("int", "positive"):
        try:
            value = int(raw)
        except ValueError:
            raise ArgumentError(f"{option} expects a whole number, got {raw!r}.") from None
        if value < 0 or (kind == "positive" and value == 0):
            need = "a positive number" if kind == "positive" else "0 (no limit) or a positive number"
            raise ArgumentError(f"{option} expects {need}, got {value}.")
        return value
    if kind == "name" and not raw.isidentifier():
        raise ArgumentError(f"{option} expects a Python variable name, got {raw!r}.")
    if kind == "transport":
        # the one transport-name check (sql.transport_name), reported as the parser's own error
        try:
            return transport_name(raw)
        except ConfigurationError:
            raise ArgumentError(f"{option} must be one of {', '.join(TRANSPORTS)}; got {raw!r}.") from None
    if not raw:
        raise ArgumentError(f"{option} expects a value.")
    return raw


def parse_args(line: str, cell: str | None = None) -> MagicArgs:
    """Parse a magic invocation.

    :param line: the text after ``%pmsql`` / ``%%pmsql``.
    :param cell: the cell body for ``%%pmsql``, ``None`` for the line form.
    :raises ArgumentError: unknown option, missing or bad value, stray text, or options that cannot be
        combined.
    """
    values: dict[str, object] = {}
    pos = 0
    sql_start: int | None = None
    while (tok := _next_token(line, pos)) is not None:
        word, start, end = tok
        if word == "--" and line[start:end] == "--":
            sql_start = end
            break
        if not word.startswith("-") or line[start] in "'\"" or _is_number(word):
            sql_start = start
            break
        option, eq, inline = word.partition("=")
        if option not in _OPTIONS:
            raise ArgumentError(f"Unknown option {option!r} for %pmsql. Options:\n{USAGE}")
        field_name, kind = _OPTIONS[option]
        if field_name in values and kind != "context":
            raise ArgumentError(f"{option} is given twice.")
        if kind in ("flag", "off"):
            if eq:
                raise ArgumentError(f"{option} is a switch and takes no value.")
            values[field_name] = kind == "flag"
        else:
            if eq:
                raw = inline
            else:
                nxt = _next_token(line, end)
                if nxt is None or (nxt[0].startswith("-") and nxt[0] in _OPTIONS):
                    raise ArgumentError(f"{option} expects a value.")
                raw, end = nxt[0], nxt[2]
            if kind == "context":
                key, value = _context_item(option, raw)
                given: dict[str, Any] = values.setdefault(field_name, {})  # type: ignore[assignment]
                if key in given:
                    raise ArgumentError(f"{option} {key} is given twice.")
                given[key] = value
            else:
                values[field_name] = _convert(option, kind, raw)
        pos = end
    rest = line[sql_start:].strip() if sql_start is not None else ""
    if cell is not None:
        if rest:
            raise ArgumentError(
                f"Unexpected text on the %%pmsql line: {rest!r}. Put the SQL in the cell body; "
                "to keep the result in a variable use -o NAME."
            )
        rest = cell
    # Druid refuses a trailing ";", which people type out of habit: drop it (a middle one still errors).
    args = MagicArgs(sql=rest.strip().rstrip(";").rstrip(), **values)  # type: ignore[arg-type]
    _check(args)
    return args


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _check(args: MagicArgs) -> None:
    """Reject option combinations that have no sensible meaning."""
    modes = [
        name
        for name, on in (
            ("--chunks", args.chunks),
            ("--to-parquet", args.to_parquet),
            ("--explain", args.explain),
        )
        if on
    ]
    if len(modes) > 1:
        raise ArgumentError(f"{' and '.join(modes)} cannot be combined: choose one.")
    if args.limit is not None and (args.chunks or args.to_parquet):
        raise ArgumentError(
            f"--limit cannot be combined with {modes[0]}, which reads every row; add LIMIT to the SQL."
        )
    if args.output and args.to_parquet:
        raise ArgumentError(
            "-o cannot be combined with --to-parquet: the rows go to the file; "
            "read it back with pandas.read_parquet."
        )
    if args.polars and (modes or args.is_listing):
        what = modes[0] if modes else ("--tables" if args.tables else "--columns")
        raise ArgumentError(f"--polars cannot be combined with {what}: it applies to a query's DataFrame.")
    if args.tables and args.columns is not None:
        raise ArgumentError("--tables and --columns cannot be combined: choose one.")
    if args.is_listing and (args.sql or modes or args.limit is not None or args.context):
        raise ArgumentError("--tables / --columns list metadata and take no SQL or query options.")
    if args.connection and (args.connect or args.env_file):
        raise ArgumentError(
            "--connection VAR uses an existing connection; it cannot be combined with --connect / --env-file."
        )
    if args.output and not (args.sql or args.is_listing):
        raise ArgumentError(
            f"-o {args.output} needs a query to store: give the SQL after the options "
            "(line form) or in the cell body."
        )
    if (args.chunks or args.to_parquet or args.explain or args.limit is not None) and not args.sql:
        raise ArgumentError(f"{(modes or ['--limit'])[0]} needs a query: give the SQL after the options.")
    if args.context and not args.sql:
        raise ArgumentError("--context needs a query: give the SQL after the options.")
