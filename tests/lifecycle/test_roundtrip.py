"""DataFrame → new project → mined tables → the same cases, activities, timestamps and attributes back
through SQL; appends, reset, delete, files, progress, and who may do what."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pandas as pd
import pytest

from pm_notebook.errors import ConfigurationError, LicenceError, MappingError, NotFound, QueryError
from pm_notebook.lifecycle import LogMapping, infer_mapping


def _event_log() -> pd.DataFrame:
    """pm4py column names, every dtype a user may have, NULLs and unicode (incl. CSV-hostile text)."""
    start = pd.Timestamp("2025-03-01 08:00:00.123")
    n = 12
    frame = pd.DataFrame(
        {
            "case:concept:name": ["C-1"] * 4 + ["Çase ✓ 2"] * 5 + ['c,3 "quoted"'] * 3,
            "concept:name": ["Créer", "Valider", 'Payer, "vite"', "Clore"]
            + ["Créer", "Valider", "Valider", "Line\nbreak", "Clore"]
            + ["Créer", "日本語", "Clore"],
            "start_timestamp": [start + pd.Timedelta(hours=3 * i, milliseconds=7 * i) for i in range(n)],
            "resource": ["Zoë", None, "Ali", "Zoë", "Bob", "", "Bob", "李", None, "Ali", "Ali", "Ali"],
            "amount": [1.5, np.nan, 3.25, 1e-9, 2.0, 2.0, 2.0, -4.5, 0.0, 10.0, 1e12, 7.0],
            "qty": pd.array([1, 2, None, 4, 5, 6, 7, 8, 9, 10, 11, 12], dtype="Int64"),
            "urgent": [True, False, True, False, False, True, True, False, True, False, True, False],
            "channel": pd.Categorical(
                ["web", "shop", "web", "web", "shop", "shop", "web", "x", "x", "web", "web", "x"]
            ),
        }
    )
    # the completion time in UTC (pm4py's time:timestamp), tz-aware in another zone to test conversion
    ends = frame["start_timestamp"] + pd.Timedelta(minutes=30)
    frame["time:timestamp"] = ends.dt.tz_localize("UTC").dt.tz_convert("Europe/Paris")
    return frame


def _vertex(conn, pid: str) -> pd.DataFrame:
    frame = conn.query(  # Druid orders a scan by __time only: sort by case here
        f"SELECT caseid, vertex_name, __time, enddate, resource_lpkr, amount_lpkr, qty_lpkr, urgent_lpkr, "
        f'channel_lpkr FROM "{pid}_vertex" ORDER BY __time'
    )
    return frame.sort_values(["caseid", "__time"], kind="stable", ignore_index=True)


def test_inferred_mapping_of_pm4py_names():
    frame = _event_log()
    kinds = {c: ("number" if c in ("amount", "qty") else "text") for c in frame.columns}
    m = infer_mapping(list(frame.columns), kinds)
    assert (m.case_id, m.activity, m.start, m.end) == (
        "case:concept:name",
        "concept:name",
        "start_timestamp",
        "time:timestamp",
    )
    assert m.dimensions == ("resource", "urgent", "channel") and m.metrics == ("amount", "qty")


def test_dataframe_round_trip(conn, project):
    frame = _event_log()
    seen = []
    done = conn.upload(project, frame, progress=lambda phase, n, total: seen.append((phase, n, total)))
    assert done.status == "DONE" and done.events == len(frame)
    assert any(p == "upload" and n > 0 for p, n, _ in seen) and seen[-1] == ("ingest", 1, 1)

    assert project.id in conn.rest.project_ids()
    assert {t.kind for t in conn.tables(project)} == {"cases", "vertex", "edge"}
    got = _vertex(conn, project.id)
    want = frame.sort_values(["case:concept:name", "start_timestamp"]).reset_index(drop=True)
    assert got["caseid"].tolist() == want["case:concept:name"].tolist()
    assert got["vertex_name"].tolist() == want["concept:name"].tolist()
    assert got["__time"].tolist() == want["start_timestamp"].dt.tz_localize("UTC").tolist()
    end_ms = want["time:timestamp"].dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ms]")
    assert got["enddate"].tolist() == end_ms.astype("int64").tolist()
    # NULL stays NULL; an empty string is an empty CSV field and comes back NULL too (documented)
    assert got["resource_lpkr"].isna().tolist() == [pd.isna(v) or v == "" for v in want["resource"]]
    assert got["resource_lpkr"].dropna().tolist() == [v for v in want["resource"] if not pd.isna(v) and v]
    np.testing.assert_array_equal(got["amount_lpkr"].to_numpy(dtype=float), want["amount"].to_numpy())
    assert got["qty_lpkr"].isna().tolist() == want["qty"].isna().tolist()
    assert got["qty_lpkr"].dropna().tolist() == want["qty"].dropna().astype(float).tolist()
    assert got["urgent_lpkr"].tolist() == [str(v) for v in want["urgent"]]
    assert got["channel_lpkr"].tolist() == want["channel"].astype(str).tolist()

    cases = conn.query(f'SELECT caseid, tasks_count FROM "{project.id}"').sort_values(
        "caseid", ignore_index=True
    )
    counts = frame.groupby("case:concept:name").size().sort_index()
    assert cases["caseid"].tolist() == counts.index.tolist()
    assert cases["tasks_count"].tolist() == counts.tolist()


def test_same_dataframe_twice_appends_then_reset_empties(conn, project):
    frame = _event_log()
    conn.upload(project, frame)
    conn.upload(project, frame)
    rows = conn.query(f'SELECT COUNT(*) AS n FROM "{project.id}_vertex"')["n"].iloc[0]
    assert rows == 2 * len(frame)
    assert [f.status for f in conn.files(project)] == ["DONE", "DONE"]

    conn.reset(project)
    assert conn.tables(project) == [] and conn.files(project) == []
    with pytest.raises(QueryError):
        conn.query(f'SELECT COUNT(*) FROM "{project.id}_vertex"')
    assert conn.project(project).name == project.name  # reset keeps the project
    conn.upload(project, frame)  # and the mapping: a new upload works at once
    assert conn.query(f'SELECT COUNT(*) AS n FROM "{project.id}_vertex"')["n"].iloc[0] == len(frame)


def test_explicit_mapping_by_name(conn, project):
    frame = pd.DataFrame(
        {
            "Order": ["o1", "o1", "o2"],
            "Step": ["a", "b", "a"],
            "When": pd.to_datetime(["2025-01-01 10:00", "2025-01-01 11:00", "2025-01-02 09:00"]),
            "Note": ["x", "y", "z"],
            "Cost": [1, 2, 3],
        }
    )
    mapping = {"case_id": "Order", "activity": "Step", "start": "When", "dimensions": ["Note"], "metrics": []}
    conn.upload(project, frame, mapping)
    cols = conn.query(f'SELECT * FROM "{project.id}_vertex" LIMIT 1').columns
    assert "note_lpkr" in cols and "cost_lpkr" not in cols  # only the named columns were kept


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"case_id": 0}, "must be a column name"),
        ({"case_id": "nope"}, "not among"),
        ({"case_id": "Order", "activity": "Order"}, "mapped to two roles"),
        ({"colour": "Step"}, "Unknown mapping key"),
    ],
)
def test_bad_explicit_mapping_is_refused_before_upload(conn, project, mapping, message):
    frame = pd.DataFrame({"Order": ["o1"], "Step": ["a"], "timestamp": pd.to_datetime(["2025-01-01"])})
    with pytest.raises(MappingError, match=message):
        conn.upload(project, frame, mapping)
    assert conn.files(project) == []


def test_no_case_column_and_bad_dates_are_clear(conn, project):
    with pytest.raises(MappingError, match="No case id column") as err:
        conn.upload(project, pd.DataFrame({"x": ["1"], "activity": ["a"], "timestamp": ["2025-01-01"]}))
    assert "case_id" in err.value.hint
    bad = pd.DataFrame({"case": ["1"], "activity": ["a"], "timestamp": ["not a date"]})
    with pytest.raises(MappingError, match="'timestamp' holds a value that is not a date"):
        conn.upload(project, bad)


def test_csv_path_zip_and_file_object(conn, project, tmp_path):
    text = (
        "Case ID,Activity,Start Time,Weight\nA1,start,2025-01-01 10:00:00,1.5\nA1,end,2025-01-01 12:00:00,2\n"
    )
    path = tmp_path / "log.csv"
    path.write_text(text, encoding="utf-8")
    conn.upload(project, path)
    archive = tmp_path / "logs.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("part1.csv", text.replace("A1", "Z1"))
        z.writestr("part2.csv", text.replace("A1", "Z2"))
    conn.upload(project, archive)
    with open(path, "rb") as fh:
        conn.upload(project, fh, name="again.csv")
    got = conn.query(
        f'SELECT caseid, COUNT(*) AS n, SUM(weight_lpkr) AS w FROM "{project.id}_vertex" '
        "GROUP BY caseid ORDER BY caseid"
    )
    assert got["caseid"].tolist() == ["A1", "Z1", "Z2"]
    assert got["n"].tolist() == [4, 2, 2] and got["w"].tolist() == [7.0, 3.5, 3.5]
    assert [f.name for f in conn.files(project)] == ["log.csv", "logs.zip", "again.csv"]
    with pytest.raises(ConfigurationError, match="binary mode"):
        conn.upload(project, io.StringIO(text))


def test_concurrent_uploads_to_one_project_are_serialised(conn, project):
    frame = _event_log()
    conn.upload(project, frame)  # sets the mapping once
    results = []

    def send(tag: str) -> None:
        part = frame.assign(**{"case:concept:name": frame["case:concept:name"] + tag})
        results.append(conn.upload(project, part, name=f"{tag}.csv"))

    threads = [threading.Thread(target=send, args=(t,)) for t in ("-a", "-b", "-c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status for r in results) == ["DONE"] * 3
    got = conn.query(f'SELECT COUNT(*) AS n, COUNT(DISTINCT caseid) AS c FROM "{project.id}_vertex"')
    assert got["n"].iloc[0] == 4 * len(frame) and got["c"].iloc[0] == 4 * 3


def test_delete_needs_the_name(conn):
    p = conn.create_project("to delete")
    with pytest.raises(ConfigurationError, match="needs its name"):
        conn.delete_project(p)
    with pytest.raises(ConfigurationError, match="nothing was deleted"):
        conn.delete_project(p, confirm="another name")
    assert p.id in conn.rest.project_ids()
    conn.delete_project(p, confirm="to delete")
    assert p.id not in conn.rest.project_ids()
    with pytest.raises(NotFound):
        conn.project(p)


def test_workgroups_and_licence(lc_connect, conn, project, raw, lc_sandbox):
    conn.upload(project, _event_log())
    other = lc_connect("second")
    with pytest.raises(NotFound):
        other.upload(project, _event_log())
    with pytest.raises(NotFound):
        other.reset(project)
    assert project.id not in other.rest.project_ids()
    with pytest.raises(QueryError):
        other.query(f'SELECT COUNT(*) FROM "{project.id}_vertex"')
    with pytest.raises(LicenceError):
        lc_connect("unlicensed").create_project("nope")
    # a project may only be created in the caller's own workgroup
    import requests

    foreign = lc_sandbox.workgroups["second"].client_id
    r = requests.post(
        raw.base + "/project", params={"name": "x", "workgroupId": foreign}, headers=raw.headers()
    )
    assert r.status_code == 404


def test_explicit_column_mapping_object(conn, project):
    frame = pd.DataFrame(
        {
            "id": ["1", "1"],
            "what": ["a", "b"],
            "t": pd.to_datetime(["2025-01-01", "2025-01-02"]),
            "v": [1.0, 2.0],
        }
    )
    mapping = LogMapping(case_id="id", activity="what", start="t", metrics=("v",), units={"v": "EUR"})
    assert conn.upload(project, frame, mapping).status == "DONE"
    assert conn.query(f'SELECT SUM(v_lpkr) AS s FROM "{project.id}"')["s"].iloc[0] == 1.0


def test_upload_restreams_the_body_after_a_401(conn, project, lc_sandbox):
    frame = pd.DataFrame(
        {"case": ["1", "1"], "activity": ["a", "b"], "timestamp": pd.to_datetime(["2025-01-01"] * 2)}
    )
    route = f"POST /pub/workgroups/{lc_sandbox.workgroups['demo'].client_id}/projects/{project.id}/files"
    lc_sandbox.fault("/pub/workgroups/", status=401, times=1)  # the token is refused once, mid-upload
    try:
        assert conn.upload(project, frame).status == "DONE"
        assert lc_sandbox.stats()["faults"] == []  # the 401 was served
    finally:
        lc_sandbox.clear_faults()
    assert lc_sandbox.stats()["requests"][route] == 2
    assert [f.events for f in conn.files(project)] == [2]  # the refused attempt left nothing behind


def test_progress_bar_with_tqdm(conn, project, capsys):
    frame = pd.DataFrame({"case": ["1"], "activity": ["a"], "timestamp": pd.to_datetime(["2025-01-01"])})
    conn.upload(project, frame, progress=True, name="bar.csv")
    err = capsys.readouterr().err
    assert "bar.csv upload" in err and "bar.csv ingest" in err


def test_progress_bar_is_text_outside_a_kernel_even_after_ipykernel_was_imported():
    """Whether a kernel runs us decides the bar, not whether ipykernel was imported (``tqdm.auto`` decides
    by the latter, once, at its first import). A fresh process, so that tqdm is first imported after
    ipykernel, whatever this session imported before."""
    script = (
        "import ipykernel.zmqshell\n"
        "from pm_notebook._progress import Progress\n"
        "bar = Progress(True, 'f.csv')\n"
        "bar('upload', 1, 2)\n"
        "bar.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "f.csv upload" in done.stderr and "1.00/2.00" in done.stderr  # the text bar
