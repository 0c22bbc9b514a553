"""The README's Python examples run as written against the sandbox (placeholders replaced by its values)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_python_examples_run(sandbox, tmp_path, monkeypatch) -> None:
    blocks = python_blocks()
    assert len(blocks) == 5  # connect, REST, query, widgets, mining: a new block should be added here
    demo = sandbox.workgroups["demo"]
    placeholders = {
        '"https://<api host>"': repr(sandbox.base_url),
        '"https://<identity host>/realms/<realm>"': repr(sandbox.auth_url),
        '"<workgroup id>"': repr(demo.client_id),
        '"<workgroup key>"': repr(demo.client_secret),
    }
    connect = blocks[0]
    for placeholder, value in placeholders.items():
        assert placeholder in connect
        connect = connect.replace(placeholder, value)
    # The README derives the JDBC URL from the API host (port 8082); the sandbox's SQL port is a free one.
    monkeypatch.setenv("PM_JDBC_URL", sandbox.jdbc_url)
    monkeypatch.chdir(tmp_path)  # the query example writes cases.parquet; no .env of the developer's is found
    namespace: dict = {}
    exec(compile(connect, "README.md: connect", "exec"), namespace)
    try:
        exec(compile(blocks[1], "README.md: REST", "exec"), namespace)
        assert [p.name for p in namespace["projects"]] == [p.name for p in namespace["conn"].projects()]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*SQLAlchemy.*", category=UserWarning)
            exec(compile(blocks[2], "README.md: query", "exec"), namespace)
        df = namespace["df"]
        assert isinstance(df, pd.DataFrame) and list(df.columns) == ["processkey", "n"] and len(df)
        written = pq.read_table(tmp_path / "cases.parquet").num_rows
        assert written == len(namespace["conn"].query(namespace["sql"]))
        exec(compile(blocks[3], "README.md: widgets", "exec"), namespace)
        exec(compile(blocks[4], "README.md: process analysis", "exec"), namespace)
        assert (
            namespace["log"].summary()["cases"].iloc[0] > 0
            and (tmp_path / "map.svg").read_text().count("<svg") == 1
        )
    finally:
        namespace["conn"].close()


@pytest.mark.parametrize("command", ["make demo", "make test"])
def test_the_readme_starts_with_the_two_commands(command) -> None:
    first_block = README.read_text(encoding="utf-8").split("```")[1]
    assert command in first_block
