"""Connection values: arguments → env → .env → keyring, normalisation, clear errors (no network)."""

from __future__ import annotations

import pytest

from pm_notebook import ConfigurationError
from pm_notebook.config import Settings, derive_jdbc_url, normalise_auth_url, normalise_base_url, resolve

BASE = "https://api.example.com"
AUTH = "https://id.example.com/realms/wg"
ARGS = {"base_url": BASE, "auth_url": AUTH, "client_id": "wg-1", "client_secret": "s3cr3t-value"}


@pytest.mark.parametrize(
    "given",
    [
        "https://api.example.com",
        "https://api.example.com/",
        "https://api.example.com/pub",
        "https://api.example.com/pub//",
        " https://API.example.com/pub/ ",
    ],
)
def test_base_url_normalised_with_or_without_pub(given: str) -> None:
    assert normalise_base_url(given).lower() == BASE


def test_base_url_keeps_a_path_prefix() -> None:
    assert normalise_base_url("http://host:8080/mining/pub/") == "http://host:8080/mining"


@pytest.mark.parametrize("given", [AUTH, AUTH + "/", AUTH + "/protocol/openid-connect/token"])
def test_auth_url_normalised(given: str) -> None:
    assert normalise_auth_url(given) == AUTH


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("api.example.com", "not an http(s) URL"),
        ("ftp://api.example.com", "not an http(s) URL"),
        ("https://user:pw@api.example.com", "must not contain credentials"),
        ("https://api.example.com/?x=1", "query string"),
        ("https://api.example.com:99999", "invalid port"),
    ],
)
def test_malformed_base_url_is_a_clear_configuration_error(bad: str, words: str) -> None:
    with pytest.raises(ConfigurationError, match="base_url") as info:
        resolve(**{**ARGS, "base_url": bad}, use_keyring=False)
    assert words in str(info.value)
    assert isinstance(info.value, ValueError)
    assert ":pw@" not in str(info.value)  # a password typed into the URL is not echoed


def test_jdbc_url_derived_from_api_host() -> None:
    s = resolve(**{**ARGS, "base_url": "https://weu-mining-api.example.com/pub/"}, use_keyring=False)
    assert (
        s.jdbc_url == "jdbc:avatica:remote:url=http://weu-mining-api.example.com:8082/druid/v2/sql/avatica/"
    )
    assert s.sql_http_url == "http://weu-mining-api.example.com:8082"
    assert s.sources["jdbc_url"] == "derived"
    assert (
        derive_jdbc_url("http://[::1]:9000")
        == "jdbc:avatica:remote:url=http://[::1]:8082/druid/v2/sql/avatica/"
    )


def test_given_jdbc_url_wins_and_gives_the_sql_http_url() -> None:
    jdbc = "jdbc:avatica:remote:url=http://127.0.0.1:45678/druid/v2/sql/avatica/"
    s = resolve(**ARGS, jdbc_url=jdbc, use_keyring=False)
    assert (s.jdbc_url, s.sql_http_url) == (jdbc, "http://127.0.0.1:45678")


def test_bad_jdbc_url_rejected() -> None:
    with pytest.raises(ConfigurationError, match="Avatica remote JDBC URL"):
        resolve(**ARGS, jdbc_url="jdbc:postgresql://db/x", use_keyring=False)


def test_from_arguments_urls_and_sources() -> None:
    s = resolve(**{**ARGS, "base_url": BASE + "/pub/", "auth_url": AUTH + "/"}, use_keyring=False)
    assert s.base_url == BASE and s.api_url == BASE + "/pub"
    assert s.token_url == AUTH + "/protocol/openid-connect/token"
    assert s.client_id == "wg-1" and s.client_secret.reveal() == "s3cr3t-value"
    assert set(s.sources.values()) == {"argument", "derived"}


def test_settings_is_frozen_and_masks_the_secret() -> None:
    s = resolve(**ARGS, use_keyring=False)
    assert "s3cr3t-value" not in repr(s) and "s3cr3t-value" not in str(s)
    with pytest.raises(AttributeError):
        s.client_id = "other"  # type: ignore[misc]


def test_env_fills_missing_values_and_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PM_BASE_URL", "https://env.example.com/pub")
    monkeypatch.setenv("PM_AUTH_URL", AUTH)
    monkeypatch.setenv("PM_CLIENT_ID", "env-id")
    monkeypatch.setenv("PM_CLIENT_SECRET", "env-secret")
    s = resolve(client_id="arg-id", use_keyring=False)
    assert s.base_url == "https://env.example.com"
    assert s.client_id == "arg-id" and s.sources["client_id"] == "argument"
    assert s.client_secret.reveal() == "env-secret" and s.sources["client_secret"] == "env"


def test_dotenv_found_from_cwd_upwards_and_env_wins(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd" / ".env").write_text(
        f"PM_BASE_URL={BASE}\nPM_AUTH_URL={AUTH}\nPM_CLIENT_ID=dot-id\nPM_CLIENT_SECRET='dot secret'\n"
    )
    deep = tmp_path / "cwd" / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    monkeypatch.setenv("PM_CLIENT_ID", "env-id")
    s = resolve(use_keyring=False)
    assert s.client_id == "env-id"
    assert s.client_secret.reveal() == "dot secret"
    assert s.sources["client_secret"].startswith(".env:") and s.sources["client_secret"].endswith(".env")
    import os

    assert "PM_CLIENT_SECRET" not in os.environ  # the file is read, not loaded into the environment


def test_explicit_env_file(tmp_path) -> None:
    f = tmp_path / "creds.env"
    f.write_text(f"PM_BASE_URL={BASE}\nPM_AUTH_URL={AUTH}\nPM_CLIENT_ID=f-id\nPM_CLIENT_SECRET=f-secret\n")
    assert resolve(env_file=f, use_keyring=False).client_id == "f-id"


def test_missing_env_file_is_named(tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        resolve(**ARGS, env_file=tmp_path / "nope.env")


def test_keyring_is_the_last_source(memory_keyring) -> None:
    memory_keyring.set_password("pm_notebook", "wg-1", "from-keyring")
    memory_keyring.set_password("pm_notebook", "PM_AUTH_URL", AUTH)
    s = resolve(base_url=BASE, client_id="wg-1")
    assert s.client_secret.reveal() == "from-keyring" and s.sources["client_secret"] == "keyring"
    assert s.auth_url == AUTH
    with pytest.raises(ConfigurationError, match="client_secret"):
        resolve(base_url=BASE, client_id="wg-1", use_keyring=False)


def test_missing_values_say_where_to_set_them() -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve(base_url=BASE)
    text = str(info.value)
    assert "auth_url, client_id, client_secret" in text
    assert "PM_AUTH_URL, PM_CLIENT_ID, PM_CLIENT_SECRET" in text
    assert "workgroup administrator" in text


def test_blank_values_count_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PM_CLIENT_SECRET", "   ")
    with pytest.raises(ConfigurationError, match="client_secret"):
        resolve(base_url=BASE, auth_url=AUTH, client_id="x", use_keyring=False)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"timeot": 3}, "Unknown connection option(s): timeot"),
        ({"timeout": -1}, "positive"),
        ({"timeout": "soon"}, "timeout must be"),
        ({"retries": 1.5}, "whole number"),
        ({"retries": -1}, "non-negative"),
    ],
)
def test_bad_options(options: dict, words: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve(**ARGS, use_keyring=False, **options)
    assert words in str(info.value)


def test_options_reach_settings() -> None:
    s = resolve(**ARGS, use_keyring=False, timeout=(2, 7), retries=0, renew_before=5)
    assert (s.timeout, s.retries, s.renew_before) == ((2.0, 7.0), 0, 5.0)
    assert isinstance(s, Settings)


def test_connect_without_any_value_says_what_to_do() -> None:
    import pm_notebook

    with pytest.raises(pm_notebook.ConfigurationError) as info:
        pm_notebook.connect()
    assert "PM_BASE_URL" in str(info.value) and "workgroup administration page" in str(info.value)


def test_connect_builds_no_network_and_masks_everything() -> None:
    import pm_notebook

    conn = pm_notebook.connect(**ARGS, use_keyring=False)
    texts = [repr(conn), repr(conn.settings), repr(conn.tokens), repr(conn.rest)]
    assert conn.tokens.current is None and conn.tokens.seconds_left() is None
    assert not any("s3cr3t-value" in t for t in texts)
    conn.close()


# --- the default query context: PM_QUERY_CONTEXT -----------------------------------------------------------
def test_default_query_context_argument_then_environment_then_dotenv(tmp_path) -> None:
    env = tmp_path / ".env"
    env.write_text('PM_QUERY_CONTEXT={"sqlTimeZone": "Europe/Paris"}\n', encoding="utf-8")
    quiet = {"use_keyring": False, "env_file": env}
    from_file = resolve(**ARGS, environ={}, **quiet)
    assert from_file.context == {"sqlTimeZone": "Europe/Paris"}
    assert from_file.sources["context"] == f".env:{env}"
    from_env = resolve(**ARGS, environ={"PM_QUERY_CONTEXT": '{"timeout": "5000"}'}, **quiet)
    assert from_env.context == {"timeout": 5000} and from_env.sources["context"] == "env"
    given = resolve(**ARGS, context={"enableWindowing": True}, environ={"PM_QUERY_CONTEXT": "{}"}, **quiet)
    assert given.context == {"enableWindowing": True} and given.sources["context"] == "argument"
    assert resolve(**ARGS, context={}, environ={}, **quiet).context == {}  # {} means none
    assert "context" not in resolve(**ARGS, context={}, environ={}, **quiet).sources


def test_settings_repr_shows_the_context_with_credential_named_values_masked() -> None:
    s = resolve(**ARGS, context={"sqlTimeZone": "UTC", "authToken": "t0k3n"}, environ={}, use_keyring=False)
    assert "context='sqlTimeZone=UTC, authToken=***'" in repr(s)
    assert "t0k3n" not in repr(s)
    assert "context" not in repr(resolve(**ARGS, environ={}, use_keyring=False))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "PM_QUERY_CONTEXT in "),
        ("[1]", "must be a JSON object"),
        ('{"maxSubqueryRows": 0}', "below its minimum 1"),
    ],
)
def test_bad_pm_query_context_in_dotenv_names_the_file(tmp_path, text: str, words: str) -> None:
    env = tmp_path / ".env"
    env.write_text(f"PM_QUERY_CONTEXT={text}\n", encoding="utf-8")
    with pytest.raises(ConfigurationError) as refused:
        resolve(**ARGS, environ={}, use_keyring=False, env_file=env)
    assert words in str(refused.value) and str(env) in str(refused.value) and refused.value.hint
