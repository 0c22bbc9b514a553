"""``%pmsql --cache`` / ``%config PmSql.cache`` store; ``%config PmSql.replay`` answers the same cells
offline, with the same displays (the elapsed time aside) and no connection values."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from pm_notebook import ReplayMiss, _current
from pm_notebook.testing import TestingShell

CELLS = [
    '%pmsql --project "Purchase to Pay"',
    "%pmsql --tables",
    "%pmsql --columns cases",
    "%%pmsql -o acts\nSELECT vertex_name, COUNT(*) AS n FROM {vertex} GROUP BY 1 ORDER BY 2 DESC, 1",
    "few = acts['vertex_name'].head(2).tolist()",
    "%%pmsql --limit 3\nSELECT caseid, duration FROM {cases} WHERE duration > :floor ORDER BY __time",
    "%%pmsql --chunks 40 -o parts --no-display\nSELECT vertex_name FROM {vertex} WHERE vertex_name IN (:few)",
    "sizes = [len(p) for p in parts]",
    "%pmsql",
]


def _texts(shell) -> list[str]:
    """What the cells displayed, with the elapsed time (the one thing that may differ) blanked."""
    return [re.sub(r"\d+\.\d\d s\b", "T s", d["data"].get("text/plain", "")) for d in shell.displayed]


def _run(shell, cells) -> list[str]:
    """Run *cells*; what they returned (``Out``, e.g. the listings) then what they displayed."""
    shell.user_ns["floor"] = 1000
    returned = []
    for cell in cells:
        result = shell.run_cell(cell).result
        returned.append(None if result is None else result.to_string())
    assert sum(r is not None for r in returned) == 2  # --tables and --columns
    return [*map(str, returned), *_texts(shell)]


@pytest.fixture
def fresh_shell():
    made = []

    def make(**config):
        _current.clear_current()
        shell = TestingShell.create(**config)
        made.append(shell)
        return shell

    yield make
    _current.clear_current()


@pytest.mark.parametrize("how", ["--cache on each cell", "%config PmSql.cache"])
def test_cells_replay_with_the_same_displays_and_values(
    sandbox, cache_dir, live_connection, fresh_shell, socket_connects, how
):
    conn = live_connection(sandbox, cache_dir, cache=False)
    shell = fresh_shell()
    shell.user_ns["conn"] = conn
    shell.run_cell("%pmsql --connection conn")
    shell.clear_displayed()
    if how == "%config PmSql.cache":
        shell.run_cell("%config PmSql.cache = True")
        cells = CELLS
    else:
        cells = [c.replace("%pmsql", "%pmsql --cache", 1) if c.startswith("%") else c for c in CELLS]
    live = _run(shell, cells)
    live_acts, live_sizes = shell.user_ns["acts"], shell.user_ns["sizes"]
    conn.close()

    offline = fresh_shell()
    offline.run_cell(f"%config PmSql.cache_dir = {str(cache_dir)!r}")
    offline.run_cell("%config PmSql.replay = True")
    socket_connects.clear()
    assert _run(offline, cells) == live
    assert socket_connects == []
    pd.testing.assert_frame_equal(offline.user_ns["acts"], live_acts)
    assert offline.user_ns["sizes"] == live_sizes and sum(live_sizes) > 0
    assert _current.get_current().replaying


def test_a_cell_not_stored_is_a_replay_miss_saying_what_to_do(
    sandbox, cache_dir, live_connection, fresh_shell
):
    with live_connection(sandbox, cache_dir) as conn:
        conn.query("SELECT 1 AS one")
    shell = fresh_shell(PmSql={"replay": True, "cache_dir": str(cache_dir)})
    shell.run_cell("%pmsql SELECT 1 AS one")
    with pytest.raises(ReplayMiss) as err:
        shell.run_cell("%pmsql SELECT 2 AS one")
    text = "\n".join(err.value._render_traceback_())  # what the notebook shows
    assert "not stored" in text and "stored: …SELECT [1]" in text and "PM_CACHE=1" in text
