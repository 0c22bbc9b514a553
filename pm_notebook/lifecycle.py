"""From a DataFrame (or a CSV/ZIP file) to a mined project: create it, map its columns by name, upload,
follow the ingestion, list files, reset, delete (public API write routes, service model §3.2).

Columns are always named, never numbered: :func:`infer_mapping` finds the case id, activity and
timestamps by their usual (pm4py or plain) names, and every other column becomes a dimension (text,
booleans, dates) or a metric (numbers). The service's column mapping is built from the resulting order.

A DataFrame is streamed as CSV in slices (a generator body: chunked transfer encoding), so the file is
never held in memory whole. Timestamps are written in UTC with millisecond precision (naive ones are
taken as UTC). Uploading the same rows twice appends them twice, as the service does: reset first to
replace a project's data.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

from . import _http
from ._models import Project
from .api import RestClient, project_id, to_frame
from .auth import BearerAuth, TokenProvider
from .errors import ConfigurationError, HTTPError, MappingError, RequestTimeout, UploadError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .config import Settings

__all__ = [
    "LogMapping",
    "ProjectFiles",
    "UploadedFile",
    "infer_mapping",
]

logger = logging.getLogger(__name__)

#: the time format of every CSV we write (Java SimpleDateFormat, as the service expects)
TIME_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS"
_NORMALISE = re.compile(r"[^a-z0-9]+")
CASE_NAMES = ("case_id", "caseid", "case_concept_name", "case", "case_key", "case_number")
ACTIVITY_NAMES = ("activity", "activity_name", "concept_name", "task", "task_name", "event", "step")
START_NAMES = (
    *("start_timestamp", "start_time", "start_date", "start", "timestamp"),
    *("time_timestamp", "time", "date"),
)
END_NAMES = (
    "end_timestamp",
    "end_time",
    "end_date",
    "complete_timestamp",
    "completed",
    "end",
    "time_timestamp",
)
# Candidate formats for files we did not write (Java pattern, strptime twin), most precise first.
_FILE_TIME_FORMATS = (
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "%Y-%m-%dT%H:%M:%S.%f%z"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSS", "%Y-%m-%dT%H:%M:%S.%f"),
    ("yyyy-MM-dd'T'HH:mm:ssXXX", "%Y-%m-%dT%H:%M:%S%z"),
    ("yyyy-MM-dd'T'HH:mm:ss", "%Y-%m-%dT%H:%M:%S"),
    ("yyyy-MM-dd HH:mm:ss.SSS", "%Y-%m-%d %H:%M:%S.%f"),
    ("yyyy-MM-dd HH:mm:ss", "%Y-%m-%d %H:%M:%S"),
    ("yyyy/MM/dd HH:mm:ss", "%Y/%m/%d %H:%M:%S"),
    ("dd/MM/yyyy HH:mm:ss", "%d/%m/%Y %H:%M:%S"),
    ("yyyy-MM-dd", "%Y-%m-%d"),
)
_ROWS_PER_SLICE = 10_000
_UPLOAD_CHUNK = 1 << 20
_DONE, _FAILED = "DONE", "FAILED"


def _slug(name: object) -> str:
    return _NORMALISE.sub("_", str(name).strip().lower()).strip("_")


@dataclass(frozen=True)
class LogMapping:
    """Which named column is what. Give it to :meth:`Connection.upload` or let it be inferred.

    :param case_id: the case id column.
    :param activity: the activity (task) column.
    :param start: the (start) timestamp column.
    :param end: the end timestamp column, if any.
    :param dimensions: text-like columns to keep as dimensions.
    :param metrics: numeric columns to keep as metrics.
    :param time_format: Java date pattern of the time columns in a *file* (a DataFrame's are written by us).
    :param units: unit per metric name.
    """

    case_id: str
    activity: str
    start: str
    end: str | None = None
    dimensions: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    time_format: str = TIME_FORMAT
    units: Mapping[str, str] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        """Every mapped column, in the order the uploaded CSV carries them."""
        times = [self.start] + ([self.end] if self.end else [])
        return [self.case_id, self.activity, *times, *self.dimensions, *self.metrics]

    def service_json(
        self, indexes: Mapping[str, int] | None = None, *, header: bool = True
    ) -> dict[str, Any]:
        """The body of ``POST /pub/project/{id}/column-mapping`` for a CSV whose columns sit at *indexes*
        (default: :attr:`columns` in order)."""
        at = dict(indexes) if indexes is not None else {c: i for i, c in enumerate(self.columns)}
        times = [self.start] + ([self.end] if self.end else [])
        return {
            "fileStructure": {
                "fileType": "csv",
                "charset": "UTF-8",
                "delimiter": ",",
                "quoteChar": '"',
                "escapeChar": '"',
                "eolChar": "\\n",
                "header": header,
                "commentChar": "",
            },
            "columnMapping": {
                "caseIdMapping": {"columnIndex": at[self.case_id]},
                "activityMapping": {"columnIndex": at[self.activity]},
                "timeMappings": [{"columnIndex": at[t], "format": self.time_format} for t in times],
                "dimensionsMappings": [
                    {"name": d, "columnIndex": at[d], "isCaseScope": False, "aggregation": "FIRST"}
                    for d in self.dimensions
                ],
                "metricsMappings": [
                    {
                        "name": m,
                        "columnIndex": at[m],
                        "unit": self.units.get(m, ""),
                        "isCaseScope": False,
                        "aggregation": "FIRST",
                    }
                    for m in self.metrics
                ],
            },
        }


def _pick(columns: Sequence[str], accepted: Sequence[str], taken: set[str]) -> str | None:
    by_slug: dict[str, str] = {}
    for c in columns:
        by_slug.setdefault(_slug(c), c)
    for name in accepted:
        col = by_slug.get(name)
        if col is not None and col not in taken:
            return col
    return None


def infer_mapping(
    columns: Sequence[Any],
    kinds: Mapping[str, str] | None = None,
    mapping: LogMapping | Mapping[str, Any] | None = None,
) -> LogMapping:
    """The :class:`LogMapping` of a table with these *columns*.

    :param kinds: per column ``"number"`` (→ metric) or anything else (→ dimension); default all dimensions.
    :param mapping: explicit choices by column *name*: a :class:`LogMapping`, or a dict with any of
        ``case_id, activity, start, end, dimensions, metrics, time_format, units``. Roles not given are
        inferred; when neither ``dimensions`` nor ``metrics`` is given, every other column is kept.
    :raises MappingError: a column index instead of a name, an unknown or repeated column, a role not found.
    """
    names = [str(c) for c in columns]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise MappingError(f"Column names must be unique; repeated: {', '.join(twice)}.")
    if isinstance(mapping, LogMapping):
        explicit: dict[str, Any] = {
            "case_id": mapping.case_id,
            "activity": mapping.activity,
            "start": mapping.start,
            "end": mapping.end,
            "dimensions": mapping.dimensions,
            "metrics": mapping.metrics,
            "time_format": mapping.time_format,
            "units": mapping.units,
        }
    elif mapping is None:
        explicit = {}
    elif isinstance(mapping, Mapping):
        explicit = dict(mapping)
    else:
        raise MappingError(f"mapping must be a LogMapping or a dict, got {type(mapping).__name__}.")
    allowed = {"case_id", "activity", "start", "end", "dimensions", "metrics", "time_format", "units"}
    unknown = sorted(set(explicit) - allowed)
    if unknown:
        raise MappingError(
            f"Unknown mapping key(s) {', '.join(unknown)}; use {', '.join(sorted(allowed))}.",
            hint="e.g. mapping={'case_id': 'Order', 'activity': 'Step', 'start': 'When'}",
        )

    def check(value: Any, role: str) -> str:
        if isinstance(value, bool) or not isinstance(value, str):
            raise MappingError(
                f"mapping[{role!r}] must be a column name, got {type(value).__name__} {value!r}.",
                hint="Columns are mapped by name, never by position: use the DataFrame's column label.",
            )
        if value not in names:
            raise MappingError(
                f"mapping[{role!r}] names column {value!r}, which is not among: {', '.join(names)}."
            )
        return value

    taken: set[str] = set()
    roles: dict[str, str | None] = {}
    for role, accepted in (("case_id", CASE_NAMES), ("activity", ACTIVITY_NAMES), ("start", START_NAMES)):
        value = explicit.get(role)
        col = check(value, role) if value is not None else _pick(names, accepted, taken)
        if col is None:
            raise MappingError(
                f"No {role.replace('_', ' ')} column among: {', '.join(names) or 'none'}.",
                hint=f"Name it one of {', '.join(accepted)} (any case, spaces or punctuation), "
                f"or pass mapping={{{role!r}: '<column name>'}}.",
            )
        roles[role] = col
        taken.add(col)
    if "end" in explicit:
        roles["end"] = check(explicit["end"], "end") if explicit["end"] is not None else None
    else:
        roles["end"] = _pick(names, END_NAMES, taken)
    if roles["end"]:
        taken.add(roles["end"])
    kinds = kinds or {}
    if "dimensions" in explicit or "metrics" in explicit:
        dims = [check(c, "dimensions") for c in explicit.get("dimensions") or ()]
        metrics = [check(c, "metrics") for c in explicit.get("metrics") or ()]
    else:
        rest = [c for c in names if c not in taken]
        dims = [c for c in rest if kinds.get(c) != "number"]
        metrics = [c for c in rest if kinds.get(c) == "number"]
    named = [roles["case_id"], roles["activity"], roles["start"], roles["end"], *dims, *metrics]
    used = [c for c in named if c]
    if len(set(used)) != len(used):
        twice = sorted({c for c in used if used.count(c) > 1})
        raise MappingError(f"Column(s) {', '.join(twice)} mapped to two roles; give each column one role.")
    slugs: dict[str, str] = {}
    for c in [*dims, *metrics]:
        s = _slug(c)
        if not s:
            raise MappingError(
                f"Column {c!r} needs a letter or digit in its name to become a dimension/metric."
            )
        if s in slugs:
            raise MappingError(
                f"Columns {slugs[s]!r} and {c!r} would become the same service column; rename one."
            )
        slugs[s] = c
    return LogMapping(
        case_id=str(roles["case_id"]),
        activity=str(roles["activity"]),
        start=str(roles["start"]),
        end=roles["end"],
        dimensions=tuple(dims),
        metrics=tuple(metrics),
        time_format=explicit.get("time_format") or TIME_FORMAT,
        units=dict(explicit.get("units") or {}),
    )


@dataclass(frozen=True)
class UploadedFile:
    """A file of a project and its ingestion ``status``: ``PENDING``, ``PROCESSING``, ``DONE``, ``FAILED``."""

    id: str
    name: str
    status: str
    project_id: str
    reason: str | None = None
    size: int | None = None
    events: int | None = None
    creation_date: str | None = None

    @property
    def finished(self) -> bool:
        """Whether ingestion is over (``DONE`` or ``FAILED``)."""
        return self.status in (_DONE, _FAILED)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _file(data: Any, pid: str) -> UploadedFile:
    if not isinstance(data, Mapping) or not data.get("id"):
        raise HTTPError(f"file of project {pid}: expected a JSON object with an id, got {str(data)[:200]}.")
    status = data.get("status")
    if isinstance(status, Mapping):  # the older upload route nests {"progress", "status"}
        status = status.get("status")
    return UploadedFile(
        id=str(data["id"]),
        name=str(data.get("name") or ""),
        status=str(status or data.get("ingestionStatus") or "").upper(),
        project_id=pid,
        reason=data.get("reason"),
        size=data.get("size"),
        events=data.get("events"),
        creation_date=data.get("creationDate"),
    )


# --- progress -------------------------------------------------------------------------------------------
ProgressCallback = Callable[[str, int, "int | None"], None]


def _in_notebook() -> bool:
    """Whether a Jupyter kernel runs us (looked up, never imported: core modules know nothing of IPython)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Progress:
    """Reports ``(phase, done, total)``: phase ``"upload"`` counts bytes, ``"ingest"`` 0 → 1."""

    def __init__(self, progress: bool | ProgressCallback | None, label: str) -> None:
        self._callback: ProgressCallback | None = progress if callable(progress) else None
        self._use_tqdm = progress is True or (progress is None and _in_notebook())
        self._label = label
        self._bar: Any = None

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if self._callback is not None:
            self._callback(phase, done, total)
        if not self._use_tqdm:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:  # tqdm is optional (the jdbc extra): no bar then
            self._use_tqdm = False
            return
        if self._bar is None or self._bar.desc != f"{self._label} {phase}":
            self.close()
            unit = "B" if phase == "upload" else "file"
            self._bar = tqdm(
                total=total, desc=f"{self._label} {phase}", unit=unit, unit_scale=True, leave=True
            )
        self._bar.total = total
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# --- bodies ---------------------------------------------------------------------------------------------
def _kinds(frame: pd.DataFrame) -> dict[str, str]:
    import pandas as pd

    out = {}
    for c in frame.columns:
        dtype = frame[c].dtype
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        out[str(c)] = "number" if numeric else "text"
    return out


def _utc_ms_text(series: pd.Series, column: str) -> Any:
    """Timestamps as ``yyyy-MM-ddTHH:mm:ss.SSS`` text in UTC (``None`` for missing)."""
    import numpy as np
    import pandas as pd

    if not pd.api.types.is_datetime64_any_dtype(series.dtype):
        try:
            series = pd.to_datetime(series, utc=True, format="mixed")
        except (ValueError, TypeError) as exc:
            raise MappingError(
                f"Column {column!r} holds a value that is not a date/time ({exc}).",
                hint="Convert it with pandas.to_datetime first, or map another column as the timestamp.",
            ) from None
    if getattr(series.dtype, "tz", None) is not None:
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    values = series.to_numpy(dtype="datetime64[ms]")
    text = np.datetime_as_string(values, unit="ms").astype(object)
    text[np.isnat(values)] = None
    return text


def _frame_slices(frame: pd.DataFrame, mapping: LogMapping) -> Iterator[bytes]:
    """The CSV of *frame*'s mapped columns, slice by slice (header first)."""
    cols = mapping.columns
    times = [t for t in (mapping.start, mapping.end) if t is not None]
    yield _csv_line([str(c) for c in cols])
    for at in range(0, len(frame), _ROWS_PER_SLICE):
        part = frame.iloc[at : at + _ROWS_PER_SLICE][[*cols]].copy()
        for t in times:
            part[t] = _utc_ms_text(part[t], t)
        yield part.to_csv(index=False, header=False, lineterminator="\n").encode("utf-8")


def _csv_line(values: list[str]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue().encode("utf-8")


def _counted(chunks: Iterator[bytes], report: Callable[[int], None]) -> Iterator[bytes]:
    done = 0
    for chunk in chunks:
        done += len(chunk)
        yield chunk
        report(done)


def _file_chunks(fh: Any) -> Iterator[bytes]:
    while True:
        chunk = fh.read(_UPLOAD_CHUNK)
        if not chunk:
            return
        yield chunk if isinstance(chunk, bytes) else chunk.encode("utf-8")


def _sniff_file(path: Path | None, fh: Any, name: str) -> tuple[list[str], dict[str, str], list[Any]]:
    """Header, column kinds and a sample of a CSV (a ZIP's first CSV), read from its first rows."""
    import zipfile

    import pandas as pd

    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ext not in ("csv", "zip"):
        raise MappingError(
            f"Cannot read the columns of {name!r}: only .csv and .zip (of CSV files) can be mapped by name.",
            hint="Load it with pandas and upload the DataFrame, or pass a .csv file.",
        )
    source: Any = path if path is not None else fh
    start = None if path is not None else fh.tell()
    try:
        if ext == "zip":
            with zipfile.ZipFile(source) as archive:
                member = next((m for m in archive.namelist() if m.lower().endswith(".csv")), None)
                if member is None:
                    raise MappingError(f"The ZIP {name!r} holds no .csv file.")
                with archive.open(member) as inner:
                    sample = pd.read_csv(inner, nrows=1000, dtype=str, keep_default_na=False, na_values=[""])
        else:
            sample = pd.read_csv(source, nrows=1000, dtype=str, keep_default_na=False, na_values=[""])
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        if isinstance(exc, MappingError):
            raise
        raise MappingError(f"Cannot read the header of {name!r}: {exc}") from None
    finally:
        if start is not None:
            fh.seek(start)
    kinds = {}
    for c in sample.columns:
        values = sample[c].dropna()
        ok = len(values) > 0 and pd.to_numeric(values, errors="coerce").notna().all()
        kinds[str(c)] = "number" if ok else "text"
    return [str(c) for c in sample.columns], kinds, [sample]


def _guess_time_format(sample: Any, columns: list[str]) -> str:
    import pandas as pd

    values = pd.concat([sample[c].dropna().astype(str).head(200) for c in columns])
    for java, py in _FILE_TIME_FORMATS:
        if values.empty or pd.to_datetime(values, format=py, errors="coerce").notna().all():
            return java
    raise MappingError(
        f"Cannot tell the date format of column(s) {', '.join(columns)} (e.g. {values.iloc[0]!r}).",
        hint="Pass mapping={'time_format': \"yyyy-MM-dd HH:mm:ss\"} (a Java date pattern), "
        "or upload a DataFrame.",
    )


# --- the client -----------------------------------------------------------------------------------------
class ProjectFiles:
    """The write side of the public API for one workgroup, over a :class:`RestClient`'s session and token."""

    def __init__(
        self, settings: Settings, session: requests.Session, tokens: TokenProvider, rest: RestClient
    ) -> None:
        self._rest = rest
        self._settings = settings
        self._session = session
        self._tokens = tokens
        self._auth = BearerAuth(tokens)

    def _call(self, method: str, path: str, *, what: str, not_found: Any = None, **kw: Any) -> Any:
        response = _http.send(
            self._session,
            method,
            self._settings.api_url + path,
            timeout=self._settings.timeout,
            what=what,
            auth=self._auth,
            **kw,
        )
        _http.raise_for_status(response, what=what, not_found=not_found)
        return response

    def _not_found(self, pid: str) -> Callable[[], tuple[str, str]]:
        return lambda: self._rest.unknown_project(pid)

    def create_project(self, name: str, description: str | None = None) -> Project:
        """Create a project (``POST /pub/project``) and return it."""
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError("The project name must be a non-empty string.")
        params = {"name": name.strip(), "workgroupId": self._settings.client_id}
        if description is not None:
            params["description"] = description
        response = self._call("POST", "/project", what=f"create project {name!r}", params=params)
        data = _http.json_body(response, what="create project")
        pid = data.get("message") if isinstance(data, Mapping) else None
        if not isinstance(pid, str) or not pid:
            raise HTTPError(f"create project: the answer holds no project id ({str(data)[:200]}).")
        return self._rest.project(pid)

    def post_mapping(self, project: Project | str, body: dict[str, Any]) -> None:
        """Set the project's column mapping (``POST /pub/project/{id}/column-mapping``)."""
        pid = project_id(project)
        path = f"/project/{quote(pid, safe='')}/column-mapping"
        response = _http.send(
            self._session,
            "POST",
            self._settings.api_url + path,
            timeout=self._settings.timeout,
            what="column mapping",
            auth=self._auth,
            json=body,
        )
        if response.status_code == 400:
            raise MappingError(
                f"The service refused the column mapping of project {pid}: {_http.server_message(response)}",
                hint="Reset the project to change the mapping of a project that holds data.",
            )
        _http.raise_for_status(
            response, what=f"column mapping of project {pid}", not_found=self._not_found(pid)
        )

    def files(self, project: Project | str, *, limit: int = 1000) -> list[UploadedFile]:
        """Every file of the project with its status (``GET /pub/projects/{id}/files``), oldest first."""
        pid = project_id(project)
        out: list[UploadedFile] = []
        page = 1
        while True:
            response = self._call(
                "GET",
                f"/projects/{quote(pid, safe='')}/files",
                what=f"files of project {pid}",
                not_found=self._not_found(pid),
                params={"pageIndex": page, "limit": limit, "sortOrder": "ASC"},
            )
            data = _http.json_body(response, what="files")
            items = data.get("files") if isinstance(data, Mapping) else None
            if not isinstance(items, list):
                raise HTTPError(
                    f"files of project {pid}: expected {{totalItems, files}}, got {str(data)[:200]}."
                )
            out.extend(_file(item, pid) for item in items)
            if not items or len(out) >= int(data.get("totalItems") or 0):
                return out
            page += 1

    def file(self, project: Project | str, file_id: str) -> UploadedFile:
        """One file and its status (``GET /pub/projects/{id}/files/{fileId}``)."""
        pid = project_id(project)
        response = self._call(
            "GET",
            f"/projects/{quote(pid, safe='')}/files/{quote(file_id, safe='')}",
            what=f"file {file_id}",
            not_found=lambda: (
                f"File {file_id!r} not found in project {pid!r}.",
                "List them with conn.files().",
            ),
        )
        return _file(_http.json_body(response, what="file"), pid)

    def reset(self, project: Project | str) -> None:
        """Empty the project: its data and files go, its name, description and mapping stay."""
        pid = project_id(project)
        self._call(
            "POST",
            f"/project/{quote(pid, safe='')}/reset",
            what=f"reset project {pid}",
            not_found=self._not_found(pid),
        )

    def unarchive(self, project: Project | str) -> None:
        """Unarchive the project (the service archives projects idle for about two weeks)."""
        pid = project_id(project)
        self._call(
            "PUT",
            f"/projects/{quote(pid, safe='')}/unarchive",
            what="unarchive",
            not_found=self._not_found(pid),
        )

    def delete_project(self, project: Project | str, confirm: str | None = None) -> None:
        """Delete the project and its data. *confirm* must be the project's name (asked for in a notebook).

        :raises ConfigurationError: no or a wrong confirmation; nothing is deleted then.
        """
        info = self._rest.project(project)
        if confirm is None and _in_notebook():
            confirm = input(f"Type the project's name ({info.name}) to delete it and all its data: ")
        if confirm is None:
            raise ConfigurationError(
                f"Deleting project {info.id} needs its name as confirmation.",
                hint=f"Call delete_project(project, confirm={info.name!r}).",
            )
        if confirm != info.name:
            raise ConfigurationError(
                f"Confirmation {confirm!r} is not the name of project {info.id} ({info.name!r}); "
                "nothing was deleted."
            )
        self._call(
            "DELETE",
            f"/project/{quote(info.id, safe='')}",
            what=f"delete project {info.id}",
            not_found=self._not_found(info.id),
        )

    def upload(
        self,
        project: Project | str,
        data: Any,
        mapping: LogMapping | Mapping[str, Any] | None = None,
        *,
        wait: bool = True,
        progress: bool | ProgressCallback | None = None,
        timeout: float = 3600.0,
        name: str | None = None,
    ) -> UploadedFile:
        """Map, upload and (by default) wait for the ingestion of an event log (see ``Connection.upload``)."""
        import pandas as pd

        pid = project_id(project)
        if isinstance(data, pd.DataFrame):
            if not all(isinstance(c, str) for c in data.columns):
                raise MappingError(
                    "Every column label of the DataFrame must be a string (columns are mapped by name).",
                    hint="Rename them first, e.g. df.rename(columns=str).",
                )
            chosen = infer_mapping(list(data.columns), _kinds(data), mapping)
            if data.empty:
                raise MappingError("The DataFrame has no row to upload.")
            for t in [
                c for c in (chosen.start, chosen.end) if c is not None
            ]:  # bad dates fail before sending
                if not pd.api.types.is_datetime64_any_dtype(data[t].dtype):
                    _check_dates(data[t], t)
            chosen = replace(chosen, time_format=TIME_FORMAT)
            body = chosen.service_json()
            filename = name or "dataframe.csv"
            frame = data

            def make_chunks() -> Iterator[bytes]:
                return _frame_slices(frame, chosen)

            total = None
        else:
            path, fh, filename = _open_source(data, name)
            header, kinds, sample = _sniff_file(path, fh, filename)
            chosen = infer_mapping(header, kinds, mapping)
            explicit_format = isinstance(mapping, LogMapping) or (
                isinstance(mapping, Mapping) and "time_format" in mapping
            )
            if not explicit_format:
                times = [c for c in (chosen.start, chosen.end) if c]
                chosen = replace(chosen, time_format=_guess_time_format(sample[0], times))
            body = chosen.service_json({c: i for i, c in enumerate(header)})
            total = os.path.getsize(path) if path is not None else None
            start_at = fh.tell() if fh is not None else 0

            def make_chunks() -> Iterator[bytes]:
                if path is not None:
                    return _file_chunks_path(path)
                fh.seek(start_at)
                return _file_chunks(fh)

        report = _Progress(progress, filename)
        try:
            self.post_mapping(pid, body)
            uploaded = self._send_file(pid, filename, make_chunks, report, total)
            if not wait or uploaded.finished:
                return self._checked(uploaded) if uploaded.status == _FAILED else uploaded
            return self._checked(self.wait(pid, uploaded.id, timeout=timeout, report=report))
        finally:
            report.close()

    def _checked(self, f: UploadedFile) -> UploadedFile:
        if f.status == _FAILED:
            raise UploadError(
                f"Ingestion of {f.name!r} into project {f.project_id} FAILED: "
                f"{f.reason or 'no reason given'}.",
                reason=f.reason,
                file_id=f.id,
                hint="Fix the data or the mapping and upload again; the project was left as it was.",
            )
        return f

    def _send_file(
        self,
        pid: str,
        filename: str,
        make_chunks: Callable[[], Iterator[bytes]],
        report: _Progress,
        total: int | None,
    ) -> UploadedFile:
        wg = quote(self._settings.client_id, safe="")
        url = f"{self._settings.api_url}/workgroups/{wg}/projects/{quote(pid, safe='')}/files"
        what = f"upload {filename!r} to project {pid}"
        tokens = self._tokens
        # A generator body cannot be re-sent by BearerAuth's 401 hook: on a 401 we re-stream it ourselves.
        for attempt in (1, 2):
            token = tokens.token()
            headers = {
                "Content-Type": "application/octet-stream",
                "Content-Disposition": f'attachment; filename="{filename.replace(chr(34), "")}"; '
                f"filename*=UTF-8''{quote(filename, safe='')}",
                "Accept": "application/json",
            }
            report("upload", 0, total)
            body = _counted(make_chunks(), lambda n: report("upload", n, total))
            response = _http.send(
                self._session,
                "POST",
                url,
                timeout=self._settings.timeout,
                what=what,
                data=body,
                headers=headers,
                auth=_OneToken(token),
            )
            if response.status_code == 401 and attempt == 1:
                tokens.invalidate(token)
                continue
            break
        if response.status_code == 413:
            message = _http.server_message(response)
            raise UploadError(
                f"{what}: refused, the file is over the service's size limit ({message}).",
                reason=message,
                status=413,
                url=url,
                hint="Split the event log into several uploads (each appends to the project).",
            )
        _http.raise_for_status(response, what=what, not_found=self._not_found(pid))
        return _file(_http.json_body(response, what=what), pid)

    def wait(
        self,
        project: Project | str,
        file_id: str,
        *,
        timeout: float = 3600.0,
        report: _Progress | None = None,
        first_delay: float = 0.05,
        max_delay: float = 2.0,
    ) -> UploadedFile:
        """Poll the file's status with a growing delay until ``DONE`` or ``FAILED`` (not raised here).

        :raises RequestTimeout: still not finished after *timeout* seconds.
        """
        pid = project_id(project)
        deadline = time.monotonic() + timeout
        delay = first_delay
        while True:
            current = self.file(pid, file_id)
            if report is not None:
                report("ingest", 1 if current.finished else 0, 1)
            if current.finished:
                return current
            if time.monotonic() >= deadline:
                raise RequestTimeout(
                    f"File {current.name!r} of project {pid} is still {current.status} after {timeout:g} s.",
                    hint="Follow it later with conn.files(project); it keeps being ingested.",
                )
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.6, max_delay)

    def files_frame(self, project: Project | str) -> pd.DataFrame:
        """:meth:`files` as a DataFrame."""
        return to_frame(self.files(project), UploadedFile)


class _OneToken(requests.auth.AuthBase):
    """Bearer auth with one given token and no retry hook (a streamed body cannot be re-sent; the caller
    re-streams it). The token text exists only while the header is set, never in a caller's locals."""

    def __init__(self, token: Any) -> None:
        self._token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._token.access_token.reveal()}"
        return r


def _check_dates(series: Any, column: str) -> None:
    """Raise a clear :class:`MappingError` when *series* does not parse as dates."""
    import pandas as pd

    try:
        pd.to_datetime(series, utc=True, format="mixed", errors="raise")
    except (ValueError, TypeError) as exc:
        raise MappingError(
            f"Column {column!r} holds a value that is not a date/time ({exc}).",
            hint="Convert it with pandas.to_datetime first, or map another column as the timestamp.",
        ) from None


def _file_chunks_path(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        yield from _file_chunks(fh)


def _open_source(data: Any, name: str | None) -> tuple[Path | None, Any, str]:
    """(path, file object, file name) of a path or an open binary file."""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if not path.is_file():
            raise ConfigurationError(
                f"No file at {path}.", hint="Pass a DataFrame, a path to a .csv/.zip, or an open file."
            )
        return path, None, name or path.name
    if hasattr(data, "read") and hasattr(data, "seek"):
        if isinstance(data, io.TextIOBase):
            raise ConfigurationError("Open the file in binary mode ('rb') to upload it.")
        fname = name or os.path.basename(str(getattr(data, "name", "") or "")) or None
        if not fname:
            raise ConfigurationError("Cannot tell this file object's name; pass name='log.csv'.")
        return None, data, fname
    raise ConfigurationError(
        f"upload() takes a pandas DataFrame, a path or an open binary file, got {type(data).__name__}."
    )
