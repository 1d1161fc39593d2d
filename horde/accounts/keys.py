"""API keys: generated once, shown once, stored only as a SHA-256 hash."""

from __future__ import annotations

import hashlib
import secrets

ANONYMOUS_API_KEY = "0000000000"
ANONYMOUS_USERNAME = "Anonymous"
API_KEY_BYTES = 16


def new_api_key() -> str:
    return secrets.token_hex(API_KEY_BYTES)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()
