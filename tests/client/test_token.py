"""Token value: parsing of all nine fields and the pure renewal arithmetic (fake clock values, no network)."""

from __future__ import annotations

import pytest

from pm_notebook.auth import Token

RESPONSE = {
    "upgraded": False,
    "access_token": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
    "expires_in": 300,
    "refresh_expires_in": 1800,
    "refresh_token": "eyJhbGciOiJIUzI1NiJ9.eyJ0eXAiOiJSZWZyZXNoIn0.cmVmcmVzaA",
    "token_type": "Bearer",
    "not-before-policy": 0,
    "session_state": "0f8fad5b-d9cb-469f-a165-70867728950e",
    "scope": "profile email",
}


def test_every_field_parsed() -> None:
    t = Token.from_response(RESPONSE, issued_at=1000.0)
    assert t.upgraded is False
    assert t.access_token.reveal() == RESPONSE["access_token"]
    assert t.expires_in == 300 and t.refresh_expires_in == 1800
    assert t.refresh_token is not None and t.refresh_token.reveal() == RESPONSE["refresh_token"]
    assert t.token_type == "Bearer" and t.not_before_policy == 0
    assert t.session_state == RESPONSE["session_state"]
    assert t.scope == "profile email" and t.scopes == ("profile", "email")
    assert (t.expires_at, t.refresh_expires_at) == (1300.0, 2800.0)


def test_repr_hides_both_tokens() -> None:
    t = Token.from_response(RESPONSE, issued_at=0)
    for text in (repr(t), str(t)):
        assert RESPONSE["access_token"] not in text and RESPONSE["refresh_token"] not in text
        assert "expires_in=300" in text


def test_optional_fields_default() -> None:
    t = Token.from_response({"access_token": "a", "expires_in": 60}, issued_at=0)
    assert (t.refresh_token, t.refresh_expires_at, t.session_state) == (None, None, None)
    assert (t.scope, t.upgraded, t.not_before_policy) == ("", None, 0)
    assert not t.can_refresh(0)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"access_token": None}, "access_token"),
        ({"access_token": 5}, "access_token"),
        ({"expires_in": None}, "expires_in"),
        ({"expires_in": "300"}, "expires_in"),
        ({"expires_in": -1}, "expires_in"),
        ({"token_type": "MAC"}, "token_type"),
        ({"refresh_token": 1}, "refresh_token"),
        ({"scope": ["a"]}, "scope"),
        ({"upgraded": "no"}, "upgraded"),
        ({"not-before-policy": "x"}, "not-before-policy"),
    ],
)
def test_malformed_field_named(change: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Token.from_response({**RESPONSE, **change}, issued_at=0)


def test_non_object_response() -> None:
    with pytest.raises(ValueError, match="not an object"):
        Token.from_response(["x"], issued_at=0)  # type: ignore[arg-type]


def test_renewal_30_seconds_before_a_300_second_expiry() -> None:
    t = Token.from_response(RESPONSE, issued_at=1000.0)
    assert not t.needs_renewal(1000.0)
    assert not t.needs_renewal(1269.9)
    assert t.needs_renewal(1270.0)
    assert t.needs_renewal(5000.0)


def test_short_lifetimes_renew_at_most_a_fifth_early() -> None:
    t = Token.from_response({**RESPONSE, "expires_in": 5, "refresh_expires_in": 10}, issued_at=0.0)
    assert not t.needs_renewal(3.9) and t.needs_renewal(4.0)
    assert t.can_refresh(7.9) and not t.can_refresh(8.0)


def test_renew_before_zero_means_at_expiry() -> None:
    t = Token.from_response(RESPONSE, issued_at=0.0)
    assert not t.needs_renewal(299.9, renew_before=0) and t.needs_renewal(300.0, renew_before=0)


def test_refresh_window() -> None:
    t = Token.from_response(RESPONSE, issued_at=0.0)
    assert t.can_refresh(1769.9) and not t.can_refresh(1770.0)
    no_expiry = Token.from_response({**RESPONSE, "refresh_expires_in": 0}, issued_at=0.0)
    assert not no_expiry.can_refresh(1.0)  # unknown lifetime: never trust it, use client credentials
