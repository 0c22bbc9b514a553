"""Failing calls whose tracebacks are printed *with locals*, run inside a notebook kernel or the demo's
process while its sandbox is still up (imported by tests/security/test_secrets_grep.py's injected code).

Also writes the needles (every workgroup secret and every token the sandbox issued) and a copy of the
sandbox's log next to the other files the test greps."""

from __future__ import annotations

import json
import logging
import os
import shutil
import traceback
from pathlib import Path

import pm_notebook


def _verbose(exc: BaseException) -> str:
    return "".join(traceback.TracebackException.from_exception(exc, capture_locals=True).format())


def probe(sb, out: Path, transports: tuple[str, ...] = ("druid", "avatica", "jdbc")) -> str:
    """Provoke failures on every path (REST 401/503, bad SQL per transport, a wrong secret, an unreachable
    host) and return their verbose tracebacks, reprs and error texts as one string."""
    logging.getLogger("pm_notebook").setLevel(logging.DEBUG)
    # As the notebooks do: the values go to the environment, so no frame of this probe holds the secret.
    os.environ.update(sb.env)
    texts: list[str] = []
    conn = pm_notebook.connect(use_keyring=False, retries=1, backoff_factor=0.01)
    texts += [repr(conn), repr(conn.settings), repr(conn.tokens), str(conn.settings.client_secret)]
    conn.workgroup()
    sb.fault("/pub/workgroups", status=401, times=2)  # re-auth, then TokenRejected
    sb.fault("/pub/projects", status=503, times=5)
    for call in (conn.workgroup, conn.projects):
        try:
            call()
        except pm_notebook.PMError as exc:
            texts.append(_verbose(exc))
    sb.clear_faults()
    for transport in transports:
        try:
            conn.query("SELECT no_such_column FROM no_such_table WHERE x = ?", [1], transport=transport)
        except pm_notebook.PMError as exc:
            texts.append(_verbose(exc))
    conn.close()
    wrong = pm_notebook.connect(client_secret="wrong-" + "x" * 8, use_keyring=False)
    for call in (wrong.projects, lambda: wrong.query("SELECT 1", transport="avatica")):
        try:
            call()
        except pm_notebook.PMError as exc:
            texts.append(_verbose(exc))
    wrong.close()
    text = "\n".join(texts)
    (out / "probe.txt").write_text(text, encoding="utf-8")
    needles = {"secrets": [wg.client_secret for wg in sb.workgroups.values()], "tokens": sb.issued_tokens()}
    (out / "needles.json").write_text(json.dumps(needles), encoding="utf-8")
    shutil.copyfile(sb.log_path, out / "sandbox.log")
    return text
