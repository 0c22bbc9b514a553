"""The plain client-credentials request, as the service's docs show it, for tests that need a token."""

from __future__ import annotations

import requests


def client_credentials(sandbox, key: str = "demo") -> requests.Response:
    """POST the form-encoded client-credentials grant for workgroup *key*; return the raw response."""
    wg = sandbox.workgroups[key]
    form = {"grant_type": "client_credentials", "client_id": wg.client_id, "client_secret": wg.client_secret}
    return requests.post(f"{sandbox.auth_url}/protocol/openid-connect/token", data=form, timeout=60)
