"""The server's secret: what every server process shares to seal and sign what it hands a client to read back
(Responses' sealed reasoning, the sign-in cookies), HORDE_SECRET_KEY when set, else made once in the database.

It lives with the storage, below every domain that derives a key of its own from it (horde/oai/sealing.py,
horde/registration/signin.py): each derives with its own purpose (HKDF's info), so no key opens another's tokens.
Each process reads the secret once and keeps it.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
import threading
import weakref

from sqlalchemy import DateTime, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from horde.storage.database import Base, Database, insert_ignoring_duplicates
from horde.timeutil import utcnow

SECRET_NAME = "seal"
SECRET_BYTES = 32


class ServerSecret(Base):
    """A secret every server process shares, made once on the first start."""

    __tablename__ = "server_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: URL-safe base64 of random bytes.
    value: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


_secrets: weakref.WeakKeyDictionary[Database, bytes] = weakref.WeakKeyDictionary()
_secrets_lock = threading.Lock()


def server_secret(db: Database, configured: str | None) -> bytes:
    """HORDE_SECRET_KEY (`configured`) when set, else the database's secret; read once per process and database."""
    if configured:
        return configured.encode()
    cached = _secrets.get(db)
    if cached is not None:
        return cached
    with _secrets_lock:
        cached = _secrets.get(db)
        if cached is None:
            with db.transaction() as session:
                cached = _secrets[db] = stored_secret(session)
    return cached


def stored_secret(session: Session) -> bytes:
    """The database's secret, made on the first call (processes starting at once keep the first one written)."""
    made = base64.urlsafe_b64encode(secrets.token_bytes(SECRET_BYTES)).decode()
    row = {"name": SECRET_NAME, "value": made, "created_at": utcnow()}
    insert_ignoring_duplicates(session, ServerSecret, [row], "name")
    value = session.scalar(select(ServerSecret.value).where(ServerSecret.name == SECRET_NAME))
    assert value is not None, "written above, or by a process first"
    return base64.urlsafe_b64decode(value)
