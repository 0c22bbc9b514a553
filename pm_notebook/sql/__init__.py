"""SQL transports to the service's Druid broker, and the column-batch type they all produce.

Three transports speak to the same broker with the same credentials (login = client id, password = client
secret):

- ``"druid"``: Druid's SQL HTTP API (``POST /druid/v2/sql/``, ``arrayLines`` read by pyarrow's CSV reader,
  see :mod:`pm_notebook.frames`).
- ``"avatica"``: the Avatica JSON protocol spoken from Python (the JDBC URL's endpoint, no JVM).
- ``"jdbc"``: the real Avatica JDBC driver through JPype, read column-wise by our small Java helper.

``"auto"`` picks the first of :data:`AUTO_ORDER` that works (the order comes from
``bench/bench_client.py``: the JVM-free paths are faster than anything through the driver, and need no Java
start-up).

The rooms: :mod:`.base` is the contract (:class:`Target` in, :class:`Result` of :class:`Batch` out),
:mod:`.params` the one classifier of ``?`` values; :mod:`pm_notebook._workers` gives the threads for blocking
calls. Every transport yields :class:`Batch` objects: column specs (the *declared* SQL types, known even for
empty results) plus one column of wire values per spec. :mod:`pm_notebook.frames` is the one place they
become Arrow and pandas, so the types are identical whichever transport ran the query.

Adding a transport: a module ``sql/<name>.py`` with ``open_transport(target) -> Transport`` and one line in
:data:`REGISTRY`.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping

from .._workers import (
    Pending,
    after_interrupt,
    at_interrupt,
    at_worker_exit,
    run_in_worker,
    run_interruptible,
)
from ..errors import ConfigurationError
from .base import Batch, ColumnSpec, Result, Target, Transport
from .params import Param, check_params

__all__ = [
    "AUTO_ORDER",
    "REGISTRY",
    "TRANSPORTS",
    "Batch",
    "ColumnSpec",
    "Param",
    "Pending",
    "Result",
    "Target",
    "Transport",
    "Transports",
    "after_interrupt",
    "at_interrupt",
    "at_worker_exit",
    "check_params",
    "make_transport",
    "run_in_worker",
    "run_interruptible",
    "transport_name",
]

log = logging.getLogger(__name__)

#: transport name -> the module of this package that defines ``open_transport(target)``; fastest first, the
#: order ``"auto"`` tries them in, as measured by bench/bench_client.py (docs/transports.md has the figures):
#: Druid HTTP ``arrayLines`` (one answer streamed, no frames), then Avatica JSON (the same CSV reading of
#: lines, but 5000-row frames one round trip each, and JSON numbers for times), then the JVM (start-up, and
#: the driver's own frames). Modules are imported on first use (the JDBC one needs JPype).
REGISTRY: Mapping[str, str] = {
    "druid": "druid",
    "avatica": "avatica",
    "jdbc": "jdbc",
}
AUTO_ORDER = tuple(REGISTRY)
TRANSPORTS = ("auto", *REGISTRY)


def transport_name(value: object, *, concrete: bool = False) -> str:
    """*value* as a transport name of :data:`TRANSPORTS` (``None`` is ``"auto"``; case does not matter).

    :param concrete: refuse ``"auto"`` too (a name of :data:`REGISTRY` is needed).
    :raises ConfigurationError: not a transport name (a typo must never silently mean ``"auto"``).
    """
    name = "auto" if value is None else value.lower() if isinstance(value, str) else value
    if name not in (REGISTRY if concrete else TRANSPORTS):
        raise ConfigurationError(
            f"Unknown SQL transport {value!r}.", hint=f"Use one of {', '.join(TRANSPORTS)}."
        )
    return str(name)


def make_transport(name: str, target: Target) -> Transport:
    """Build one concrete transport (a :data:`REGISTRY` name) for *target*; nothing is sent yet."""
    name = transport_name(name, concrete=True)
    module = importlib.import_module(f"{__name__}.{REGISTRY[name]}")
    transport: Transport = module.open_transport(target)
    return transport


_PROBE_SQL = "SELECT 1 AS ok"


class Transports:
    """The transports of one connection, created on first use and closed together.

    ``get("auto")`` tries :data:`AUTO_ORDER` once, with a one-row probe, and keeps the first that answers; the
    choice is logged at DEBUG. Wrong credentials stop the search at once (every transport would fail alike).
    """

    def __init__(self, target: Target) -> None:
        self.target = target
        self._made: dict[str, Transport] = {}
        self._auto: str | None = None
        self._lock = threading.Lock()

    def new(self, name: str) -> Transport:
        """A fresh, unshared transport (for DB-API connections that hold results open)."""
        return make_transport(self.resolve(name), self.target)

    def resolve(self, name: str | None) -> str:
        """The concrete transport name for *name* (``None``/``"auto"`` → the probed choice)."""
        name = transport_name(name or None)
        if name != "auto":
            return name
        with self._lock:
            if self._auto is None:
                self._auto = self._probe()
            return self._auto

    def get(self, name: str | None = None) -> Transport:
        """The shared transport called *name* (created on first use)."""
        name = self.resolve(name)
        with self._lock:
            if name not in self._made:
                self._made[name] = make_transport(name, self.target)
            return self._made[name]

    def _probe(self) -> str:
        from ..errors import AuthenticationError, PMError, TransportError

        failures = []
        for name in AUTO_ORDER:
            transport = make_transport(name, self.target)
            try:
                result = transport.execute(_PROBE_SQL)
                for _ in result.batches():
                    pass
            except AuthenticationError:
                transport.close()
                raise
            except PMError as exc:
                transport.close()
                failures.append(f"{name}: {exc.message}")
                log.debug("SQL transport %s does not work here: %s", name, exc.message)
                continue
            self._made[name] = transport
            log.debug("SQL transport 'auto' chose %r (order %s)", name, ", ".join(AUTO_ORDER))
            return name
        raise TransportError(
            "No SQL transport works: " + "; ".join(failures),
            hint="Check the JDBC URL (host, port 8082) and that the SQL endpoint is up.",
        )

    def close(self) -> None:
        """Close every transport made so far."""
        with self._lock:
            made, self._made = list(self._made.values()), {}
        for transport in made:
            transport.close()
