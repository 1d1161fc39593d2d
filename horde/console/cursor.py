"""The ledger's opaque cursor: where the next page starts (the last entry shown) and the balance before that entry,
signed so that a client cannot move the balance it carries.

HMAC-SHA256 keyed by a key derived from the server's secret (horde/storage/secrets.py) for this purpose alone, so
no other token of the Horde opens it, nor it another. A cursor names its user: another user's cursor is refused.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import threading
import weakref
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from horde import errors
from horde.storage.database import Database
from horde.storage.secrets import server_secret

KEY_INFO = b"horde console ledger cursor v1"
#: The longest cursor read: the figures it carries fit well within it.
MAX_CURSOR_CHARS = 256
_keys: weakref.WeakKeyDictionary[Database, bytes] = weakref.WeakKeyDictionary()
_keys_lock = threading.Lock()


@dataclass(frozen=True)
class Cursor:
    """The next page holds the entries of `user_id` before (`created_at`, `entry_id`); the balance after the first
    of them is `balance`."""

    user_id: int
    created_at: dt.datetime
    entry_id: int
    balance: int


def encode(db: Database, configured_secret: str | None, cursor: Cursor) -> str:
    body = f"{cursor.user_id}|{cursor.created_at.isoformat()}|{cursor.entry_id}|{cursor.balance}".encode()
    return f"{_b64(body)}.{_b64(_mac(db, configured_secret, body))}"


def decode(db: Database, configured_secret: str | None, raw: str, user_id: int) -> Cursor:
    """The cursor `raw` of user `user_id`, or 400 `param: cursor` for anything this server did not sign for them."""
    try:
        if len(raw) > MAX_CURSOR_CHARS:
            raise ValueError("too long")
        encoded_body, encoded_mac = raw.split(".")
        body = _unb64(encoded_body)
        if not hmac.compare_digest(_unb64(encoded_mac), _mac(db, configured_secret, body)):
            raise ValueError("not signed here")
        owner, created_at, entry_id, balance = body.decode().split("|")
        cursor = Cursor(int(owner), dt.datetime.fromisoformat(created_at), int(entry_id), int(balance))
    except (ValueError, UnicodeError, binascii.Error):
        raise errors.BadRequest("Invalid 'cursor': pass back a next_cursor this server gave.", param="cursor") from None
    if cursor.user_id != user_id:
        raise errors.BadRequest("Invalid 'cursor': it belongs to another user's ledger.", param="cursor")
    return cursor


def _mac(db: Database, configured_secret: str | None, body: bytes) -> bytes:
    return hmac.new(_key(db, configured_secret), body, hashlib.sha256).digest()


def _key(db: Database, configured_secret: str | None) -> bytes:
    cached = _keys.get(db)
    if cached is None:
        with _keys_lock:
            secret = server_secret(db, configured_secret)
            cached = _keys[db] = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=KEY_INFO).derive(secret)
    return cached


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not base64")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
