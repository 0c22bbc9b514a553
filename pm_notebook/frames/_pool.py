"""The Arrow memory pool that results are parsed and converted in (the one choice of pool, for
:mod:`.decode` and :mod:`.outputs`)."""

from __future__ import annotations

import os

import pyarrow as pa

__all__ = ["POOL"]


def _result_pool() -> pa.MemoryPool:
    """The Arrow memory pool that results are parsed and converted in.

    jemalloc where this pyarrow has it, unless the user chose a pool (``ARROW_DEFAULT_MEMORY_POOL``):
    pyarrow's default, mimalloc, keeps free pages committed per thread, so a parse holds several times the
    memory of its Arrow data, where jemalloc returns it at the same speed (the figures are in
    bench/README.md). Only the buffers of query results come from it: the process's default pool is left
    alone.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return pa.default_memory_pool()
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return pa.default_memory_pool()


POOL = _result_pool()
