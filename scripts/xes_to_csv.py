"""Derive a compact CSV of a public XES event log for ``tests/data/`` (see tests/data/README.md).

Usage: ``python scripts/xes_to_csv.py LOG path/to/LOG.xes[.gz] [tests/data/LOG.csv.gz]``, LOG one of
:data:`LOGS` (``receipt``, ``helpdesk``).

One row per event, in the file's order: ``case:concept:name`` (the trace's name), then the log's event
attributes of :data:`LOGS` (an attribute the event lacks is empty), ``time:timestamp`` converted to UTC, ISO
8601 with milliseconds. Trace attributes other than the name and the log's metadata are left out. Only the
standard library is used (``xml.etree.ElementTree.iterparse``; a ``.gz`` file is read through ``gzip``), so
the derivation can be repeated without pm4py; the gzip stream carries no file name or time, so the output is
byte-stable.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import IO

XES = "{http://www.xes-standard.org/}"
CASE = "case:concept:name"

#: the columns of each log's CSV, in order (the case's name first: a trace attribute)
LOGS: dict[str, list[str]] = {
    "receipt": [
        CASE,
        "concept:name",
        "time:timestamp",
        "org:resource",
        "org:group",
        "lifecycle:transition",
    ],
    "helpdesk": [
        CASE,
        "concept:name",
        "time:timestamp",
        "org:resource",
        "seriousness",
        "seriousness_2",
        "service_level",
        "service_type",
        "product",
        "customer",
        "responsible_section",
        "support_section",
        "workgroup",
    ],
}


def _utc(text: str) -> str:
    moment = dt.datetime.fromisoformat(text).astimezone(dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def events(path: Path, columns: list[str]) -> list[dict[str, str]]:
    """The events of the XES file at *path*, one dict of *columns* each, in the file's order."""
    rows: list[dict[str, str]] = []
    with _open(path) as source:
        for _, elem in ET.iterparse(source, events=("end",)):
            if elem.tag.removeprefix(XES) != "trace":
                continue
            # the trace's own attributes are its direct children; each event's are the event's children
            own = {c.get("key"): c.get("value") for c in elem if c.tag.removeprefix(XES) != "event"}
            for event in elem.iterfind(f"{XES}event"):
                attrs = {c.get("key"): c.get("value") for c in event}
                row = {name: attrs.get(name) or "" for name in columns[1:]}
                row[CASE] = own.get("concept:name") or ""
                row["time:timestamp"] = _utc(attrs.get("time:timestamp") or "")
                rows.append(row)
            elem.clear()
    return rows


def main(argv: list[str]) -> int:
    if not 2 <= len(argv) <= 3 or argv[0] not in LOGS:
        print(__doc__, file=sys.stderr)
        return 2
    name, source = argv[0], Path(argv[1])
    columns = LOGS[name]
    target = (
        Path(argv[2])
        if len(argv) == 3
        else Path(__file__).parent.parent / "tests" / "data" / f"{name}.csv.gz"
    )
    rows = events(source, columns)
    text = io.StringIO()
    writer = csv.DictWriter(text, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with open(target, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        out.write(text.getvalue().encode("utf-8"))
    cases = len({r[CASE] for r in rows})
    print(f"{target}: {len(rows):,} events of {cases:,} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
