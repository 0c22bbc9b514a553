"""The vendor SDK's write side runs unchanged against the sandbox: ``Workgroup.create_project``,
``Project.add_column_mapping`` (its own ``FileStructure``/``ColumnMapping`` classes), ``add_file``,
``get_file_ingestion_status``, ``get_project_files_metadata``, ``reset``, ``unarchive`` and
``delete_project``.

The SDK's modules are loaded from the 2.38.1 wheel as in ``tests/sandbox/test_official_sdk.py`` (only its
unused ``networkx`` import is stubbed); where no package index is reachable the test is skipped.
"""

from __future__ import annotations

import sys
import time
import types
import zipfile

import pytest

SDK_FILES = (
    "api_connector.py",
    "workgroup.py",
    "project.py",
    "datasource.py",
    "graph.py",
    "column_mapping.py",
)


@pytest.fixture(scope="module")
def sdk_modules(sdk_wheel, tmp_path_factory):
    """The SDK's package folder (unpacked from the wheel) on ``sys.path`` for this module's tests."""
    root = tmp_path_factory.mktemp("sdk")
    package = root / "igrafx_mining_sdk"
    package.mkdir()
    with zipfile.ZipFile(sdk_wheel) as wheel:
        for name in SDK_FILES:
            (package / name).write_bytes(wheel.read(f"igrafx_mining_sdk/{name}"))
    (package / "__init__.py").write_text("")  # the real one reads its pyproject with toml
    mp = pytest.MonkeyPatch()
    mp.setitem(sys.modules, "networkx", types.ModuleType("networkx"))
    mp.syspath_prepend(str(root))
    yield
    mp.undo()
    for mod in [m for m in sys.modules if m.startswith("igrafx_mining_sdk")]:
        del sys.modules[mod]


def _poll(project, file_id: str) -> str:
    """The SDK's own status call, until the file is finished (generous deadline, no timing assumption)."""
    deadline = time.monotonic() + 120
    while True:
        status = project.get_file_ingestion_status(file_id)
        if status in ("DONE", "FAILED") or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def test_sdk_write_side(lc_sandbox, sdk_modules, tmp_path, conn):
    from igrafx_mining_sdk.column_mapping import (
        Column,
        ColumnMapping,
        ColumnType,
        DimensionAggregation,
        FileStructure,
        FileType,
        MetricAggregation,
    )
    from igrafx_mining_sdk.workgroup import Workgroup

    wg = lc_sandbox.workgroups["demo"]
    sdk = Workgroup(
        wg.client_id,
        wg.client_secret,
        lc_sandbox.base_url,
        f"{lc_sandbox.auth_url}/protocol/openid-connect/token",
    )
    project = sdk.create_project("SDK project", "made by the vendor SDK")
    assert project.id in sdk.get_project_list()
    assert project.get_project_name() == "SDK project"

    columns = [
        Column("Case ID", 0, ColumnType.CASE_ID),
        Column("Activity", 1, ColumnType.TASK_NAME),
        Column("Start", 2, ColumnType.TIME, time_format="yyyy-MM-dd'T'HH:mm"),
        Column("End", 3, ColumnType.TIME, time_format="yyyy-MM-dd'T'HH:mm"),
        Column(
            "Country", 4, ColumnType.DIMENSION, is_case_scope=True, aggregation=DimensionAggregation.FIRST
        ),
        Column(
            "Price", 5, ColumnType.METRIC, is_case_scope=False, aggregation=MetricAggregation.SUM, unit="€"
        ),
    ]
    assert project.add_column_mapping(FileStructure(FileType.CSV), ColumnMapping(columns)) is True

    path = tmp_path / "orders.csv"
    path.write_text(
        "Case ID,Activity,Start,End,Country,Price\n"
        "1,Order,2025-02-01T09:00,2025-02-01T09:30,FR,10.5\n"
        "1,Ship,2025-02-02T10:00,2025-02-02T11:00,FR,2\n"
        "2,Order,2025-02-03T09:00,2025-02-03T09:10,DE,7\n",
        encoding="utf-8",
    )
    added = project.add_file(str(path))  # raises unless 201
    assert added["name"] == "orders.csv" and added["status"] == "PENDING"
    assert _poll(project, added["id"]) == "DONE"
    page = project.get_project_files_metadata(1, 10)
    assert page["totalItems"] == 1 and page["files"][0]["id"] == added["id"]

    # what the SDK ingested is what SQL returns
    got = conn.query(
        "SELECT caseid, vertex_name, __time, country_lpkr, price_lpkr "
        f'FROM "{project.id}_vertex" ORDER BY __time'
    )
    assert got["caseid"].tolist() == ["1", "1", "2"] and got["vertex_name"].tolist() == [
        "Order",
        "Ship",
        "Order",
    ]
    assert str(got["__time"].iloc[1]) == "2025-02-02 10:00:00+00:00"
    assert got["price_lpkr"].tolist() == [10.5, 2.0, 7.0] and got["country_lpkr"].tolist() == [
        "FR",
        "FR",
        "DE",
    ]
    assert project.nodes_datasource.name == f"{project.id}_vertex"

    # a second file appends; a file with a bad date FAILS with its reason and changes nothing
    bad = tmp_path / "bad.csv"
    bad.write_text("Case ID,Activity,Start,End,Country,Price\n3,Order,tomorrow,,FR,1\n", encoding="utf-8")
    failed = project.add_file(str(bad))
    assert _poll(project, failed["id"]) == "FAILED"
    assert "unparsable timestamps" in project.get_file_metadata(failed["id"])["reason"]
    assert conn.query(f'SELECT COUNT(*) AS n FROM "{project.id}_vertex"')["n"].iloc[0] == 3

    assert project.unarchive() is True
    assert project.reset() is True
    assert conn.tables(project.id) == []
    assert project.delete_project().status_code == 204
    assert project.id not in sdk.get_project_list()
    assert project.exists is False
