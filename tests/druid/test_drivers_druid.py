"""``log.drivers`` on a real Druid 33 and on the stand-in, over the demo workgroup's published Purchase to
Pay project: the GROUPING SETS statement runs on both, and the counts of the exact outcomes are the same;
with the quantile-defined "slow" and the quartile bins of the numeric dimensions (``APPROX_QUANTILE_DS``,
a sketch on Druid) the cut points may differ a little, so there the counts are checked to add up."""

from __future__ import annotations

import pandas as pd
import pytest

from pm_notebook._models import Project

PROJECT = "Purchase to Pay"
CATEGORICAL = ["supplier", "company_code", "purchasing_group", "resource"]


@pytest.fixture(scope="module")
def logs(standin_conn, druid_conn):
    project = next(p for p in standin_conn.projects() if p.name == PROJECT)
    return standin_conn.mining(project), druid_conn.mining(Project(project.id, project.name))


def _counts(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame[["dimension", "value", "cases", "outcome_cases"]].astype(
        {"dimension": object, "value": object, "cases": "int64", "outcome_cases": "int64"}
    )
    return out.sort_values(["dimension", "value"]).reset_index(drop=True)


@pytest.mark.parametrize(
    "outcome",
    ["rework", "not_completed", "slow:20 days", "with_activity:Block Invoice", "where:tasks_count > 6"],
)
def test_exact_outcomes_count_the_same(logs, outcome):
    ours, theirs = (log.drivers(outcome, by=CATEGORICAL, min_cases=5) for log in logs)
    assert "GROUPING SETS" in theirs.attrs["sql"]
    assert (ours.attrs["cases"], ours.attrs["outcome_cases"]) == (
        theirs.attrs["cases"],
        theirs.attrs["outcome_cases"],
    )
    pd.testing.assert_frame_equal(_counts(ours), _counts(theirs))
    assert ours["p_adjusted"].sort_values().to_numpy() == pytest.approx(
        theirs["p_adjusted"].sort_values().to_numpy()
    )


def test_sketched_cut_points_add_up(logs):
    """Every case has one value (or NULL) per dimension, so with nothing left out each dimension's counts
    add up to the log's; the sketched p75 leaves about a quarter of the cases slow on both engines."""
    for log in logs:
        answer = log.drivers("slow", min_cases=1)
        n, k = answer.attrs["cases"], answer.attrs["outcome_cases"]
        assert answer.attrs["left_out"] == 0
        assert set(answer["dimension"]) >= {*CATEGORICAL, "order_amount", "quantity"}
        for _, part in answer.groupby("dimension"):
            assert (int(part["cases"].sum()), int(part["outcome_cases"].sum())) == (n, k)
        assert abs(k / n - 0.25) < 0.03
        assert len(answer.attrs["bins"]["order_amount"]) == 3
