"""Fixtures of the write-side tests: their own sandbox (projects are created and deleted here, so the
session sandbox's project lists stay as other tests expect) with a small upload size limit."""

from __future__ import annotations

import pytest
import requests

# the shared checks of the real-log tests report their failed comparisons as test modules do
pytest.register_assert_rewrite(f"{__package__}.real_logs")

#: the upload size limit of the lifecycle sandbox (bytes)
UPLOAD_LIMIT = 3_000_000


@pytest.fixture(scope="package")
def lc_sandbox(tmp_path_factory: pytest.TempPathFactory):
    """A sandbox for write tests (30 cases per generated project; uploads up to :data:`UPLOAD_LIMIT`)."""
    from pm_sandbox import start

    sb = start(
        cases=30,
        log_path=tmp_path_factory.mktemp("lc-sandbox") / "sandbox.log",
        extra_args=("--max-upload-bytes", str(UPLOAD_LIMIT)),
    )
    yield sb
    sb.stop()


@pytest.fixture
def lc_connect(lc_sandbox, connect_workgroup):
    """``lc_connect(key="demo")``: a connection to a workgroup of the lifecycle sandbox."""
    opened = []

    def factory(key: str = "demo"):
        conn = connect_workgroup(lc_sandbox, key)
        conn.sql_transport = "druid"
        opened.append(conn)
        return conn

    yield factory
    for conn in opened:
        conn.close()


@pytest.fixture
def conn(lc_connect):
    """A connection to the lifecycle sandbox's demo workgroup (SQL over the Druid HTTP API)."""
    return lc_connect()


@pytest.fixture
def project(conn, request):
    """A fresh empty project, deleted after the test."""
    p = conn.create_project(f"test {request.node.name}"[:100], description="made by a lifecycle test")
    yield p
    if p.id in conn.rest.project_ids():
        conn.delete_project(p, confirm=p.name)


class RawApi:
    """Plain ``requests`` calls to /pub with the connection's bearer token (to send what our client never
    would: bad mappings, wrong file types)."""

    def __init__(self, sb, conn) -> None:
        self.base = sb.base_url + "/pub"
        self.wg = sb.workgroups["demo"].client_id
        self.conn = conn

    def headers(self, **extra: str) -> dict[str, str]:
        token = self.conn.tokens.token().access_token.reveal()
        return {"Authorization": f"Bearer {token}", **extra}

    def mapping(self, pid: str, body: dict) -> requests.Response:
        return requests.post(f"{self.base}/project/{pid}/column-mapping", json=body, headers=self.headers())

    def upload(self, pid: str, name: str, data: bytes) -> requests.Response:
        headers = self.headers(
            **{
                "Content-Type": "application/octet-stream",
                "Content-Disposition": f'attachment; filename="{name}"',
            }
        )
        return requests.post(
            f"{self.base}/workgroups/{self.wg}/projects/{pid}/files", data=data, headers=headers
        )


@pytest.fixture
def raw(lc_sandbox, conn) -> RawApi:
    return RawApi(lc_sandbox, conn)


def mapping_body(
    *, case: int = 0, activity: int = 1, times=((2, "yyyy-MM-dd HH:mm:ss"),), file_type: str = "csv", dims=()
) -> dict:
    """A column-mapping body by index, as the vendor SDK sends it."""
    return {
        "fileStructure": {
            "fileType": file_type,
            "charset": "UTF-8",
            "delimiter": ",",
            "quoteChar": '"',
            "escapeChar": "\\",
            "eolChar": "\\n",
            "header": True,
            "commentChar": "#",
        },
        "columnMapping": {
            "caseIdMapping": {"columnIndex": case},
            "activityMapping": {"columnIndex": activity},
            "timeMappings": [{"columnIndex": i, "format": f} for i, f in times],
            "dimensionsMappings": [
                {"name": n, "columnIndex": i, "isCaseScope": False, "aggregation": "FIRST"} for n, i in dims
            ],
            "metricsMappings": [],
        },
    }


# --- the real logs of tests/data/ (test_receipt_log.py, test_helpdesk_log.py): see real_logs.py ----------
@pytest.fixture(scope="module")
def real_frame(request):
    """The event DataFrame of ``tests/data/<LOG>.csv.gz``, *LOG* the test module's ``LOG``."""
    from .real_logs import read

    return read(request.module.LOG)


@pytest.fixture(scope="module")
def real_expected(real_frame):
    """The independent pandas computation over :func:`real_frame` (``real_logs.independent``)."""
    from .real_logs import independent

    return independent(real_frame)


@pytest.fixture(scope="module")
def real_uploaded(request, lc_sandbox, connect_workgroup, real_frame):
    """``(conn, project)``: the module's real log uploaded with ``conn.upload`` into a new project of the
    lifecycle sandbox (deleted afterwards)."""
    conn = connect_workgroup(lc_sandbox)
    name = request.module.LOG
    project = conn.create_project(f"{name} (real log)", description=f"tests/data/{name}.csv.gz, from a test")
    conn.upload(project, real_frame, progress=False)
    yield conn, project
    conn.delete_project(project, confirm=project.name)
    conn.close()


@pytest.fixture(scope="module")
def real_log(real_uploaded):
    """The uploaded real log with the *default* ``conn.mining(project)``."""
    conn, project = real_uploaded
    return conn.mining(project)
