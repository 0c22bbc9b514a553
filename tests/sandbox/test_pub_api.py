"""The sandbox's public API over real HTTP: routes and shapes, isolation between workgroups, 401/403/404."""

from __future__ import annotations

import base64
import json

import pytest
import requests

from pm_notebook._models import table_kind

from ._token import client_credentials


@pytest.fixture(scope="module")
def tokens(sandbox) -> dict[str, str]:
    out = {}
    for key in sandbox.workgroups:
        r = client_credentials(sandbox, key)
        assert r.status_code == 200, r.text
        out[key] = r.json()["access_token"]
    return out


def get(sb, path: str, token: str | None, **kw) -> requests.Response:
    headers = {"accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return requests.get(f"{sb.base_url}/pub{path}", headers=headers, timeout=60, **kw)


LICENSED = ("demo", "second")


def test_workgroups_shipped(sandbox):
    assert set(sandbox.workgroups) == {"demo", "second", "unlicensed"}
    assert [sandbox.workgroups[k].licensed for k in ("demo", "second", "unlicensed")] == [True, True, False]
    assert len(sandbox.workgroups["demo"].project_ids) == 2
    assert len(sandbox.workgroups["second"].project_ids) == 3  # the third one uses detail_<n>_lpkr_ names
    ids = [p for wg in sandbox.workgroups.values() for p in wg.project_ids]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("key", LICENSED)
def test_projects_lists_own_project_ids(sandbox, tokens, key):
    r = get(sandbox, "/projects", tokens[key])
    assert r.status_code == 200
    assert r.json() == list(sandbox.workgroups[key].project_ids)


@pytest.mark.parametrize("key", LICENSED)
def test_datasources_list_the_three_tables(sandbox, tokens, key):
    for pid in sandbox.workgroups[key].project_ids:
        r = get(sandbox, f"/datasources/{pid}", tokens[key])
        assert r.status_code == 200
        body = r.json()
        assert [d["name"] for d in body] == [pid, f"{pid}_vertex", f"{pid}_edge"]
        for d in body:
            assert set(d) == {"name", "type", "host", "port"}
            assert d["type"] == table_kind(d["name"])
            assert d["host"] == "127.0.0.1"
            assert d["port"] == sandbox.sql_port
        legacy = get(sandbox, "/datasources", tokens[key], params={"id": pid})
        assert legacy.status_code == 200 and legacy.json() == body


def test_datasources_without_id_is_a_clear_400(sandbox, tokens):
    r = get(sandbox, "/datasources", tokens["demo"])
    assert r.status_code == 400
    assert "id" in r.json()["message"]


def test_project_name_exist_and_details(sandbox, tokens, sandbox_store):
    wg = sandbox.workgroups["demo"]
    record = sandbox_store.workgroup(wg.client_id).projects[0]
    pid = wg.project_ids[0]
    assert record.id == pid
    r = get(sandbox, f"/projects/{pid}", tokens["demo"])
    assert r.status_code == 200
    assert r.json() == {
        "id": pid,
        "name": record.name,
        "description": record.description,
        "creationDate": record.created,
        "workgroupId": wg.client_id,
    }
    assert get(sandbox, f"/project/{pid}/name", tokens["demo"]).json() == {"name": record.name}
    assert get(sandbox, f"/project/{pid}/exist", tokens["demo"]).json() == {"exists": True}


def test_workgroup_info_and_version_and_lookups(sandbox, tokens):
    wg = sandbox.workgroups["demo"]
    info = get(sandbox, f"/workgroups/{wg.client_id}", tokens["demo"]).json()
    assert info["id"] == wg.client_id and info["name"] == wg.name
    for key in ("creationDate", "startValidityDate", "expirationDate", "isDemoWorkgroup", "dataVersion"):
        assert key in info
    assert info["isDemoWorkgroup"] is True
    assert isinstance(get(sandbox, "/version", tokens["demo"]).json()["version"], str)
    pid = wg.project_ids[0]
    lookups = get(sandbox, f"/lookups/{pid}", tokens["demo"]).json()
    assert {lk["name"] for lk in lookups} == {
        f"{pid}_variant_name",
        f"{pid}_variants",
        f"{pid}_excluded_cases",
        pid,
        f"{pid}_cases_is_completed",
    }
    assert all(set(lk) == {"name", "description", "usage"} for lk in lookups)
    assert all("LOOKUP(" in lk["usage"] and f"'{lk['name']}'" in lk["usage"] for lk in lookups)


def test_project_graph_matches_the_edge_table(sandbox, tokens, sandbox_store):
    wg = sandbox.workgroups["demo"]
    pid = wg.project_ids[0]
    r = get(sandbox, f"/project/{pid}/graph", tokens["demo"])
    assert r.status_code == 200
    graph = r.json()
    con = sandbox_store.database(wg.client_id).cursor()
    sql = f'SELECT DISTINCT source_vertex_name, destination_vertex_name FROM druid."{pid}_edge"'
    expected = set(con.execute(sql).fetchall())
    names = {v["id"]: v["name"] for v in graph["vertices"]}
    assert {(names[e["source"]], names[e["destination"]]) for e in graph["edges"]} == expected
    assert {"START", "END"} <= set(names.values())
    assert all("category" not in v for v in graph["vertices"])
    gateways = get(sandbox, f"/project/{pid}/graph", tokens["demo"], params={"mode": "gateways"}).json()
    assert {v["category"] for v in gateways["vertices"]} == {"start", "end", "task"}
    assert get(sandbox, f"/project/{pid}/graph", tokens["demo"], params={"mode": "x"}).status_code == 400


@pytest.mark.parametrize(
    "route",
    [
        "/project/{pid}/graph",
        "/projects/{pid}",
        "/project/{pid}/name",
        "/datasources/{pid}",
        "/lookups/{pid}",
        "/datasources?id={pid}",
    ],
)
def test_foreign_and_unknown_projects_are_the_same_404(sandbox, tokens, route):
    foreign = sandbox.workgroups["second"].project_ids[0]
    unknown = "00000000-0000-4000-8000-000000000000"
    bodies = []
    for pid in (foreign, unknown):
        r = get(sandbox, route.format(pid=pid), tokens["demo"])
        assert r.status_code == 404
        bodies.append(r.json()["message"].replace(pid, "<pid>"))
        assert sandbox.workgroups["second"].name not in r.text
    assert bodies[0] == bodies[1]  # nothing tells a foreign project from a missing one


def test_exist_is_false_for_foreign_project(sandbox, tokens):
    foreign = sandbox.workgroups["demo"].project_ids[1]
    assert get(sandbox, f"/project/{foreign}/exist", tokens["second"]).json() == {"exists": False}


def test_foreign_workgroup_info_is_404(sandbox, tokens):
    r = get(sandbox, f"/workgroups/{sandbox.workgroups['second'].client_id}", tokens["demo"])
    assert r.status_code == 404


@pytest.mark.parametrize("path", ["/projects", "/datasources/{pid}", "/version", "/project/{pid}/exist"])
def test_unlicensed_workgroup_gets_403(sandbox, tokens, path):
    wg = sandbox.workgroups["unlicensed"]
    r = get(sandbox, path.format(pid=wg.project_ids[0]), tokens["unlicensed"])
    assert r.status_code == 403
    body = r.json()
    assert body["status"] == 403 and body["error"] == "licence_required"
    assert "licence" in body["message"] and wg.name in body["message"]


def _assert_401(r: requests.Response) -> None:
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
    assert r.json()["status"] == 401


def test_missing_token_is_401_with_challenge(sandbox):
    _assert_401(get(sandbox, "/projects", None))
    r = requests.get(f"{sandbox.base_url}/pub/projects", headers={"Authorization": "Basic abc"}, timeout=60)
    _assert_401(r)


def test_tampered_token_is_401(sandbox, tokens):
    header, payload, signature = tokens["demo"].split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["azp"] = sandbox.workgroups["second"].client_id
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    _assert_401(get(sandbox, "/projects", f"{header}.{forged}.{signature}"))
    _assert_401(get(sandbox, "/projects", tokens["demo"][:-4] + "AAAA"))
    _assert_401(get(sandbox, "/projects", "garbage"))


def test_refresh_token_is_not_a_bearer_token(sandbox):
    r = client_credentials(sandbox)
    _assert_401(get(sandbox, "/projects", r.json()["refresh_token"]))


def test_401_comes_before_403_and_404(sandbox):
    _assert_401(get(sandbox, "/datasources/00000000-0000-4000-8000-000000000000", None))


def test_unknown_route_is_json_404(sandbox, tokens):
    r = get(sandbox, "/nope", tokens["demo"])
    assert r.status_code == 404
    assert r.json()["status"] == 404


def test_openapi_document_is_served(sandbox):
    r = requests.get(f"{sandbox.base_url}/pub/openapi.json", timeout=60)
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"].startswith("3.")
    paths = doc["paths"]
    for path in (
        "/pub/projects",
        "/pub/datasources/{project_id}",
        "/pub/project/{project_id}/exist",
        "/pub/workgroups/{workgroup_id}",
    ):
        assert path in paths
    assert not any(p.startswith("/_sandbox") or p.startswith("/realms") for p in paths)
    assert requests.get(f"{sandbox.base_url}/pub/docs", timeout=60).status_code == 200


def test_no_secret_in_any_public_answer(sandbox, tokens):
    secrets = [wg.client_secret for wg in sandbox.workgroups.values()]
    pid = sandbox.workgroups["demo"].project_ids[0]
    for path in ("/projects", f"/datasources/{pid}", f"/workgroups/{sandbox.workgroups['demo'].client_id}"):
        text = get(sandbox, path, tokens["demo"]).text
        assert not any(s in text for s in secrets)


def test_admin_routes_need_the_admin_key(sandbox):
    r = requests.get(f"{sandbox.base_url}/_sandbox/workgroups", timeout=60)
    assert r.status_code == 403
    assert "client_secret" not in r.text
