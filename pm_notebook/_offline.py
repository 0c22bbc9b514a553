"""A connection's offline cache: when a result is stored, and how a stored one is served again.

:class:`Offline` holds the policy of one connection (store every result, this thread's results, or replay
from the folder only) and the folder (a :class:`~pm_notebook._cache.ResultCache`, which knows the files).
Every answer of the connection passes here the same way, whatever asked for it:

- SQL: the connection runs each statement through one path that yields the transport's name and the
  result's :class:`~pm_notebook.frames.Rows`. In replay that transport is a :class:`ReplayTransport`,
  serving the stored tables as batches; while storing, :meth:`Offline.stored` reads the live rows whole,
  stores them (or the SQL engine's refusal) and serves them from the table.
- REST: :class:`Offline` is the :class:`~pm_notebook._http.StoredAnswers` of the HTTP adapters that keep
  the API's answers while storing and give them back in replay (:func:`pm_notebook._http.use_answers`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from . import frames
from ._cache import ResultCache
from .config import CacheSettings, Settings, mask_jdbc_url
from .errors import ConfigurationError, PMError, QueryError, ReplayMiss
from .query_context import answer_context, check_context

__all__ = ["REPLAY", "STORE", "Offline", "ReplayTransport", "recorded_connection", "recorded_context"]

#: the modes of one call: answered from the folder, or run live and stored (None: run live only)
REPLAY, STORE = "replay", "store"

#: what one statement yields, live or not: the transport that ran it and its rows
Served = tuple[str, frames.Rows]


class ReplayTransport:
    """The transport of replay: serves the stored result of a statement as the live one served it.

    :param results: the cache folder.
    :param requested: the transport the call asked for (part of what was stored).
    """

    name = "replay"

    def __init__(self, results: ResultCache, requested: str) -> None:
        self._results = results
        self._requested = requested

    @contextmanager
    def execute(
        self,
        sql: str,
        params: Sequence[Any],
        *,
        limit: int = 0,
        on_rows: Callable[[int], None] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> Iterator[Served]:
        """The stored rows of *sql* with *params* (at most *limit*, 0: all) and the transport that ran it.

        :param context: the checked query context of the call: the stored result is the one run with the
            same keys that may change the answer (``sqlTimeZone`` does; ``timeout`` or ``sqlQueryId`` do not).
        :raises ReplayMiss: nothing stored answers it (the message says what differs).
        :raises QueryError: the SQL engine's refusal, as stored.
        """
        entry = self._results.find(sql, params, self._requested, limit=limit, context=answer_context(context))
        if entry.error is not None:
            raise self._results.stored_error(entry)
        table, truncated = self._results.load(entry), entry.truncated
        if limit and table.num_rows > limit:
            table, truncated = table.slice(0, limit), True
        if on_rows is not None:
            on_rows(table.num_rows)
        yield entry.transport, frames.Rows.of_table(table, truncated=truncated)

    def close(self) -> None:
        """Nothing to release: the folder is read per statement."""


class Offline:
    """The offline cache of one connection: whether to store, whether to replay, and the folder.

    :param settings: the connection's values (their non-secret part is written beside the results).
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.store = False
        self.replay = False
        self.results = ResultCache(CacheSettings.cache_dir)
        self._recorded = False  # whether connection.json was written to the current folder
        self._local = threading.local()  # per-thread "store this call" (magic --cache)

    def configure(self, *, cache: bool | None, cache_dir: Any) -> None:
        """Turn storing on or off, or move the folder (None: keep); replay is :attr:`replay`, set by the
        connection, which also mounts the HTTP adapters and closes its SQL transports on the switch."""
        if cache is not None:
            self.store = bool(cache)
        if cache_dir is not None:
            folder = ResultCache(cache_dir)
            if folder.folder != self.results.folder:
                self.results, self._recorded = folder, False

    @property
    def folder(self) -> Path:
        """The cache folder."""
        return self.results.folder

    @contextmanager
    def storing(self) -> Iterator[None]:
        """Within this block, this thread's answers are stored too."""
        before = getattr(self._local, "store", False)
        self._local.store = True
        try:
            yield
        finally:
            self._local.store = before

    def mode(self, cache: bool | None = None) -> str | None:
        """:data:`REPLAY`, :data:`STORE` or None (a plain live call) for one call (*cache*: its wish)."""
        if cache is not None and not isinstance(cache, bool):
            raise ConfigurationError(f"cache must be True, False or None, got {cache!r:.40}.")
        if self.replay:
            return REPLAY
        wanted = (self.store or getattr(self._local, "store", False)) if cache is None else cache
        return STORE if wanted else None

    def _record_connection(self) -> None:
        """Write the service's (non-secret) address beside the cache, so a replay needs no PM_* values."""
        if self._recorded:
            return
        s = self._settings
        record = {
            "base_url": s.base_url,
            "auth_url": s.auth_url,
            "client_id": s.client_id,
            "jdbc_url": mask_jdbc_url(s.jdbc_url),  # a driver password in the URL is never written down
            # the default query context, as far as it keys results: a replay without it finds them
            "context": answer_context(s.context),
        }
        self.results.store_rest("connection", [], record)
        self._recorded = True

    # --- SQL ----------------------------------------------------------------------------------------
    def replayer(self, requested: str) -> ReplayTransport:
        """The replay transport for statements that asked for transport *requested*."""
        return ReplayTransport(self.results, requested)

    def auto_transport(self) -> str:
        """The transport that served the stored ``"auto"`` statements (the latest, if several)."""
        return self.results.auto_transport()

    @contextmanager
    def stored(
        self,
        live: AbstractContextManager[Served],
        sql: str,
        params: Sequence[Any],
        requested: str,
        *,
        limit: int = 0,
        context: Mapping[str, Any] | None = None,
    ) -> Iterator[Served]:
        """The rows of the *live* statement, read whole and stored (the statement is closed before they are
        served); the SQL engine's own refusal (not a cancel nor a protocol hiccup) is stored as the answer.
        The entry is keyed by the part of the checked *context* that may change the answer."""
        keyed = answer_context(context)
        try:
            with live as (name, rows):
                table = frames.to_table(rows)
        except QueryError as err:
            if type(err) is QueryError and err.server_message:
                self._record_connection()
                self.results.store_error(sql, params, requested, err, context=keyed)
            raise
        self._record_connection()
        self.results.store(
            sql,
            params,
            requested,
            table,
            transport=name,
            truncated=rows.truncated,
            limit=limit,
            context=keyed,
        )
        yield name, frames.Rows.of_table(table, truncated=rows.truncated)

    # --- REST: the StoredAnswers of pm_notebook._http's adapters ------------------------------------
    def wants_answers(self) -> bool:
        """Whether a REST answer received now is kept (the caching setting, or this thread's wish)."""
        return self.mode() == STORE

    def keep_answer(self, path: str, params: Any, status: int, content_type: str, body: bytes) -> None:
        """Keep the answer of ``GET {api}{path}`` with *params* for replay."""
        self._record_connection()
        self.results.store_response(path, params, status, content_type, body)

    def answer(self, path: str, params: Any, what: str) -> tuple[int, str, bytes]:
        """The kept answer of ``GET {api}{path}`` with *params* (*what*: the call, for messages)."""
        return self.results.load_response(path, params, what)


def recorded_connection(folder: Any) -> dict[str, Any]:
    """The service's address written beside the results in *folder* (empty when there is none)."""
    try:
        value = ResultCache(folder).load_rest("connection", [])
    except (ReplayMiss, PMError):
        return {}
    return dict(value) if isinstance(value, dict) else {}


def recorded_context(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """The default query context recorded beside the results (see :func:`recorded_connection`), checked;
    empty when none was recorded or a hand-edited one is not valid."""
    value = recorded.get("context")
    try:
        return check_context(value) if isinstance(value, dict) else {}
    except ConfigurationError:
        return {}
