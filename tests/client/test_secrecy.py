"""No client secret, access token or refresh token ever shows in a repr, a DEBUG log line or the text of a
raised error (message, repr, args, fields, formatted traceback, and the locals of our frames as a
verbose traceback - IPython ``%xmode Verbose``, ``pytest --showlocals`` - would print them)."""

from __future__ import annotations

import logging
import os
import time
import traceback

import pytest

import pm_notebook
from pm_notebook import PMError
from pm_notebook._http import build_session
from pm_notebook.auth import TokenProvider


def _locals_of_our_frames(exc: BaseException) -> list[str]:
    """The locals of every pm_notebook frame a verbose traceback of *exc* would show."""
    shown: list[str] = []
    te: traceback.TracebackException | None
    te = traceback.TracebackException.from_exception(exc, capture_locals=True)
    while te is not None:
        for frame in te.stack:
            if f"{os.sep}pm_notebook{os.sep}" in frame.filename and frame.locals:
                shown.extend(f"{name}={value}" for name, value in frame.locals.items())
        te = te.__cause__ or (None if te.__suppress_context__ else te.__context__)
    return shown


def _error_texts(exc: BaseException) -> list[str]:
    texts = [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    texts += [repr(a) for a in exc.args]
    texts += [repr(v) for v in vars(exc).values()]
    locals_shown = _locals_of_our_frames(exc)
    assert locals_shown, "the error passed through no pm_notebook frame?"
    return texts + locals_shown


def test_no_secret_or_token_in_reprs_logs_or_errors(
    sandbox, connect_workgroup, caplog, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = {wg.client_secret for wg in sandbox.workgroups.values()} | {"typed-a-wrong-secret"}
    texts: list[str] = []
    errors: list[BaseException] = []

    def expect_error(call, *args) -> None:
        with pytest.raises(PMError) as info:
            call(*args)
        errors.append(info.value)

    for name, value in sandbox.env.items():
        monkeypatch.setenv(name, value)
    conn = pm_notebook.connect(use_keyring=False, retries=1, backoff_factor=0.01)
    projects = conn.projects()
    conn.tables(projects[0])
    conn.workgroup()
    sandbox.fault("/pub/workgroups", status=401, times=1)  # re-auth path
    conn.workgroup()
    sandbox.fault("/pub/workgroups", status=401, times=2)
    expect_error(conn.workgroup)  # TokenRejected
    expect_error(conn.project, "no-such-project")
    tokens = [conn.tokens.current]
    texts += [repr(conn), str(conn), repr(conn.settings), str(conn.settings), repr(conn.tokens.current)]
    texts += [repr(conn.rest), repr(conn.tokens), repr(vars(conn.settings))]

    offset = [0.0]  # the refresh grant, without waiting 270 s
    session = build_session(conn.settings)
    provider = TokenProvider(conn.settings, session, clock=lambda: time.time() + offset[0])
    tokens.append(provider.token())
    offset[0] = 280.0
    tokens.append(provider.token())
    assert provider.grants == {"client_credentials": 1, "refresh_token": 1}
    texts.append(repr(tokens[-1]))
    session.close()

    wrong = connect_workgroup(sandbox, secret="typed-a-wrong-secret")
    expect_error(wrong.projects)  # AuthenticationError
    texts.append(repr(wrong))
    lic = connect_workgroup(sandbox, "unlicensed")
    expect_error(lic.projects)  # LicenceError
    tokens.append(lic.tokens.current)
    expect_error(pm_notebook.connect, "ftp://host", sandbox.auth_url, "x", "typed-a-wrong-secret")
    sandbox.fault("/pub/projects", drop=True, times=3)
    expect_error(conn.rest.project_ids)  # TransportError after the retries
    for c in (conn, wrong, lic):
        c.close()

    kinds = {"TokenRejected", "NotFound", "AuthenticationError", "LicenceError", "ConfigurationError"}
    assert {type(e).__name__ for e in errors} == kinds | {"TransportError"}
    for exc in errors:
        texts += _error_texts(exc)
    texts.append(caplog.text)
    assert "ms)" in caplog.text and "/pub/projects -> 200" in caplog.text  # DEBUG timing lines are there

    forbidden = set(secrets)
    for token in tokens:
        forbidden.add(token.access_token.reveal())
        forbidden.add(token.refresh_token.reveal())
        forbidden.add(token.access_token.reveal().split(".")[2])  # even the signature part alone
    leaks = [(secret[:6], text[:80]) for text in texts for secret in forbidden if secret in text]
    assert leaks == []
