"""A result as :class:`Rows` (its Arrow record batches, read once, in order) and the shapes taken from them:
:func:`parse` reads a transport's batches one ahead on a worker thread, with a row cap and progress;
:func:`to_table`, :func:`chunks` and :func:`collect` regroup them."""

from __future__ import annotations

import contextlib
import functools
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from .._workers import Pending
from .decode import record_batches
from .types import arrow_schema

__all__ = ["Rows", "batches_to_table", "chunks", "collect", "parse", "rechunk", "to_table"]


def _parsed(batches: Iterable[Any], *, ahead: int = 1) -> Generator[list[pa.RecordBatch], None, None]:
    """Each transport batch as record batches, in order, the next batch parsed while this one is handed on.

    A batch of JSON lines is parsed on a worker thread by a single-threaded CSV read, and the next batch is
    taken from the transport (and parsed on the other worker) before this one is waited for: both cores
    stay busy across batch boundaries, where parsing batch after batch with each read spread over both
    cores leaves one idle at every batch's start and end. One batch ahead, because a second is no faster
    (bench/README.md has the figures). Other shapes (Arrow arrays, decoded columns) are converted in place.

    The price: while the server is slow to send the next batch, the one before it waits with it (a batch
    is at most ``batch_rows`` rows). With *ahead* 0 nothing is taken ahead: a row cap then stops at the
    first batch past it. The parses run on the query's worker threads (:mod:`pm_notebook._workers`, the
    transports' own), each a :class:`~pm_notebook._workers.Pending`; leaving early (an error, a Ctrl-C, a
    consumer that stops) drops the parses under way: each ends on its worker and its result is dropped.
    """
    if ahead < 1:
        for batch in batches:
            yield record_batches(batch)
        return
    # a batch parsed on a worker, or one converted in place (ready)
    pending: deque[Pending[list[pa.RecordBatch]] | list[pa.RecordBatch]] = deque()
    for batch in batches:
        if batch.array_lines is None:
            pending.append(record_batches(batch))
        else:
            pending.append(Pending(functools.partial(record_batches, batch)))
        while pending and (len(pending) > ahead or _ready(pending[0])):
            yield _result(pending.popleft())
    while pending:
        yield _result(pending.popleft())


def _ready(parse: Pending[list[pa.RecordBatch]] | list[pa.RecordBatch]) -> bool:
    return not isinstance(parse, Pending) or parse.done()


def _result(parse: Pending[list[pa.RecordBatch]] | list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    return parse.result() if isinstance(parse, Pending) else parse


class Rows:
    """A result as Arrow record batches: its schema, the batches (read once, in order) and whether a row cap
    cut it, known once the batches are read. Live, stored or replayed, every result reaches the shapers
    (:func:`to_table`, :func:`chunks`, :func:`.outputs.write_rows`) as one of these.
    """

    def __init__(self, schema: pa.Schema, batches: Iterable[pa.RecordBatch], *, truncated: bool = False):
        self.schema = schema
        self.truncated = truncated
        self._batches = iter(batches)

    @classmethod
    def of_table(cls, table: pa.Table, *, truncated: bool = False) -> Rows:
        """The rows of a whole table (a stored result)."""
        return cls(table.schema, table.to_batches(), truncated=truncated)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self._batches


def parse(
    columns: Sequence[Any],
    batches: Iterable[Any],
    *,
    limit: int = 0,
    on_rows: Callable[[int], None] | None = None,
) -> Rows:
    """Transport batches as :class:`Rows` typed by the declared *columns*, with a row cap and progress.

    :param limit: keep at most this many rows (0: all). Reading stops at the first batch that goes past
        the cap, so the caller can close the statement at once; to tell "exactly *limit* rows" from "more
        exist", ask the transport for batches of at most ``limit + 1`` rows.
    :param on_rows: called with the number of rows read so far after each transport batch.
    """
    if limit < 0:
        raise ValueError(f"limit must be 0 (no cap) or a positive number of rows, got {limit}")
    rows = Rows(arrow_schema(columns), ())

    def read() -> Iterator[pa.RecordBatch]:
        total = 0
        # a cap reads no batch ahead, so it stops at the first batch past it
        with contextlib.closing(_parsed(batches, ahead=0 if limit else 1)) as parsed:
            for parts in parsed:
                for part in parts:
                    if limit and total + part.num_rows > limit:
                        rows.truncated = True
                        part = part.slice(0, limit - total)
                    total += part.num_rows
                    yield part
                    if rows.truncated:
                        break
                if on_rows is not None:
                    on_rows(total)
                if rows.truncated:
                    return

    rows._batches = read()
    return rows


def to_table(rows: Rows) -> pa.Table:
    """All of *rows* as one Arrow table (none: an empty table of their schema)."""
    return pa.Table.from_batches(list(rows), schema=rows.schema)


def chunks(rows: Rows, size: int) -> Iterator[pa.Table]:
    """*rows* regrouped into Arrow tables of at most *size* rows (at least one, possibly empty)."""
    if size < 1:
        raise ValueError(f"chunk_rows must be a positive number of rows, got {size}")
    pending: list[pa.RecordBatch] = []
    held = 0
    emitted = False
    for record in rows:
        while record.num_rows:
            take = min(size - held, record.num_rows)
            pending.append(record.slice(0, take))
            record = record.slice(take)
            held += take
            if held == size:
                yield pa.Table.from_batches(pending, schema=rows.schema)
                emitted = True
                pending, held = [], 0
    if pending or not emitted:
        yield pa.Table.from_batches(pending, schema=rows.schema)


def batches_to_table(columns: Sequence[Any], batches: Iterable[Any]) -> pa.Table:
    """Collect transport batches into one Arrow table (no batches: an empty table of the declared types)."""
    return to_table(parse(columns, batches))


def collect(
    columns: Sequence[Any],
    batches: Iterable[Any],
    *,
    limit: int = 0,
    on_rows: Callable[[int], None] | None = None,
) -> tuple[pa.Table, bool]:
    """Collect transport batches into one Arrow table, with a row cap and a progress callback (see
    :func:`parse`); return the table (empty tables keep the declared types) and whether the cap cut it."""
    rows = parse(columns, batches, limit=limit, on_rows=on_rows)
    return to_table(rows), rows.truncated


def rechunk(columns: Sequence[Any], batches: Iterable[Any], rows: int) -> Iterator[pa.Table]:
    """Regroup transport batches into Arrow tables of at most *rows* rows (at least one, possibly empty)."""
    if rows < 1:
        raise ValueError(f"chunk_rows must be a positive number of rows, got {rows}")
    return chunks(parse(columns, batches), rows)
