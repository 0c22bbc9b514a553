"""Deterministic ids: the sandbox's ids are the same on every run with the same seed."""

from __future__ import annotations

import hashlib
import uuid

__all__ = ["hex32", "stable_uuid"]

_NAMESPACE = uuid.UUID("6f1d8a52-3c1e-4f59-9a63-0b7c5de0a1e4")


def stable_uuid(*parts: object) -> str:
    """A UUID derived from *parts* only: the sandbox's ids are the same on every run with the same seed."""
    return str(uuid.uuid5(_NAMESPACE, "/".join(str(p) for p in parts)))


def hex32(*parts: object) -> str:
    """32 hex digits derived from *parts* only (graph keys, edge ids)."""
    return hashlib.md5("/".join(str(p) for p in parts).encode(), usedforsecurity=False).hexdigest()
