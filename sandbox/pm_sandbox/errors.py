"""HTTP errors raised by the sandbox's handlers; each one knows its status, JSON body and headers.

Handlers just ``raise``; :func:`pm_sandbox.app.create_app` renders every one in one place
(werkzeug style), so the wire format of an error lives here and nowhere else.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "OAuthError", "PlainTextError", "SandboxHTTPError"]


class SandboxHTTPError(Exception):
    """An error response: ``status``, a JSON-serialisable ``body`` (or plain text) and extra ``headers``."""

    def __init__(
        self, status: int, body: dict[str, Any] | str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(f"{status} {body}")
        self.status = status
        self.body = body
        self.headers = headers or {}


class OAuthError(SandboxHTTPError):
    """A Keycloak-style token-endpoint error: ``{"error": ..., "error_description": ...}``."""

    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(
            status,
            {"error": error, "error_description": description},
            {"Cache-Control": "no-store", "Pragma": "no-cache"},
        )


class ApiError(SandboxHTTPError):
    """A public-API error: ``{"status", "error", "message"}``; 401s carry the RFC 6750 challenge."""

    _REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}

    def __init__(
        self, status: int, message: str, *, error: str | None = None, description: str | None = None
    ) -> None:
        headers = {}
        if status == 401:
            desc = (description or message).replace('"', "'")
            headers["WWW-Authenticate"] = (
                f'Bearer realm="pub", error="invalid_token", error_description="{desc}"'
            )
        super().__init__(
            status,
            {"status": status, "error": error or self._REASONS.get(status, "Error"), "message": message},
            headers,
        )


class PlainTextError(SandboxHTTPError):
    """An error whose body is plain text, not JSON: the service answers some failures that way (the
    completed-cases route without an END CASE rule, which the vendor's KNIME nodes detect by the
    body failing to parse as JSON)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(status, text)
