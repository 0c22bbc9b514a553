"""Every way an upload fails gets a FAILED status with a specific reason, the client raises it clearly, and
the project is left exactly as it was."""

from __future__ import annotations

import importlib.util
import io
import re
import time
import zipfile

import pandas as pd
import pytest

from pm_notebook.errors import MappingError, UploadError

from .conftest import UPLOAD_LIMIT, mapping_body

GOOD = b"case,activity,time\nk1,a,2025-01-01 10:00:00\nk1,b,2025-01-01 11:00:00\n"


def _wait(conn, pid: str, file_id: str):
    """Poll the file until it is finished (generous deadline; no assumption about speed)."""
    return conn.files_api.wait(pid, file_id, timeout=120)


def _rows(conn, pid: str) -> int:
    return int(conn.query(f'SELECT COUNT(*) AS n FROM "{pid}_vertex"')["n"].iloc[0])


@pytest.fixture
def loaded(conn, project, raw):
    """The project with one good file (2 events) ingested through plain HTTP calls."""
    assert raw.mapping(project.id, mapping_body()).status_code == 204
    sent = raw.upload(project.id, "good.csv", GOOD)
    assert sent.status_code == 201 and sent.json()["status"] == "PENDING"
    assert _wait(conn, project.id, sent.json()["id"]).status == "DONE"
    assert _rows(conn, project.id) == 2
    return project


def _failed(conn, raw, pid: str, name: str, data: bytes) -> str:
    sent = raw.upload(pid, name, data)
    assert sent.status_code == 201, sent.text
    f = _wait(conn, pid, sent.json()["id"])
    assert f.status == "FAILED"
    return f.reason


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        (
            "bad-time.csv",
            b"case,activity,time\nk2,a,01/02/2025\n",
            r"unparsable timestamps: .* column 2 \('time'\) "
            r"value '01/02/2025' at line 2 does not match the format 'yyyy-MM-dd HH:mm:ss'",
        ),
        (
            "no-case.csv",
            b"case,activity,time\n,a,2025-01-01 10:00:00\n",
            r"missing case id: 1 row\(s\).*line 2",
        ),
        (
            "narrow.csv",
            b"case,activity\nk2,a\n",
            r"bad mapping: the start time column is mapped to column index 2 but narrow.csv has only 2 "
            r"column",
        ),
        ("log.txt", GOOD, r"unsupported file type \.txt"),
        ("log.xls", GOOD, r"bad mapping: the column mapping declares fileType csv but the file is \.xls"),
        ("broken.zip", b"PK not a zip", r"not a readable ZIP archive"),
        ("empty.csv", b"", r"is empty"),
    ],
)
def test_failed_file_has_a_reason_and_leaves_the_project_as_it_was(conn, raw, loaded, name, data, reason):
    assert re.search(reason, _failed(conn, raw, loaded.id, name, data))
    assert _rows(conn, loaded.id) == 2
    assert [f.status for f in conn.files(loaded)][0] == "DONE"


def test_missing_case_id_column(conn, raw, project):
    assert (
        raw.mapping(
            project.id, mapping_body(case=5, activity=1, times=((2, "yyyy-MM-dd HH:mm:ss"),))
        ).status_code
        == 204
    )
    reason = _failed(conn, raw, project.id, "log.csv", GOOD)
    assert reason.startswith("missing case id column: the case id column is mapped to column index 5")
    assert conn.tables(project) == []  # nothing half-made


def test_upload_without_mapping(conn, raw, project):
    assert "no column mapping" in _failed(conn, raw, project.id, "log.csv", GOOD)


def test_xlsx(conn, raw, project, tmp_path):
    assert raw.mapping(project.id, mapping_body(file_type="xlsx")).status_code == 204
    if importlib.util.find_spec("openpyxl") is None:
        reason = _failed(conn, raw, project.id, "log.xlsx", b"PK\x03\x04 whatever")
        assert "unsupported file type .xlsx" in reason and "openpyxl" in reason
    else:  # where openpyxl exists the sandbox reads the sheet
        path = tmp_path / "log.xlsx"
        pd.read_csv(io.BytesIO(GOOD)).to_excel(path, index=False)
        sent = raw.upload(project.id, "log.xlsx", path.read_bytes())
        assert _wait(conn, project.id, sent.json()["id"]).status == "DONE"


def test_zip_without_csv(conn, raw, project):
    assert raw.mapping(project.id, mapping_body()).status_code == 204
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.md", "no data here")
    assert "holds no .csv file" in _failed(conn, raw, project.id, "logs.zip", buf.getvalue())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"columnMapping": {}}, "fileStructure"),
        (mapping_body(case=1), "column 1 is mapped twice"),
        (mapping_body(times=()), "timeMappings must list one or two"),
        (mapping_body(times=((2, "yyyy-QQ"),)), "pattern letter 'Q' is not supported"),
        (mapping_body(file_type="pdf"), "fileType must be csv, xlsx or xls"),
        (mapping_body(dims=(("Who", -1),)), "columnIndex must be a column number"),
    ],
)
def test_bad_mapping_body_is_400(raw, project, body, message):
    answer = raw.mapping(project.id, body)
    assert answer.status_code == 400 and message in answer.json()["message"]


def test_mapping_cannot_change_under_data(conn, loaded, raw):
    other = mapping_body(dims=(("Who", 3),))
    answer = raw.mapping(loaded.id, other)
    assert answer.status_code == 400 and "reset the project" in answer.json()["message"]
    assert raw.mapping(loaded.id, mapping_body()).status_code == 204  # the same one again is fine
    frame = pd.DataFrame(
        {"case": ["z"], "activity": ["a"], "time": pd.to_datetime(["2025-01-01"]), "Who": ["x"]}
    )
    with pytest.raises(MappingError, match="reset the project"):
        conn.upload(loaded, frame)


def test_client_raises_the_services_reason(conn, project, tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("case,activity,time\nk1,a,2025-01-01 10:00:00\nk1,b,yesterday\n")
    with pytest.raises(UploadError, match="FAILED: unparsable timestamps") as err:
        conn.upload(project, path, {"time_format": "yyyy-MM-dd HH:mm:ss"})
    assert err.value.file_id and "line 3" in err.value.reason
    assert [f.status for f in conn.files(project)] == ["FAILED"]


def test_over_the_size_limit(conn, project):
    small = pd.DataFrame({"case": ["s"], "activity": ["a"], "time": pd.to_datetime(["2025-01-01"])})
    conn.upload(project, small)
    n = UPLOAD_LIMIT // 40 + 1000  # each CSV row is over 40 bytes
    frame = pd.DataFrame(
        {
            "case": [f"big-case-{i // 10:08d}" for i in range(n)],
            "activity": ["some activity"] * n,
            "time": pd.Timestamp("2025-01-01") + pd.to_timedelta(range(n), unit="s"),
        }
    )
    with pytest.raises(UploadError, match="size limit") as err:
        conn.upload(project, frame)
    assert err.value.status == 413
    assert _rows(conn, project.id) == 1
    last = conn.files(project)[-1]
    assert last.status == "FAILED" and "size limit" in last.reason


def test_wait_false_returns_at_once(conn, project):
    frame = pd.DataFrame({"case": ["1"], "activity": ["a"], "time": pd.to_datetime(["2025-01-01"])})
    f = conn.upload(project, frame, wait=False)
    assert f.status in ("PENDING", "PROCESSING", "DONE")
    deadline = time.monotonic() + 120
    while not conn.files_api.file(project, f.id).finished and time.monotonic() < deadline:
        time.sleep(0.05)
    assert conn.files_api.file(project, f.id).status == "DONE"
