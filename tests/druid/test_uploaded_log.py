"""An *uploaded* log on a real Druid 33: an event log uploaded to the stand-in with ``conn.upload`` (the
client's upload path: a DataFrame streamed as CSV slices), published to Druid with
:mod:`pm_sandbox.druid_publish` as the stand-in holds it, and then the same rows and column types in
its three tables and the same entries in its lookups on both, and the same mining answers.

The log is a slice of tests/data/receipt.csv.gz (the 4TU receipt log: real activity and resource names) plus
cases of the hard shapes: one task only, tasks at the same instant, a task repeated (rework), names with
quotes, commas and accents, a resource left empty, a task years before the others, and a metric with empty
values. A stand-in of its own receives the upload (the session's sandbox keeps its projects as every other
test expects them); the datasources and lookups are taken off Druid at the end.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _compare import differences
from _mining_source import RecordingSource
from test_mining import ANSWERS, _same_answer

from pm_notebook.mining import ProcessLog

DATA = Path(__file__).parent.parent / "data"
CASE, ACT, TIME, RES = "case:concept:name", "concept:name", "time:timestamp", "org:resource"
RECEIPT_CASES = 150


def _hard_cases() -> pd.DataFrame:
    t0 = pd.Timestamp("2011-03-01 09:00", tz="UTC")
    hour = pd.Timedelta(hours=1)
    rows = [
        ("hard single", "Confirmation of receipt", t0, "Resource01"),  # one task only
        *[
            ("hard ties", act, t0, "Resource02")
            for act in ("T06 Determine necessity of stop advice", "A", "B")
        ],
        *[("hard rework", "Rework", t0 + i * hour, "Resource03") for i in range(4)],  # a task repeated
        ("hard rework", "Done", t0 + 5 * hour, "Resource03"),
        ('Fall "5", é', "Prüfung ‘x’", t0, "Résumé, d'O'Brien"),  # quotes, commas, accents
        ('Fall "5", é', 'say "hi", then stop', t0 + hour, ""),  # a resource left empty
        ("hard old", "Confirmation of receipt", pd.Timestamp("1999-12-31 23:59:59.123", tz="UTC"), "R"),
        ("hard old", "Done", t0, "R"),  # twelve years later
    ]
    return pd.DataFrame(rows, columns=[CASE, ACT, TIME, RES])


def uploaded_frame() -> pd.DataFrame:
    receipt = pd.read_csv(DATA / "receipt.csv.gz", dtype=str, keep_default_na=False)
    receipt = receipt[[CASE, ACT, TIME, RES]]
    cases = sorted(receipt[CASE].unique())[:RECEIPT_CASES]
    receipt = receipt[receipt[CASE].isin(cases)].copy()
    receipt[TIME] = pd.to_datetime(receipt[TIME], utc=True)
    frame = pd.concat([receipt, _hard_cases()], ignore_index=True)
    # a metric: a number per task, empty for every seventh
    amount = np.round(np.arange(len(frame)) * 1.37 % 500, 2)
    frame["amount"] = np.where(np.arange(len(frame)) % 7 == 0, np.nan, amount)
    return frame


@pytest.fixture(scope="module")
def upload_sandbox(tmp_path_factory: pytest.TempPathFactory):
    from pm_sandbox import start

    sb = start(cases=5, log_path=tmp_path_factory.mktemp("upload-sandbox") / "sandbox.log")
    yield sb
    sb.stop()


@pytest.fixture(scope="module")
def uploaded(upload_sandbox, connect_workgroup):
    """``(conn, project, frame)``: the log uploaded with ``conn.upload`` to the stand-in's demo workgroup."""
    conn = connect_workgroup(upload_sandbox)
    frame = uploaded_frame()
    project = conn.create_project("uploaded log on Druid", description="tests/druid/test_uploaded_log.py")
    done = conn.upload(project, frame, progress=False)
    assert done.status == "DONE"
    yield conn, project, frame
    conn.close()


def _names(conn, pid: str) -> tuple[list[str], list[str]]:
    """The project's datasources and lookups, as the stand-in's INFORMATION_SCHEMA lists them."""
    listed = conn.query(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM INFORMATION_SCHEMA.TABLES "
        "WHERE TABLE_SCHEMA IN ('druid', 'lookup') AND TABLE_NAME LIKE ?",
        [f"{pid}%"],
        transport="druid",
    )
    by_schema = {s: sorted(listed["TABLE_NAME"][listed["TABLE_SCHEMA"] == s]) for s in ("druid", "lookup")}
    return by_schema["druid"], by_schema["lookup"]


@pytest.fixture(scope="module")
def on_druid(uploaded, druid_cluster, druid_conn):
    """``(tables, lookups)``: the uploaded project published to Druid from the rows the stand-in answers
    (read through its SQL port: the upload lives in the stand-in's process)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pm_sandbox.druid_publish import publish_tables, unpublish

    conn, project, _ = uploaded
    tables, lookups = _names(conn, project.id)
    assert tables == sorted([project.id, f"{project.id}_edge", f"{project.id}_vertex"])
    arrow = {}
    for name in tables:
        table = conn.query_arrow(f'SELECT * FROM "{name}"', transport="druid")
        when = table.schema.get_field_index("__time")  # the instant, as the loader's naive UTC time
        arrow[name] = table.set_column(when, "__time", pc.cast(table["__time"], pa.timestamp("ms")))
    maps = {}
    for name in lookups:
        entries = conn.query(f'SELECT k, v FROM lookup."{name}"', transport="druid")
        maps[name] = dict(zip(entries["k"].astype(str), entries["v"].astype(str), strict=True))
    try:
        publish_tables(
            arrow, maps, coordinator_url=druid_cluster.coordinator, broker_url=druid_cluster.broker
        )
        yield tables, lookups
    finally:
        unpublish(tables, lookups, coordinator_url=druid_cluster.coordinator)


def test_the_upload_holds_the_log(uploaded, on_druid, druid_conn) -> None:
    """The oracle: the tasks on Druid are the uploaded rows (cases, tasks per case, the empty values)."""
    _, project, frame = uploaded
    got = druid_conn.query(
        f'SELECT caseid, COUNT(*) AS tasks FROM "{project.id}_vertex" GROUP BY caseid', transport="druid"
    )
    assert (
        dict(zip(got["caseid"], got["tasks"].astype(int), strict=True))
        == frame.groupby(CASE).size().to_dict()
    )
    assert len(frame) == int(got["tasks"].sum()) and frame[CASE].nunique() == RECEIPT_CASES + 5


def test_the_three_tables_hold_the_same_rows_and_types(uploaded, on_druid, druid_conn) -> None:
    conn, _, _ = uploaded
    tables, _ = on_druid
    for name in tables:
        columns = (
            "SELECT COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'druid' "
            f"AND TABLE_NAME = '{name}' ORDER BY ORDINAL_POSITION"
        )
        ours, theirs = conn.query(columns, transport="druid"), druid_conn.query(columns, transport="druid")
        # a known difference (test_known_differences.py::test_array_data_type_in_information_schema): Druid
        # names a string array's DATA_TYPE a bare ARRAY, the stand-in ARRAY<VARCHAR>
        ours["DATA_TYPE"] = ours["DATA_TYPE"].str.replace(r"^ARRAY<.*>$", "ARRAY", regex=True)
        assert differences(columns, ours, theirs) == [], name
        sql = f'SELECT * FROM "{name}"'
        ours, theirs = conn.query(sql, transport="druid"), druid_conn.query(sql, transport="druid")
        assert len(ours) > 0 and differences(sql, ours, theirs) == [], name


def test_the_lookups_hold_the_same_entries(uploaded, on_druid, druid_conn) -> None:
    conn, project, _ = uploaded
    _, lookups = on_druid
    assert f"{project.id}_variant_name" in lookups
    for name in lookups:
        sql = f'SELECT k, v FROM lookup."{name}"'
        ours, theirs = conn.query(sql, transport="druid"), druid_conn.query(sql, transport="druid")
        assert differences(sql, ours, theirs) == [], name


MINED = ["summary", "variants", "activities", "transitions", "rework", "throughput", "resources", "endpoints"]


@pytest.mark.parametrize("answer", MINED)
def test_mining_answers_agree(uploaded, on_druid, druid_conn, answer) -> None:
    """The same answer on both (quantile columns within the sketch's error, as tests/druid/test_mining.py)."""
    conn, project, _ = uploaded
    ours = ProcessLog.open(RecordingSource(conn, conn), project)
    theirs = ProcessLog.open(RecordingSource(druid_conn, conn), project)
    a, b = pd.DataFrame(ANSWERS[answer](ours)), pd.DataFrame(ANSWERS[answer](theirs))
    assert len(a) > 0 and _same_answer(a, b) == []
