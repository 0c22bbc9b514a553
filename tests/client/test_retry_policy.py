"""Retry policy as a value: which failures are retried, waits, Retry-After (sleep patched, no network)."""

from __future__ import annotations

import pytest
import requests
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError
from urllib3.response import HTTPResponse
from urllib3.util import retry as urllib3_retry

from pm_notebook import LicenceError, NotFound, PermissionDenied, ServiceUnavailable, TokenRejected
from pm_notebook._http import error_for_response, retry_policy


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(urllib3_retry.time, "sleep", waits.append)
    return waits


def _resp(status: int, headers: dict | None = None) -> HTTPResponse:
    return HTTPResponse(body=b"", status=status, headers=headers or {}, preload_content=False)


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_transient_statuses_retried_for_get_only(status: int) -> None:
    policy = retry_policy(3)
    assert policy.is_retry("GET", status)
    assert not policy.is_retry("POST", status)  # a token request may already have been answered


@pytest.mark.parametrize("status", [400, 401, 403, 404, 500])
def test_other_statuses_not_retried(status: int) -> None:
    assert not retry_policy(3).is_retry("GET", status)


def test_connection_errors_retried_even_for_post() -> None:
    err = NewConnectionError(None, "refused")  # type: ignore[arg-type]
    after = retry_policy(2).increment("POST", "/token", error=err)
    assert after.connect == 1


def test_read_errors_never_retried_for_post() -> None:
    with pytest.raises(ProtocolError):
        retry_policy(2).increment("POST", "/token", error=ProtocolError("connection dropped"))
    assert retry_policy(2).increment("GET", "/pub/projects", error=ProtocolError("dropped")).read == 1


def test_exponential_backoff_is_capped(sleeps: list[float]) -> None:
    policy = retry_policy(10, backoff_factor=0.5, backoff_max=3.0)
    for _ in range(6):
        policy = policy.increment("GET", "/pub/projects", response=_resp(502))
        policy.sleep()
    assert sleeps == [1.0, 2.0, 3.0, 3.0, 3.0]  # the first retry goes at once (no sleep call)


def test_retry_after_honoured_and_capped(sleeps: list[float]) -> None:
    policy = retry_policy(3, backoff_max=10.0)
    policy.sleep(_resp(429, {"Retry-After": "7"}))
    policy.sleep(_resp(503, {"Retry-After": "3600"}))
    assert sleeps == [7.0, 10.0]


def test_exhaustion_returns_the_last_response_instead_of_raising() -> None:
    policy = retry_policy(1)
    policy = policy.increment("GET", "/x", response=_resp(503))
    with pytest.raises(MaxRetryError):
        policy.increment("GET", "/x", response=_resp(503))
    assert policy.raise_on_status is False  # the adapter hands back the 503, mapped to ServiceUnavailable


def _response(status: int, text: str = "", headers: dict | None = None) -> requests.Response:
    r = requests.Response()
    r.status_code = status
    r._content = text.encode()
    r.url = "http://127.0.0.1:1/pub/x"
    r.headers.update(headers or {})
    return r


def test_status_mapping() -> None:
    assert isinstance(error_for_response(_response(401), what="w"), TokenRejected)
    lic = error_for_response(_response(403, '{"message": "No public API licence"}'), what="w")
    assert isinstance(lic, LicenceError) and "licence" in str(lic) and lic.status == 403
    other = error_for_response(_response(403, '{"message": "forbidden"}'), what="w")
    assert isinstance(other, PermissionDenied)
    nf = error_for_response(_response(404), what="w", not_found=lambda: ("Project 'p' gone.", "list them"))
    assert isinstance(nf, NotFound) and "Project 'p'" in str(nf) and "list them" in str(nf)
    su = error_for_response(_response(503, "busy", {"Retry-After": "2"}), what="list projects")
    assert isinstance(su, ServiceUnavailable) and "retry after 2 s" in str(su) and "list projects" in str(su)
