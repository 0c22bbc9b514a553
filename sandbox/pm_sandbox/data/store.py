"""The sandbox's catalogue and data: workgroups, their projects, and one DuckDB database per workgroup.

Isolation is by construction: each workgroup gets its *own* in-memory DuckDB holding only its own
projects' tables (schema ``druid``) and lookups (schema ``lookup``), so no SQL a workgroup sends can
name another workgroup's data. Once loaded, external access is switched off and the configuration
locked, so a query cannot read files or lift those settings.

String columns are stored the way Druid stores them, dictionary-encoded: a low-cardinality VARCHAR
column of a Druid table becomes a DuckDB ``ENUM`` whose values are created in sorted order (so ordering
and comparisons stay lexical), one type per column in schema ``pm_dict`` — or one per kind of value of a
project, shared by its tables' columns that hold it (same-named columns; an activity and a transition's
source and target). Grouping, joining and filtering then hash small integers instead of strings.
Clients never see the difference: the SQL engine reports these columns as VARCHAR everywhere and returns
their values as plain strings (see :mod:`pm_sandbox.sql.engine`).
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import DEFAULT_CASES, DEFAULT_SEED
from .csv_import import read_event_log_csv
from .ids import stable_uuid
from .mapping import FileMapping
from .simulate import previous_ingestion, simulate
from .tables import LookupDoc, ProjectTables, build_tables
from .templates import TEMPLATES

__all__ = [
    "DEFAULT_CASES",
    "LARGE_PROJECT_NAME",
    "ProjectRecord",
    "Store",
    "WorkgroupRecord",
    "build_store",
    "import_event_log",
]

log = logging.getLogger(__name__)

# Schema holding the ENUM types of dictionary-encoded string columns (never a source of tables).
DICTIONARY_SCHEMA = "pm_dict"
# Most distinct values a dictionary-encoded column may have. DuckDB sends an ENUM's whole dictionary
# with every Arrow batch (65,536 rows in the SQL engine), so 4,096 values keep that overhead under ~6%
# of a batch; the columns above it are near-unique keys (case ids), where grouping gains little.
DICTIONARY_MAX_VALUES = 4096
#: the name of the demo workgroup's optional large project (``build_store(large_cases=...)``)
LARGE_PROJECT_NAME = "Purchase to Pay (large)"
# The random stream of the large project: apart from every (workgroup, project) stream of _WORKGROUPS.
LARGE_PROJECT_STREAM = 1000


@dataclass
class ProjectRecord:
    """A project of a workgroup: its id (UUID), metadata, the names of its Druid tables and lookups.

    ``rows`` counts the rows of each Druid table, ``lookup_rows`` those of each lookup (the lookup
    named ``<pid>`` shares its name with the cases table). ``mapping`` is the project's column mapping
    and ``end_activities`` its END CASE rule (``None``: no rule set).
    """

    id: str
    name: str
    description: str
    created: str
    tables: list[str] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    lookup_rows: dict[str, int] = field(default_factory=dict)
    lookup_docs: dict[str, LookupDoc] = field(default_factory=dict)
    mapping: FileMapping | None = None
    end_activities: tuple[str, ...] | None = None
    # The column mapping posted to /pub/project/{id}/column-mapping, as sent (see data/ingest.py).
    column_mapping: dict[str, Any] | None = None


@dataclass
class WorkgroupRecord:
    """A workgroup (= OAuth client): ``id`` is the client id, ``secret`` the client secret."""

    id: str
    name: str
    secret: str = field(repr=False)
    licensed: bool
    projects: list[ProjectRecord] = field(default_factory=list)
    created: str = "2024-01-15T09:00:00Z"
    key: str = ""  # short handle used by the sandbox: "demo", "second", "unlicensed"

    def project(self, project_id: str) -> ProjectRecord | None:
        """This workgroup's project *project_id*, or ``None`` (also for another workgroup's project)."""
        return next((p for p in self.projects if p.id == project_id), None)


@dataclass(frozen=True)
class _Generated:
    """A generated project: its template, how its mapped columns are named, the share of re-ingested cases."""

    template: str
    naming: str = "lpkr"
    reingested: float = 0.0


# (key, name, licensed, projects) of the workgroups every sandbox ships. The second workgroup's third
# project follows the current service's naming (detail_<n>_lpkr_<slug>) and keeps outdated case versions.
_WORKGROUPS = (
    ("demo", "Demo workgroup", True, (_Generated("p2p"), _Generated("o2c"))),
    (
        "second",
        "Second workgroup",
        True,
        (_Generated("o2c"), _Generated("p2p"), _Generated("delivery", naming="detail", reingested=0.05)),
    ),
    ("unlicensed", "Unlicensed workgroup", False, (_Generated("p2p"),)),
)


class Store:
    """All workgroups of one sandbox process and their per-workgroup DuckDB databases."""

    def __init__(self) -> None:
        self._workgroups: dict[str, WorkgroupRecord] = {}
        self._databases: dict[str, duckdb.DuckDBPyConnection] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(client_id)`` after a workgroup's tables change (the SQL engine re-reads its
        catalogue then)."""
        self._listeners.append(callback)

    def _changed(self, client_id: str) -> None:
        for callback in list(self._listeners):
            callback(client_id)

    # --- the contract used by the HTTP and SQL layers -------------------------------------------------
    def authenticate(self, client_id: str, client_secret: str) -> WorkgroupRecord | None:
        """The workgroup whose id and secret these are, else ``None``."""
        wg = self._workgroups.get(client_id)
        if wg is None or not hmac.compare_digest(wg.secret.encode(), (client_secret or "").encode()):
            return None
        return wg

    def workgroup(self, client_id: str) -> WorkgroupRecord | None:
        """The workgroup with this id (client id), else ``None``."""
        return self._workgroups.get(client_id)

    def workgroups(self) -> list[WorkgroupRecord]:
        """Every workgroup, in creation order."""
        return list(self._workgroups.values())

    def by_key(self, key: str) -> WorkgroupRecord:
        """The workgroup with short handle *key* (``"demo"``, ``"second"``, ``"unlicensed"``)."""
        for wg in self._workgroups.values():
            if wg.key == key:
                return wg
        raise KeyError(
            f"no sandbox workgroup {key!r}; known: {', '.join(w.key for w in self._workgroups.values())}"
        )

    def database(self, client_id: str) -> duckdb.DuckDBPyConnection:
        """The workgroup's own DuckDB connection; take ``.cursor()`` per thread or statement."""
        try:
            return self._databases[client_id]
        except KeyError:
            raise KeyError(f"no sandbox workgroup with id {client_id!r}") from None

    # --- building -------------------------------------------------------------------------------------
    def add_workgroup(self, wg: WorkgroupRecord) -> None:
        """Register *wg* with an empty database (tables are added by :meth:`add_project`)."""
        con = duckdb.connect(":memory:")
        con.execute("SET enable_progress_bar = false")
        con.execute("CREATE SCHEMA druid")
        con.execute("CREATE SCHEMA lookup")
        con.execute(f"CREATE SCHEMA {DICTIONARY_SCHEMA}")
        self._workgroups[wg.id] = wg
        self._databases[wg.id] = con

    def add_project(self, client_id: str, record: ProjectRecord, data: ProjectTables) -> ProjectRecord:
        """Load *data* (Arrow tables) into the workgroup's database and list *record* among its projects."""
        con = self.database(client_id)
        with self._lock:
            shared = _shared_dictionaries(data.tables)
            for schema, tables, counts in (
                ("druid", data.tables, record.rows),
                ("lookup", data.lookups, record.lookup_rows),
            ):
                for name, table in tables.items():
                    _load(con, schema, name, table, shared.get(name) if schema == "druid" else None)
                    counts[name] = table.num_rows
            record.tables = list(data.tables)
            record.lookups = list(data.lookups)
            record.lookup_docs = dict(data.lookup_docs or {})
            record.mapping = data.mapping
            record.end_activities = data.end_activities
            self._workgroups[client_id].projects.append(record)
        return record

    def add_empty_project(self, client_id: str, record: ProjectRecord) -> ProjectRecord:
        """List *record* (no tables yet) among the workgroup's projects."""
        with self._lock:
            self._workgroups[client_id].projects.append(record)
        return record

    def replace_project_data(self, client_id: str, record: ProjectRecord, data: ProjectTables | None) -> None:
        """Swap the project's tables and lookups for *data* (``None``: none) in one transaction.

        Queries see the old tables or the new ones, never a mix; the listing follows after the commit.
        """
        cur = self.database(client_id).cursor()
        with self._lock:
            try:
                cur.begin()
                old = (("druid", record.tables), ("lookup", record.lookups))
                for schema, names in old:  # the tables first: a dictionary may be shared by two of them
                    for name in names:
                        cur.execute(f"DROP TABLE IF EXISTS {schema}.{_quote(name)}")
                for schema, names in old:
                    for name in names:
                        _drop_dictionaries(cur, schema, name)
                new = ({}, {}) if data is None else (data.tables, data.lookups)
                shared = _shared_dictionaries(new[0])
                rows: dict[str, int] = {}
                for schema, tables in (("druid", new[0]), ("lookup", new[1])):
                    for name, table in tables.items():
                        _create(cur, schema, name, table, shared.get(name) if schema == "druid" else None)
                        rows[name] = table.num_rows
                cur.commit()
            except BaseException:
                cur.rollback()
                raise
            finally:
                cur.close()
            record.tables, record.lookups, record.rows = list(new[0]), list(new[1]), rows
        self._changed(client_id)

    def remove_project(self, client_id: str, record: ProjectRecord) -> None:
        """Drop the project's tables and unlist it."""
        self.replace_project_data(client_id, record, None)
        with self._lock:
            projects = self._workgroups[client_id].projects
            if record in projects:
                projects.remove(record)

    def seal(self) -> None:
        """Forbid file and network access from SQL and lock the settings, in every workgroup's database."""
        for con in self._databases.values():
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")

    def close(self) -> None:
        """Close every database."""
        for con in self._databases.values():
            con.close()
        self._databases.clear()


def _load(
    con: duckdb.DuckDBPyConnection, schema: str, name: str, table: pa.Table, shared: _Shared | None = None
) -> None:
    """Create ``schema.name`` from *table*, dictionary-encoding the low-cardinality strings of Druid tables
    (*shared*: the columns whose dictionary the project's tables share, see :func:`_shared_dictionaries`).

    Lookups are left as they are: they are small key → value maps whose keys are unique.
    """
    con.begin()  # the types and the table appear together, or not at all
    try:
        _create(con, schema, name, table, shared)
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _drop_dictionaries(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> None:
    """Drop the ENUM types of table ``schema.name`` (after the table itself)."""
    prefix = f"{schema}.{name}."
    types = con.execute(
        "SELECT type_name FROM duckdb_types() WHERE schema_name = ? AND starts_with(type_name, ?)",
        [DICTIONARY_SCHEMA, prefix],
    ).fetchall()
    for (type_name,) in types:
        con.execute(f"DROP TYPE {DICTIONARY_SCHEMA}.{_quote(type_name)}")


def _create(
    con: duckdb.DuckDBPyConnection, schema: str, name: str, table: pa.Table, shared: _Shared | None = None
) -> None:
    """Create ``schema.name`` and its ENUM types inside the caller's transaction."""
    view = f"_arrow_{abs(hash(name))}"
    dictionaries = _dictionaries(table) if schema == "druid" else {}
    con.register(view, table)
    try:
        items = []
        for column in table.column_names:
            col = _quote(column)
            if column in dictionaries:
                # One type per column, named after it (table and column names cannot collide in pm_dict),
                # or the type the project's tables share for it, named after its first column.
                type_name, values = (shared or {}).get(column, (f"{schema}.{name}.{column}", None))
                enum = f"{DICTIONARY_SCHEMA}.{_quote(type_name)}"
                exists = con.execute(
                    "SELECT count(*) FROM duckdb_types() WHERE schema_name = ? AND type_name = ?",
                    [DICTIONARY_SCHEMA, type_name],
                ).fetchall()[0][0]
                if not exists:
                    con.register(
                        f"{view}_values", pa.table({"v": dictionaries[column] if values is None else values})
                    )
                    try:
                        con.execute(f"CREATE TYPE {enum} AS ENUM (SELECT v FROM {view}_values ORDER BY v)")
                    finally:
                        con.unregister(f"{view}_values")
                items.append(f"CAST({col} AS {enum}) AS {col}")
            else:
                items.append(col)
        con.execute(f"CREATE TABLE {schema}.{_quote(name)} AS SELECT {', '.join(items)} FROM {view}")
    finally:
        con.unregister(view)


#: a table's columns whose ENUM type the project's tables share: column → (type name, its values)
_Shared = dict[str, tuple[str, pa.Array]]
#: columns holding the same values under another name: a transition's ends are activities
_SAME_VALUES = {"source_vertex_name": "vertex_name", "destination_vertex_name": "vertex_name"}


def _shared_dictionaries(tables: dict[str, pa.Table]) -> dict[str, _Shared]:
    """Per table, the dictionary-encoded columns that share one ENUM type with columns of the project's
    other tables holding the same kind of value (same-named columns; an activity and a transition's
    source and target): the type holds the union of their values, sorted. Two columns of one type compare
    as small integers, so joining a transition's source to a task's activity hashes no strings.
    """
    found: dict[str, list[tuple[str, str, pa.Array]]] = {}
    for name, table in tables.items():
        for column, values in _dictionaries(table).items():
            found.setdefault(_SAME_VALUES.get(column, column), []).append((name, column, values))
    out: dict[str, _Shared] = {}
    for members in found.values():
        if len(members) < 2:
            continue
        union = pc.unique(pa.concat_arrays([v.cast(pa.string()) for _, _, v in members]))
        if len(union) > DICTIONARY_MAX_VALUES:
            continue
        first_table, first_column, _ = members[0]
        type_name = f"druid.{first_table}.{first_column}"
        for name, column, _ in members:
            out.setdefault(name, {})[column] = (type_name, union)
    return out


def _dictionaries(table: pa.Table) -> dict[str, pa.Array]:
    """The string columns of *table* worth storing as an ENUM, each with its distinct non-null values.

    A column qualifies when it has at most :data:`DICTIONARY_MAX_VALUES` distinct values and each value
    occurs at least twice on average (distinct ≤ half the non-null rows): for near-unique columns a
    dictionary saves nothing when grouping and costs a dictionary per result batch.
    """
    found = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        limit = min(DICTIONARY_MAX_VALUES, (len(column) - column.null_count) // 2)
        if limit < 1:
            continue
        # A prefix already over the limit settles it without hashing the whole (possibly unique) column.
        prefix = 8 * limit
        if len(column) > prefix and pc.count_distinct(column.slice(0, prefix)).as_py() > limit:
            continue
        values = pc.unique(column).drop_null()
        if len(values) <= limit:
            found[name] = values
    return found


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def workgroup_ids(seed: int, key: str) -> tuple[str, str]:
    """The deterministic (client id, client secret) of workgroup *key* for *seed*."""
    return stable_uuid(seed, "workgroup", key), stable_uuid(seed, "secret", key)


def build_store(
    *,
    cases: int = DEFAULT_CASES,
    seed: int = DEFAULT_SEED,
    data_dir: str | Path | None = None,
    seal: bool = True,
    large_cases: int | None = None,
) -> Store:
    """Generate every workgroup and project (deterministic from *seed*) and import ``data_dir/*.csv``.

    :param cases: cases per generated project (the unlicensed workgroup's project gets a quarter).
    :param data_dir: a folder of CSV event logs; each becomes an extra project of the demo workgroup.
    :param large_cases: also give the demo workgroup a last project, :data:`LARGE_PROJECT_NAME`, of this many
        purchase-to-pay cases (about 9.3 ``_vertex`` rows each), for results larger than memory. The other
        projects and their data stay exactly as without it.
    """
    if cases < 1:
        raise ValueError(f"cases must be at least 1 (got {cases})")
    if large_cases is not None and large_cases < 1:
        raise ValueError(f"large_cases must be at least 1 (got {large_cases})")
    started = time.perf_counter()
    store = Store()
    for wg_no, (key, name, licensed, generated) in enumerate(_WORKGROUPS):
        client_id, secret = workgroup_ids(seed, key)
        wg = WorkgroupRecord(id=client_id, name=name, secret=secret, licensed=licensed, key=key)
        store.add_workgroup(wg)
        for proj_no, spec in enumerate(generated):
            template = TEMPLATES[spec.template]
            pid = stable_uuid(seed, "project", key, proj_no)
            rng = np.random.default_rng([seed, wg_no, proj_no])
            n = cases if licensed else max(1, cases // 4)
            tag = "" if wg_no == 0 else str(wg_no)
            log_ = simulate(template, n, rng, project_tag=tag)
            if log_.mapping is not None and spec.naming != log_.mapping.naming:
                log_ = replace(log_, mapping=log_.mapping.with_naming(spec.naming))
            previous = None
            if spec.reingested:
                previous_rng = np.random.default_rng([seed, wg_no, proj_no, 1])  # leaves rng's stream alone
                previous = previous_ingestion(log_, previous_rng, spec.reingested)
            record = ProjectRecord(
                id=pid,
                name=f"{template.name}" + ("" if wg_no == 0 else f" ({name})"),
                description=template.description,
                created=f"2024-0{2 + proj_no}-0{1 + wg_no}T10:00:00Z",
            )
            tables = build_tables(
                log_, pid, end_activities=template.end_activities, previous=previous, demo_exclusions=True
            )
            store.add_project(client_id, record, tables)
    if large_cases is not None:
        _add_large_project(store, seed, large_cases)
    if data_dir is not None:
        paths = sorted(Path(data_dir).glob("*.csv"))
        if not Path(data_dir).is_dir():
            raise ValueError(f"--data {data_dir}: not a folder of CSV event logs")
        for path in paths:
            import_event_log(store, path, seed=seed)
    if seal:
        store.seal()
    log.info("sandbox data ready in %.1fs (%d cases per project)", time.perf_counter() - started, cases)
    return store


def _add_large_project(store: Store, seed: int, cases: int) -> None:
    """The demo workgroup's large project: generated like the others, from a generator of its own (so
    adding it changes no other project)."""
    key, _, _, generated = _WORKGROUPS[0]
    client_id, _ = workgroup_ids(seed, key)
    template = TEMPLATES["p2p"]
    proj_no = len(generated)
    log_ = simulate(template, cases, np.random.default_rng([seed, 0, LARGE_PROJECT_STREAM]), project_tag="L")
    record = ProjectRecord(
        id=stable_uuid(seed, "project", key, "large"),
        name=LARGE_PROJECT_NAME,
        description=f"{template.description} ({cases:,} cases, for results larger than memory)",
        created=f"2024-0{2 + proj_no}-01T10:00:00Z",
    )
    tables = build_tables(log_, record.id, end_activities=template.end_activities, demo_exclusions=True)
    del log_
    store.add_project(client_id, record, tables)


def import_event_log(
    store: Store,
    path: str | Path,
    *,
    workgroup: str = "demo",
    name: str | None = None,
    seed: int = DEFAULT_SEED,
) -> ProjectRecord:
    """Add the CSV event log at *path* as a new project of *workgroup* (a short handle or a client id).

    The CSV needs a case id, an activity and a timestamp column (accepted headers:
    :func:`pm_sandbox.data.csv_import.read_event_log_csv`). Call before :meth:`Store.seal`.

    :raises ValueError: naming the file and the missing or unreadable column.
    """
    wg = store.workgroup(workgroup) or store.by_key(workgroup)
    path = Path(path)
    event_log = read_event_log_csv(path)
    pid = stable_uuid(seed, "import", wg.id, path.name)
    if wg.project(pid) is not None:
        raise ValueError(f"Event log {path} was already imported into workgroup {wg.name!r}.")
    record = ProjectRecord(
        id=pid,
        name=name or path.stem,
        description=f"Imported from {path.name}",
        created="2024-06-01T10:00:00Z",
    )
    return store.add_project(wg.id, record, build_tables(event_log, pid))


def summarize(store: Store) -> Iterable[str]:
    """One line per project: workgroup, project and row counts (for the CLI banner)."""
    for wg in store.workgroups():
        for p in wg.projects:
            rows = ", ".join(
                f"{t.removeprefix(p.id) or 'cases'}={n}" for t, n in p.rows.items() if t in p.tables
            )
            yield f"{wg.key:<11} {p.id}  {p.name}  ({rows})"
