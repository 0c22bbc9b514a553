"""Publish the stand-in's projects to a real Apache Druid: same datasources, columns, types, rows, lookups.

A project's three tables (``<pid>``, ``<pid>_vertex``, ``<pid>_edge``) become Druid datasources of the same
names by native batch ingestion (``index_parallel`` over newline-delimited JSON files in a folder the Druid
processes can read: Druid runs on this machine), with rollup off (duplicate events stay duplicate rows),
``__time`` from the stored milliseconds, and the columns in the stand-in's order with these Druid types:

=====================  =============================================================
stand-in (DuckDB)      Druid column
=====================  =============================================================
TIMESTAMP ``__time``   the time column (milliseconds)
VARCHAR, ENUM          ``string`` dimension
BIGINT, INTEGER        ``long`` dimension
DOUBLE, FLOAT          ``double`` dimension
VARCHAR[]              ``auto`` dimension: an ``ARRAY<STRING>`` column
BOOLEAN                ``long`` dimension holding 1/0 (Druid stores no BOOLEAN column; SQL sees BIGINT)
=====================  =============================================================

Segments are partitioned by time (``segment_granularity``, a month by default) and bounded in rows
(``max_rows_per_segment``), as the service's own ingestion would cut them, so that a historical scans them in
parallel. The project's lookups become Druid ``map`` lookups of the same names (tier ``__default``).
:func:`unpublish` takes datasources and lookups off Druid again.

Only the standard library talks to Druid (the overlord is the coordinator: ``coordinator_url``); DuckDB
writes the JSON files.
"""

from __future__ import annotations

import json
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

__all__ = [
    "DruidPublishError",
    "Published",
    "publish_store",
    "publish_tables",
    "published_already",
    "unpublish",
]

DEFAULT_SEGMENT_GRANULARITY = "MONTH"
DEFAULT_MAX_ROWS_PER_SEGMENT = 500_000


class DruidPublishError(RuntimeError):
    """Druid refused or failed an ingestion task or a lookup, or did not show the rows in time."""


@dataclass
class Published:
    """What was published: each datasource's row count and each lookup's size."""

    tables: dict[str, int] = field(default_factory=dict)
    lookups: dict[str, int] = field(default_factory=dict)


def _http(url: str, body: Any = None, method: str | None = None, timeout: float = 30.0) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as answer:
            raw = answer.read()
            status = answer.status
    except urllib.error.HTTPError as err:
        raw, status = err.read(), err.code
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def _dimension(name: str, typ: pa.DataType) -> dict[str, Any] | None:
    if name == "__time":
        return None
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return {"type": "string", "name": name}
    if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
        return {"type": "long", "name": name}
    if pa.types.is_floating(typ):
        return {"type": "double", "name": name}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return {"type": "auto", "name": name}
    raise DruidPublishError(f"column {name!r}: no Druid type for {typ}")


def _write_json(table: pa.Table, path: Path) -> None:
    """The rows as newline-delimited JSON: ``__time`` in epoch milliseconds, BOOLEAN as 1/0, ENUM as text."""
    con = duckdb.connect()
    try:
        con.register("rows", table)
        columns = []
        for column in table.schema:
            quoted = '"' + column.name.replace('"', '""') + '"'
            if column.name == "__time":
                columns.append(f"epoch_ms(CAST({quoted} AS TIMESTAMP)) AS {quoted}")
            elif pa.types.is_boolean(column.type):
                columns.append(f"CAST({quoted} AS BIGINT) AS {quoted}")
            elif pa.types.is_dictionary(column.type):
                columns.append(f"CAST({quoted} AS VARCHAR) AS {quoted}")
            else:
                columns.append(quoted)
        target = str(path).replace("'", "''")
        con.execute(f"COPY (SELECT {', '.join(columns)} FROM rows) TO '{target}' (FORMAT JSON)")
    finally:
        con.close()


def ingestion_spec(
    name: str,
    schema: pa.Schema,
    folder: Path,
    *,
    segment_granularity: str = DEFAULT_SEGMENT_GRANULARITY,
    max_rows_per_segment: int = DEFAULT_MAX_ROWS_PER_SEGMENT,
) -> dict[str, Any]:
    dims = [d for d in (_dimension(f.name, f.type) for f in schema) if d is not None]
    return {
        "type": "index_parallel",
        "spec": {
            "dataSchema": {
                "dataSource": name,
                "timestampSpec": {"column": "__time", "format": "millis"},
                "dimensionsSpec": {"dimensions": dims},
                "granularitySpec": {
                    "segmentGranularity": segment_granularity,
                    "queryGranularity": "none",
                    "rollup": False,
                },
            },
            "ioConfig": {
                "type": "index_parallel",
                "inputSource": {"type": "local", "baseDir": str(folder), "filter": "*.json"},
                "inputFormat": {"type": "json"},
                "appendToExisting": False,
            },
            "tuningConfig": {
                "type": "index_parallel",
                "partitionsSpec": {"type": "dynamic", "maxRowsPerSegment": max_rows_per_segment},
                "maxNumConcurrentSubTasks": 1,
            },
        },
    }


def _wait(what: str, check: Any, deadline: float) -> Any:
    pause = 0.1
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise DruidPublishError(f"Druid did not {what} in time")
        time.sleep(pause)
        pause = min(pause * 1.5, 1.0)


def _count(broker_url: str, sql: str) -> int | None:
    status, body = _http(broker_url + "/druid/v2/sql", {"query": sql, "resultFormat": "array"})
    if status != 200 or not isinstance(body, list) or not body:
        return None
    return int(body[0][0])


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def publish_tables(
    tables: Mapping[str, pa.Table],
    lookups: Mapping[str, Mapping[str, str]],
    *,
    coordinator_url: str,
    broker_url: str,
    work_dir: Path | None = None,
    segment_granularity: str = DEFAULT_SEGMENT_GRANULARITY,
    max_rows_per_segment: int = DEFAULT_MAX_ROWS_PER_SEGMENT,
    timeout: float = 600.0,
) -> Published:
    """Ingest *tables* (Druid name → Arrow table) and register *lookups* (name → key/value map); return once
    the
    broker counts every table's rows and every lookup's entries."""
    deadline = time.monotonic() + timeout
    published = Published()
    with tempfile.TemporaryDirectory(prefix="pm-druid-publish-", dir=work_dir) as tmp:
        tasks: dict[str, str] = {}
        for name, table in tables.items():
            folder = Path(tmp) / f"t{len(tasks)}"
            folder.mkdir()
            _write_json(table, folder / "rows.json")
            spec = ingestion_spec(
                name,
                table.schema,
                folder,
                segment_granularity=segment_granularity,
                max_rows_per_segment=max_rows_per_segment,
            )
            status, body = _http(coordinator_url + "/druid/indexer/v1/task", spec)
            if status != 200 or not isinstance(body, dict) or "task" not in body:
                raise DruidPublishError(f"Druid refused the ingestion of {name!r}: HTTP {status} {body}")
            tasks[name] = body["task"]
            published.tables[name] = table.num_rows
        for name, task in tasks.items():

            def done(task: str = task) -> str | None:
                _, body = _http(f"{coordinator_url}/druid/indexer/v1/task/{task}/status")
                state = (body or {}).get("status", {}).get("statusCode") if isinstance(body, dict) else None
                return state if state in ("SUCCESS", "FAILED") else None

            state = _wait(f"finish ingesting {name!r}", done, deadline)
            if state != "SUCCESS":
                _, report = _http(f"{coordinator_url}/druid/indexer/v1/task/{task}/status")
                raise DruidPublishError(f"ingesting {name!r} failed: {report}")
    if lookups:
        _publish_lookups(lookups, coordinator_url)
    for name, rows in published.tables.items():
        sql = f"SELECT COUNT(*) FROM {_quote(name)}"
        _wait(
            f"show {rows} rows of {name!r}",
            lambda sql=sql, rows=rows: _count(broker_url, sql) == rows,
            deadline,
        )
    for name, mapping in lookups.items():
        sql = f"SELECT COUNT(*) FROM lookup.{_quote(name)}"
        size = len(mapping)
        _wait(f"load lookup {name!r}", lambda sql=sql, size=size: _count(broker_url, sql) == size, deadline)
        published.lookups[name] = size
    return published


def _publish_lookups(lookups: Mapping[str, Mapping[str, str]], coordinator_url: str) -> None:
    config = coordinator_url + "/druid/coordinator/v1/lookups/config"
    status, _ = _http(config)
    if status == 404:
        _http(config, {})  # a cluster's first lookup call initialises the configuration
    version = str(time.time_ns())  # a changed lookup needs a newer version
    body = {
        "__default": {
            name: {"version": version, "lookupExtractorFactory": {"type": "map", "map": dict(mapping)}}
            for name, mapping in lookups.items()
        }
    }
    status, answer = _http(config, body)
    if status not in (200, 202):
        raise DruidPublishError(f"Druid refused the lookups: HTTP {status} {answer}")


def unpublish(tables: Iterable[str], lookups: Iterable[str], *, coordinator_url: str) -> None:
    """Take datasources and lookups off Druid: every segment of each datasource is marked unused and each
    lookup is deleted from tier ``__default``. Druid stops serving them on its next coordination cycle
    (this returns at once); an unknown name is no error."""
    for name in tables:
        quoted = urllib.parse.quote(name, safe="")
        status, body = _http(f"{coordinator_url}/druid/coordinator/v1/datasources/{quoted}", method="DELETE")
        if status not in (200, 204, 404):
            raise DruidPublishError(f"Druid refused to drop {name!r}: HTTP {status} {body}")
    for name in lookups:
        quoted = urllib.parse.quote(name, safe="")
        url = f"{coordinator_url}/druid/coordinator/v1/lookups/config/__default/{quoted}"
        status, body = _http(url, method="DELETE")
        if status not in (200, 202, 204, 404):
            raise DruidPublishError(f"Druid refused to delete the lookup {name!r}: HTTP {status} {body}")


def _store_parts(store: Any, workgroups: Iterable[str] | None) -> Iterable[tuple[Any, Any]]:
    keys = None if workgroups is None else set(workgroups)
    for wg in store.workgroups():
        if keys is None or wg.key in keys:
            for project in wg.projects:
                yield store.database(wg.id), project


def published_already(store: Any, *, broker_url: str, workgroups: Iterable[str] | None = None) -> bool:
    """Whether Druid already counts as many rows in every table and lookup of these projects as the store."""
    for db, project in _store_parts(store, workgroups):
        for name, rows in project.rows.items():
            if _count(broker_url, f"SELECT COUNT(*) FROM {_quote(name)}") != rows:
                return False
        for name in project.lookups:
            # fetched to the end: an unfinished result would keep the connection from publish_store's reads
            size = db.execute(f"SELECT COUNT(*) FROM lookup.{_quote(name)}").fetchall()[0][0]
            if _count(broker_url, f"SELECT COUNT(*) FROM lookup.{_quote(name)}") != size:
                return False
    return True


def publish_store(
    store: Any,
    *,
    coordinator_url: str,
    broker_url: str,
    workgroups: Iterable[str] | None = None,
    **options: Any,
) -> Published:
    """Publish every project of the store's workgroups (all, or those whose short keys are in
    *workgroups*)."""
    tables: dict[str, pa.Table] = {}
    lookups: dict[str, dict[str, str]] = {}
    for db, project in _store_parts(store, workgroups):
        for name in project.tables:
            tables[name] = db.sql(f"SELECT * FROM druid.{_quote(name)}").to_arrow_table()
        for name in project.lookups:
            rows = db.execute(f"SELECT k, v FROM lookup.{_quote(name)}").fetchall()
            lookups[name] = {str(k): str(v) for k, v in rows}
    return publish_tables(tables, lookups, coordinator_url=coordinator_url, broker_url=broker_url, **options)
