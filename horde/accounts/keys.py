"""API keys: generated once, shown once, stored only as a SHA-256 hash.

New keys take the AI Horde's form (22 URL-safe characters from 16 random bytes), which its
clients and worker bridges check; keys issued earlier (32 hex characters) keep working, since
only their hash is looked up.
"""

from __future__ import annotations

import hashlib
import secrets

ANONYMOUS_API_KEY = "0000000000"
ANONYMOUS_USERNAME = "Anonymous"
API_KEY_BYTES = 16


def new_api_key() -> str:
    return secrets.token_urlsafe(API_KEY_BYTES)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()
