"""Tab completion in ``%pmsql`` code, driven through the shell's own completer (what a Jupyter kernel answers
to JupyterLab), and every completed statement run against the sandbox: a completion must insert SQL that runs.
"""

from __future__ import annotations

import pytest
from IPython.core.completer import provisionalcompleter

from pm_notebook.magic.completion import FUNCTIONS

CURSOR = "‸"


def _complete(shell, text: str) -> tuple[str, list]:
    """``(text without the cursor mark, completions)`` at the mark, as the kernel computes them."""
    offset = text.index(CURSOR)
    code = text.replace(CURSOR, "")
    shell.Completer.use_jedi = False
    with provisionalcompleter():
        return code, list(shell.Completer.completions(code, offset))


def _accept(code: str, completion) -> str:
    return code[: completion.start] + completion.text + code[completion.end :]


def _runs(shell, cell: str) -> None:
    shell.run_cell(cell)  # TestingShell raises the cell's error: a failing statement fails the test


# (cell with the cursor mark, the completions expected first, in order, with their kind)
POSITIONS = [
    ("%%pmsql\nSELECT COUNT(*) AS n FROM " + CURSOR, ["{cases}", "{vertex}", "{edge}"], "shortcut"),
    ("%%pmsql\nSELECT COUNT(*) AS n FROM {ve" + CURSOR, ["{vertex}"], "shortcut"),
    ("%%pmsql\nSELECT COUNT(*) AS n FROM {ve" + CURSOR + "}", ["{vertex"], "shortcut"),
    ("%%pmsql\nSELECT COUNT(*) AS n\nFROM {{ca" + CURSOR, ["{{cases}}"], "shortcut"),
    ("%%pmsql\nSELECT vertex_n" + CURSOR + " FROM {vertex} LIMIT 1", ["vertex_name"], "column"),
    ("%%pmsql\nSELECT \"vertex_n" + CURSOR + " FROM {vertex} LIMIT 1", ['"vertex_name"'], "column"),
    ("%%pmsql\nSELECT COUNT(*) AS n FROM {cases} WHERE dur" + CURSOR + " > 0", ["duration"], "column"),
    ("%%pmsql\nSELECT TIME_FL" + CURSOR + "(__time, 'P1D') FROM {cases} LIMIT 1", ["TIME_FLOOR"], "function"),
    ("%%pmsql\nSELECT COU" + CURSOR + "(*) AS n FROM {edge}", ["COUNT"], "function"),
    ("%pmsql SELECT caseid FROM {ed" + CURSOR + " LIMIT 1", ["{edge}"], "shortcut"),
    ("x = %pmsql SELECT cas" + CURSOR + " FROM {cases} LIMIT 1", ["caseid", "case_version"], "column"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("cell", "first", "kind"), POSITIONS, ids=lambda v: v if isinstance(v, str) else None
)
def test_every_completion_runs(pshell, cell, first, kind):
    code, completions = _complete(pshell, cell)
    assert [c.text for c in completions[: len(first)]] == first
    assert {c.type for c in completions[: len(first)]} == {kind}
    for completion in completions:
        if completion.type == kind:  # a function name alone in a column's place is half a statement
            _runs(pshell, _accept(code, completion))


def test_tables_are_inserted_quoted_after_from(pshell, project):
    for typed in ("", project.id[:6], '"' + project.id[:6]):
        code, completions = _complete(pshell, f"%%pmsql\nSELECT COUNT(*) AS n FROM {typed}{CURSOR}")
        tables = [c for c in completions if c.type == "table"]
        assert [c.text for c in tables] == [
            f'"{project.id}"',
            f'"{project.id}_vertex"',
            f'"{project.id}_edge"',
        ]
        for completion in tables:
            _runs(pshell, _accept(code, completion))


def test_columns_of_the_named_tables_only(pshell, conn, project):
    code, completions = _complete(pshell, f"%%pmsql\nSELECT {CURSOR} FROM {{edge}} LIMIT 1")
    edge = next(t for t in conn.tables(project) if t.kind == "edge")
    assert [c.text for c in completions] == [c.name for c in conn.columns(edge)]
    assert {c.type for c in completions} == {"column"}
    code, completions = _complete(pshell, f"%%pmsql\nSELECT vertex{CURSOR} FROM {{edge}}")
    assert "vertex_name" not in {c.text for c in completions}  # a column of another table would not run
    assert [c.text for c in completions if c.type == "column"] == []


def test_a_join_offers_the_columns_of_both_tables_first(pshell):
    code, completions = _complete(
        pshell, f"%%pmsql\nSELECT v.{CURSOR}\nFROM {{vertex}} v JOIN {{cases}} c ON v.caseid = c.caseid"
    )
    names = [c.text for c in completions]
    assert "vertex_name" in names and "tasks_count" in names and "source_vertex_name" not in names


def test_lookup_names_inside_lookup(pshell, project):
    code, completions = _complete(
        pshell, f"%%pmsql\nSELECT LOOKUP(caseid, '{project.id[:4]}{CURSOR}) AS v FROM {{cases}} LIMIT 1"
    )
    assert completions and {c.type for c in completions} == {"lookup"}
    assert f"'{project.id}_variant_name'" in [c.text for c in completions]
    for completion in completions:
        _runs(pshell, _accept(code, completion))


def test_options_and_nothing_outside_the_magic(pshell):
    code, completions = _complete(pshell, "%pmsql --to-p" + CURSOR)
    assert [(c.text, c.type) for c in completions] == [("--to-parquet", "option")]
    code, completions = _complete(pshell, "x = dur" + CURSOR)
    assert all(c.text != "duration" for c in completions)
    code, completions = _complete(pshell, "%%pmsql\nSELECT 1 -- dur" + CURSOR)
    assert all(c.text != "duration" for c in completions)  # nothing inside a comment


def test_functions_are_druid_functions_the_sandbox_runs():
    from pm_sandbox.sql.dialect.functions import FUNCTIONS as SANDBOX_FUNCTIONS

    assert set(FUNCTIONS) - set(SANDBOX_FUNCTIONS) - {"CAST", "EXTRACT"} == set()


def test_the_kernel_reply_carries_the_kinds(pshell):
    """ipykernel's complete_reply lists each completion's ``type`` (JupyterLab shows it beside the item)."""
    from ipykernel.ipkernel import IPythonKernel

    kernel = IPythonKernel.__new__(IPythonKernel)
    kernel.shell = pshell
    pshell.Completer.use_jedi = False
    code = "%%pmsql\nSELECT dur FROM {ca"
    reply = kernel._experimental_do_complete(code, len(code))
    kinds = {m["text"]: m["type"] for m in reply["metadata"]["_jupyter_types_experimental"]}
    assert kinds == {"{cases}": "shortcut"}
    assert code[reply["cursor_start"] : reply["cursor_end"]] == "{ca"
