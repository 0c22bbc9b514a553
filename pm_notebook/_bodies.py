"""The request bodies of an upload: the column mapping's JSON and the event log's bytes.

A DataFrame is streamed as CSV in slices (chunked transfer encoding), so the file is never held in memory
whole; its timestamps are written in UTC with millisecond precision (naive ones are taken as UTC), the
:data:`~pm_notebook.mapping.TIME_FORMAT` its mapping names. A CSV or ZIP file is streamed as it is, in
1 MiB pieces; its header and first rows are read to map its columns by name and guess its date pattern.
Either way the bytes come from :attr:`Upload.chunks`, which starts a fresh stream on every call, so an
upload can be sent again from its start (a :class:`~pm_notebook._http.StreamedBody`).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError, MappingError
from .mapping import TIME_FORMAT, LogMapping, column_kinds, guess_time_format, infer_mapping, parse_dates

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Upload", "prepare"]

ROWS_PER_SLICE = 10_000
UPLOAD_CHUNK = 1 << 20


@dataclass(frozen=True)
class Upload:
    """One event log ready to send: its mapping, the mapping's request body, its name and its bytes.

    :param chunks: a fresh stream of the file's bytes on every call.
    :param total: the byte count when known (a file on disk), else ``None``.
    """

    mapping: LogMapping
    mapping_json: dict[str, Any]
    filename: str
    chunks: Callable[[], Iterator[bytes]]
    total: int | None


def prepare(data: Any, mapping: LogMapping | Mapping[str, Any] | None, name: str | None) -> Upload:
    """The :class:`Upload` of a DataFrame, a path to a ``.csv``/``.zip`` or an open binary file.

    Everything that can be refused is refused here, before anything is sent: unnamed or repeated columns,
    a role not found, dates that do not parse, an empty DataFrame, an unreadable file.

    :raises MappingError: the columns cannot be mapped (see :func:`~pm_notebook.mapping.infer_mapping`).
    :raises ConfigurationError: *data* is none of the three, or a file's name cannot be told.
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return _frame_upload(data, mapping, name)
    return _file_upload(data, mapping, name)


def _frame_upload(
    data: pd.DataFrame, mapping: LogMapping | Mapping[str, Any] | None, name: str | None
) -> Upload:
    import pandas as pd

    if not all(isinstance(c, str) for c in data.columns):
        raise MappingError(
            "Every column label of the DataFrame must be a string (columns are mapped by name).",
            hint="Rename them first, e.g. df.rename(columns=str).",
        )
    chosen = infer_mapping(list(data.columns), column_kinds(data), mapping)
    if data.empty:
        raise MappingError("The DataFrame has no row to upload.")
    for t in [c for c in (chosen.start, chosen.end) if c is not None]:  # bad dates fail before sending
        if not pd.api.types.is_datetime64_any_dtype(data[t].dtype):
            parse_dates(data[t], t)
    chosen = replace(chosen, time_format=TIME_FORMAT)
    return Upload(
        mapping=chosen,
        mapping_json=chosen.service_json(),
        filename=name or "dataframe.csv",
        chunks=lambda: _frame_slices(data, chosen),
        total=None,
    )


def _file_upload(data: Any, mapping: LogMapping | Mapping[str, Any] | None, name: str | None) -> Upload:
    path, fh, filename = _open_source(data, name)
    header, kinds, sample = _sniff_file(path, fh, filename)
    chosen = infer_mapping(header, kinds, mapping)
    explicit_format = isinstance(mapping, LogMapping) or (
        isinstance(mapping, Mapping) and "time_format" in mapping
    )
    if not explicit_format:
        times = [c for c in (chosen.start, chosen.end) if c]
        chosen = replace(chosen, time_format=guess_time_format(sample, times))
    start_at = fh.tell() if fh is not None else 0

    def chunks() -> Iterator[bytes]:
        if path is not None:
            return _file_chunks_path(path)
        fh.seek(start_at)
        return _file_chunks(fh)

    return Upload(
        mapping=chosen,
        mapping_json=chosen.service_json({c: i for i, c in enumerate(header)}),
        filename=filename,
        chunks=chunks,
        total=os.path.getsize(path) if path is not None else None,
    )


def _utc_ms_text(series: pd.Series, column: str) -> Any:
    """Timestamps as ``yyyy-MM-ddTHH:mm:ss.SSS`` text in UTC (``None`` for missing)."""
    import numpy as np
    import pandas as pd

    if not pd.api.types.is_datetime64_any_dtype(series.dtype):
        series = parse_dates(series, column)
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
    for at in range(0, len(frame), ROWS_PER_SLICE):
        part = frame.iloc[at : at + ROWS_PER_SLICE][[*cols]].copy()
        for t in times:
            part[t] = _utc_ms_text(part[t], t)
        yield part.to_csv(index=False, header=False, lineterminator="\n").encode("utf-8")


def _csv_line(values: list[str]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue().encode("utf-8")


def _file_chunks(fh: Any) -> Iterator[bytes]:
    while True:
        chunk = fh.read(UPLOAD_CHUNK)
        if not chunk:
            return
        yield chunk if isinstance(chunk, bytes) else chunk.encode("utf-8")


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


def _sniff_file(path: Path | None, fh: Any, name: str) -> tuple[list[str], dict[str, str], pd.DataFrame]:
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
    return [str(c) for c in sample.columns], kinds, sample
