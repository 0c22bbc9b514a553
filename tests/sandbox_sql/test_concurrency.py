"""20 concurrent clients (Druid SQL API and Avatica JSON) run queries for a minute: no error, no wrong row.

The duration is ``PM_SQL_SOAK_SECONDS`` (default 60).
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest
import requests

pytestmark = pytest.mark.slow

CLIENTS = 20
SOAK_SECONDS = float(os.environ.get("PM_SQL_SOAK_SECONDS", "60"))

# (Druid SQL, reference DuckDB SQL, parameters)
QUERIES = [
    (
        "SELECT COUNT(*) AS n, SUM(duration) AS s FROM {c}",
        "SELECT COUNT(*), SUM(duration) FROM druid.{c}",
        [],
    ),
    (
        "SELECT vertex_name, COUNT(*) AS n FROM {v} GROUP BY 1 ORDER BY n DESC, 1",
        "SELECT vertex_name, COUNT(*) n FROM druid.{v} GROUP BY 1 ORDER BY n DESC, 1",
        [],
    ),
    (
        "SELECT source_vertex_name, destination_vertex_name, COUNT(*) AS n FROM {e} GROUP BY 1, 2 ORDER "
        "BY n DESC, 1, 2",
        "SELECT source_vertex_name, destination_vertex_name, COUNT(*) n FROM druid.{e} GROUP BY 1, 2 "
        "ORDER BY n DESC, 1, 2",
        [],
    ),
    (
        "SELECT caseid, vertex_name, duration FROM {v} WHERE duration > ? GROUP BY 1, 2, 3 "
        "ORDER BY caseid, vertex_name, duration",
        "SELECT caseid, vertex_name, duration FROM druid.{v} WHERE duration > ? GROUP BY 1, 2, 3 "
        "ORDER BY caseid, vertex_name, duration",
        [3_600_000],
    ),
    (
        "SELECT LOOKUP(graphkey, '{vn}') AS v, COUNT(*) AS n FROM {c} GROUP BY 1 ORDER BY n DESC, 1",
        'SELECT l.v, COUNT(*) n FROM druid.{c} LEFT JOIN lookup."{vn}" l ON l.k = graphkey '
        "GROUP BY 1 ORDER BY n DESC, 1",
        [],
    ),
]
_DRUID_TYPES = {int: "BIGINT", str: "VARCHAR", float: "DOUBLE"}
_AVATICA_TYPES = {int: "LONG", str: "STRING", float: "DOUBLE"}


class _AvaticaClient:
    """Just enough Avatica JSON to run prepared queries across frames (what a JVM-free client sends)."""

    def __init__(self, url: str, user: str, password: str) -> None:
        self.url, self.http, self.cid = url, requests.Session(), str(uuid.uuid4())
        self.call("openConnection", info={"user": user, "password": password})

    def call(self, request: str, **fields) -> dict:
        fields.setdefault("connectionId", self.cid)
        r = self.http.post(self.url, json={"request": request, **fields}, timeout=60)
        body = r.json()
        if r.status_code != 200 or body.get("response") == "error":
            raise AssertionError(f"{request}: {body.get('errorMessage')}")
        return body

    def query(self, sql: str, params: list) -> list[list]:
        prep = self.call("prepare", sql=sql, maxRowCount=-1)["statement"]
        values = [{"type": _AVATICA_TYPES[type(p)], "value": p} for p in params]
        res = self.call(
            "execute",
            statementHandle={"connectionId": self.cid, "id": prep["id"], "signature": None},
            parameterValues=values,
            maxRowCount=100,
        )["results"][0]
        frame, rows = res["firstFrame"], []
        rows.extend(frame["rows"])
        while not frame["done"]:
            frame = self.call("fetch", statementId=prep["id"], offset=len(rows), fetchMaxRowCount=500)[
                "frame"
            ]
            rows.extend(frame["rows"])
        self.call("closeStatement", statementId=prep["id"])
        return rows

    def close(self) -> None:
        self.call("closeConnection")
        self.http.close()


def test_twenty_clients_for_a_minute(sandbox, demo, tables, reference):
    cases = [
        (tables.fmt(q), [list(r) for r in reference.execute(tables.fmt(ref), p).fetchall()], p)
        for q, ref, p in QUERIES
    ]
    deadline = time.monotonic() + SOAK_SECONDS
    errors: list[str] = []
    counts = [0] * CLIENTS
    druid_url = sandbox.sql_url + "/druid/v2/sql/"
    avatica_url = sandbox.sql_url + "/druid/v2/sql/avatica/"

    def druid_client(n: int) -> None:
        with requests.Session() as http:
            i = n
            while time.monotonic() < deadline and not errors:
                sql, want, params = cases[i % len(cases)]
                body = {
                    "query": sql,
                    "resultFormat": "array",
                    "parameters": [{"type": _DRUID_TYPES[type(p)], "value": p} for p in params],
                }
                r = http.post(druid_url, json=body, auth=(demo.client_id, demo.client_secret), timeout=60)
                if r.status_code != 200 or r.json() != want:
                    errors.append(f"druid client {n}: {sql[:60]} -> {r.status_code} {r.text[:200]}")
                counts[n] += 1
                i += 1

    def avatica_client(n: int) -> None:
        client = _AvaticaClient(avatica_url, demo.client_id, demo.client_secret)
        try:
            i = n
            while time.monotonic() < deadline and not errors:
                sql, want, params = cases[i % len(cases)]
                got = client.query(sql, params)
                if got != want:
                    errors.append(f"avatica client {n}: wrong rows for {sql[:60]}")
                counts[n] += 1
                i += 1
        except AssertionError as e:
            errors.append(f"avatica client {n}: {e}")
        finally:
            client.close()

    threads = [
        threading.Thread(target=druid_client if n % 2 else avatica_client, args=(n,), daemon=True)
        for n in range(CLIENTS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SOAK_SECONDS + 120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:5]
    assert all(c > 0 for c in counts), counts
