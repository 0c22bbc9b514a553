"""The service's official Python SDK (PyPI ``igrafx-mining-sdk`` 2.38.1) works against the sandbox:
projects and tables, variants, completed cases, model and instance graphs, column mapping.

Two layers:

* ``test_sdk_http_calls_replayed`` and ``test_sdk_mining_calls_replayed`` replay, with plain
  ``requests``, exactly the calls the SDK's ``api_connector.py``, ``workgroup.py`` and ``project.py``
  make (read from the 2.38.1 wheel): the form POST to the auth URL *as given* (the SDK does not append
  the token path), then ``GET {api}/pub/...`` with ``Authorization: Bearer``; they read the same keys
  the SDK (and the vendor's KNIME nodes, for ``mappingInfos``) read.
* ``test_real_sdk_code`` and its neighbours run the SDK's own modules from the wheel, unchanged (its
  ``networkx`` is the real one; its JDBC path is not used: process keys come from the Druid SQL API).
  The wheel is fetched with ``pip download --no-deps`` into the pytest cache; where no package index
  is reachable those tests are skipped and the replays above still cover the behaviour.
"""

from __future__ import annotations

import contextlib
import json
import sys
import zipfile
from pathlib import Path

import pytest
import requests

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


def test_sdk_mining_calls_replayed(sandbox):
    wg = sandbox.workgroups["second"]
    headers = _login(sandbox, "second")
    api = sandbox.base_url.rstrip("/") + "/pub"
    for pid in wg.project_ids:
        # Project.get_project_variants / get_project_completed_cases: params, then .json() returned as is.
        params = {"projectId": pid, "pageIndex": 1, "limit": 3}
        variants = requests.get(f"{api}/project/{pid}/variants", params=params, headers=headers)
        assert variants.status_code == 200 and variants.json()  # the SDK's own test: truthy
        cases = requests.get(f"{api}/project/{pid}/completedCases", params=params, headers=headers)
        assert cases.status_code == 200 and cases.json()
        found = requests.get(
            f"{api}/project/{pid}/completedCases", params={**params, "searchCaseId": "1"}, headers=headers
        )
        assert found.status_code == 200
        # Graph.from_dict: vertices[*].id, edges[*].source/.destination, for both modes.
        for mode in ("simplified", "gateways"):
            graph = requests.get(f"{api}/project/{pid}/graph", params={"mode": mode}, headers=headers).json()
            ids = {item["id"] for item in graph["vertices"]}
            assert all(e["source"] in ids and e["destination"] in ids for e in graph["edges"])
        # GraphInstance.from_dict: vertexInstances[*].id, edgeInstances[*].source.id/.destination.id,
        # reworkTotal, concurrencyRate (processId = a processkey, as Project.process_keys lists them).
        key = _process_key(sandbox, "second", pid)
        inst = requests.get(f"{api}/project/{pid}/graphInstance", params={"processId": key}, headers=headers)
        body = inst.json()
        assert [v["id"] for v in body["vertexInstances"]]
        assert all(e["source"]["id"] and e["destination"]["id"] for e in body["edgeInstances"])
        assert body["reworkTotal"] is not None and body["concurrencyRate"] is not None
        # Project.column_mapping_exists / get_column_mapping: dict values must be one of the four roles,
        # list values dimensions or metrics, every entry with a columnIndex.
        exists = requests.get(f"{api}/project/{pid}/column-mapping-exists", headers=headers).json()
        assert exists["exists"] is True
        mapping = requests.get(f"{api}/project/{pid}/column-mapping", headers=headers).json()
        for k, v in mapping.items():
            if isinstance(v, dict):
                assert k in ("caseId", "activity", "dateColumn", "otherDateColumn") and "columnIndex" in v
            elif isinstance(v, list):
                assert k in ("dimensions", "metrics") and all("columnIndex" in c and "name" in c for c in v)
        # The vendor's KNIME "Project Data" node: {item["databaseColumnName"]: item["name"]} over categories.
        infos = requests.get(f"{api}/project/{pid}/mappingInfos", headers=headers).json()
        renames = {
            item["databaseColumnName"]: item["name"] for category in infos.values() for item in category
        }
        assert renames
    delivery = wg.project_ids[2]
    infos = requests.get(f"{api}/project/{delivery}/mappingInfos", headers=headers).json()
    assert "detail_7_lpkr_destination" in {i["databaseColumnName"] for c in infos.values() for i in c}


def _login(sandbox, key: str) -> dict[str, str]:
    wg = sandbox.workgroups[key]
    form = {"grant_type": "client_credentials", "client_id": wg.client_id, "client_secret": wg.client_secret}
    login = requests.post(f"{sandbox.auth_url}/protocol/openid-connect/token", form)
    login.raise_for_status()
    return {"Authorization": "Bearer " + login.json()["access_token"]}


def _process_key(sandbox, key: str, pid: str) -> str:
    """A processkey of *pid*, read over the Druid SQL API (the SDK reads them over JDBC)."""
    wg = sandbox.workgroups[key]
    r = requests.post(
        f"{sandbox.sql_url}/druid/v2/sql",
        json={"query": f'SELECT DISTINCT processkey FROM "{pid}_edge"'},
        auth=(wg.client_id, wg.client_secret),
        timeout=60,
    )
    r.raise_for_status()
    return sorted(row["processkey"] for row in r.json())[0]


@contextlib.contextmanager
def _sdk(sdk_wheel: Path, folder: Path, monkeypatch):
    """The SDK's own modules, unchanged from the wheel, importable while the block runs."""
    package = folder / "igrafx_mining_sdk"
    package.mkdir()
    with zipfile.ZipFile(sdk_wheel) as wheel:
        for name in SDK_FILES:
            (package / name).write_bytes(wheel.read(f"igrafx_mining_sdk/{name}"))
    # The SDK's own __init__ reads its pyproject with toml; an empty one loads the modules we need.
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(folder))
    try:
        yield
    finally:
        for mod in [m for m in sys.modules if m.startswith("igrafx_mining_sdk")]:
            del sys.modules[mod]


def _workgroup(sandbox, key: str):
    from igrafx_mining_sdk.workgroup import Workgroup

    wg = sandbox.workgroups[key]
    return Workgroup(
        wg.client_id, wg.client_secret, sandbox.base_url, f"{sandbox.auth_url}/protocol/openid-connect/token"
    )


def test_real_sdk_code(sandbox, sdk_wheel, tmp_path, monkeypatch):
    with _sdk(sdk_wheel, tmp_path, monkeypatch):
        _exercise_sdk(sandbox)


def _exercise_sdk(sandbox) -> None:
    wg = sandbox.workgroups["demo"]
    sdk = _workgroup(sandbox, "demo")
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


def test_real_sdk_variants_cases_graphs_and_mapping(sandbox, sdk_wheel, tmp_path, monkeypatch, capsys):
    with _sdk(sdk_wheel, tmp_path, monkeypatch):
        from igrafx_mining_sdk.column_mapping import ColumnMapping, ColumnType
        from igrafx_mining_sdk.graph import Graph, GraphInstance

        sdk = _workgroup(sandbox, "second")
        for pid in sandbox.workgroups["second"].project_ids:
            project = sdk.project_from_id(pid)
            variants = project.get_project_variants(1, 3)
            assert variants and variants["variants"][0]["name"] == "Variant 1"
            assert project.get_project_variants(1, 3, "Variant 2")["variants"][0]["name"] == "Variant 2"
            completed = project.get_project_completed_cases(1, 3)
            assert completed and len(completed["caseIds"]) == 3
            first = completed["caseIds"][0]
            assert first in project.get_project_completed_cases(1, 3, first)["caseIds"]

            graph = project.graph()
            assert isinstance(graph, Graph)
            names = {data["name"] for _, data in graph.nodes(data=True)}
            assert {"START", "END"} <= names and graph.number_of_edges() > len(names) - 2
            gateways = sdk.project_from_id(pid).graph(gateways=True)  # a fresh Project: graph() caches
            assert {data.get("category") for _, data in gateways.nodes(data=True)} >= {"start", "end"}

            instance = project.graph_instance_from_key(_process_key(sandbox, "second", pid))
            assert isinstance(instance, GraphInstance)
            assert instance.rework_total is not None and instance.concurrency_rate is not None
            assert set(instance.nodes) <= set(graph.nodes)
            assert project.graph_instance_from_key("no-such-process") is None  # the SDK prints and gives up

            assert project.column_mapping_exists is True
            mapping_json = project.get_column_mapping()
            mapping = ColumnMapping.from_json(mapping_json)  # the SDK's own round trip (its test_02)
            assert mapping.case_id_column.index == 0 and mapping.task_name_column.index == 1
            assert len(mapping.time_columns) == 2
            assert all(c.column_type == ColumnType.DIMENSION for c in mapping.dimension_columns)
            infos = project.get_mapping_infos()
            renames = {i["databaseColumnName"]: i["name"] for category in infos.values() for i in category}
            assert renames
            lookups = project.get_project_lookups()
            assert f"{pid}_variants" in {lk["name"] for lk in lookups}
        delivery = sdk.project_from_id(sandbox.workgroups["second"].project_ids[2])
        renames = {
            i["databaseColumnName"]: i["name"] for c in delivery.get_mapping_infos().values() for i in c
        }
        assert renames["detail_7_lpkr_destination"] == "Destination"
        columns = json.loads(delivery.get_column_mapping())
        assert columns["col7"] == {
            "name": "Destination",
            "columnIndex": 7,
            "isCaseScope": True,
            "aggregation": "FIRST",
            "columnType": "DIMENSION",
        }
    capsys.readouterr()  # the SDK prints its answers (lookups) and the refused process key


def test_real_sdk_sees_the_missing_end_case_rule_as_knime_does(
    tmp_path, sandbox_factory, sdk_wheel, monkeypatch
):
    data = tmp_path / "logs"
    data.mkdir()
    (data / "tickets.csv").write_text("case,activity,timestamp\nT1,Open,2024-05-06 09:00\n")
    sb = sandbox_factory(cases=5, data=data)
    folder = tmp_path / "sdk"
    folder.mkdir()
    with _sdk(sdk_wheel, folder, monkeypatch):
        project = _workgroup(sb, "demo").project_from_id(sb.workgroups["demo"].project_ids[2])
        # The vendor's KNIME node reads this JSONDecodeError as "no END CASE rule set or overfiltering".
        with pytest.raises(requests.exceptions.JSONDecodeError):
            project.get_project_completed_cases(1, 10)
        assert project.get_project_variants(1, 10)["variants"]
