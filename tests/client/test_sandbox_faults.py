"""Transient failures injected with the sandbox's fault switches: what is retried, what is not, and the
errors when retries run out or the service disappears."""

from __future__ import annotations

import time

import pytest

from pm_notebook import RequestTimeout, ServiceUnavailable, TransportError

FAST = {"backoff_factor": 0.05, "backoff_max": 2.0}


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_transient_status_retried(sandbox, connect_to, counts, status: int) -> None:
    conn = connect_to(sandbox, retries=3, **FAST)
    conn.rest.project_ids()
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", status=status, times=2)
    assert sorted(conn.rest.project_ids()) == sorted(sandbox.workgroups["demo"].project_ids)
    assert counts(sandbox, "GET /pub/projects") == 3


def test_retry_after_honoured(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox, retries=2, backoff_factor=0.0, backoff_max=5.0)
    conn.rest.project_ids()
    sandbox.fault("/pub/projects", status=429, times=1, retry_after=1)
    start = time.monotonic()
    conn.rest.project_ids()
    assert time.monotonic() - start >= 0.9


def test_retries_exhausted(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox, retries=2, **FAST)
    conn.rest.project_ids()
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", status=503, times=5, retry_after=0)
    with pytest.raises(ServiceUnavailable) as info:
        conn.rest.project_ids()
    assert info.value.status == 503 and "list projects" in str(info.value) and "try again" in str(info.value)
    assert counts(sandbox, "GET /pub/projects") == 3


def test_dropped_connection_retried_for_get(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox, retries=2, **FAST)
    conn.rest.project_ids()
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", drop=True, times=1)
    assert conn.rest.project_ids()
    assert counts(sandbox, "GET /pub/projects") == 2


def test_token_request_never_re_posted(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox, retries=3, **FAST)
    sandbox.reset_stats()
    sandbox.fault(counts.token_path(sandbox), status=503, times=1)
    with pytest.raises(ServiceUnavailable):
        conn.projects()
    assert counts.tokens(sandbox) == 1
    sandbox.fault(counts.token_path(sandbox), drop=True, times=1)
    with pytest.raises(TransportError) as info:
        conn.projects()
    assert counts.tokens(sandbox) == 2
    assert counts.token_path(sandbox) in str(info.value)
    assert conn.projects()  # and the next call simply works


def test_read_timeout(sandbox, connect_to) -> None:
    conn = connect_to(sandbox, retries=0, timeout=(5.0, 1.5))
    conn.rest.project_ids()
    sandbox.fault("/pub/projects", status=None, hold=True)  # no answer until released, however long
    with pytest.raises(RequestTimeout) as info:
        conn.rest.project_ids()
    assert "/pub/projects" in str(info.value) and "within 1.5 s" in str(info.value)
    assert isinstance(info.value, TransportError)


def test_sandbox_stopped_mid_session(sandbox_factory, connect_to) -> None:
    sb = sandbox_factory(cases=20)
    conn = connect_to(sb, retries=1, **FAST)
    assert conn.projects()
    sb.stop()
    with pytest.raises(TransportError) as info:
        conn.projects()
    text = str(info.value)
    assert f"{sb.base_url}/pub/projects" in text and "could not reach" in text
    assert "Check the URL" in text and info.value.url == f"{sb.base_url}/pub/projects"


def test_unreachable_identity_provider_named(connect_to, unused_port) -> None:
    import pm_notebook

    base = f"http://127.0.0.1:{unused_port}"
    conn = pm_notebook.connect(base, base + "/realms/x", "id", "secret", retries=0, use_keyring=False)
    with conn, pytest.raises(TransportError, match=f"could not reach {base}/realms/x/protocol/"):
        conn.workgroup()


@pytest.fixture
def unused_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
