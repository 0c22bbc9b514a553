"""The SQL port's limits are set from the sandbox command line (``--sql-<option>``)."""

from __future__ import annotations

import requests


def test_row_cap_flag_reaches_the_sql_port(sandbox_factory):
    sb = sandbox_factory(cases=50, extra_args=["--sql-max-rows", "7"])
    demo = sb.workgroups["demo"]
    pid = demo.project_ids[0]
    auth = (demo.client_id, demo.client_secret)
    url = f"{sb.sql_url}/druid/v2/sql/"

    small = requests.post(url, json={"query": f'SELECT caseid FROM "{pid}" LIMIT 7'}, auth=auth, timeout=30)
    assert small.status_code == 200, small.text
    assert len(small.json()) == 7

    big = requests.post(url, json={"query": f'SELECT caseid FROM "{pid}_vertex"'}, auth=auth, timeout=30)
    assert big.status_code >= 400
    assert "7" in big.json()["errorMessage"]
