"""The ``%pmsql`` argument parser, without IPython."""

from __future__ import annotations

import pytest

from pm_notebook.magic.args import USAGE, ArgumentError, parse_args


def test_line_form_keeps_sql_verbatim():
    a = parse_args("""-o df   --limit=5 --transport avatica SELECT 'a  "b' AS "x y" -- c""")
    assert (a.output, a.limit, a.transport) == ("df", 5, "avatica")
    assert a.sql == """SELECT 'a  "b' AS "x y" -- c"""


def test_cell_form_takes_sql_from_body():
    a = parse_args("-o out --no-display --verbose", "\n  SELECT 1\n  FROM t\n\n")
    assert a.sql == "SELECT 1\n  FROM t"
    assert (a.output, a.display, a.verbose) == ("out", False, True)


def test_trailing_semicolons_are_dropped():
    assert parse_args("SELECT 1 ;  ").sql == "SELECT 1"
    assert parse_args("", "SELECT ';'\nFROM t;;\n").sql == "SELECT ';'\nFROM t"


def test_quoted_option_values_and_double_dash():
    a = parse_args("--project \"Purchase to pay\" --to-parquet 'my dir/out.parquet' -- SELECT 1")
    assert a.project == "Purchase to pay"
    assert a.to_parquet == "my dir/out.parquet"
    assert a.sql == "SELECT 1"


def test_listing_and_connection_options():
    assert parse_args("--tables").tables
    assert parse_args("--columns cases").columns == "cases"
    a = parse_args("--connect --env-file .env.sandbox")
    assert a.connect and a.env_file == ".env.sandbox" and a.sql == ""
    assert parse_args("--connection conn").connection == "conn"
    assert parse_args("--explain SELECT 1").explain
    assert parse_args("--chunks 100 SELECT 1").chunks == 100
    assert parse_args("-h").help and "--to-parquet" in USAGE


@pytest.mark.parametrize(
    ("line", "cell", "fragment"),
    [
        ("--nope SELECT 1", None, "Unknown option '--nope'"),
        ("--limit ten SELECT 1", None, "--limit expects a whole number, got 'ten'"),
        ("--limit -3 SELECT 1", None, "--limit expects 0 (no limit) or a positive number, got -3"),
        ("--chunks 0 SELECT 1", None, "--chunks expects a positive number"),
        ("--transport odbc SELECT 1", None, "must be one of auto, druid, avatica, jdbc"),
        ("-o 1df SELECT 1", None, "expects a Python variable name"),
        ("--limit", None, "--limit expects a value"),
        ("--project --tables", None, "--project expects a value"),
        ("--explain --chunks 5 SELECT 1", None, "cannot be combined"),
        ("--limit 5 --to-parquet x.parquet SELECT 1", None, "--limit cannot be combined with --to-parquet"),
        ("--tables SELECT 1", None, "take no SQL"),
        ("-o x --to-parquet f.parquet SELECT 1", None, "the rows go to the file"),
        ("--tables --columns x", None, "choose one"),
        ("-o df", None, "needs a query"),
        ("--explain", None, "needs a query"),
        ("--connection c --connect", None, "cannot be combined"),
        ("--verbose --verbose SELECT 1", None, "given twice"),
        ("--no-display=yes SELECT 1", None, "takes no value"),
        ("df <<", "SELECT 1", "Put the SQL in the cell body"),
        ("--project 'unterminated", None, "Unbalanced '"),
    ],
)
def test_bad_lines_get_specific_errors(line, cell, fragment):
    with pytest.raises(ArgumentError) as info:
        parse_args(line, cell)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_context_options_repeat_and_take_json_values_when_they_parse():
    a = parse_args(
        "--context timeout=5000 --context sqlTimeZone=Europe/Paris --context=enableWindowing=true "
        '--context "sqlQueryId=my query" --context \'lane="7"\'',  # JSON "7": text, not a number
        "SELECT 1",
    )
    assert a.context == {
        "timeout": 5000,
        "sqlTimeZone": "Europe/Paris",
        "enableWindowing": True,
        "sqlQueryId": "my query",
        "lane": "7",
    }
    assert parse_args("SELECT 1").context == {}
    assert parse_args("--context sqlTimeZone=+02:00 SELECT 1").context == {"sqlTimeZone": "+02:00"}


@pytest.mark.parametrize(
    ("line", "cell", "fragment"),
    [
        ("--context timeout", "SELECT 1", "--context expects KEY=VALUE, got 'timeout'"),
        ("--context =5", "SELECT 1", "--context expects KEY=VALUE"),
        ("--context a=1 --context a=2", "SELECT 1", "--context a is given twice"),
        ("--context", "SELECT 1", "--context expects a value"),
        ("--tables --context timeout=1", None, "take no SQL or query options"),
        ("--context timeout=1", None, "--context needs a query"),
    ],
)
def test_bad_context_options(line, cell, fragment):
    with pytest.raises(ArgumentError) as info:
        parse_args(line, cell)
    assert fragment in str(info.value)


def test_usage_lists_the_context_option_and_setting():
    assert "--context KEY=VAL" in USAGE and "%config PmSql.context" in USAGE
