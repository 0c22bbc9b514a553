"""Connection values, resolved once into a frozen :class:`Settings`.

One concept, longer than most modules: every connection value (URLs, the JDBC URL, the secret, timeouts,
retries, the query context) with its sources and a specific error for each bad input; the checks are the bulk.

Every value is looked up in this order, first hit wins:

1. the argument given to :func:`pm_notebook.connect` / :func:`resolve`;
2. the process environment (``PM_BASE_URL``, ``PM_AUTH_URL``, ``PM_CLIENT_ID``, ``PM_CLIENT_SECRET``,
   ``PM_JDBC_URL``);
3. a ``.env`` file: the one named by ``env_file=``, else the first ``.env`` found from the current directory
   upwards (python-dotenv; the file is read, never loaded into ``os.environ``);
4. the OS keyring, when the ``keyring`` package is installed: service ``pm_notebook``, user name = the
   variable name (``PM_CLIENT_SECRET``, ...); the secret is also looked up under the client id as user name.

The JDBC URL, when none of these gives it, is derived from the API host as the service documents it:
``jdbc:avatica:remote:url=http://<api host>:8082/druid/v2/sql/avatica/``.

The connection's default Druid query context comes from ``connect(context=...)``, else ``PM_QUERY_CONTEXT``
(a JSON object) in the environment, else in the ``.env`` file; it is checked here, once
(:func:`query_context`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._secret import Secret
from .errors import ConfigurationError, redact
from .query_context import check_context, describe_context

__all__ = [
    "CACHE_ENV_VARS",
    "CONTEXT_ENV_VAR",
    "ENV_VARS",
    "CacheSettings",
    "KEYRING_SERVICE",
    "Settings",
    "avatica_url_from_jdbc",
    "derive_jdbc_url",
    "jdbc_url_with_options",
    "mask_jdbc_url",
    "normalise_auth_url",
    "normalise_base_url",
    "cache_settings",
    "parse_context_variable",
    "query_context",
    "replay_settings",
    "resolve",
    "split_jdbc_url",
    "sql_http_url_from_jdbc",
]

logger = logging.getLogger(__name__)

KEYRING_SERVICE = "pm_notebook"
#: connection value -> environment variable holding it
ENV_VARS: Mapping[str, str] = {
    "base_url": "PM_BASE_URL",
    "auth_url": "PM_AUTH_URL",
    "client_id": "PM_CLIENT_ID",
    "client_secret": "PM_CLIENT_SECRET",
    "jdbc_url": "PM_JDBC_URL",
}
#: the environment / ``.env`` variable holding the connection's default query context, as a JSON object
CONTEXT_ENV_VAR = "PM_QUERY_CONTEXT"
SQL_PORT = 8082
AVATICA_PATH = "/druid/v2/sql/avatica/"
JDBC_PREFIX = "jdbc:avatica:remote:url="
TOKEN_PATH = "/protocol/openid-connect/token"
_ADMIN_HINT = (
    "The connection values are shown on the workgroup administration page (Open API tab), "
    "visible to users with the role workgroup administrator."
)


@dataclass(frozen=True)
class Settings:
    """Everything needed to talk to one workgroup; immutable, the secret held in a :class:`Secret`.

    :param base_url: API address without ``/pub`` and without trailing slash.
    :param auth_url: authentication realm address (``.../realms/<realm>``), no trailing slash.
    :param client_id: the workgroup technical ID (not a secret: it names the workgroup).
    :param client_secret: the workgroup private key.
    :param jdbc_url: ``jdbc:avatica:remote:url=http://<host>:8082/druid/v2/sql/avatica/`` unless given.
    :param sql_http_url: ``http://<host>:<port>`` of the SQL endpoints, taken from ``jdbc_url``.
    :param timeout: ``(connect, read)`` seconds applied to every HTTP call.
    :param retries: how many times a safe call is retried on connection errors, 429, 502, 503, 504.
    :param backoff_factor: exponential backoff base (seconds) between retries.
    :param backoff_max: cap of one backoff wait, and of a server's ``Retry-After``.
    :param renew_before: renew the access token this many seconds before it expires (at most a fifth of its
        lifetime, so short-lived tokens are not renewed on every call).
    :param context: the default Druid query context of every statement (checked; a statement's own
        context is laid over it, key by key).
    :param sources: where each connection value came from (``argument``, ``env``, ``.env:<path>``,
        ``keyring``, ``derived``), for diagnostics.
    """

    base_url: str
    auth_url: str
    client_id: str
    client_secret: Secret = field(repr=False)
    jdbc_url: str
    sql_http_url: str
    timeout: tuple[float, float] = (10.0, 60.0)
    retries: int = 3
    backoff_factor: float = 0.5
    backoff_max: float = 30.0
    renew_before: float = 30.0
    context: Mapping[str, Any] = field(default_factory=dict, hash=False)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def api_url(self) -> str:
        """The public API root, ``{base_url}/pub``."""
        return self.base_url + "/pub"

    @property
    def token_url(self) -> str:
        """The OAuth2 token endpoint, ``{auth_url}/protocol/openid-connect/token``."""
        return self.auth_url + TOKEN_PATH

    def __repr__(self) -> str:
        return (
            f"Settings(base_url={self.base_url!r}, auth_url={self.auth_url!r}, client_id={self.client_id!r}, "
            f"client_secret=Secret('***'), jdbc_url={mask_jdbc_url(self.jdbc_url)!r}"
            + (f", context={describe_context(self.context)!r})" if self.context else ")")
        )


def mask_jdbc_url(url: str) -> str:
    """*url* with the value of every ``;password=...``-like property (and any token) replaced by ``***``.

    A JDBC URL may carry the driver's credentials as properties; this is the form shown in reprs and logs.

    >>> mask_jdbc_url("jdbc:avatica:remote:url=http://h:8082/x/;user=wg;password=s3cret;serialization=JSON")
    'jdbc:avatica:remote:url=http://h:8082/x/;user=wg;password=***;serialization=JSON'
    """
    if not isinstance(url, str):
        return url
    return _JDBC_SECRET_PROPERTY.sub(r"\1***", url)


# A JDBC URL property whose name says it holds a credential: ";password=...", ";avatica_password=...",
# ";truststore_password=...", ";token=..."; its value runs to the next ';'.
_JDBC_SECRET_PROPERTY = re.compile(r"(?i)(;\s*[a-z_.]*(?:password|secret|token)[a-z_.]*\s*=)[^;]*")


def _check_bracketed_host(netloc: str) -> None:
    """Raise ValueError when the host in brackets is not an IP address (urlsplit checks it only from Python
    3.11.4 on, so older interpreters would let "https://[not-an-ip]:80" through)."""
    host = netloc.rpartition("@")[2]
    if host.startswith("[") and "]" in host:
        inside = host[1 : host.index("]")]
        try:
            ipaddress.ip_address(inside.partition("%")[0])
        except ValueError:
            raise ValueError(f"{inside!r} in brackets is not an IP address") from None


def _split_http_url(url: str, name: str) -> tuple[str, str, str]:
    """Validate an http(s) URL; return ``(scheme, netloc, path)``, the path without trailing slashes."""
    if not isinstance(url, str):
        raise ConfigurationError(f"{name} must be a string URL, got {type(url).__name__}.")
    text = url.strip()
    try:
        parts = urlsplit(text)
        _check_bracketed_host(parts.netloc)
    except ValueError as exc:  # e.g. "http://[::1" (an unclosed IPv6 bracket)
        raise ConfigurationError(
            f"{name} {redact(text)!r} is not a valid URL ({exc}).",
            hint="Check the host part; an IPv6 address is written in brackets, like 'http://[::1]:8080'.",
        ) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"{name} {text!r} is not an http(s) URL with a host.",
            hint=f"Give it like 'https://api.example.com'. {_ADMIN_HINT}",
        )
    if parts.username or parts.password:
        raise ConfigurationError(
            f"{name} must not contain credentials (user:password@host).",
            hint="Pass client_id / client_secret separately.",
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(f"{name} {text!r} must not contain a query string or fragment.")
    try:
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ConfigurationError(f"{name} {text!r} has an invalid port.") from None
    return parts.scheme.lower(), parts.netloc, parts.path.rstrip("/")


def normalise_base_url(url: str) -> str:
    """Return the API address without trailing slashes and without a final ``/pub``.

    >>> normalise_base_url("https://api.example.com/pub/")
    'https://api.example.com'
    """
    scheme, netloc, path = _split_http_url(url, "base_url")
    if path.lower().endswith("/pub"):
        path = path[: -len("/pub")].rstrip("/")
    return urlunsplit((scheme, netloc, path, "", ""))


def normalise_auth_url(url: str) -> str:
    """Return the realm address without trailing slashes (a pasted token-endpoint URL is cut back).

    >>> normalise_auth_url("https://id.example.com/realms/wg/protocol/openid-connect/token")
    'https://id.example.com/realms/wg'
    """
    scheme, netloc, path = _split_http_url(url, "auth_url")
    if path.endswith(TOKEN_PATH):
        path = path[: -len(TOKEN_PATH)].rstrip("/")
    return urlunsplit((scheme, netloc, path, "", ""))


def derive_jdbc_url(base_url: str) -> str:
    """The JDBC URL the service documents for an API address: http, API host, port 8082, Avatica path.

    >>> derive_jdbc_url("https://api.example.com")
    'jdbc:avatica:remote:url=http://api.example.com:8082/druid/v2/sql/avatica/'
    """
    host = urlsplit(normalise_base_url(base_url)).hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{JDBC_PREFIX}http://{host}:{SQL_PORT}{AVATICA_PATH}"


def split_jdbc_url(url: str) -> tuple[str, dict[str, str]]:
    """The one parser of Avatica JDBC URLs: ``(the HTTP URL inside, {driver option: value})``.

    >>> split_jdbc_url("jdbc:avatica:remote:url=http://h:8082/druid/v2/sql/avatica/;fetch_size=5000")
    ('http://h:8082/druid/v2/sql/avatica/', {'fetch_size': '5000'})

    :raises ConfigurationError: not an Avatica remote URL, or the URL inside is not http(s) with a host.
    """
    if not isinstance(url, str) or not url.strip().startswith(JDBC_PREFIX):
        raise ConfigurationError(
            f"jdbc_url {mask_jdbc_url(url)!r} is not an Avatica remote JDBC URL.",
            hint=f"It looks like '{JDBC_PREFIX}http://<host>:{SQL_PORT}{AVATICA_PATH}'; "
            "leave it out to derive it from base_url.",
        )
    inner, *parts = url.strip()[len(JDBC_PREFIX) :].split(";")
    _split_http_url(inner, "the URL inside jdbc_url")
    options = {}
    for part in parts:
        key, _, value = part.partition("=")
        if key.strip():
            options[key.strip().lower()] = value.strip()
    return inner, options


def _check_jdbc_url(url: str) -> str:
    split_jdbc_url(url)
    return url.strip()


def avatica_url_from_jdbc(jdbc_url: str) -> str:
    """The Avatica HTTP endpoint inside a JDBC URL (driver options dropped).

    >>> avatica_url_from_jdbc("jdbc:avatica:remote:url=http://h:8082/druid/v2/sql/avatica/;fetch_size=5000")
    'http://h:8082/druid/v2/sql/avatica/'
    """
    return split_jdbc_url(jdbc_url)[0]


def jdbc_url_with_options(url: str, **options: Any) -> str:
    """Append driver options (``;key=value``) that the URL does not set already.

    >>> jdbc_url_with_options("jdbc:avatica:remote:url=http://h:8082/x/", fetch_size=5000)
    'jdbc:avatica:remote:url=http://h:8082/x/;fetch_size=5000'
    """
    present = split_jdbc_url(url)[1]
    extra = [f"{k}={v}" for k, v in options.items() if k.lower() not in present]
    return ";".join([url.strip().rstrip(";"), *extra]) if extra else url


def sql_http_url_from_jdbc(jdbc_url: str) -> str:
    """``http://host:port`` of the SQL endpoints named by an Avatica JDBC URL.

    >>> sql_http_url_from_jdbc("jdbc:avatica:remote:url=http://db.example.com:8082/druid/v2/sql/avatica/")
    'http://db.example.com:8082'
    """
    scheme, netloc, _ = _split_http_url(avatica_url_from_jdbc(jdbc_url), "the URL inside jdbc_url")
    return f"{scheme}://{netloc}"


def _read_dotenv(env_file: str | os.PathLike[str] | None) -> tuple[dict[str, str], str | None]:
    from dotenv import dotenv_values, find_dotenv

    if env_file is not None:
        path = Path(env_file)
        if not path.is_file():
            raise ConfigurationError(
                f"env_file {str(path)!r} does not exist or is not a file.",
                hint="Give the path of a .env file with PM_BASE_URL=..., or leave env_file out.",
            )
        found = str(path)
    else:
        found = find_dotenv(usecwd=True)
        if not found:
            return {}, None
    values = {k: v for k, v in dotenv_values(found).items() if v is not None and v.strip()}
    return values, found


def _keyring_lookup(names: list[tuple[str, str]]) -> dict[str, str]:
    """Look ``(key, keyring user name)`` pairs up in the OS keyring; silent if keyring is absent or broken."""
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return {}
    found: dict[str, str] = {}
    for key, user in names:
        if key in found:
            continue
        try:
            value = keyring.get_password(KEYRING_SERVICE, user)
        except (KeyringError, RuntimeError, OSError) as exc:  # no backend, locked store, D-Bus trouble
            logger.debug("keyring lookup skipped: %s", type(exc).__name__)
            return found
        if value:
            found[key] = value
    return found


def _parse_timeout(value: Any) -> tuple[float, float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        pair = (float(value), float(value))
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        pair = (float(value[0]), float(value[1]))
    else:
        raise ConfigurationError(
            f"timeout must be seconds or a (connect, read) pair, got {value!r}.",
            hint="For example timeout=30.",
        )
    if not all(math.isfinite(v) and v > 0 for v in pair):
        raise ConfigurationError(f"timeout values must be positive seconds, got {value!r}.")
    return pair


def _non_negative(name: str, value: Any, kind: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigurationError(f"{name} must be a non-negative number, got {value!r}.")
    if kind is int and int(value) != value:
        raise ConfigurationError(f"{name} must be a whole number, got {value!r}.")
    return kind(value)


def _option(options: Mapping[str, Any], name: str, kind: type) -> Any:
    return _non_negative(name, options.get(name, getattr(Settings, name)), kind)


_OPTION_NAMES = ("timeout", "retries", "backoff_factor", "backoff_max", "renew_before")


class _MaskedEnv(Mapping[str, str]):
    """A read-only view of an environment whose repr shows no values (tracebacks with locals)."""

    def __init__(self, data: Mapping[str, str]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"<environment of {len(self._data)} variables>"


def _is_set(value: Any) -> bool:
    if isinstance(value, Secret):
        return bool(value.reveal().strip())
    return value is not None and (not isinstance(value, str) or bool(value.strip()))


def _wrap(key: str, value: Any) -> Any:
    """Wrap the secret the moment it is read, so no frame of ours holds it in clear after that."""
    return Secret(value.strip()) if key == "client_secret" and isinstance(value, str) else value


def _gather(
    given: Mapping[str, Any], environ: Mapping[str, str], env_file: Any, use_keyring: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """Look each value up: arguments, then environment, then ``.env``, then keyring."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value in given.items():
        if _is_set(value):
            values[key], sources[key] = value, "argument"
        elif _is_set(environ.get(ENV_VARS[key])):
            values[key], sources[key] = _wrap(key, environ[ENV_VARS[key]]), "env"
    missing = [k for k in ENV_VARS if k not in values]
    if missing or env_file is not None:
        dotenv, path = _read_dotenv(env_file)
        for key in missing:
            if _is_set(dotenv.get(ENV_VARS[key])):
                values[key], sources[key] = _wrap(key, dotenv[ENV_VARS[key]]), f".env:{path}"
        del dotenv
    missing = [k for k in ENV_VARS if k not in values]
    if missing and use_keyring:
        names = []
        if "client_secret" in missing and "client_id" in values:
            names.append(("client_secret", str(values["client_id"]).strip()))
        names += [(k, ENV_VARS[k]) for k in missing]
        for key, value in _keyring_lookup(names).items():
            values[key], sources[key] = _wrap(key, value), "keyring"
    return values, sources


def check_option_names(options: Mapping[str, Any]) -> None:
    """Refuse option names :func:`resolve` does not know (a typo must not pass silently)."""
    unknown = sorted(set(options) - set(_OPTION_NAMES) - {"env_file", "use_keyring", "environ"})
    if unknown:
        raise ConfigurationError(
            f"Unknown connection option(s): {', '.join(unknown)}.",
            hint=f"Valid options: {', '.join(_OPTION_NAMES)}, env_file, use_keyring, "
            "cache, replay, cache_dir, transport, context.",
        )


def parse_context_variable(text: str, where: str) -> dict[str, Any]:
    """The checked query context a ``PM_QUERY_CONTEXT`` value holds (a JSON object).

    :param where: the variable and where it was read, for messages (``PM_QUERY_CONTEXT (environment)``).
    :raises ConfigurationError: not JSON, not an object, or a key or value :func:`check_context` refuses;
        the message names *where*.
    """
    example = f"""{CONTEXT_ENV_VAR}='{{"sqlTimeZone": "Europe/Paris", "timeout": 60000}}'"""
    try:
        value = json.loads(text)
    except ValueError as exc:
        detail = f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ConfigurationError(
            f"{where} is not valid JSON ({detail}).", hint=f"Set it to a JSON object, e.g. {example}."
        ) from None
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"{where} must be a JSON object of Druid context keys, not a JSON {type(value).__name__}.",
            hint=f"For example {example}.",
        )
    try:
        return check_context(value)
    except ConfigurationError as err:
        raise ConfigurationError(f"{where}: {err.message}", hint=err.hint) from None


def query_context(
    context: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    env_file: str | os.PathLike[str] | None = None,
    use_dotenv: bool = True,
) -> tuple[dict[str, Any], str]:
    """The connection's default query context and where it came from: the *context* argument (``{}`` too:
    it means none), else ``PM_QUERY_CONTEXT`` in *environ*, else in the ``.env`` file (unless not
    *use_dotenv*: replay reads no ``.env``); ``({}, "default")`` when none sets it.

    :raises ConfigurationError: the context is not valid; the message names the argument or the variable.

    >>> query_context(environ={"PM_QUERY_CONTEXT": '{"enableWindowing": "true"}'}, env_file=None)
    ({'enableWindowing': True}, 'env')
    """
    if context is not None:
        try:
            return check_context(context), "argument"
        except ConfigurationError as err:
            raise ConfigurationError(f"connect(context=...): {err.message}", hint=err.hint) from None
    environ = os.environ if environ is None else environ
    text = environ.get(CONTEXT_ENV_VAR)
    if text is not None and text.strip():
        return parse_context_variable(text, f"{CONTEXT_ENV_VAR} (environment)"), "env"
    if not use_dotenv:
        return {}, "default"
    dotenv, path = _read_dotenv(env_file)
    text = dotenv.get(CONTEXT_ENV_VAR)
    del dotenv  # it may hold the secret: keep no more of it than this variable
    if text is not None and text.strip():
        return parse_context_variable(text, f"{CONTEXT_ENV_VAR} in {path}"), f".env:{path}"
    return {}, "default"


def resolve(
    base_url: str | None = None,
    auth_url: str | None = None,
    client_id: str | None = None,
    client_secret: str | Secret | None = None,
    jdbc_url: str | None = None,
    *,
    context: Mapping[str, Any] | None = None,
    env_file: str | os.PathLike[str] | None = None,
    use_keyring: bool = True,
    environ: Mapping[str, str] | None = None,
    **options: Any,
) -> Settings:
    """Resolve the connection values (arguments → env → ``.env`` → keyring) into a frozen :class:`Settings`.

    :param context: the default Druid query context (else ``PM_QUERY_CONTEXT``, see :func:`query_context`).
    :param env_file: a ``.env`` file to read instead of searching from the current directory upwards.
    :param use_keyring: look missing values up in the OS keyring (when ``keyring`` is installed).
    :param environ: the environment to read (default ``os.environ``).
    :param options: ``timeout``, ``retries``, ``backoff_factor``, ``backoff_max``, ``renew_before``
        (see :class:`Settings`).
    :raises ConfigurationError: a value is missing or malformed; the message names where to set it.

    >>> s = resolve("https://api.example.com/pub/", "https://id.example.com/realms/wg/", "wg-id", "key",
    ...             environ={}, env_file=None, use_keyring=False)  # doctest: +SKIP
    """
    client_secret = _wrap("client_secret", client_secret)
    environ = _MaskedEnv(os.environ if environ is None else environ)
    check_option_names(options)
    given = {
        "base_url": base_url,
        "auth_url": auth_url,
        "client_id": client_id,
        "client_secret": client_secret,
        "jdbc_url": jdbc_url,
    }
    values, sources = _gather(given, environ, env_file, use_keyring)
    default_context, context_source = query_context(context, environ=environ, env_file=env_file)
    if default_context:
        sources["context"] = context_source

    required = [k for k in ("base_url", "auth_url", "client_id", "client_secret") if k not in values]
    if required:
        env_names = ", ".join(ENV_VARS[k] for k in required)
        raise ConfigurationError(
            f"Missing connection value(s): {', '.join(required)}.",
            hint=f"Pass them to connect(), or set {env_names} in the environment or a .env file. "
            + _ADMIN_HINT,
        )
    cid = values["client_id"]
    if not isinstance(cid, str) or not cid.strip():
        raise ConfigurationError(f"client_id must be a non-empty string, got {type(cid).__name__}.")
    secret = values["client_secret"]
    if not isinstance(secret, Secret):
        raise ConfigurationError(f"client_secret must be a string, got {type(secret).__name__}.")

    base = normalise_base_url(values["base_url"])
    if "jdbc_url" in values:
        jdbc = _check_jdbc_url(values["jdbc_url"])
    else:
        jdbc, sources["jdbc_url"] = derive_jdbc_url(base), "derived"
    settings = Settings(
        base_url=base,
        auth_url=normalise_auth_url(values["auth_url"]),
        client_id=cid.strip(),
        client_secret=secret,
        jdbc_url=jdbc,
        sql_http_url=sql_http_url_from_jdbc(jdbc),
        timeout=_parse_timeout(options.get("timeout", Settings.timeout)),
        retries=_option(options, "retries", int),
        backoff_factor=_option(options, "backoff_factor", float),
        backoff_max=_option(options, "backoff_max", float),
        renew_before=_option(options, "renew_before", float),
        context=default_context,
        sources=dict(sources),
    )
    logger.debug("settings resolved: %r (sources %s)", settings, sources)  # the repr masks every secret
    return settings


#: offline cache option -> environment variable holding it
CACHE_ENV_VARS: Mapping[str, str] = {"cache": "PM_CACHE", "replay": "PM_REPLAY", "cache_dir": "PM_CACHE_DIR"}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True)
class CacheSettings:
    """How a connection uses the offline result cache (see :mod:`pm_notebook._cache`).

    :param cache: store every SQL result and REST listing in the cache folder.
    :param replay: answer from the cache only: no network, no credentials needed.
    :param cache_dir: the cache folder (relative paths are relative to the working directory).
    :param sources: where each value came from (``argument``, ``env``, ``default``).
    """

    cache: bool = False
    replay: bool = False
    cache_dir: str = ".pm_cache"
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)


def _flag(name: str, value: Any, source: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    where = f"{CACHE_ENV_VARS[name]}={value!r:.40}" if source == "env" else f"{name}={value!r:.40}"
    raise ConfigurationError(
        f"{where} is not a yes/no value.", hint=f"Use {name}=True/False, or {CACHE_ENV_VARS[name]}=1 or 0."
    )


def cache_settings(
    cache: bool | None = None,
    replay: bool | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> CacheSettings:
    """Resolve the offline cache options: the argument, else ``PM_CACHE`` / ``PM_REPLAY`` / ``PM_CACHE_DIR``.

    ``PM_CACHE=1`` stores every result a notebook queries; ``PM_REPLAY=1`` answers every query from the
    store, so a notebook that connects with a bare ``pm_notebook.connect()`` needs no change for either.

    :raises ConfigurationError: a flag is not a yes/no value, or the folder is not a path.

    >>> cache_settings(environ={"PM_REPLAY": "1"}).replay
    True
    """
    environ = os.environ if environ is None else environ
    given = {"cache": cache, "replay": replay, "cache_dir": cache_dir}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value in given.items():
        env_value = environ.get(CACHE_ENV_VARS[key])
        if value is not None:
            values[key], sources[key] = value, "argument"
        elif env_value is not None and env_value.strip():
            values[key], sources[key] = env_value.strip(), "env"
        else:
            values[key], sources[key] = getattr(CacheSettings, key), "default"
    folder = values["cache_dir"]
    if not isinstance(folder, (str, os.PathLike)) or not str(folder).strip():
        raise ConfigurationError(
            f"cache_dir must be a folder path, got {type(folder).__name__} {folder!r:.40}.",
            hint="For example connect(cache_dir='.pm_cache') or PM_CACHE_DIR=.pm_cache.",
        )
    return CacheSettings(
        cache=_flag("cache", values["cache"], sources["cache"]),
        replay=_flag("replay", values["replay"], sources["replay"]),
        cache_dir=os.fspath(folder),
        sources=sources,
    )


def replay_settings(recorded: Mapping[str, Any] | None, context: Mapping[str, Any] | None = None) -> Settings:
    """Connection values for a replay connection made without any: those recorded beside the cache, if any.

    They only name the service (reprs, ``%pmsql`` status); replay never sends a request. The secret is
    empty: it is neither recorded nor needed. *context* is the default query context (checked, see
    :func:`query_context`): a stored result is found by the context it was run with.
    """
    recorded = recorded or {}
    base = recorded.get("base_url") or "http://replay.invalid"
    auth = recorded.get("auth_url") or base + "/realms/replay"
    jdbc = recorded.get("jdbc_url") or derive_jdbc_url(base)
    try:
        return Settings(
            base_url=normalise_base_url(base),
            auth_url=normalise_auth_url(auth),
            client_id=str(recorded.get("client_id") or "replay"),
            client_secret=Secret(""),
            jdbc_url=_check_jdbc_url(jdbc),
            sql_http_url=sql_http_url_from_jdbc(jdbc),
            context=dict(context or {}),
            sources={k: "cache" for k in ("base_url", "auth_url", "client_id", "jdbc_url")},
        )
    except ConfigurationError:  # a hand-edited record: fall back to the neutral placeholder
        if not recorded:
            raise
        return replay_settings(None, context)
