"""The result cache behind offline replay: each SQL result as Parquet, each REST listing as JSON.

A cache is a folder (default ``./.pm_cache`` — a kernel's working directory is its notebook's folder). One
entry is two files named by the entry's key:

- ``<key>-<hash>.parquet``: the rows, as the Arrow table the live query produced (columns stored under
  positional names, so results with duplicate column names survive Parquet);
- ``<key>.json``: what was asked (SQL, typed parameters, the transport asked for), what answered (the
  transport that ran it, whether a row cap cut it), when, the column names and types, and the SHA-256 of
  the Parquet file.

Both are written to a temporary file in the folder, then renamed: an interrupted write leaves either the old
entry or none. The JSON is renamed last and names its data file with its hash, so a reader never pairs a
description with other rows; a data file changed or cut short afterwards fails the hash check and is
reported as :class:`~pm_notebook.errors.CacheError`.

The key is the SHA-256 of the SQL text, the parameters (JSON with a type tag per value, so ``1``, ``1.0``
and ``"1"`` differ), the transport asked for and, when there is one, the part of the query context that may
change the answer (the caller chooses it: :func:`pm_notebook.query_context.answer_context`).

REST answers are stored under ``rest-<key>.json``: every GET of the REST client (``projects()``,
``tables(p)``, paged routes) keyed by path and query parameters, with its status, content type, body and
the body's hash.

This module knows nothing of connections, IPython or the network: :class:`pm_notebook.Connection` decides
when to store and when to answer from here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import decimal
import difflib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from .errors import CacheError, ConfigurationError, QueryError, ReplayMiss, _rebuild

__all__ = ["DEFAULT_DIR", "Entry", "ResultCache", "tag_params"]

#: the cache folder when none is configured, relative to the working directory
DEFAULT_DIR = ".pm_cache"
_FORMAT = 1
_WHAT_TO_DO = (
    "Run the notebook once against the service with caching on (PM_CACHE=1, connect(cache=True) or "
    "%pmsql --cache), then replay it."
)


def tag_params(params: Sequence[Any]) -> list[list[Any]]:
    """Parameters as JSON, each with its SQL type: ``[["BIGINT", 1], ["DOUBLE", "1.0"], ["VARCHAR", "1"]]``.

    The values are those :func:`pm_notebook.sql.check_params` accepted: plain Python values, or classified
    parameters (objects with a Druid ``type`` and a canonical ``value``), which keep their own type.
    Doubles and decimals are kept as text (exact, and ``1.0`` stays apart from ``1``); dates and datetimes
    in ISO form.

    >>> tag_params([1, 1.0, "1", None, True])
    [['BIGINT', 1], ['DOUBLE', '1.0'], ['VARCHAR', '1'], ['NULL', None], ['BOOLEAN', True]]
    """
    tagged: list[list[Any]] = []
    for value in params:
        kind = getattr(value, "type", None)
        if isinstance(kind, str) and hasattr(value, "value"):  # already classified: keep its SQL type
            inner = value.value
            tagged.append([kind.upper(), repr(inner) if isinstance(inner, float) else _plain_value(inner)])
        elif value is None:
            tagged.append(["NULL", None])
        elif isinstance(value, bool):
            tagged.append(["BOOLEAN", value])
        elif isinstance(value, int):
            tagged.append(["BIGINT", value])
        elif isinstance(value, float):
            tagged.append(["DOUBLE", repr(value)])
        elif isinstance(value, decimal.Decimal):
            tagged.append(["DECIMAL", str(value)])
        elif isinstance(value, dt.datetime):
            tagged.append(["TIMESTAMP", value.isoformat()])
        elif isinstance(value, dt.date):
            tagged.append(["DATE", value.isoformat()])
        elif isinstance(value, str):
            tagged.append(["VARCHAR", value])
        else:  # check_params admits nothing else; a clear error beats a wrong key
            raise ConfigurationError(f"Parameter {value!r:.40} cannot be stored in the result cache.")
    return tagged


def _plain_value(value: Any) -> Any:
    """A classified parameter's canonical value as JSON (it is one already, but be safe with the exotic)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def _show_params(tagged: Sequence[Sequence[Any]]) -> str:
    """The parameters as a reader writes them: ``[1, 1.0, '1']``."""
    shown = []
    for kind, value in tagged:
        if kind == "DOUBLE":
            shown.append(str(value))
        elif kind == "DECIMAL":
            shown.append(f"Decimal('{value}')")
        elif kind in ("TIMESTAMP", "DATE"):
            shown.append(f"{kind} {value}")
        else:
            shown.append(repr(value))
    return "[" + ", ".join(shown) + "]"


def _digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """The description of one stored SQL result (the ``<key>.json`` of an entry)."""

    key: str
    sql: str
    params: list[Any]
    requested: str
    transport: str
    truncated: bool
    limit: int
    rows: int
    columns: list[Any]
    stored_at: str
    data: str
    sha256: str
    #: the fields of the QueryError the SQL engine answered instead of rows (then there is no data file)
    error: dict[str, Any] | None = None
    #: the query context keys it was run with that may change the answer (part of the key when not empty)
    context: dict[str, Any] = dataclasses.field(default_factory=dict)

    def serves(self, limit: int) -> bool:
        """Whether this entry holds every row a fetch with *limit* (0: all) would return."""
        return self.error is not None or not self.truncated or (limit > 0 and limit <= self.limit)


def _write_atomic(folder: Path, name: str, payload: bytes) -> None:
    """Write *payload* to ``folder/name`` through a temporary file and a rename (all or nothing)."""
    fd, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=folder)
    try:
        with os.fdopen(fd, "wb") as sink:
            sink.write(payload)
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(partial, folder / name)
    except BaseException:  # Ctrl-C included: never leave a partial file behind
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


class ResultCache:
    """One cache folder: store results, find them again, explain a miss.

    :param folder: the cache folder; created on the first store (replay only reads it).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        if not isinstance(folder, (str, os.PathLike)) or not str(folder).strip():
            raise ConfigurationError(
                f"cache_dir must be a folder path, got {type(folder).__name__} {folder!r:.40}.",
                hint=f"For example connect(cache_dir='{DEFAULT_DIR}').",
            )
        # fixed at creation: a later chdir of the kernel does not move the cache
        self.folder = Path(folder).expanduser().absolute()

    def __repr__(self) -> str:
        return f"<ResultCache {str(self.folder)!r}>"

    # --- SQL results ------------------------------------------------------------------------------
    @staticmethod
    def key(sql: str, tagged: list[Any], requested: str, context: dict[str, Any] | None = None) -> str:
        """The entry key of a statement: its SQL, its tagged parameters, the transport asked for and its
        *context* (left out when empty, so entries stored without one keep their key)."""
        asked: dict[str, Any] = {"sql": sql, "params": tagged, "transport": requested}
        if context:
            asked["context"] = context
        return _digest(asked)

    def _ensure_folder(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"The cache folder {str(self.folder)!r} cannot be created ({exc.strerror or exc}).",
                hint="Choose a writable folder with connect(cache_dir=...) or PM_CACHE_DIR.",
            ) from None

    def store(
        self,
        sql: str,
        params: Sequence[Any],
        requested: str,
        table: pa.Table,
        *,
        transport: str,
        truncated: bool = False,
        limit: int = 0,
        context: dict[str, Any] | None = None,
    ) -> Entry:
        """Store *table*, the result of *sql* with *params* (and *context*); a previous entry of the same key
        is replaced."""
        import pyarrow.parquet as pq

        names = list(table.schema.names)
        positional = table.rename_columns([f"c{i}" for i in range(len(names))])
        sink = pa.BufferOutputStream()
        pq.write_table(positional, sink)
        payload = sink.getvalue().to_pybytes()
        digest = hashlib.sha256(payload).hexdigest()
        return self._write(
            sql,
            params,
            requested,
            payload,
            transport=transport,
            truncated=truncated,
            limit=limit,
            rows=table.num_rows,
            columns=[[n, str(f.type)] for n, f in zip(names, table.schema, strict=True)],
            sha256=digest,
            names=names,
            context=dict(context or {}),
        )

    def store_error(
        self,
        sql: str,
        params: Sequence[Any],
        requested: str,
        error: QueryError,
        *,
        context: dict[str, Any] | None = None,
    ) -> Entry:
        """Store the SQL engine's refusal of *sql*, so a replay raises the same error (same message, same
        position) instead of a miss; replaces a previous entry of the same key."""
        state = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(error).items()}
        error_state = json.loads(json.dumps(state, default=str))
        return self._write(sql, params, requested, None, error=error_state, context=dict(context or {}))

    def _write(
        self,
        sql: str,
        params: Sequence[Any],
        requested: str,
        payload: bytes | None,
        *,
        names: list[str] | None = None,
        **fields: Any,
    ) -> Entry:
        """Write one entry: its data file (*payload*, none for a stored error), then its description, then
        drop the data file of the entry it replaces. The description is renamed last, so a reader never
        pairs it with other rows."""
        self._ensure_folder()
        tagged = tag_params(params)
        key = self.key(sql, tagged, requested, fields.get("context"))
        data_name = f"{key}-{fields['sha256'][:16]}.parquet" if payload is not None else ""
        entry = Entry(
            **{
                "transport": requested,
                "truncated": False,
                "limit": 0,
                "rows": 0,
                "columns": [],
                "sha256": "",
                **fields,
                "key": key,
                "sql": sql,
                "params": tagged,
                "requested": requested,
                "stored_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "data": data_name,
            }
        )
        previous = self._read_entry(self.folder / f"{key}.json", strict=False)
        if payload is not None:
            _write_atomic(self.folder, data_name, payload)
        description = {"format": _FORMAT, **dataclasses.asdict(entry)}
        if names is not None:
            description["names"] = names
        _write_atomic(self.folder, f"{key}.json", json.dumps(description, indent=1).encode("utf-8"))
        if previous is not None and previous.data and previous.data != data_name:  # rows no longer named
            with contextlib.suppress(OSError):
                (self.folder / previous.data).unlink()
        return entry

    def _read_entry(self, path: Path, *, strict: bool) -> Entry | None:
        """The entry described by *path*; None if absent (or unreadable and not *strict*)."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("format") != _FORMAT:
                raise ValueError(f"format {raw.get('format')!r}")
            fields = {f.name for f in dataclasses.fields(Entry)}
            return Entry(**{k: v for k, v in raw.items() if k in fields})
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            if not strict:
                return None
            raise CacheError(
                f"The cache entry {str(path)!r} is unreadable ({type(exc).__name__}: {exc}).",
                hint=f"Delete it and store the result again. {_WHAT_TO_DO}",
            ) from None

    def entries(self) -> list[Entry]:
        """Every readable SQL entry of the folder (unreadable ones are skipped here, reported on use)."""
        if not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.glob("*.json")):
            if path.name.startswith(("rest-", ".")):
                continue
            entry = self._read_entry(path, strict=False)
            if entry is not None:
                found.append(entry)
        return found

    def load(self, entry: Entry) -> pa.Table:
        """The rows of *entry*, checked against its hash, with the column names and types stored.

        :raises CacheError: the data file is missing or its content is not what was stored.
        """
        import pyarrow.parquet as pq

        path = self.folder / entry.data
        try:
            payload = path.read_bytes()
        except OSError as exc:
            raise CacheError(
                f"The cache entry for {_short(entry.sql)!r} has lost its data file {str(path)!r} "
                f"({exc.strerror or exc}).",
                hint=f"Delete {entry.key}.json and store the result again. {_WHAT_TO_DO}",
            ) from None
        if hashlib.sha256(payload).hexdigest() != entry.sha256:
            raise CacheError(
                f"The cache entry {str(path)!r} (for {_short(entry.sql)!r}) is corrupted or partial: "
                "its content hash does not match the one recorded when it was stored.",
                hint=f"Delete {entry.data} and {entry.key}.json, then store it again. {_WHAT_TO_DO}",
            )
        table = pq.read_table(pa.BufferReader(payload))
        names = [name for name, _ in entry.columns]
        return table.rename_columns(names)

    def find(
        self,
        sql: str,
        params: Sequence[Any],
        requested: str,
        *,
        limit: int = 0,
        context: dict[str, Any] | None = None,
    ) -> Entry:
        """The stored entry answering *sql* with *params* and *context* (transport *requested*, row cap
        *limit*).

        An entry asked for with another transport also answers when it ran on the transport asked for, or
        when ``"auto"`` is asked (the rows and types are the same on every transport).

        :raises ReplayMiss: nothing stored answers it; the message says what differs and what to do.
        """
        tagged = tag_params(params)
        context = dict(context or {})
        exact = self._read_entry(
            self.folder / f"{self.key(sql, tagged, requested, context)}.json", strict=True
        )
        if exact is not None and exact.serves(limit):
            return exact  # the common case: one file read, no scan of the folder
        asked = [e for e in self.entries() if e.sql == sql and e.params == tagged]
        same = [e for e in asked if e.context == context]
        for entry in same:
            if (entry.transport == requested or requested == "auto") and entry.serves(limit):
                return entry
        if asked and not same:
            raise ReplayMiss(self._explain_context_miss(sql, context, asked), hint=_WHAT_TO_DO)
        raise ReplayMiss(self._explain_miss(sql, tagged, requested, limit, same), hint=_WHAT_TO_DO)

    def _explain_context_miss(self, sql: str, context: dict[str, Any], asked: list[Entry]) -> str:
        def show(ctx: dict[str, Any]) -> str:
            return json.dumps(ctx, sort_keys=True) if ctx else "no context"

        stored = "; ".join(sorted({show(e.context) for e in asked}))
        return (
            f"Replay: {_short(sql)!r} is stored in {str(self.folder)!r}, but with another query context "
            f"(keys that may change the answer).\n  asked:  {show(context)}\n  stored: {stored}"
        )

    def auto_transport(self) -> str:
        """The transport that served the statements stored with transport ``"auto"`` (the latest, if several).

        :raises ReplayMiss: no such statement is stored.
        """
        served = [
            (e.stored_at, e.transport) for e in self.entries() if e.requested == "auto" and e.error is None
        ]
        if not served:
            raise ReplayMiss(
                f"Replay: no statement run with transport 'auto' is stored in {str(self.folder)!r}, so which "
                "transport 'auto' chose is not known.",
                hint=_WHAT_TO_DO,
            )
        return max(served)[1]

    def _explain_miss(
        self, sql: str, tagged: list[Any], requested: str, limit: int, same: list[Entry]
    ) -> str:
        where = f"in {str(self.folder)!r}"
        if same:
            stored = ", ".join(
                f"{e.transport} ({'first ' + format(e.limit, ',') + ' rows' if e.truncated else 'all rows'})"
                for e in same
            )
            wanted = "all rows" if not limit else f"up to {limit:,} rows"
            return (
                f"Replay: {_short(sql)!r} is stored {where} for transport(s) {stored}, but this call asks "
                f"for transport {requested!r}, {wanted}."
            )
        entries = self.entries()
        if not entries:
            return (
                f"Replay: no result is stored {where} (the folder is missing or empty) for {_short(sql)!r}."
            )
        same_sql = [e for e in entries if e.sql == sql]
        if same_sql:
            others = "; ".join(sorted({_show_params(e.params) for e in same_sql}))
            return (
                f"Replay: {_short(sql)!r} is stored {where}, but with other parameters.\n"
                f"  asked:  {_show_params(tagged)}\n  stored: {others}"
            )
        closest = max(entries, key=lambda e: difflib.SequenceMatcher(None, e.sql, sql).ratio())
        diff = _short_diff(closest.sql, sql)
        return (
            f"Replay: this SQL is not stored {where} ({len(entries)} stored result(s)). "
            f"The closest stored SQL differs:\n{diff}"
        )

    @staticmethod
    def stored_error(entry: Entry) -> QueryError:
        """The QueryError *entry* holds, rebuilt with every field it had."""
        state = dict(entry.error or {})
        if isinstance(state.get("position"), list):
            state["position"] = tuple(state["position"])
        error = _rebuild(QueryError, state)
        assert isinstance(error, QueryError)
        return error

    # --- REST answers ------------------------------------------------------------------------------
    @staticmethod
    def _route(path: str, params: Any) -> tuple[str, list[Any]]:
        """A GET as stored: its path and its query parameters as sorted text pairs."""
        pairs = sorted((str(k), str(v)) for k, v in dict(params or {}).items())
        return path, [list(p) for p in pairs]

    @staticmethod
    def _show_route(path: str, pairs: list[Any]) -> str:
        return path + ("?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else "")

    def store_response(self, path: str, params: Any, status: int, content_type: str, body: bytes) -> None:
        """Store the answer of ``GET {api}/path?params`` (status, content type, body) for replay."""
        route, pairs = self._route(path, params)
        text = body.decode("utf-8", errors="replace")
        value = {"status": status, "content_type": content_type, "body": text}
        value["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.store_rest("GET", [route, json.dumps(pairs)], value)

    def load_response(self, path: str, params: Any, what: str) -> tuple[int, str, bytes]:
        """The stored answer of ``GET {api}/path?params``: ``(status, content type, body)``.

        :raises ReplayMiss: not stored; the message lists stored GETs of the same route.
        :raises CacheError: the stored answer is unreadable or its body does not match its hash.
        """
        route, pairs = self._route(path, params)
        shown = self._show_route(route, pairs)
        try:
            value = self.load_rest("GET", [route, json.dumps(pairs)])
        except ReplayMiss:
            first = "/" + route.strip("/").split("/", 1)[0]
            stored = sorted(
                self._show_route(args[0], json.loads(args[1]))
                for args in self._rest_args("GET")
                if args[0] == first or args[0].startswith(first + "/")
            )
            also = (
                f" Stored for that route: {', '.join(stored[:5])}{' …' if len(stored) > 5 else ''}."
                if stored
                else ""
            )
            raise ReplayMiss(
                f"Replay: the answer to {what} (GET {shown}) is not stored in {str(self.folder)!r}.{also}",
                hint=_WHAT_TO_DO,
            ) from None
        try:
            status, content_type, body = int(value["status"]), str(value["content_type"]), str(value["body"])
            intact = hashlib.sha256(body.encode("utf-8")).hexdigest() == value["sha256"]
        except (KeyError, TypeError, ValueError, AttributeError):
            intact = False
        if not intact:
            raise CacheError(
                f"The stored answer to {what} (GET {shown}) in {str(self.folder)!r} is corrupted: its "
                "content hash does not match the one recorded when it was stored.",
                hint=f"Delete the folder's rest-*.json files for it and store them again. {_WHAT_TO_DO}",
            )
        return status, content_type, body.encode("utf-8")

    def store_rest(self, call: str, args: Sequence[str], value: Any) -> None:
        """Store the JSON-able *value* of *call* with *args* (``rest-<key>.json``)."""
        self._ensure_folder()
        key = _digest({"call": call, "args": list(args)})
        body = {"format": _FORMAT, "call": call, "args": list(args), "value": value}
        body["stored_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        _write_atomic(self.folder, f"rest-{key}.json", json.dumps(body, indent=1).encode("utf-8"))

    def load_rest(self, call: str, args: Sequence[str]) -> Any:
        """The value stored for *call* with *args*.

        :raises ReplayMiss: not stored.
        :raises CacheError: the stored file is unreadable.
        """
        key = _digest({"call": call, "args": list(args)})
        path = self.folder / f"rest-{key}.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("format") != _FORMAT or raw.get("call") != call:
                raise ValueError("not a stored answer of this call")
            return raw["value"]
        except FileNotFoundError:
            raise ReplayMiss(
                f"Replay: {call} {', '.join(map(str, args))} is not stored in {str(self.folder)!r}.",
                hint=_WHAT_TO_DO,
            ) from None
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise CacheError(
                f"The cache entry {str(path)!r} is unreadable ({type(exc).__name__}: {exc}).",
                hint=f"Delete it and store it again. {_WHAT_TO_DO}",
            ) from None

    def _rest_args(self, call: str) -> list[list[str]]:
        """The argument lists stored for *call* (unreadable files skipped)."""
        if not self.folder.is_dir():
            return []
        seen = []
        for path in self.folder.glob("rest-*.json"):
            with contextlib.suppress(OSError, ValueError, KeyError, AttributeError, TypeError):
                raw = json.loads(path.read_text(encoding="utf-8"))
                if raw.get("call") == call:
                    seen.append(list(raw["args"]))
        return seen


def _short(sql: str, width: int = 70) -> str:
    one_line = " ".join(sql.split())
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def _short_diff(stored: str, asked: str, hunks: int = 3, context: int = 6) -> str:
    """Where the asked SQL differs from the stored one: a few hunks, each with some words of context.

    Multi-line statements are compared line by line, one-line statements word by word.
    """
    multi = "\n" in stored.strip() or "\n" in asked.strip()
    a, b = (stored.splitlines(), asked.splitlines()) if multi else (stored.split(), asked.split())
    sep = "\n          " if multi else " "
    out = []
    opcodes = [
        op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    for _, i1, i2, j1, j2 in opcodes[:hunks]:
        before = sep.join(a[max(0, i1 - context) : i1])
        lead = f"…{before} " if before else ""
        out.append(f"  stored: {lead}[{sep.join(a[i1:i2])}]")
        out.append(f"  asked:  {lead}[{sep.join(b[j1:j2])}]")
    if len(opcodes) > hunks:
        out.append(f"  ... and {len(opcodes) - hunks} more difference(s)")
    return "\n".join(out)
