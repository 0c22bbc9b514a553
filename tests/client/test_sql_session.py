"""The SQL transports' HTTP session: the environment read once per host, never ``.netrc``."""

from __future__ import annotations

import requests

from pm_notebook import _http


def test_environment_proxies_are_read_once_per_host(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "skip.example")
    session = _http.sql_session()
    first = session.merge_environment_settings("http://broker.example:8082/x", {}, None, None, None)
    assert first["proxies"]["http"] == "http://proxy.example:3128"
    assert session.merge_environment_settings("http://skip.example/x", {}, None, None, None)["proxies"] == {}
    # Kept for the session's life: a change of the environment is seen by a new connection's session.
    monkeypatch.setenv("HTTP_PROXY", "http://other.example:3128")
    again = session.merge_environment_settings("http://broker.example:8082/y", {}, None, None, None)
    assert again == first and again is not first
    fresh = _http.sql_session().merge_environment_settings(
        "http://broker.example:8082/y", {}, None, None, None
    )
    assert fresh["proxies"]["http"] == "http://other.example:3128"
    # A proxy given per request wins, as in requests.
    given = {"http": "http://given.example:1"}
    assert (
        session.merge_environment_settings("http://broker.example:8082/y", given, None, None, None)[
            "proxies"
        ]["http"]
        == "http://given.example:1"
    )


def test_netrc_credentials_never_reach_a_request(tmp_path, monkeypatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine broker.example login someone password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    plain = requests.Session().prepare_request(requests.Request("POST", "http://broker.example/x"))
    assert "Authorization" in plain.headers  # what requests itself would do
    ours = _http.sql_session().prepare_request(requests.Request("POST", "http://broker.example/x"))
    assert "Authorization" not in ours.headers
