"""``%%pmsql --context KEY=VALUE`` and ``%config PmSql.context`` against the sandbox: the context reaches the
broker on every transport, is laid over the connection's default, is shown under the result (never a
secret-named value) and a bad one stops the cell before any SQL request."""

from __future__ import annotations

import pandas as pd
import pytest
from traitlets import TraitError

from pm_notebook import ConfigurationError, QueryError
from pm_notebook.magic import PmSql

from .conftest import displayed, shown_text

TRANSPORTS = ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)]
#: Druid 33 inlines a window's input: a limit of 5 rows refuses the LAG below (no context needed for it)
LIMIT_REFUSED = r"beyond maximum\[5\] rows"
LAG = (
    "SELECT caseid, LAG(caseid) OVER (ORDER BY caseid) AS previous FROM {cases} "
    "GROUP BY caseid ORDER BY caseid LIMIT 10"
)
DAYS = "SELECT TIME_FLOOR(__time, 'P1D') AS d, COUNT(*) AS c FROM {cases} GROUP BY 1 ORDER BY 1"


def magic_of(shell) -> PmSql:
    (magic,) = [c for c in shell.configurables if isinstance(c, PmSql)]
    return magic


def expected_previous(conn, project) -> list:
    """LAG by pandas on the plain rows."""
    sql = f'SELECT caseid FROM "{project.id}" GROUP BY caseid ORDER BY caseid LIMIT 10'
    return conn.query(sql)["caseid"].shift(1).tolist()


def sql_requests(sb) -> dict[str, int]:
    return {k: n for k, n in sb.stats()["requests"].items() if "/druid/v2/sql" in k and n}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_context_option_reaches_the_broker(pshell, conn, project, transport):
    with pytest.raises(QueryError, match=LIMIT_REFUSED) as refused:
        pshell.run_cell(f"%%pmsql --transport {transport} --context maxSubqueryRows=5\n{LAG}")
    assert "beyond maximum[5] rows" in shown_text(refused.value)
    pshell.run_cell(f"%%pmsql -o lagged --transport {transport} --context maxSubqueryRows=100000\n{LAG}")
    got = pshell.user_ns["lagged"]["previous"].tolist()
    want = expected_previous(conn, project)
    assert got[1:] == want[1:] and pd.isna(got[0])
    assert displayed(pshell)[-1].splitlines()[-1] == "Query context: maxSubqueryRows=100000"


def test_repeated_context_options_and_the_footer(pshell, conn, project):
    pshell.run_cell(f"%%pmsql -o local --context timeout=5000 --context sqlTimeZone=America/New_York\n{DAYS}")
    sql = DAYS.replace("{cases}", f'"{project.id}"')
    zoned = conn.query(sql, context={"sqlTimeZone": "America/New_York"})
    pd.testing.assert_frame_equal(pshell.user_ns["local"], zoned)
    assert not pshell.user_ns["local"]["d"].equals(conn.query(sql)["d"])  # the zone changed the days
    footer = displayed(pshell)[-1]
    assert "Query context: timeout=5000, sqlTimeZone=America/New_York" in footer


def test_config_context_is_every_cell_default_and_the_option_wins(pshell, conn, project):
    pshell.run_cell("%config PmSql.context = {'maxSubqueryRows': 5}")
    with pytest.raises(QueryError, match=LIMIT_REFUSED):
        pshell.run_cell(f"%%pmsql\n{LAG}")
    pshell.run_cell(f"%%pmsql -o lagged --context maxSubqueryRows=100000\n{LAG}")
    assert pshell.user_ns["lagged"]["previous"].tolist()[1:] == expected_previous(conn, project)[1:]
    pshell.run_cell("%config PmSql.context = {}")
    pshell.run_cell(f"%%pmsql -o again\n{LAG}")
    pd.testing.assert_frame_equal(pshell.user_ns["again"], pshell.user_ns["lagged"])


def test_config_context_is_checked_when_set(pshell):
    magic = magic_of(pshell)
    magic.context = {"enableWindowing": "true"}
    assert magic.context == {"enableWindowing": True}  # canonical values
    with pytest.raises(TraitError, match="PmSql.context: Query context key 'timeout'"):
        magic.context = {"timeout": "soon"}
    with pytest.raises(TraitError, match="Did you mean 'sqlTimeZone'"):
        magic.context = {"sqltimezone": "UTC"}
    assert magic.context == {"enableWindowing": True}


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        ("--context timeout=soon", "'timeout': 'soon' is not a whole number"),
        ("--context enablewindowing=true", "Did you mean 'enableWindowing'"),
        ("--context password=x", "'password' is not a query context key"),
    ],
)
def test_bad_context_stops_the_cell_before_any_request(pshell, sandbox, option, needle):
    sandbox.reset_stats()
    with pytest.raises(ConfigurationError) as refused:
        pshell.run_cell(f"%%pmsql {option}\nSELECT COUNT(*) FROM {{cases}}")
    assert needle in shown_text(refused.value)
    assert sql_requests(sandbox) == {}
    pshell.run_cell("%%pmsql\nSELECT COUNT(*) FROM {cases}")
    assert sql_requests(sandbox)  # the counters do see the magic's requests


def test_verbose_shows_the_context_sent_with_the_connection_default(
    bare_shell, sandbox, connect_workgroup, project
):
    context = {"sqlTimeZone": "Europe/Paris", "apiToken": "not-for-display"}
    with connect_workgroup(sandbox, context=context) as conn:
        bare_shell.user_ns["zoned"] = conn
        bare_shell.run_cell(f'%pmsql --connection zoned --project "{project.name}"')
        bare_shell.clear_displayed()
        bare_shell.run_cell("%%pmsql --verbose --context timeout=5000\nSELECT COUNT(*) AS n FROM {cases}")
        header, result = displayed(bare_shell)
    sent = "sqlTimeZone=Europe/Paris, apiToken=***, timeout=5000"
    assert f"-- context: {sent}" in header
    assert f"Query context: {sent}" in result
    assert "not-for-display" not in header + result


def test_env_file_carries_its_default_context(bare_shell, sandbox, tmp_path):
    env = tmp_path / "wg.env"
    lines = [f"{k}={v}" for k, v in sandbox.env.items()]
    env.write_text("\n".join([*lines, 'PM_QUERY_CONTEXT={"maxSubqueryRows": 5}', ""]), encoding="utf-8")
    cases = f'"{sandbox.workgroups["demo"].project_ids[0]}"'
    bare_shell.run_cell(f"%pmsql --env-file {env}")
    with pytest.raises(QueryError, match=LIMIT_REFUSED):  # the file's limit, sent with the cell
        bare_shell.run_cell("%%pmsql -o lagged\n" + LAG.replace("{cases}", cases))
    bare_shell.run_cell(
        "%%pmsql -o lagged --context maxSubqueryRows=100000\n" + LAG.replace("{cases}", cases)
    )
    assert bare_shell.user_ns["lagged"]["previous"].notna().sum() == 9
