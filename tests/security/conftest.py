"""Fixtures of the security suite: tokens, raw Avatica calls, and a tally of every hostile attempt.

Every probe goes through :func:`Tally.send` (or is recorded with :func:`Tally.record`), which classifies
the outcome: ``refused`` (a 4xx, or an Avatica ``ErrorResponse`` that is not an internal error),
``accepted`` (2xx), ``5xx`` (an unhandled server error: any 5xx except an Avatica ``ErrorResponse`` or
a Druid error object that is not "internal", e.g. Druid's 504 timeout), ``dropped`` (no answer) or
``hang`` (no answer in the timeout). The totals per class are printed at the end of the run
(``security probes`` section).
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import pytest
import requests

AVATICA = "/druid/v2/sql/avatica/"
DRUID = "/druid/v2/sql/"
TOKEN = "/realms/pm-sandbox/protocol/openid-connect/token"


@dataclass
class Tally:
    """Outcomes of hostile requests, by class of attack."""

    counts: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, cls: str, outcome: str) -> str:
        with self.lock:
            self.counts[cls]["attempts"] += 1
            self.counts[cls][outcome] += 1
        return outcome

    def classify(self, r: requests.Response) -> str:
        if r.status_code < 400:
            return "accepted"
        if r.status_code < 500:
            return "refused"
        if r.request.url and "/druid/v2/sql" in r.request.url and "/avatica" not in r.request.url:
            try:  # Druid's own 5xx answers (a timeout is 504) are deliberate when they are Druid-shaped
                body = r.json()
            except ValueError:
                return "5xx"
            if isinstance(body, dict) and body.get("errorCode") not in (None, "internal"):
                return "refused"
        if r.request.url and "/avatica" in r.request.url:  # the protocol's only error status
            try:
                body = r.json()
            except ValueError:
                return "5xx"
            if body.get("response") == "error" and not (body.get("errorMessage") or "").startswith(
                "Internal"
            ):
                return "refused"
        return "5xx"

    def send(
        self, cls: str, method: str, url: str, *, timeout: float = 60, **kwargs
    ) -> requests.Response | None:
        """Send one request and record its outcome; ``None`` if it got no answer."""
        try:
            r = requests.request(method, url, timeout=timeout, **kwargs)
        except requests.Timeout:
            self.record(cls, "hang")
            return None
        except requests.ConnectionError:
            self.record(cls, "dropped")
            return None
        self.record(cls, self.classify(r))
        return r


_TALLY = Tally()


@pytest.fixture(scope="session")
def tally() -> Tally:
    return _TALLY


def pytest_terminal_summary(terminalreporter) -> None:
    if not _TALLY.counts:
        return
    terminalreporter.section("security probes")
    terminalreporter.write_line(
        f"{'class':<28}{'attempts':>9}{'refused':>9}{'accepted':>9}{'5xx':>6}{'dropped':>8}{'hangs':>6}"
    )
    for cls, c in sorted(_TALLY.counts.items()):
        terminalreporter.write_line(
            f"{cls:<28}{c['attempts']:>9}{c['refused']:>9}{c['accepted']:>9}{c['5xx']:>6}{c['dropped']:>8}{c['hang']:>6}"
        )


def bearer(sb, key: str = "demo") -> str:
    wg = sb.workgroups[key]
    r = requests.post(
        sb.base_url + TOKEN,
        data={
            "grant_type": "client_credentials",
            "client_id": wg.client_id,
            "client_secret": wg.client_secret,
        },
        timeout=30,
    )
    r.raise_for_status()
    return r.json()["access_token"]


class Avatica:
    """Raw Avatica JSON calls on one connection id (no driver: the tests speak the wire format)."""

    def __init__(self, url: str, user: str | None = None, password: str | None = None) -> None:
        self.url = url
        self.cid = str(uuid.uuid4())
        self.http = requests.Session()
        if user is not None:
            body = self.call("openConnection", info={"user": user, "password": password})
            assert body["response"] == "openConnection", body

    def call(self, request: str, *, auth=None, **fields) -> dict:
        fields.setdefault("connectionId", self.cid)
        r = self.http.post(self.url, json={"request": request, **fields}, auth=auth, timeout=60)
        assert r.status_code in (200, 500), r.text
        return r.json()

    def query(self, sql: str) -> dict:
        sid = self.call("createStatement")["statementId"]
        return self.call("prepareAndExecute", statementId=sid, sql=sql, maxRowsInFirstFrame=-1)
