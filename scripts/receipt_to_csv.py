"""Derive ``tests/data/receipt.csv.gz`` from the 4TU "receipt" event log in XES (see tests/data/README.md).

Usage: ``python scripts/receipt_to_csv.py path/to/receipt.xes [tests/data/receipt.csv.gz]``

One row per event, in the file's order: ``case:concept:name`` (the trace's name), ``concept:name``,
``time:timestamp`` (converted to UTC, ISO 8601 with milliseconds), ``org:resource``, ``org:group`` and
``lifecycle:transition`` (empty when the event has none). Trace attributes and the log's metadata are left
out. Only the standard library is used (``xml.etree.ElementTree.iterparse``), so the derivation can be
repeated without pm4py; the gzip stream carries no file name or time, so the output is byte-stable.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

XES = "{http://www.xes-standard.org/}"
COLUMNS = [
    "case:concept:name",
    "concept:name",
    "time:timestamp",
    "org:resource",
    "org:group",
    "lifecycle:transition",
]


def _utc(text: str) -> str:
    moment = dt.datetime.fromisoformat(text).astimezone(dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def events(path: Path) -> list[dict[str, str]]:
    """The events of the XES file at *path*, one dict of :data:`COLUMNS` each, in the file's order."""
    rows: list[dict[str, str]] = []
    for _, elem in ET.iterparse(path, events=("end",)):
        if elem.tag.removeprefix(XES) != "trace":
            continue
        # the trace's own attributes are its direct children; each event's are the event's children
        own = {c.get("key"): c.get("value") for c in elem if c.tag.removeprefix(XES) != "event"}
        for event in elem.iterfind(f"{XES}event"):
            attrs = {c.get("key"): c.get("value") for c in event}
            rows.append(
                {
                    "case:concept:name": own.get("concept:name") or "",
                    "concept:name": attrs.get("concept:name") or "",
                    "time:timestamp": _utc(attrs.get("time:timestamp") or ""),
                    "org:resource": attrs.get("org:resource") or "",
                    "org:group": attrs.get("org:group") or "",
                    "lifecycle:transition": attrs.get("lifecycle:transition") or "",
                }
            )
        elem.clear()
    return rows


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(argv[0])
    target = (
        Path(argv[1])
        if len(argv) == 2
        else Path(__file__).parent.parent / "tests" / "data" / "receipt.csv.gz"
    )
    rows = events(source)
    text = io.StringIO()
    writer = csv.DictWriter(text, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with open(target, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        out.write(text.getvalue().encode("utf-8"))
    cases = len({r["case:concept:name"] for r in rows})
    print(f"{target}: {len(rows):,} events of {cases:,} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
