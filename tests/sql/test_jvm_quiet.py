"""The driver's bundled SLF4J must not print its "no binding" warning into notebooks."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys
import pm_notebook
conn = pm_notebook.connect(base_url=sys.argv[1], auth_url=sys.argv[2], client_id=sys.argv[3],
                           client_secret=sys.argv[4], jdbc_url=sys.argv[5])
print(int(conn.query("SELECT 41 + 1 AS x", transport="jdbc")["x"][0]))
conn.close()
"""


@pytest.mark.jdbc
def test_first_jdbc_query_prints_nothing_on_stderr(sandbox):
    env = sandbox.env
    args = [env[k] for k in ("PM_BASE_URL", "PM_AUTH_URL", "PM_CLIENT_ID", "PM_CLIENT_SECRET", "PM_JDBC_URL")]
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"
    assert "SLF4J" not in done.stderr, done.stderr
