"""CredentialWidget driven through its model (field values, submit(), button clicks) against the sandbox."""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import ipywidgets as w
import pytest
from IPython.lib.pretty import pretty

from pm_notebook import AuthenticationError, ConfigurationError, LicenceError, config
from pm_notebook._current import get_current
from pm_notebook.widgets import CredentialWidget


def fill(form: CredentialWidget, sandbox, wg, *, secret: str | None = None) -> None:
    """Type the connection values as a user would (the secret through the Password widget's value)."""
    form.inputs["base_url"].value = sandbox.base_url
    form.inputs["auth_url"].value = sandbox.auth_url
    form.inputs["client_id"].value = wg.client_id
    form.inputs["jdbc_url"].value = sandbox.jdbc_url
    form.secret_input.value = wg.client_secret if secret is None else secret


def all_state(widget: w.Widget) -> str:
    """Every synced trait of *widget* and its descendants, as the frontend and a saved notebook see them."""
    states, todo = [], [widget]
    while todo:
        current = todo.pop()
        states.append(current.get_state())
        todo.extend(c for c in getattr(current, "children", ()) if isinstance(c, w.Widget))
    return json.dumps(states, default=str)


@pytest.fixture
def form():
    widget = CredentialWidget(countdown=False)
    yield widget
    widget.close()


def test_submit_connects_and_becomes_current(form, sandbox, demo, caplog):
    caplog.set_level(logging.DEBUG)
    fill(form, sandbox, demo)
    conn = form.submit()
    assert conn is not None and form.connection is conn and form.last_error is None
    assert get_current() is conn
    assert form.status.kind == "ok"
    assert form.status_text.startswith(f"Connected to workgroup '{demo.name}'; token valid until ")
    assert demo.client_id not in form.status_text  # the name, not the id (which is in its field)
    assert re.search(r"token valid until \d\d:\d\d:\d\d UTC \(\d+ min \d\d s left\)", form.status_text)
    assert conn.projects()  # the connection is usable as is
    # the key left the synced state the moment it arrived, and shows up nowhere
    assert form.secret_input.value == "" and form.has_secret
    assert "kept in the kernel only" in form.secret_input.placeholder
    for text in (all_state(form), repr(form), pretty(form), str(form._repr_mimebundle_()), caplog.text):
        assert demo.client_secret not in text
        assert demo.client_secret[:8] not in text
    token = conn.tokens.current.access_token.reveal()
    assert token not in all_state(form) and token not in caplog.text


def test_secret_from_frontend_message_is_moved_kernel_side(form, demo):
    # the frontend sends {"value": ...} in a comm message; set_state is where it lands
    form.secret_input.set_state({"value": demo.client_secret})
    assert form.secret_input.value == ""
    assert form.has_secret and demo.client_secret not in all_state(form)


def test_wrong_secret_reports_plain_words(form, sandbox, demo):
    fill(form, sandbox, demo, secret="not-the-key")
    assert form.submit() is None
    assert isinstance(form.last_error, AuthenticationError)
    assert form.status.kind == "error" and form.status_text.startswith("Not connected:")
    assert "Traceback" not in form.status_text and "not-the-key" not in form.status_text
    assert get_current() is None and form.connection is None
    assert not form.connect_button.disabled  # the user can fix the key and try again


def test_missing_values_fail_before_any_request(form, sandbox, demo):
    sandbox.reset_stats()
    before = sandbox.stats()["tokens_issued"]
    form.inputs["base_url"].value = sandbox.base_url
    assert form.submit() is None
    assert isinstance(form.last_error, ConfigurationError)
    assert "Missing: Auth URL, Workgroup ID, Workgroup key." in form.status_text
    assert sandbox.stats()["tokens_issued"] == before and not sandbox.stats()["requests"]


def test_malformed_url_is_named(form, sandbox, demo):
    fill(form, sandbox, demo)
    form.inputs["base_url"].value = "api.example.com"
    assert form.submit() is None
    assert isinstance(form.last_error, ConfigurationError)
    assert "'api.example.com' is not an http(s) URL" in form.status_text


def test_unlicensed_workgroup_is_explained(form, sandbox):
    wg = sandbox.workgroups["unlicensed"]
    fill(form, sandbox, wg)
    assert form.submit() is None
    assert isinstance(form.last_error, LicenceError)
    assert "licen" in form.status_text.lower()


def test_connect_button_runs_in_background(form, sandbox, demo):
    fill(form, sandbox, demo)
    form.connect_button.click()
    assert form.wait(60)
    assert form.connection is not None and get_current() is form.connection
    assert form.status.kind == "ok"


def test_reconnect_closes_the_previous_connection(form, sandbox, demo):
    fill(form, sandbox, demo)
    first = form.submit()
    second_wg = sandbox.workgroups["second"]
    fill(form, sandbox, second_wg)
    second = form.submit()
    assert first.closed and not second.closed
    assert get_current() is second and second_wg.name in form.status_text


def test_prefill_keeps_the_secret_in_the_kernel(form, sandbox, demo):
    sandbox.reset_stats()
    before = sandbox.stats()["tokens_issued"]
    form.prefill(environ=dict(sandbox.env))
    assert form.inputs["base_url"].value == sandbox.base_url
    assert form.inputs["client_id"].value == demo.client_id
    assert form.inputs["jdbc_url"].value == sandbox.jdbc_url
    assert form.secret_input.value == "" and form.has_secret
    assert "from PM_CLIENT_SECRET" in form.secret_input.placeholder
    assert demo.client_secret not in all_state(form)
    assert sandbox.stats()["tokens_issued"] == before  # prefilling never calls the service
    assert not sandbox.stats()["requests"]
    assert form.submit() is not None


def test_partial_environment_prefills_what_it_has(form, sandbox):
    form.prefill(environ={"PM_BASE_URL": sandbox.base_url})
    assert form.inputs["base_url"].value == sandbox.base_url
    assert form.inputs["auth_url"].value == "" and not form.has_secret


def test_remember_stores_values_where_resolve_finds_them(form, sandbox, demo, memory_keyring):
    fill(form, sandbox, demo)
    form.remember.value = True
    assert form.submit() is not None
    assert "remembered in the OS keyring" in form.status_text
    settings = config.resolve(environ={})
    assert settings.sources["client_secret"] == "keyring"
    assert (settings.base_url, settings.client_id) == (sandbox.base_url, demo.client_id)
    assert settings.client_secret.reveal() == demo.client_secret


def test_countdown_updates_and_stops_on_close(sandbox, demo):
    form = CredentialWidget(countdown=True)
    fill(form, sandbox, demo)
    form.submit()

    def seconds_left() -> int:
        minutes, seconds = re.search(r"\((\d+) min (\d+) s left\)", form.status_text).groups()
        return int(minutes) * 60 + int(seconds)

    before = seconds_left()
    deadline = time.monotonic() + 60  # it ticks every second; the deadline only guards against a hang
    while seconds_left() >= before:
        assert time.monotonic() < deadline, "the countdown did not move"
        time.sleep(0.05)
    assert any(t.name == "pm-credentials-countdown" for t in threading.enumerate())
    form.close()
    assert form.secret_input.comm is None and form.status.comm is None  # the parts are closed too
    deadline = time.monotonic() + 60
    while any(t.name == "pm-credentials-countdown" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "countdown thread still running after close()"
        time.sleep(0.1)


def test_text_fallback_and_repr(form):
    bundle = form._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "Interactive widgets cannot be shown here" in bundle["text/plain"]
    assert "pm_notebook.connect()" in bundle["text/plain"]
    assert "State: Not connected" in pretty(form)
    assert repr(form).startswith("CredentialWidget(base_url='', client_id='', secret=not set")
