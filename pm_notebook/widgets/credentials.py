"""``CredentialWidget``: paste the workgroup's connection values, connect, and never leak the secret.

Where the secret lives: only kernel-side, in a :class:`~pm_notebook._secret.Secret`. The password
field syncs on change only (not per keystroke); as soon as its value reaches the kernel it is moved
into the ``Secret`` and the field is emptied, so neither the widget state saved into the ``.ipynb``
nor any output or log line ever holds it. A secret found in the environment, ``.env`` or the
keyring is never sent to the frontend at all: the field only says where one was found.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from .. import config
from .._current import get_current, set_current
from .._secret import Secret
from ..connection import Connection, connect
from ..errors import ConfigurationError
from ._common import NO_WIDGETS, Jobs, StatusLine, close_children, describe_error, esc

__all__ = ["CredentialWidget"]

log = logging.getLogger(__name__)

_FIELDS = ("base_url", "auth_url", "client_id", "jdbc_url")
_LABELS = {
    "base_url": "API URL",
    "auth_url": "Auth URL",
    "client_id": "Workgroup ID",
    "client_secret": "Workgroup key",
    "jdbc_url": "JDBC URL",
}
_PLACEHOLDERS = {
    "base_url": "https://<api host>  (workgroup settings, Open API tab)",
    "auth_url": "https://<identity host>/realms/<realm>",
    "client_id": "workgroup technical ID",
    "jdbc_url": "optional: derived from the API URL (port 8082) when empty",
}
_SECRET_EMPTY = "workgroup private key"


def token_expiry(conn: Connection) -> float | None:
    """Epoch seconds at which *conn*'s current access token expires, or ``None`` before the first token.

    Reads the token provider without asking for a new token (no I/O).
    """
    left = conn.tokens.seconds_left()
    return None if left is None else time.time() + left


def _format_expiry(expires_at: float | None, now: float) -> str:
    if expires_at is None:
        return ""
    left = int(expires_at - now)
    at = _dt.datetime.fromtimestamp(expires_at, _dt.timezone.utc).strftime("%H:%M:%S UTC")
    if left <= 0:
        return f"token expired at {at}; a new one is fetched on the next call"
    return f"token valid until {at} ({left // 60} min {left % 60:02d} s left)"


class CredentialWidget(w.VBox):
    """A form for the workgroup's connection values with a Connect button and a status line.

    After a successful connect the connection becomes the notebook's current one
    (``%%pmsql`` and :class:`~pm_notebook.widgets.ProjectBrowser` use it) and :attr:`connection`
    holds it; connecting again closes the connection the form made before. Nothing is read or
    sent in ``__init__``: the fields are prefilled from the environment, ``.env`` and the keyring
    when the widget is first displayed (or by :meth:`prefill`); the network is used only by
    :meth:`submit` / the Connect button.

    :param base_url: initial API URL (else prefilled).
    :param auth_url: initial auth realm URL (else prefilled).
    :param client_id: initial workgroup ID (else prefilled).
    :param jdbc_url: initial JDBC URL (optional; derived from the API URL when empty).
    :param connect_options: extra keyword arguments for :func:`pm_notebook.connect` (``timeout=``, ...).
    :param countdown: refresh the token expiry in the status line every second while connected.

    >>> from pm_notebook.widgets import CredentialWidget
    >>> form = CredentialWidget()   # doctest: +SKIP
    >>> form                        # doctest: +SKIP  (fill the fields, click Connect)
    """

    def __init__(
        self,
        *,
        base_url: str = "",
        auth_url: str = "",
        client_id: str = "",
        jdbc_url: str = "",
        connect_options: dict[str, Any] | None = None,
        countdown: bool = True,
        **kwargs: Any,
    ) -> None:
        initial = {"base_url": base_url, "auth_url": auth_url, "client_id": client_id, "jdbc_url": jdbc_url}
        style = {"description_width": "8em"}
        layout = w.Layout(width="44em")
        self.inputs: dict[str, w.Text] = {
            name: w.Text(
                value=initial[name],
                description=_LABELS[name],
                placeholder=_PLACEHOLDERS[name],
                style=style,
                layout=layout,
            )
            for name in _FIELDS
        }
        # continuous_update=False: the key crosses to the kernel once (on change), not per keystroke.
        self.secret_input = w.Password(
            value="",
            description=_LABELS["client_secret"],
            placeholder=_SECRET_EMPTY,
            continuous_update=False,
            style=style,
            layout=layout,
        )
        self.remember = w.Checkbox(value=False, description="Remember in the OS keyring", indent=False)
        self.connect_button = w.Button(description="Connect", button_style="primary", icon="plug")
        self.status = StatusLine()
        self.status.show("Not connected. Fill in the values from the workgroup settings page, then Connect.")
        super().__init__(
            children=[
                w.HTML("<b>Process-mining workgroup</b>"),
                self.inputs["base_url"],
                self.inputs["auth_url"],
                self.inputs["client_id"],
                self.secret_input,
                self.inputs["jdbc_url"],
                w.HBox([self.connect_button, self.remember]),
                self.status,
            ],
            **kwargs,
        )
        self.add_class("pm-credentials")
        self.connection: Connection | None = None
        self.last_error: BaseException | None = None
        self._secret: Secret | None = None
        self._secret_source = ""
        self._connect_options = dict(connect_options or {})
        self._prefilled = False
        self._jobs = Jobs("credentials")
        self._countdown_enabled = countdown
        self._countdown_stop: threading.Event | None = None
        self._connected_text = ""
        self._callbacks: list[Callable[[Connection], None]] = []
        self.secret_input.observe(self._take_secret, names="value")
        self.connect_button.on_click(lambda _b: self._connect(wait=False))

    # --- public API ----------------------------------------------------------------------------
    @property
    def has_secret(self) -> bool:
        """Whether a workgroup key is held kernel-side (typed, or found in env/.env/keyring)."""
        return bool(self._secret)

    def set_secret(self, value: str | Secret) -> None:
        """Hold *value* as the workgroup key kernel-side (what typing into the field does)."""
        secret = Secret(value)
        self._secret = secret if secret.reveal().strip() else None
        self._secret_source = "typed" if self._secret else ""
        self.secret_input.placeholder = self._secret_placeholder()

    def prefill(self, environ: dict[str, str] | None = None) -> None:
        """Fill empty fields from ``PM_*`` env vars, ``.env``, the keyring; the secret stays kernel-side."""
        self._prefilled = True
        found: dict[str, Any] = {}
        sources: dict[str, str] = {}
        try:
            settings = config.resolve(environ=environ)
        except ConfigurationError:
            # Only part of the values is configured: show what the environment has, leave the rest empty.
            env = os.environ if environ is None else environ
            for key, var in config.ENV_VARS.items():
                if env.get(var, "").strip():
                    found[key], sources[key] = env[var].strip(), "env"
        else:
            found = {key: getattr(settings, key) for key in (*_FIELDS, "client_secret")}
            sources = dict(settings.sources)
            if sources.get("jdbc_url") == "derived":
                found.pop("jdbc_url")
        for key in _FIELDS:
            if key in found and not self.inputs[key].value.strip():
                self.inputs[key].value = str(found[key])
        if "client_secret" in found and self._secret is None:
            self._secret = Secret(found["client_secret"])
            self._secret_source = sources.get("client_secret", "configuration").split(":", 1)[0]
            self.secret_input.placeholder = self._secret_placeholder()
        log.debug("credential form prefilled from %s", sorted(set(sources.values())))

    def submit(self) -> Connection | None:
        """Connect with the current field values, as the Connect button does, and wait for the result.

        :returns: the new connection, or ``None`` when it failed (then :attr:`last_error` and the
            status line say why).
        """
        return self._connect(wait=True)

    def on_connect(self, callback: Callable[[Connection], None]) -> None:
        """Call ``callback(connection)`` after every successful connect."""
        self._callbacks.append(callback)

    def wait(self, timeout: float = 30.0) -> bool:
        """Wait for a Connect started from the frontend to finish (tests, scripts)."""
        return self._jobs.wait(timeout)

    @property
    def status_text(self) -> str:
        """The status line as plain text."""
        return self.status.text

    def close(self) -> None:
        """Stop the expiry countdown and close the widget and its parts (the connection stays usable)."""
        if getattr(self, "_jobs", None) is not None:  # also called from __del__ after a failed __init__
            self._stop_countdown()
            self._jobs.cancel("connect")
        close_children(self)
        super().close()

    # --- internals -----------------------------------------------------------------------------
    def _secret_placeholder(self) -> str:
        if not self._secret:
            return _SECRET_EMPTY
        where = {
            "typed": "entered",
            "env": "from PM_CLIENT_SECRET",
            ".env": "from .env",
            "keyring": "from keyring",
        }
        return "\u2022" * 6 + f" {where.get(self._secret_source, 'set')} (kept in the kernel only)"

    def _take_secret(self, change: dict[str, Any]) -> None:
        value = change["new"]
        if not value:
            return
        self.set_secret(value)
        self.secret_input.value = ""

    def _values(self) -> dict[str, Any]:
        values: dict[str, Any] = {k: (self.inputs[k].value.strip() or None) for k in _FIELDS}
        values["client_secret"] = self._secret
        missing = [
            _LABELS[k] for k in ("base_url", "auth_url", "client_id", "client_secret") if not values[k]
        ]
        if missing:
            raise ConfigurationError(
                f"Missing: {', '.join(missing)}.",
                hint="Copy them from the workgroup settings page (Open API tab, for workgroup admins).",
            )
        return values

    def _connect(self, *, wait: bool) -> Connection | None:
        self._stop_countdown()
        try:
            values = self._values()
        except ConfigurationError as exc:
            self._failed(exc)
            return None
        self.connect_button.disabled = True
        self.status.show(f"Connecting to {values['base_url']} \u2026", "busy")
        remember = self.remember.value

        def work() -> tuple[Connection, Any]:
            conn = connect(**values, **self._connect_options)
            try:
                workgroup = conn.workgroup()  # fetches a token: proves the id/key and the licence
            except BaseException:
                conn.close()
                raise
            return conn, workgroup

        def done(result: tuple[Connection, Any]) -> None:
            conn, workgroup = result
            previous, self.connection, self.last_error = self.connection, conn, None
            if previous is not None and previous is not conn:
                if get_current() is previous:
                    set_current(None)
                previous.close()
            set_current(conn)
            # the workgroup's name when it has one: its id is in the field above
            name = getattr(workgroup, "name", None) or conn.settings.client_id
            self._connected_text = f"Connected to workgroup {name!r}"
            if remember:
                self._connected_text += "; " + self._remember(conn)
            self.connect_button.disabled = False
            self._show_connected()
            self._start_countdown()
            for callback in self._callbacks:
                callback(conn)

        result = self._jobs.run("connect", work, done, self._failed, wait=wait)
        return result[0] if result else None

    def _failed(self, exc: BaseException) -> None:
        self.last_error = exc
        self.connect_button.disabled = False
        self.status.show(f"Not connected: {describe_error(exc)}", "error")

    def _remember(self, conn: Connection) -> str:
        """Store the values in the OS keyring where :func:`pm_notebook.config.resolve` looks for them."""
        try:
            import keyring
            from keyring.errors import KeyringError
        except ImportError:
            return "not remembered: the keyring package is not installed (pip install 'pm-notebook[keyring]')"
        s = conn.settings
        try:
            for key in _FIELDS:
                keyring.set_password(config.KEYRING_SERVICE, config.ENV_VARS[key], getattr(s, key))
            # under the variable name (everything from the keyring) and under the client id (the
            # workgroup named by PM_CLIENT_ID), the two places resolve() looks
            for user in (config.ENV_VARS["client_secret"], s.client_id):
                keyring.set_password(config.KEYRING_SERVICE, user, s.client_secret.reveal())
        except (KeyringError, RuntimeError, OSError) as exc:
            log.warning("could not store the connection values in the keyring: %s", type(exc).__name__)
            return f"not remembered: the OS keyring refused ({type(exc).__name__})"
        return "remembered in the OS keyring"

    def _show_connected(self) -> None:
        conn = self.connection
        if conn is None:
            return
        expiry = _format_expiry(token_expiry(conn), time.time())
        self.status.show(f"{self._connected_text}; {expiry}." if expiry else f"{self._connected_text}.", "ok")

    def _start_countdown(self) -> None:
        if not self._countdown_enabled:
            return
        stop = self._countdown_stop = threading.Event()
        conn = self.connection

        def tick() -> None:
            # Ends when the widget closes, another connect starts, or the connection is closed.
            while not stop.wait(1.0):
                if self.connection is not conn or getattr(conn, "closed", False):
                    return
                self._show_connected()

        threading.Thread(target=tick, name="pm-credentials-countdown", daemon=True).start()

    def _stop_countdown(self) -> None:
        if self._countdown_stop is not None:
            self._countdown_stop.set()
            self._countdown_stop = None

    # --- display -------------------------------------------------------------------------------
    def _fallback_text(self) -> str:
        return f"pm_notebook credential form\n{NO_WIDGETS}\nOr connect in code: pm_notebook.connect()"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        if not self._prefilled:
            self.prefill()
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = self._fallback_text()
        return data

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"{self._fallback_text()}\nState: {self.status.text}")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={self.inputs[k].value!r}" for k in ("base_url", "client_id"))
        secret = "set" if self._secret else "not set"
        return f"CredentialWidget({fields}, secret={secret}, status={self.status.text!r})"

    def _repr_html_(self) -> str:
        return f"<pre>{esc(self._fallback_text())}</pre>"
