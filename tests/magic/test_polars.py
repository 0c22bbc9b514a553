"""``%%pmsql --polars`` and ``%config PmSql.output = "polars"`` in an IPython shell against the sandbox."""

from __future__ import annotations

import sys

import pandas as pd
import polars as pl
import pytest
from IPython.core.error import UsageError
from polars.testing import assert_frame_equal

from pm_notebook import MissingDependency
from pm_notebook.magic.args import USAGE, ArgumentError, parse_args

from .conftest import displayed, shown_text


def test_the_option_parses_and_is_listed():
    assert parse_args("-o df --polars", "SELECT 1").polars
    assert not parse_args("-o df", "SELECT 1").polars
    assert "--polars" in USAGE and "PmSql.output" in USAGE


@pytest.mark.parametrize("other", ["--chunks 5", "--to-parquet out.parquet", "--explain", "--tables"])
def test_polars_with_an_option_that_makes_no_dataframe_is_refused(other):
    sql = "" if other == "--tables" else "SELECT 1"
    with pytest.raises(ArgumentError, match=f"--polars cannot be combined with {other.split()[0]}"):
        parse_args(f"--polars {other} {sql}")


def test_cell_with_polars_option_keeps_a_polars_frame(pshell, conn, project):
    sql = f'SELECT __time, caseid, duration, concurrency FROM "{project.id}" ORDER BY __time LIMIT 25'
    pshell.run_cell("%config PmSql.displaylimit = 5")
    pshell.run_cell(f"%%pmsql -o df --polars\n{sql}")
    frame = pshell.user_ns["df"]
    assert isinstance(frame, pl.DataFrame)
    assert_frame_equal(frame, conn.query_polars(sql))
    (out,) = pshell.displayed
    html = out["data"]["text/html"]
    assert "25 rows × 4 columns" in html and "Showing the first 5 rows" in html
    assert html.split("<tbody>")[1].count("<tr") == 5  # polars' own table of the 5 rows shown
    assert "datetime[ms, UTC]" in out["data"]["text/plain"]  # polars shows each column's dtype
    assert "shape:" not in html and "shape:" not in out["data"]["text/plain"]  # the footer says it


def test_config_output_polars_applies_to_every_query_until_set_back(pshell):
    pshell.run_cell("%config PmSql.output = 'polars'")
    pshell.run_cell("df = %pmsql SELECT COUNT(*) AS n FROM {cases}")
    assert isinstance(pshell.user_ns["df"], pl.DataFrame)
    pshell.run_cell("%%pmsql --explain\nSELECT caseid FROM {cases}")  # a plan is shown as text still
    assert "caseid" in displayed(pshell)[-1]
    pshell.run_cell("%config PmSql.output = 'pandas'")
    pshell.run_cell("df = %pmsql SELECT COUNT(*) AS n FROM {cases}")
    assert isinstance(pshell.user_ns["df"], pd.DataFrame)


def test_config_output_refuses_an_unknown_value(pshell):
    pshell.raise_errors = False
    pshell.run_cell("%config PmSql.output = 'arrow'")
    magic = next(c for c in pshell.configurables if type(c).__name__ == "PmSql")
    assert magic.output == "pandas"


def test_missing_polars_is_a_short_error_naming_the_extra(pshell, monkeypatch):
    monkeypatch.setitem(sys.modules, "polars", None)  # `import polars` fails as if not installed
    with pytest.raises(MissingDependency) as info:
        pshell.run_cell("%%pmsql --polars\nSELECT caseid FROM {cases} LIMIT 1")
    text = shown_text(info.value)
    assert text.startswith("MissingDependency: ") and "pm-notebook[polars]" in text
    assert "Traceback" not in text


def test_usage_error_for_polars_with_chunks(pshell):
    with pytest.raises(UsageError, match="--polars cannot be combined with --chunks"):
        pshell.run_cell("%%pmsql -o it --polars --chunks 10\nSELECT caseid FROM {cases}")
