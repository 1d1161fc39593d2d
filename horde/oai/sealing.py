"""Sealed text the Horde hands a client and reads back later: Responses' `reasoning.encrypted_content`.

AES-256-GCM from the `cryptography` package (authenticated encryption with associated data): the client can
neither read a sealed item nor forge or alter one, and the associated data binds it to one user and one
purpose, so another user's item does not open. A token is URL-safe base64 of a version byte, a random 96-bit
nonce and the ciphertext with its tag.

The key is derived (HKDF-SHA256) from the server's secret (horde/storage/secrets.py: HORDE_SECRET_KEY when it is
set, else a secret made once, on the first start, and kept in the database), so every server process seals and
opens alike. Each process derives it once and keeps it.
"""

from __future__ import annotations

import base64
import binascii
import os
import threading
import weakref
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from horde.storage.database import Database
from horde.storage.secrets import server_secret

if TYPE_CHECKING:
    from horde.runtime import Runtime

KEY_BYTES = 32
NONCE_BYTES = 12
VERSION = b"\x01"
KEY_INFO = b"horde seal v1"
#: The purpose a token is sealed for, in its associated data with the user's id.
REASONING = "reasoning"

_keys: weakref.WeakKeyDictionary[Database, bytes] = weakref.WeakKeyDictionary()
_keys_lock = threading.Lock()


class SealBroken(ValueError):
    """A token that does not open: altered, forged, sealed for another user or purpose, or not a token."""


def seal(key: bytes, user_id: int, purpose: str, text: str) -> str:
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, text.encode(), _associated(user_id, purpose))
    return base64.urlsafe_b64encode(VERSION + nonce + sealed).decode()


def open_sealed(key: bytes, user_id: int, purpose: str, token: str) -> str:
    """The text of `token`, or SealBroken."""
    try:
        raw = base64.urlsafe_b64decode(token.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise SealBroken("not a sealed token") from None
    if raw[:1] != VERSION or len(raw) < 1 + NONCE_BYTES + 16:
        raise SealBroken("not a sealed token")
    nonce, sealed = raw[1 : 1 + NONCE_BYTES], raw[1 + NONCE_BYTES :]
    try:
        return AESGCM(key).decrypt(nonce, sealed, _associated(user_id, purpose)).decode()
    except (InvalidTag, UnicodeDecodeError):
        raise SealBroken("the token does not open for this user") from None


def key(runtime: Runtime) -> bytes:
    """This server's sealing key (read once per process)."""
    cached = _keys.get(runtime.db)
    if cached is not None:
        return cached
    with _keys_lock:
        cached = _keys.get(runtime.db)
        if cached is None:
            cached = _keys[runtime.db] = derive_key(server_secret(runtime.db, runtime.settings.secret_key))
    return cached


def derive_key(secret: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=KEY_INFO).derive(secret)


def _associated(user_id: int, purpose: str) -> bytes:
    return f"{purpose}:{user_id}".encode()
