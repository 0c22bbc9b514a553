"""The sandbox's variants, completed-cases, instance-graph and column-mapping routes, and the lookups behind
them, checked against the generated data (``sandbox_store``) and through Druid SQL on the SQL port."""

from __future__ import annotations

import pytest
import requests

from ._token import client_credentials

UNKNOWN = "00000000-0000-4000-8000-000000000000"


@pytest.fixture(scope="module")
def tokens(sandbox) -> dict[str, str]:
    return {key: client_credentials(sandbox, key).json()["access_token"] for key in sandbox.workgroups}


def get(sb, path: str, token: str, **params) -> requests.Response:
    return requests.get(
        f"{sb.base_url}/pub{path}", headers={"Authorization": f"Bearer {token}"}, params=params, timeout=30
    )


def druid(sb, key: str, sql: str) -> list[dict]:
    wg = sb.workgroups[key]
    r = requests.post(
        f"{sb.sql_url}/druid/v2/sql", json={"query": sql}, auth=(wg.client_id, wg.client_secret), timeout=60
    )
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def delivery(sandbox) -> str:
    """The second workgroup's Parcel Delivery project: current naming, re-ingested cases."""
    return sandbox.workgroups["second"].project_ids[2]


def _reference(sandbox_store, key: str, sql: str) -> list[tuple]:
    con = sandbox_store.database(sandbox_store.by_key(key).id).cursor()
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_variants_pages_cover_every_variant_with_its_current_count(sandbox, tokens, sandbox_store):
    for key in ("demo", "second"):
        for pid in sandbox.workgroups[key].project_ids:
            expected = dict(
                _reference(
                    sandbox_store,
                    key,
                    f'SELECT CAST(graphkey AS VARCHAR), COUNT(*) FROM druid."{pid}" '
                    f'WHERE case_version NOT IN (SELECT k FROM lookup."{pid}") GROUP BY 1',
                )
            )
            names = dict(_reference(sandbox_store, key, f'SELECT k, v FROM lookup."{pid}_variant_name"'))
            seen = []
            for page in range(1, 100):
                body = get(sandbox, f"/project/{pid}/variants", tokens[key], pageIndex=page, limit=3).json()
                assert body["totalItems"] == len(expected)
                if not body["variants"]:
                    break
                assert len(body["variants"]) <= 3
                seen += body["variants"]
            assert {v["id"]: v["occurrences"] for v in seen} == expected
            assert all(v["name"] == names[v["id"]] for v in seen)
            counts = [v["occurrences"] for v in seen]
            assert counts == sorted(counts, reverse=True) and seen[0]["name"] == "Variant 1"


def test_variant_search_filters_by_name(sandbox, tokens):
    pid = sandbox.workgroups["demo"].project_ids[0]
    body = get(
        sandbox, f"/project/{pid}/variants", tokens["demo"], pageIndex=1, limit=50, search="variant 2"
    ).json()
    assert body["variants"] and all("variant 2" in v["name"].lower() for v in body["variants"])
    assert body["totalItems"] == len(body["variants"])
    none = get(sandbox, f"/project/{pid}/variants", tokens["demo"], pageIndex=1, limit=5, search="zzz").json()
    assert none == {"totalItems": 0, "variants": []}


@pytest.mark.parametrize(
    ("route", "params"),
    [
        ("variants", {"pageIndex": 0, "limit": 5}),
        ("variants", {"pageIndex": 1, "limit": 0}),
        ("variants", {"pageIndex": "x", "limit": 5}),
        ("completedCases", {"pageIndex": 0, "limit": 5}),
        ("graphInstance", {}),
    ],
)
def test_bad_parameters_are_clear_400s(sandbox, tokens, route, params):
    pid = sandbox.workgroups["demo"].project_ids[0]
    r = get(sandbox, f"/project/{pid}/{route}", tokens["demo"], **params)
    assert r.status_code == 400
    body = r.json()
    assert body["status"] == 400
    assert any(word in body["message"] for word in ("pageIndex", "limit", "processId"))


def _completed_from_end_edges(sandbox_store, key: str, pid: str, end_activities) -> set[str]:
    """Case ids whose transition into END leaves one of the END CASE rule's activities."""
    rows = _reference(
        sandbox_store,
        key,
        f'SELECT CAST(caseid AS VARCHAR), CAST(source_vertex_name AS VARCHAR) FROM druid."{pid}_edge" '
        "WHERE destination_vertex_name = 'END'",
    )
    return {case for case, last in rows if last in end_activities}


def test_completed_cases_follow_the_end_case_rule_and_the_end_edges(sandbox, tokens, sandbox_store):
    for key in ("demo", "second"):
        for record in sandbox_store.by_key(key).projects:
            pid = record.id
            expected = _completed_from_end_edges(sandbox_store, key, pid, record.end_activities)
            ids = []
            for page in range(1, 1000):
                body = get(
                    sandbox, f"/project/{pid}/completedCases", tokens[key], pageIndex=page, limit=97
                ).json()
                assert body["totalItems"] == len(expected)
                ids += body["caseIds"]
                if len(body["caseIds"]) < 97:
                    break
            assert ids == sorted(expected)
    # The O2C rule leaves returned goods open, and the delivery project has parcels still on their way.
    for key, record in (
        ("demo", sandbox_store.by_key("demo").projects[1]),
        ("second", sandbox_store.by_key("second").projects[2]),
    ):
        total = _reference(sandbox_store, key, f'SELECT COUNT(DISTINCT caseid) FROM druid."{record.id}"')[0][
            0
        ]
        assert (
            0 < len(_completed_from_end_edges(sandbox_store, key, record.id, record.end_activities)) < total
        )


def test_completed_cases_search(sandbox, tokens):
    pid = sandbox.workgroups["demo"].project_ids[0]
    body = get(
        sandbox, f"/project/{pid}/completedCases", tokens["demo"], pageIndex=1, limit=500, searchCaseId="-01"
    ).json()
    assert body["caseIds"] and all("-01" in c for c in body["caseIds"])


def test_no_end_case_rule_is_the_services_plain_text_answer(tmp_path, sandbox_factory):
    data = tmp_path / "logs"
    data.mkdir()
    (data / "claims.csv").write_text(
        "Case,Step,Start Time,Region\nC1,Open,2024-05-06 09:00,North\nC1,Close,2024-05-06 10:00,North\n"
        "C2,Open,2024-05-07 09:00,South\n"
    )
    sb = sandbox_factory(cases=5, data=data)
    token = client_credentials(sb, "demo").json()["access_token"]
    pid = sb.workgroups["demo"].project_ids[2]
    r = get(sb, f"/project/{pid}/completedCases", token, pageIndex=1, limit=10)
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("text/plain")
    assert r.text == "There is no END CASE rule set or there is overfiltering"
    assert druid(sb, "demo", f'SELECT COUNT(*) AS n FROM lookup."{pid}_cases_is_completed"') == [{"n": 0}]
    # An imported file's mapping keeps the user's headers and their positions.
    infos = get(sb, f"/project/{pid}/mappingInfos", token).json()
    assert infos["dimensions"] == [
        {
            "name": "Region",
            "columnIndex": 3,
            "isCaseScope": False,
            "aggregation": "FIRST",
            "databaseColumnName": "region_lpkr",
        }
    ]
    mapping = get(sb, f"/project/{pid}/column-mapping", token).json()
    assert (mapping["caseId"], mapping["activity"], mapping["dateColumn"]["columnIndex"]) == (
        {"columnIndex": 0},
        {"columnIndex": 1},
        2,
    )
    assert "otherDateColumn" not in mapping


def test_graph_instance_replays_one_process_variant(sandbox, tokens, sandbox_store, delivery):
    key = "second"
    keys = _reference(
        sandbox_store,
        key,
        f'SELECT CAST(processkey AS VARCHAR), max(rework), count(*) FROM druid."{delivery}" '
        f'WHERE case_version NOT IN (SELECT k FROM lookup."{delivery}") '
        "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1",
    )
    processkey, rework, _ = keys[0]
    assert rework >= 1  # the variant with the most rework: a task repeats
    body = get(sandbox, f"/project/{delivery}/graphInstance", tokens[key], processId=processkey).json()
    vertices, edges = body["vertexInstances"], body["edgeInstances"]
    assert vertices[0]["name"] == "START" and vertices[-1]["name"] == "END"
    tasks = vertices[1:-1]
    assert [v["eventInstance"] for v in tasks] == list(range(len(tasks)))
    assert vertices[-1]["eventInstance"] == len(tasks) - 1
    assert len(tasks) - len({v["id"] for v in tasks}) == rework  # repeated executions share the vertex id
    assert len(edges) == len(tasks) + 1
    chain = [(e["source"]["eventInstance"], e["destination"]["eventInstance"]) for e in edges[1:-1]]
    assert chain == [(i, i + 1) for i in range(len(tasks) - 1)]
    assert body["reworkTotal"] == rework and 0 <= body["concurrencyRate"] <= 1
    model = get(sandbox, f"/project/{delivery}/graph", tokens[key]).json()
    model_ids = {v["id"] for v in model["vertices"]}
    assert {v["id"] for v in vertices} <= model_ids  # same vertex ids as the model graph
    r = get(sandbox, f"/project/{delivery}/graphInstance", tokens[key], processId="nope")
    assert r.status_code == 404 and "nope" in r.json()["message"]


def test_graph_instance_reports_concurrent_executions(sandbox, tokens, sandbox_store):
    pid = sandbox.workgroups["demo"].project_ids[0]
    processkey = _reference(
        sandbox_store,
        "demo",
        f'SELECT CAST(processkey AS VARCHAR) FROM druid."{pid}" '
        "GROUP BY 1 ORDER BY max(concurrency) DESC, 1 LIMIT 1",
    )[0][0]
    body = get(sandbox, f"/project/{pid}/graphInstance", tokens["demo"], processId=processkey).json()
    paired = [v for v in body["vertexInstances"] if v.get("concurrentVertices")]
    assert paired and body["concurrencyRate"] > 0
    by_event = {v["eventInstance"]: v["name"] for v in body["vertexInstances"][1:-1]}
    for v in paired:
        assert all(by_event[c["eventInstance"]] == c["name"] for c in v["concurrentVertices"])


def test_current_naming_project_maps_user_names_to_detail_columns(sandbox, tokens, delivery):
    token = tokens["second"]
    assert get(sandbox, f"/project/{delivery}/column-mapping-exists", token).json() == {"exists": True}
    infos = get(sandbox, f"/project/{delivery}/mappingInfos", token).json()
    by_name = {i["name"]: i for category in infos.values() for i in category}
    assert by_name["Destination"]["databaseColumnName"] == "detail_7_lpkr_destination"
    assert by_name["Destination"]["columnIndex"] == 7
    assert by_name["Weight (kg)"] == {
        "name": "Weight (kg)",
        "columnIndex": 9,
        "isCaseScope": True,
        "aggregation": "FIRST",
        "unit": "kg",
        "databaseColumnName": "detail_9_lpkr_weight_kg",
    }
    columns = druid(
        sandbox,
        "second",
        "SELECT TABLE_NAME, COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS "
        f"WHERE TABLE_SCHEMA = 'druid' AND TABLE_NAME LIKE '{delivery}%'",
    )
    by_table: dict[str, set[str]] = {}
    for row in columns:
        by_table.setdefault(row["TABLE_NAME"], set()).add(row["COLUMN_NAME"])
    for info in by_name.values():
        db = info["databaseColumnName"]
        assert db.startswith(f"detail_{info['columnIndex']}_lpkr_")
        assert (
            db in by_table[delivery]
            and db in by_table[f"{delivery}_vertex"]
            and db in by_table[f"{delivery}_edge"]
        )
    assert "all_detail_7_lpkr_destination" in by_table[delivery]
    assert not any(c.endswith("_lpkr") for cols in by_table.values() for c in cols)  # no short names here
    rows = druid(
        sandbox,
        "second",
        f'SELECT COUNT(caseid) AS n, detail_7_lpkr_destination FROM "{delivery}_edge" '
        "GROUP BY detail_7_lpkr_destination ORDER BY COUNT(caseid) DESC",
    )
    assert len(rows) > 3 and rows[0]["n"] >= rows[-1]["n"]


def test_column_mapping_has_the_keys_the_vendor_sdk_parses(sandbox, tokens):
    for key in ("demo", "second"):
        for pid in sandbox.workgroups[key].project_ids:
            body = get(sandbox, f"/project/{pid}/column-mapping", tokens[key]).json()
            assert set(body) == {
                "caseId",
                "activity",
                "dateColumn",
                "otherDateColumn",
                "dimensions",
                "metrics",
            }
            assert all(set(body[k]) == {"columnIndex", "format"} for k in ("dateColumn", "otherDateColumn"))
            indexes = [
                body[k]["columnIndex"] for k in ("caseId", "activity", "dateColumn", "otherDateColumn")
            ]
            indexes += [c["columnIndex"] for c in body["dimensions"] + body["metrics"]]
            assert sorted(indexes) == list(range(len(indexes)))
            assert all(c["aggregation"] in ("FIRST", "LAST", "DISTINCT") for c in body["dimensions"])


def test_every_documented_lookup_is_listed_queryable_and_in_information_schema(sandbox, tokens, delivery):
    for key in ("demo", "second"):
        for pid in sandbox.workgroups[key].project_ids:
            names = {
                pid,
                f"{pid}_variant_name",
                f"{pid}_variants",
                f"{pid}_excluded_cases",
                f"{pid}_cases_is_completed",
            }
            listed = {lk["name"] for lk in get(sandbox, f"/lookups/{pid}", tokens[key]).json()}
            assert listed == names
            schema = druid(
                sandbox,
                key,
                "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES "
                f"WHERE TABLE_SCHEMA = 'lookup' AND TABLE_NAME LIKE '{pid}%'",
            )
            assert {r["TABLE_NAME"] for r in schema} == names
            row = druid(
                sandbox,
                key,
                f"SELECT COUNT(*) AS n, "
                f"COUNT(DISTINCT caseid) AS cases, "
                f"SUM(CASE WHEN LOOKUP(case_version, '{pid}') IS NULL THEN 1 ELSE 0 END) AS current_rows, "
                f"SUM(CASE WHEN LOOKUP(graphkey, '{pid}_variants') = LOOKUP(graphkey, '{pid}_variant_name') "
                "THEN 1 ELSE 0 END) AS same_name, "
                f"SUM(CASE WHEN LOOKUP(case_version, '{pid}_cases_is_completed') IN ('true', 'false') "
                f"AND LOOKUP(case_version, '{pid}') IS NULL THEN 1 ELSE 0 END) AS flagged, "
                f"SUM(CASE WHEN LOOKUP(case_version, '{pid}_excluded_cases') = 'true' THEN 1 ELSE 0 END) "
                "AS excluded "
                f'FROM "{pid}"',
            )[0]
            assert row["current_rows"] == row["cases"]  # IS NULL keeps exactly one row per case
            assert row["flagged"] == row["cases"]  # every current case has a completion flag
            assert row["excluded"] >= 0
            if pid == delivery:
                assert row["n"] > row["cases"]  # outdated versions of re-ingested cases are still there
            else:
                assert row["n"] == row["cases"] and row["same_name"] == row["n"]


def test_lookup_usage_examples_run_as_druid_sql(sandbox, tokens, delivery):
    for key, pid in (("demo", sandbox.workgroups["demo"].project_ids[0]), ("second", delivery)):
        for lookup in get(sandbox, f"/lookups/{pid}", tokens[key]).json():
            assert druid(sandbox, key, lookup["usage"]), lookup["usage"]


def test_outdated_versions_are_earlier_states_of_their_cases(sandbox, delivery):
    rows = druid(
        sandbox,
        "second",
        f"SELECT caseid, version, tasks_count, LOOKUP(case_version, '{delivery}') AS newer "
        f'FROM "{delivery}" WHERE caseid IN (SELECT caseid FROM "{delivery}" WHERE version = \'2\')',
    )
    by_case: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_case.setdefault(r["caseid"], {})[r["version"]] = r
    assert by_case and all(set(v) == {"1", "2"} for v in by_case.values())
    for versions in by_case.values():
        assert versions["1"]["newer"] == "2" and versions["2"]["newer"] is None
        assert versions["1"]["tasks_count"] < versions["2"]["tasks_count"]


@pytest.mark.parametrize(
    "route",
    [
        "/project/{pid}/variants?pageIndex=1&limit=5",
        "/project/{pid}/completedCases?pageIndex=1&limit=5",
        "/project/{pid}/graphInstance?processId=x",
        "/project/{pid}/column-mapping-exists",
        "/project/{pid}/column-mapping",
        "/project/{pid}/mappingInfos",
    ],
)
def test_new_routes_keep_the_401_403_404_rules(sandbox, tokens, route):
    foreign = sandbox.workgroups["second"].project_ids[0]
    messages = []
    for pid in (foreign, UNKNOWN):
        r = requests.get(
            f"{sandbox.base_url}/pub{route.format(pid=pid)}",
            headers={"Authorization": f"Bearer {tokens['demo']}"},
            timeout=30,
        )
        assert r.status_code == 404
        messages.append(r.json()["message"].replace(pid, "<pid>"))
    assert messages[0] == messages[1]
    unlicensed = sandbox.workgroups["unlicensed"]
    r = requests.get(
        f"{sandbox.base_url}/pub{route.format(pid=unlicensed.project_ids[0])}",
        headers={"Authorization": f"Bearer {tokens['unlicensed']}"},
        timeout=30,
    )
    assert r.status_code == 403 and r.json()["error"] == "licence_required"
    r = requests.get(f"{sandbox.base_url}/pub{route.format(pid=foreign)}", timeout=30)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer ")
