"""The service's official Python SDK (PyPI ``igrafx-mining-sdk`` 2.38.1) can list projects and tables.

Two layers:

* ``test_sdk_http_calls_replayed`` replays, with plain ``requests``, exactly the calls the SDK's
  ``api_connector.py``, ``workgroup.py`` and ``project.py`` make (read from the 2.38.1 wheel): the
  form POST to the auth URL *as given* (the SDK does not append the token path), then
  ``GET {api}/pub/projects``, ``/project/{id}/exist``, ``/projects/{id}``, ``/datasources/{id}``,
  ``/workgroups/{id}`` with ``Authorization: Bearer``; it reads the same keys the SDK reads.
* ``test_real_sdk_code`` runs the SDK's own modules from the wheel (no dependency installed: only
  its unused ``networkx`` import is stubbed). The wheel is fetched with ``pip download --no-deps``
  into the pytest cache; where no package index is reachable that test is skipped and the replay
  above still covers the behaviour.
"""

from __future__ import annotations

import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest
import requests

SDK = "igrafx-mining-sdk==2.38.1"
SDK_FILES = (
    "api_connector.py",
    "workgroup.py",
    "project.py",
    "datasource.py",
    "graph.py",
    "column_mapping.py",
)


def test_sdk_http_calls_replayed(sandbox):
    wg = sandbox.workgroups["demo"]
    authurl = f"{sandbox.auth_url}/protocol/openid-connect/token"
    # APIConnector.__login: req.post(login_url, login_data) -> form body; reads ["access_token"].
    login = requests.post(
        authurl,
        {"grant_type": "client_credentials", "client_id": wg.client_id, "client_secret": wg.client_secret},
    )
    login.raise_for_status()
    headers = {"Authorization": "Bearer " + login.json()["access_token"]}
    api = sandbox.base_url.rstrip("/") + "/pub"  # __process_apiurl appends /pub

    project_ids = requests.get(api + "/projects", headers=headers).json()  # Workgroup.get_project_list
    assert project_ids == list(wg.project_ids)
    for pid in project_ids:
        assert requests.get(f"{api}/project/{pid}/exist", headers=headers).json()["exists"] is True
        assert isinstance(requests.get(f"{api}/projects/{pid}", headers=headers).json()["name"], str)
        ds = requests.get(f"{api}/datasources/{pid}", headers=headers)
        assert ds.status_code == 200
        # Project.__get_datasource_by_name classifies by substring of "name".
        kinds = {
            ("_edge" if "_edge" in d["name"] else "_vertex" if "_vertex" in d["name"] else "cases"): d["name"]
            for d in ds.json()
        }
        assert kinds == {"cases": pid, "_vertex": f"{pid}_vertex", "_edge": f"{pid}_edge"}
    meta = requests.get(f"{api}/workgroups/{wg.client_id}", headers=headers).json()
    assert meta.get("dataVersion") == "1"
    foreign = sandbox.workgroups["second"].project_ids[0]
    assert requests.get(f"{api}/project/{foreign}/exist", headers=headers).json()["exists"] is False


@pytest.fixture(scope="module")
def sdk_wheel(request, tmp_path_factory) -> Path:
    cache = getattr(request.config, "cache", None)
    folder = Path(cache.mkdir("igrafx-sdk")) if cache is not None else tmp_path_factory.mktemp("igrafx-sdk")
    wheels = sorted(folder.glob("igrafx_mining_sdk-2.38.1-*.whl"))
    if not wheels:
        try:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary=:all:",
                    "-q",
                    "-d",
                    str(folder),
                    SDK,
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"could not download the {SDK} wheel (no package index?): {exc}")
        wheels = sorted(folder.glob("igrafx_mining_sdk-2.38.1-*.whl"))
    return wheels[0]


def test_real_sdk_code(sandbox, sdk_wheel, tmp_path, monkeypatch):
    package = tmp_path / "igrafx_mining_sdk"
    package.mkdir()
    with zipfile.ZipFile(sdk_wheel) as wheel:
        for name in SDK_FILES:
            (package / name).write_bytes(wheel.read(f"igrafx_mining_sdk/{name}"))
    # The SDK's own __init__ reads its pyproject with toml; an empty one loads the modules we need.
    (package / "__init__.py").write_text("")
    monkeypatch.setitem(sys.modules, "networkx", types.ModuleType("networkx"))  # graph.py only
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        _exercise_sdk(sandbox)
    finally:
        for mod in [m for m in sys.modules if m.startswith("igrafx_mining_sdk")]:
            del sys.modules[mod]


def _exercise_sdk(sandbox) -> None:
    from igrafx_mining_sdk.workgroup import Workgroup

    wg = sandbox.workgroups["demo"]
    sdk = Workgroup(
        wg.client_id, wg.client_secret, sandbox.base_url, f"{sandbox.auth_url}/protocol/openid-connect/token"
    )
    assert sdk.get_project_list() == list(wg.project_ids)
    for pid in wg.project_ids:
        project = sdk.project_from_id(pid)
        assert project is not None
        assert isinstance(project.get_project_name(), str)
        assert project.cases_datasource.name == pid
        assert project.nodes_datasource.name == f"{pid}_vertex"
        assert project.edges_datasource.name == f"{pid}_edge"
    assert len(sdk.datasources) == 3 * len(wg.project_ids)
    assert sdk.get_workgroup_data_version == "1"
    assert sdk.project_from_id(sandbox.workgroups["second"].project_ids[0]) is None
