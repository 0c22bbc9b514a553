"""Token lifecycle against the sandbox's identity provider: every field, renewal, refresh grant and
fallback, single flight across threads, 401 → re-auth → retry once.

Token requests are counted on the server."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid

import pytest

from pm_notebook import TokenRejected
from pm_notebook._http import build_session
from pm_notebook.api import RestClient
from pm_notebook.auth import TokenProvider


def _claims(jwt: str) -> dict:
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_every_token_field_from_the_identity_provider(sandbox, connect_to) -> None:
    conn = connect_to(sandbox)
    before = time.time()
    token = conn.tokens.token()
    assert token.upgraded is False
    assert token.token_type == "Bearer"
    assert token.expires_in == 300 and token.refresh_expires_in == 1800  # the service's documented lifetimes
    assert token.not_before_policy == 0
    assert uuid.UUID(token.session_state)
    assert "profile" in token.scopes and "email" in token.scopes
    claims = _claims(token.access_token.reveal())
    assert claims["azp"] == sandbox.workgroups["demo"].client_id
    assert claims["exp"] - claims["iat"] == token.expires_in
    assert claims["session_state"] == token.session_state
    refresh = _claims(token.refresh_token.reveal())
    assert refresh["typ"] == "Refresh" and refresh["exp"] - refresh["iat"] == token.refresh_expires_in
    assert before - 1 <= token.issued_at <= time.time()
    left = conn.tokens.seconds_left()
    elapsed = time.time() - before  # however long this took, the token aged by that much, no more
    assert 300 - elapsed - 1 <= left <= 300


def test_token_reused_until_renewal_is_due(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox)
    conn.projects()
    sandbox.reset_stats()
    conn.projects()
    conn.workgroup()
    assert counts.tokens(sandbox) == 0
    assert conn.tokens.grants == {"client_credentials": 1}


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory):
    """A sandbox whose access tokens live 2 s and refresh tokens 4 s.

    The server truncates issue times to whole seconds, so a token may die up to 1 s early on its side:
    the sleeps below leave that margin.
    """
    from pm_sandbox import start

    log_path = tmp_path_factory.mktemp("short") / "sandbox.log"
    sb = start(cases=20, token_lifetime=2, refresh_lifetime=4, log_path=log_path)
    yield sb
    sb.stop()


@pytest.mark.slow
def test_renewal_across_a_short_token_lifetime(sandbox_factory, connect_to, counts) -> None:
    # The refresh token lives 120 s: however slow the machine, it is still valid when the client renews
    # after the access token (2 s) died; the sleep below is only a lower bound on the time that passed.
    sb = sandbox_factory(cases=20, token_lifetime=2, refresh_lifetime=120)
    conn = connect_to(sb)
    conn.rest.project_ids()
    first = conn.tokens.current
    time.sleep(2.1)  # the server now rejects the first access token
    sb.reset_stats()
    assert sorted(conn.rest.project_ids()) == sorted(sb.workgroups["demo"].project_ids)
    stats = sb.stats()["requests"]
    # renewed before the call (refresh grant), so no 401 and no second GET
    assert stats.get("GET /pub/projects") == 1 and stats.get("POST " + counts.token_path(sb)) == 1
    assert conn.tokens.grants == {"client_credentials": 1, "refresh_token": 1}
    second = conn.tokens.current
    assert second.session_state == first.session_state  # a refresh keeps the session
    assert second.access_token != first.access_token and second.refresh_token != first.refresh_token


@pytest.mark.slow
def test_refused_refresh_falls_back_to_client_credentials(short_lived, connect_to, counts) -> None:
    sb = short_lived
    settings = connect_to(sb).settings
    offset = [0.0]
    session = build_session(settings)
    provider = TokenProvider(settings, session, clock=lambda: time.time() + offset[0])
    first = provider.token()
    time.sleep(4.1)  # server side, the refresh token is now expired ...
    offset[0] = -4.1 + 1.7  # ... but the client's clock says 1.7 s passed: renew with the refresh token
    sb.reset_stats()
    token = provider.token()
    assert provider.grants == {"client_credentials": 2, "refresh_token": 1}
    assert counts.tokens(sb) == 2
    assert token.session_state != first.session_state
    ids = RestClient(settings, session, provider).project_ids()
    assert sorted(ids) == sorted(sb.workgroups["demo"].project_ids)
    # once the client knows the refresh token is past its lifetime it does not even try it
    offset[0] += 60
    provider.token()
    assert provider.grants == {"client_credentials": 3, "refresh_token": 1}
    session.close()


def test_sixteen_threads_share_one_token_request(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox)
    sandbox.reset_stats()
    sandbox.fault(counts.token_path(sandbox), status=None, delay=0.5)  # keep the request in flight
    barrier = threading.Barrier(16)
    results: list = []
    errors: list = []

    def worker() -> None:
        try:
            barrier.wait(timeout=60)
            results.append(conn.rest.project_ids())
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == [] and len(results) == 16
    assert counts.tokens(sandbox) == 1
    assert counts(sandbox, "GET /pub/projects") == 16
    assert conn.tokens.grants == {"client_credentials": 1}


def test_401_reauthenticates_and_retries_once(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox)
    conn.rest.project_ids()
    stale = conn.tokens.current
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", status=401, times=1)
    assert sorted(conn.rest.project_ids()) == sorted(sandbox.workgroups["demo"].project_ids)
    assert counts(sandbox, "GET /pub/projects") == 2
    assert counts.tokens(sandbox) == 1
    assert conn.tokens.current is not stale
    assert conn.tokens.grants == {"client_credentials": 2}


def test_a_second_401_is_not_retried_again(sandbox, connect_to, counts) -> None:
    conn = connect_to(sandbox)
    conn.rest.project_ids()
    sandbox.reset_stats()
    sandbox.fault("/pub/projects", status=401, times=2)
    with pytest.raises(TokenRejected) as info:
        conn.rest.project_ids()
    assert info.value.status == 401 and "fresh" in str(info.value)
    assert counts(sandbox, "GET /pub/projects") == 2
