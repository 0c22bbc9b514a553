"""What the bench scripts share: the process's memory, sampled, and a connection from ``PM_*`` values."""

from __future__ import annotations

import os
import resource
import threading
from typing import Any

__all__ = ["PeakSampler", "connect_env", "current_rss_mb", "peak_rss_mb", "workgroup_env"]


def current_rss_mb() -> float:
    """This process's resident memory now, in MiB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """The most resident memory this process has had, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class PeakSampler:
    """Samples this process's RSS every few ms in a thread; ``peak_mb`` is the highest seen."""

    def __init__(self, interval: float = 0.005) -> None:
        self.peak_mb = current_rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.peak_mb = max(self.peak_mb, current_rss_mb())

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, current_rss_mb())


def workgroup_env(sb: Any, workgroup: Any, **extra: str) -> dict[str, str]:
    """A sandbox's ``PM_*`` values with *workgroup*'s credentials (and *extra* values)."""
    return {
        **sb.env,
        "PM_CLIENT_ID": workgroup.client_id,
        "PM_CLIENT_SECRET": workgroup.client_secret,
        **extra,
    }


def connect_env(env: dict[str, str], *, jdbc_url: str | None = None) -> Any:
    """A :class:`pm_notebook.Connection` from a sandbox's ``PM_*`` values (no keyring)."""
    import pm_notebook

    return pm_notebook.connect(
        env["PM_BASE_URL"],
        env["PM_AUTH_URL"],
        env["PM_CLIENT_ID"],
        env["PM_CLIENT_SECRET"],
        jdbc_url or env["PM_JDBC_URL"],
        use_keyring=False,
    )
