"""Projects made at run time: create, map columns, receive files, ingest them in the background, reset,
delete.

An uploaded file is kept on disk and queued; a worker thread reads it with the project's column mapping
(CSV, or a ZIP of CSVs; XLSX/XLS only when ``openpyxl``/``xlrd`` is installed), appends its events to the
events already ingested, rebuilds the project's tables with the same
:func:`~pm_sandbox.data.tables.build_tables` the CSV import uses, and swaps them in with one
transaction (:meth:`~pm_sandbox.data.store.Store.replace_project_data`). So nothing is
half-visible: the tables change only when a file is fully ingested, and a failed file leaves the project
exactly as it was. A per-project lock serialises ingestion (and reset/delete) of one project.

File statuses: ``PENDING`` (queued) → ``PROCESSING`` → ``DONE`` or ``FAILED`` with a ``reason``.

Over 600 lines because it holds the whole upload path — the column-mapping parser, the background
:class:`Ingestor` and the file readers — which share :class:`IngestError` and :class:`ParsedMapping`; the
readers (:func:`read_events`, :func:`event_log`) are the part to move out when it grows.
"""

from __future__ import annotations

import codecs
import dataclasses
import importlib.util
import logging
import re
import shutil
import tempfile
import threading
import uuid
import weakref
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .. import datepatterns
from .eventlog import EventLog, assemble
from .mapping import FileMapping, SourceColumn
from .store import ProjectRecord, Store
from .tables import build_tables

__all__ = [
    "DEFAULT_MAX_UPLOAD_BYTES",
    "FileRecord",
    "IngestError",
    "Ingestor",
    "MappedColumn",
    "ParsedMapping",
    "parse_mapping",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_UPLOAD_BYTES = 1 << 30  # 1 GiB
SUPPORTED_TYPES = ("csv", "xlsx", "xls", "zip")
_DIM_AGGREGATIONS = ("FIRST", "LAST", "DISTINCT")
_METRIC_AGGREGATIONS = ("FIRST", "LAST", "MIN", "MAX", "SUM", "AVG", "MEDIAN")
_NOT_WORD = re.compile(r"[^a-z0-9]+")
# Java SimpleDateFormat letters → strptime (the subset event logs use); longest first.
_JAVA_DATE = (
    ("yyyy", "%Y"),
    ("yy", "%y"),
    ("MMMM", "%B"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("HH", "%H"),
    ("hh", "%I"),
    ("mm", "%M"),
    ("ss", "%S"),
    ("SSSSSS", "%f"),
    ("SSS", "%f"),
    ("XXX", "%z"),
    ("Z", "%z"),
    ("a", "%p"),
)


class IngestError(ValueError):
    """Why a mapping or a file was refused: the text is the file's ``reason`` / the 400 message."""


def _slug(name: str) -> str:
    return _NOT_WORD.sub("_", name.strip().lower()).strip("_")


def java_date_format(fmt: str) -> str:
    """A Java ``SimpleDateFormat`` pattern as a ``strptime`` format (quoted text kept literally).

    >>> java_date_format("yyyy-MM-dd'T'HH:mm:ss.SSS")
    '%Y-%m-%dT%H:%M:%S.%f'
    """
    try:
        return datepatterns.translate(fmt, _JAVA_DATE)
    except datepatterns.DatePatternError as exc:
        if exc.letter is None:
            raise IngestError(f"date format {fmt!r} has an unclosed quote") from None
        raise IngestError(f"date format {fmt!r}: pattern letter {exc.letter!r} is not supported") from None


@dataclass(frozen=True)
class MappedColumn:
    """One mapped column of the source file; fields named as the service helper's ``SourceColumn``."""

    name: str
    index: int
    role: str  # CASE_ID | TASK_NAME | TIME | DIMENSION | METRIC
    key: str = ""  # EventLog key of a dimension/metric (its Druid column is ``<key>_lpkr``)
    case_scope: bool = False
    aggregation: str | None = None
    unit: str | None = None
    time_format: str | None = None


@dataclass(frozen=True)
class ParsedMapping:
    """A validated ``{fileStructure, columnMapping}`` body."""

    file_type: str
    charset: str
    delimiter: str
    quote_char: str
    escape_char: str | None
    header: bool
    comment_char: str | None
    sheet_name: str | None
    columns: tuple[MappedColumn, ...]

    def role(self, role: str) -> list[MappedColumn]:
        return [c for c in self.columns if c.role == role]


def _char(struct: dict[str, Any], key: str, default: str | None, *, required: bool = False) -> str | None:
    value = struct.get(key, default)
    if value in (None, ""):
        if required:
            raise IngestError(f"fileStructure.{key} is required (one character)")
        return None
    if not isinstance(value, str) or len(value) != 1:
        raise IngestError(f"fileStructure.{key} must be one character, got {value!r}")
    return value


def _index(item: Any, where: str) -> int:
    if not isinstance(item, dict):
        raise IngestError(f"{where} must be an object with a columnIndex, got {item!r}")
    idx = item.get("columnIndex")
    if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
        raise IngestError(f"{where}.columnIndex must be a column number (0 = first column), got {idx!r}")
    return idx


def parse_mapping(body: Any) -> ParsedMapping:
    """Validate a column-mapping body (service model §3.4); :class:`IngestError` says what is wrong."""
    if not isinstance(body, dict) or not isinstance(body.get("fileStructure"), dict):
        raise IngestError('the body must be a JSON object {"fileStructure": {...}, "columnMapping": {...}}')
    fs, cm = body["fileStructure"], body.get("columnMapping")
    if not isinstance(cm, dict):
        raise IngestError("columnMapping is missing or not an object")
    file_type = str(fs.get("fileType", "")).lower()
    if file_type not in ("csv", "xlsx", "xls"):
        raise IngestError(f"fileStructure.fileType must be csv, xlsx or xls, got {fs.get('fileType')!r}")
    charset = fs.get("charset") or "UTF-8"
    try:
        codecs.lookup(charset)
    except (LookupError, TypeError):
        raise IngestError(f"fileStructure.charset {charset!r} is not a known character set") from None
    header = fs.get("header", True)
    if not isinstance(header, bool):
        raise IngestError(f"fileStructure.header must be true or false, got {header!r}")

    def label(item: Any, default: str) -> str:  # the SDK sends each column's name; curl users may not
        name = item.get("name") if isinstance(item, dict) else None
        return name if isinstance(name, str) and name.strip() else default

    case_item, activity_item = cm.get("caseIdMapping"), cm.get("activityMapping")
    columns: list[MappedColumn] = [
        MappedColumn(label(case_item, "Case ID"), _index(case_item, "caseIdMapping"), "CASE_ID"),
        MappedColumn(label(activity_item, "Activity"), _index(activity_item, "activityMapping"), "TASK_NAME"),
    ]
    times = cm.get("timeMappings")
    if not isinstance(times, list) or not 1 <= len(times) <= 2:
        raise IngestError("timeMappings must list one or two time columns (start[, end])")
    for n, item in enumerate(times):
        idx = _index(item, f"timeMappings[{n}]")
        fmt = item.get("format")
        if not isinstance(fmt, str) or not fmt:
            raise IngestError(f"timeMappings[{n}].format must be a date pattern such as yyyy-MM-dd HH:mm:ss")
        java_date_format(fmt)
        columns.append(MappedColumn(label(item, ("Start", "End")[n]), idx, "TIME", time_format=fmt))
    for kind, role, allowed in (
        ("dimensionsMappings", "DIMENSION", _DIM_AGGREGATIONS),
        ("metricsMappings", "METRIC", _METRIC_AGGREGATIONS),
    ):
        items = cm.get(kind) or []
        if not isinstance(items, list):
            raise IngestError(f"{kind} must be a list")
        for n, item in enumerate(items):
            idx = _index(item, f"{kind}[{n}]")
            name = item.get("name")
            if not isinstance(name, str) or not _slug(name):
                raise IngestError(f"{kind}[{n}].name must be a non-empty name with a letter or digit")
            agg = item.get("aggregation", item.get("caseAggregation")) or "FIRST"
            if agg not in allowed:
                raise IngestError(f"{kind}[{n}] ({name!r}): aggregation must be one of {', '.join(allowed)}")
            unit = item.get("unit") if role == "METRIC" else None
            columns.append(
                MappedColumn(name, idx, role, _slug(name), bool(item.get("isCaseScope", False)), agg, unit)
            )
    seen: dict[int, str] = {}
    keys: dict[str, str] = {}
    for c in columns:
        if c.index in seen:
            raise IngestError(f"column {c.index} is mapped twice ({seen[c.index]} and {c.name})")
        seen[c.index] = c.name
        if c.key:
            if c.key in keys:
                raise IngestError(
                    f"dimension/metric names {keys[c.key]!r} and {c.name!r} are the same column"
                )
            keys[c.key] = c.name
    return ParsedMapping(
        file_type=file_type,
        charset=charset,
        delimiter=_char(fs, "delimiter", ",", required=True) or ",",
        quote_char=_char(fs, "quoteChar", '"') or '"',
        escape_char=_char(fs, "escapeChar", None),
        header=header,
        comment_char=_char(fs, "commentChar", None),
        sheet_name=fs.get("sheetName") or None,
        columns=tuple(columns),
    )


@dataclass
class FileRecord:
    """An uploaded file and its ingestion status."""

    id: str
    name: str
    created: str
    size: int
    status: str = "PENDING"
    reason: str | None = None
    events: int | None = None
    path: Path | None = field(default=None, repr=False)

    def as_json(self) -> dict[str, Any]:
        """The file as ``/pub/projects/{id}/files`` lists it."""
        return {
            "id": self.id,
            "name": self.name,
            "creationDate": self.created,
            "size": self.size,
            "status": self.status,
            "ingestionStatus": self.status,
            "reason": self.reason,
            "events": self.events,
        }


@dataclass
class _ProjectState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    mapping: ParsedMapping | None = None
    events: list[Any] = field(default_factory=list)  # pandas frames of ingested events, in upload order
    files: list[FileRecord] = field(default_factory=list)
    generation: int = 0  # bumped by reset/delete: queued files of an older generation are dropped


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Ingestor:
    """The write side of the public API over one :class:`Store` (thread-safe).

    :param upload_dir: where uploaded files wait for ingestion (a private temporary folder by default).
    :param max_upload_bytes: larger uploads are refused.
    """

    def __init__(
        self,
        store: Store,
        *,
        upload_dir: str | Path | None = None,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
        workers: int = 2,
        after_swap: Callable[[str, ProjectRecord], None] | None = None,
    ) -> None:
        self.store = store
        #: called with (client id, project) once an ingestion's tables are swapped in, before the file is DONE
        #: (the stand-in in front of Druid publishes the project there); an error fails the file
        self.after_swap = after_swap
        self.max_upload_bytes = max_upload_bytes
        self._own_dir = upload_dir is None
        self.upload_dir = Path(upload_dir or tempfile.mkdtemp(prefix="pm-sandbox-uploads-"))
        if self._own_dir:  # files still waiting when the process ends are removed with their folder
            weakref.finalize(self, shutil.rmtree, str(self.upload_dir), True)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pm-ingest")
        self._states: dict[str, _ProjectState] = {}
        self._lock = threading.Lock()
        # Test switch (admin route /_sandbox/ingest-hold): a held ingestion stops after building the new
        # tables and before swapping them in, so tests can look at a project mid-ingestion without timing.
        self._open = threading.Event()
        self._open.set()
        self._waiting = threading.Event()

    def hold(self, on: bool) -> None:
        """Hold (``True``) or release (``False``) every ingestion just before its tables are swapped in."""
        if on:
            self._open.clear()
        else:
            self._open.set()

    @property
    def waiting(self) -> bool:
        """Whether an ingestion is waiting at the hold."""
        return self._waiting.is_set()

    def close(self) -> None:
        """Stop the workers and remove the upload folder (if this ingestor made it)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._own_dir:
            shutil.rmtree(self.upload_dir, ignore_errors=True)

    def state(self, project_id: str) -> _ProjectState:
        with self._lock:
            return self._states.setdefault(project_id, _ProjectState())

    # --- projects -----------------------------------------------------------------------------------
    def create_project(self, client_id: str, name: str, description: str = "") -> ProjectRecord:
        """A new, empty project of the workgroup (tables appear with its first ingested file)."""
        record = ProjectRecord(id=str(uuid.uuid4()), name=name, description=description, created=_now())
        self.state(record.id)
        return self.store.add_empty_project(client_id, record)

    def set_mapping(self, project: ProjectRecord, body: Any) -> None:
        """Store the project's column mapping; an identical one is accepted again at any time.

        :raises IngestError: invalid body, or a different mapping while the project holds data.
        """
        parsed = parse_mapping(body)
        state = self.state(project.id)
        with state.lock:
            if state.mapping is not None and state.mapping != parsed and state.events:
                raise IngestError(
                    "this project already holds data ingested with another column mapping; "
                    "reset the project (POST /pub/project/{id}/reset) before changing it"
                )
            state.mapping = parsed
            project.column_mapping = body
            # the read routes (column-mapping, mappingInfos) serve the project's FileMapping
            project.mapping = FileMapping(
                tuple(SourceColumn(**dataclasses.asdict(c)) for c in parsed.columns)
            )

    def reset(self, client_id: str, project: ProjectRecord) -> None:
        """Empty the project (tables, files); keep its name, description and column mapping."""
        state = self.state(project.id)
        with state.lock:
            state.generation += 1
            state.events.clear()
            for f in state.files:
                if f.status == "PENDING":
                    f.status, f.reason = "FAILED", "the project was reset before this file was ingested"
            state.files.clear()
            self.store.replace_project_data(client_id, project, None)

    def delete(self, client_id: str, project: ProjectRecord) -> None:
        """Remove the project and its tables."""
        state = self.state(project.id)
        with state.lock:
            state.generation += 1
            state.events.clear()
            state.files.clear()
            self.store.remove_project(client_id, project)
        with self._lock:
            self._states.pop(project.id, None)

    # --- files --------------------------------------------------------------------------------------
    def new_file(self, project: ProjectRecord, name: str) -> FileRecord:
        """Register an incoming file (status PENDING, no bytes yet) and choose where to keep it."""
        fid = str(uuid.uuid4())
        record = FileRecord(id=fid, name=name, created=_now(), size=0, path=self.upload_dir / fid)
        self.state(project.id).files.append(record)
        return record

    def fail(self, record: FileRecord, reason: str) -> None:
        """Mark *record* failed and drop its bytes."""
        record.status, record.reason = "FAILED", reason
        if record.path is not None:
            record.path.unlink(missing_ok=True)
            record.path = None

    def submit(self, client_id: str, project: ProjectRecord, record: FileRecord) -> None:
        """Queue the received file for ingestion."""
        generation = self.state(project.id).generation
        self._pool.submit(self._ingest, client_id, project, record, generation)

    def files(self, project: ProjectRecord) -> list[FileRecord]:
        """The project's files, oldest first."""
        return list(self.state(project.id).files)

    def file(self, project: ProjectRecord, file_id: str) -> FileRecord | None:
        return next((f for f in self.state(project.id).files if f.id == file_id), None)

    def _ingest(self, client_id: str, project: ProjectRecord, record: FileRecord, generation: int) -> None:
        state = self.state(project.id)
        with state.lock:
            if state.generation != generation:
                self.fail(record, "the project was reset or deleted before this file was ingested")
                return
            record.status = "PROCESSING"
            try:
                if state.mapping is None:
                    raise IngestError(
                        "the project has no column mapping: POST /pub/project/{id}/column-mapping first"
                    )
                frame = read_events(record.path, record.name, state.mapping)
                import pandas as pd

                events = pd.concat([*state.events, frame], ignore_index=True) if state.events else frame
                tables = build_tables(event_log(events, state.mapping), project.id)
                if not self._open.is_set():
                    self._waiting.set()
                    self._open.wait()
                    self._waiting.clear()
                self.store.replace_project_data(client_id, project, tables)
                if self.after_swap is not None:
                    self.after_swap(client_id, project)
            except IngestError as exc:
                self.fail(record, str(exc))
                return
            except Exception as exc:  # a bug here must still end the file's story, not leave it PROCESSING
                log.exception("ingestion of %s failed", record.name)
                self.fail(record, f"internal error while ingesting: {type(exc).__name__}: {exc}")
                return
            state.events.append(frame)
            record.events = len(frame)
            record.status = "DONE"
            if record.path is not None:
                record.path.unlink(missing_ok=True)
                record.path = None


def _extension(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def check_file_type(name: str) -> str | None:
    """Why a file named *name* cannot be ingested here, or ``None`` when its type is fine."""
    ext = _extension(name)
    if ext not in SUPPORTED_TYPES:
        return (
            f"unsupported file type {('.' + ext) if ext else '(no extension)'} for {name!r}: "
            "send a .csv, .xlsx, .xls or .zip file"
        )
    return None


def _sources(path: Path, name: str, mapping: ParsedMapping) -> Iterator[tuple[str, Any]]:
    """(name, binary stream) of each table file inside the upload."""
    ext = _extension(name)
    if ext != "zip":
        if ext != mapping.file_type:
            raise IngestError(
                f"bad mapping: the column mapping declares fileType {mapping.file_type} "
                f"but the file is .{ext}"
            )
        with open(path, "rb") as fh:
            yield name, fh
        return
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise IngestError(f"{name!r} is not a readable ZIP archive") from None
    with archive:
        members = [
            m for m in archive.infolist() if not m.is_dir() and not m.filename.startswith(("__MACOSX/", "."))
        ]
        wanted = [m for m in members if _extension(m.filename) == mapping.file_type]
        if not wanted:
            found = ", ".join(m.filename for m in members) or "nothing"
            raise IngestError(
                f"the ZIP {name!r} holds no .{mapping.file_type} file (the mapping's fileType); "
                f"found: {found}"
            )
        for member in wanted:
            with archive.open(member) as fh:
                yield f"{name}/{member.filename}", fh


def _read_table(stream: Any, where: str, mapping: ParsedMapping) -> Any:
    import pandas as pd

    if mapping.file_type in ("xlsx", "xls"):
        engine: Literal["openpyxl", "xlrd"] = "openpyxl" if mapping.file_type == "xlsx" else "xlrd"
        if importlib.util.find_spec(engine) is None:
            raise IngestError(
                f"unsupported file type .{mapping.file_type}: this sandbox cannot read it ({engine} is not "
                "installed); upload CSV or a ZIP of CSV files"
            )
        return pd.read_excel(
            stream,
            sheet_name=mapping.sheet_name or 0,
            header=0 if mapping.header else None,
            dtype=str,
            engine=engine,
        )
    doubled = mapping.escape_char in (None, mapping.quote_char)
    try:
        return pd.read_csv(
            stream,
            sep=mapping.delimiter,
            quotechar=mapping.quote_char,
            escapechar=None if doubled else mapping.escape_char,
            doublequote=doubled,
            # commentChar is not applied: pandas would cut any line at that character, not only
            # lines that start with it (the SDK's default '#' would eat data).
            header=0 if mapping.header else None,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            encoding=mapping.charset,
        )
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{where} is not valid {mapping.charset} text ({exc.reason} at byte {exc.start})"
        ) from None
    except pd.errors.EmptyDataError:
        raise IngestError(f"{where} is empty") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise IngestError(f"{where} is not a well-formed CSV file with this mapping: {exc}") from None


def read_events(path: Path | None, name: str, mapping: ParsedMapping) -> Any:
    """The events of an uploaded file as a frame: ``case, activity, start_ms, end_ms`` then one column per
    dimension/metric key. :class:`IngestError` names the file, the column and the line that is wrong."""
    import pandas as pd

    if path is None:
        raise IngestError(f"the bytes of {name!r} are gone")
    if (why := check_file_type(name)) is not None:
        raise IngestError(why)
    parts = []
    for where, stream in _sources(path, name, mapping):
        parts.append(_events_of(_read_table(stream, where, mapping), where, mapping))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def _events_of(frame: Any, where: str, mapping: ParsedMapping) -> Any:
    import pandas as pd

    first_line = 2 if mapping.header else 1
    width = frame.shape[1]
    for c in mapping.columns:
        if c.index >= width:
            roles = {
                "CASE_ID": "case id column",
                "TASK_NAME": "activity column",
                "TIME": ("start" if c is mapping.role("TIME")[0] else "end") + " time column",
            }
            what = roles.get(c.role, f"{c.role.lower()} {c.name!r}")
            missing = "missing case id column: " if c.role == "CASE_ID" else "bad mapping: "
            raise IngestError(
                f"{missing}the {what} is mapped to column index {c.index} but {where} has only {width} "
                f"column(s) (indexes 0-{width - 1})"
            )

    def col(c: MappedColumn) -> Any:
        return frame.iloc[:, c.index]

    def header(c: MappedColumn) -> str:
        return f"column {c.index} ({frame.columns[c.index]!r})" if mapping.header else f"column {c.index}"

    out: dict[str, Any] = {}
    for role, key in (("CASE_ID", "case"), ("TASK_NAME", "activity")):
        c = mapping.role(role)[0]
        values = col(c)
        empty = values.isna().to_numpy()
        if empty.any():
            line = int(np.flatnonzero(empty)[0]) + first_line
            label = "case id" if role == "CASE_ID" else "activity"
            raise IngestError(
                f"missing {label}: {int(empty.sum())} row(s) of {where} have an empty {label} in {header(c)} "
                f"(first at line {line})"
            )
        out[key] = values.to_numpy(dtype=object)
    times = mapping.role("TIME")
    stamps = []
    for c in times:
        fmt = java_date_format(c.time_format or "")
        values = col(c)
        parsed = pd.to_datetime(values, format=fmt, errors="coerce", utc=True)
        bad = (parsed.isna() & values.notna()).to_numpy().copy()
        if c is times[0]:
            bad |= values.isna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise IngestError(
                f"unparsable timestamps: {where} {header(c)} value {values.iloc[i]!r} "
                f"at line {i + first_line} "
                f"does not match the format {c.time_format!r} ({int(bad.sum())} bad value(s))"
            )
        ms = parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[ms]").astype(np.int64)
        stamps.append(np.where(parsed.isna().to_numpy(), np.iinfo(np.int64).min, ms))
    out["start_ms"] = stamps[0]
    end = stamps[1] if len(stamps) > 1 else stamps[0]
    out["end_ms"] = np.where((end == np.iinfo(np.int64).min) | (end < stamps[0]), stamps[0], end)
    for c in mapping.role("DIMENSION"):
        out[c.key] = col(c).to_numpy(dtype=object)
    for c in mapping.role("METRIC"):
        values = col(c)
        numbers = pd.to_numeric(values, errors="coerce")
        bad = (numbers.isna() & values.notna()).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise IngestError(
                f"bad value for metric {c.name!r}: {where} {header(c)} value {values.iloc[i]!r} at line "
                f"{i + first_line} is not a number"
            )
        out[c.key] = numbers.to_numpy(dtype=float)
    return pd.DataFrame(out)


def event_log(events: Any, mapping: ParsedMapping) -> EventLog:
    """The :class:`EventLog` of an events frame (see :func:`read_events`), sorted by case then time."""
    if events.empty:
        raise IngestError("the file holds no event (no data row)")
    return assemble(
        events["case"],
        events["activity"],
        events["start_ms"].to_numpy(),
        events["end_ms"].to_numpy(),
        {c.key: events[c.key].to_numpy(dtype=object) for c in mapping.role("DIMENSION")},
        {c.key: events[c.key].to_numpy(dtype=float) for c in mapping.role("METRIC")},
    )
