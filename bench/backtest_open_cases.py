"""A backtest of ``log.open_cases()``: how often did its p90 of the remaining time hold?

For each real log of tests/data (Helpdesk, receipt) and each of several past dates (the cuts: the 50th to
80th percentile of the case starts), the log is cut as a notebook would have seen it that day — the events
of the cases started before the cut that ended by the cut — and uploaded to a sandbox as a project of its
own. ``open_cases(as_of=cut)`` estimates the open cases of the cut log from the cases completed by then
(completion: the log's end activities, below); the full log then says how long each really took.

* **coverage of p90 (p50)**: the share of the open cases whose real remaining time (from the cut to their
  last event in the full log) was at most their ``p90_remaining`` (``p50_remaining``): 90 % (50 %) for a
  calibrated estimate. Only the open cases that the full log shows completed (by the same end activities)
  count: a case never completed has no remaining time to check (the table gives how many were left out).
* **the trivial estimate**: the same answer with ``min_evidence`` above the history's size, so every case
  gets the overall level — the p50/p90 of every observation's remaining time, the same for every case.
* **median p90**: how wide the promise is (a p90 of ten years would always hold).
* **Brier score of p_late** (sla given per log): the mean of (p_late − late)², late meaning the case's
  elapsed plus its real remaining time exceeded the sla; lower is better.

Not a test: it prints the table docs/mining.md quotes. ``.venv/bin/python bench/backtest_open_cases.py``
(about a minute).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASE, ACT, TIME = "case:concept:name", "concept:name", "time:timestamp"
#: log -> (end activities, sla)
LOGS = {
    "helpdesk": (["Closed"], pd.Timedelta(days=45)),
    "receipt": (
        ["T10 Determine necessity to stop indication", "T05 Print and send confirmation of receipt"],
        pd.Timedelta(days=7),
    ),
}
CUTS = (0.5, 0.6, 0.7, 0.8)


def read(name: str) -> pd.DataFrame:
    events = pd.read_csv(ROOT / "tests" / "data" / f"{name}.csv.gz", dtype=str, keep_default_na=False)
    events[TIME] = pd.to_datetime(events[TIME], utc=True)
    return events


def backtest(conn, name: str) -> list[dict[str, object]]:
    ends, sla = LOGS[name]
    events = read(name)
    g = events.groupby(CASE)[TIME]
    start, end = g.min(), g.max()
    last = events.sort_values([CASE, TIME], kind="stable").groupby(CASE)[ACT].last()  # in the full log
    rows = []
    for share in CUTS:
        cut = start.quantile(share).floor("h")
        kept = events[(events[CASE].map(start) < cut) & (events[TIME] <= cut)]
        project = conn.create_project(f"backtest {name} {share}")
        assert conn.upload(project, kept.reset_index(drop=True)).status == "DONE"
        log = conn.mining(project)
        for how, min_evidence in (("open_cases()", 30), ("trivial (overall)", 10**12)):
            answer = log.open_cases(sla=sla, as_of=cut, end_activities=ends, min_evidence=min_evidence)
            ids = answer["case_id"].astype(str)
            real = (end.reindex(ids) - cut).reset_index(drop=True)
            finished = last.reindex(ids).isin(ends).to_numpy()
            for q in ("p50", "p90"):
                promise = answer[f"{q}_remaining"].to_numpy()
                held = np.where(finished, real.to_numpy() <= promise, False)
                known = finished  # a case never completed in the full log has no remaining time to check
                rows.append(
                    {
                        "log": name,
                        "cut": share,
                        "how": how,
                        "q": q,
                        "held": int(held[known].sum()),
                        "known": int(known.sum()),
                        "open": len(answer),
                        "median_p90": answer["p90_remaining"].median(),
                    }
                )
            late = (answer["elapsed"].to_numpy() + real.to_numpy()) > sla.to_timedelta64()
            score = (answer["p_late"].to_numpy() - late.astype(float)) ** 2
            rows.append(
                {
                    "log": name,
                    "cut": share,
                    "how": how,
                    "q": "brier",
                    "held": float(score[finished].sum()),
                    "known": int(finished.sum()),
                    "open": len(answer),
                }
            )
    return rows


def main() -> None:
    import pm_notebook
    from pm_sandbox import start

    sb = start(cases=5, log_path=Path(tempfile.mkdtemp(prefix="backtest-")) / "sandbox.log")
    try:
        wg = sb.workgroups["demo"]
        with pm_notebook.connect(
            sb.base_url, sb.auth_url, wg.client_id, wg.client_secret, sb.jdbc_url, use_keyring=False
        ) as conn:
            rows = [r for name in LOGS for r in backtest(conn, name)]
    finally:
        sb.stop()
    frame = pd.DataFrame(rows)
    print(
        "| log | estimate | open at the cuts (completed later) | p50 held | p90 held | median p90 "
        "| Brier (p_late) |"
    )
    print("|---|---|---|---|---|---|---|")
    for (name, how), part in frame.groupby(["log", "how"], sort=False):
        p50, p90 = part[part["q"] == "p50"], part[part["q"] == "p90"]
        brier = part[part["q"] == "brier"]
        cell = lambda p: f"{p['held'].sum() / p['known'].sum():.0%}"  # noqa: E731
        median = pd.to_timedelta(p90["median_p90"]).median()
        print(
            f"| {name} | {how} | {int(p90['open'].sum())} ({int(p90['known'].sum())}) | {cell(p50)} | "
            f"{cell(p90)} | {median.round('h')} | {brier['held'].sum() / brier['known'].sum():.3f} |"
        )


if __name__ == "__main__":
    main()
