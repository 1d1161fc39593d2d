"""The web page's sign-in sessions after an OpenID Connect sign-in, and the short-lived state of a sign-in under way.

A session is a row (sign_in_sessions) named by the SHA-256 of a random token; the browser holds the token in the
cookie SESSION_COOKIE, signed and timestamped with a key derived from the server's secret
(horde/storage/secrets.py: HORDE_SECRET_KEY or the database's), HttpOnly, SameSite=Strict, for at most
SIGN_IN_SESSION_S. A change made through the session also needs its CSRF token in the X-CSRF-Token header (the page
reads it from GET /api/v2/oidc/session, which another site cannot read). Signing out deletes the row.

The sign-in under way (state, nonce, PKCE verifier) travels in its own signed cookie, FLOW_COOKIE, for at most
FLOW_S: any server process can finish the sign-in another one began.
"""

from __future__ import annotations

import datetime as dt
import hmac
import secrets
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from itsdangerous import BadData, URLSafeTimedSerializer
from sqlalchemy import delete, select, update

from horde import errors
from horde.accounts.auth import forget_identities
from horde.accounts.keys import hash_api_key
from horde.accounts.models import User
from horde.accounts.names import alias
from horde.accounts.rotation import replace_api_key
from horde.registration.models import SignInSession
from horde.storage.database import Database
from horde.storage.secrets import server_secret
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.accounts.parts import AccountsParts

SESSION_COOKIE = "horde_session"
FLOW_COOKIE = "horde_oidc_flow"
#: A sign-in session's life; signing in again starts a new one.
SIGN_IN_SESSION_S = 8 * 3600
#: How long a browser may take at the provider between /oidc/login and /oidc/callback.
FLOW_S = 600
TOKEN_BYTES = 32
CSRF_HEADER = "X-CSRF-Token"
KEY_INFO = b"horde sign-in v1"
#: The longest cookie value read: a signed session token or sign-in state is about 200 characters.
MAX_COOKIE_CHARS = 2048

_keys: weakref.WeakKeyDictionary[Database, bytes] = weakref.WeakKeyDictionary()
_keys_lock = threading.Lock()


@dataclass(frozen=True)
class SignedIn:
    """A live sign-in session, with its user as the page shows it."""

    token_hash: str
    user_id: int
    username: str
    kudos: int
    new_account: bool
    csrf_token: str
    expires_at: dt.datetime

    # What the authorization table reads of a caller (horde/authz/roles.py Caller): the session acts for its user,
    # with no role (the table's row for the session's routes: Action.MANAGE_SIGN_IN).
    @property
    def id(self) -> int:
        return self.user_id

    @property
    def role(self) -> str:
        return "user"

    @property
    def anonymous(self) -> bool:
        return False

    def to_json(self) -> dict:
        return {
            "signed_in": True,
            "user": {"id": self.user_id, "username": self.username, "kudos": float(self.kudos)},
            "new_account": self.new_account,
            "csrf_token": self.csrf_token,
            "expires_at": self.expires_at.isoformat(timespec="seconds") + "Z",
        }


def _key(runtime: AccountsParts) -> bytes:
    cached = _keys.get(runtime.db)
    if cached is None:
        with _keys_lock:
            secret = server_secret(runtime.db, runtime.settings.secret_key)
            hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=KEY_INFO)
            cached = _keys[runtime.db] = hkdf.derive(secret)
    return cached


def _signer(runtime: AccountsParts, purpose: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(_key(runtime), salt=purpose)


def signed(runtime: AccountsParts, purpose: str, value: Any) -> str:
    """`value` (JSON) signed and timestamped for `purpose` (a cookie's name)."""
    return _signer(runtime, purpose).dumps(value)


def unsigned(runtime: AccountsParts, purpose: str, cookie: str | None, max_age_s: int) -> Any:
    """The value `signed` made for `purpose`, or None when the cookie is missing, altered, too long or too old."""
    if not cookie or len(cookie) > MAX_COOKIE_CHARS:
        return None
    try:
        return _signer(runtime, purpose).loads(cookie, max_age=max_age_s)
    except BadData:
        return None


def start(runtime: AccountsParts, user_id: int, *, new_account: bool) -> tuple[str, dt.datetime]:
    """A new session of `user_id`: the cookie's value and when the session ends."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    expires_at = utcnow() + dt.timedelta(seconds=SIGN_IN_SESSION_S)
    with runtime.db.transaction() as session:
        session.add(
            SignInSession(
                token_hash=hash_api_key(token),
                user_id=user_id,
                csrf_token=secrets.token_urlsafe(TOKEN_BYTES),
                new_account=new_account,
                expires_at=expires_at,
            )
        )
    return signed(runtime, SESSION_COOKIE, token), expires_at


def _token(runtime: AccountsParts, cookie: str | None) -> str | None:
    token = unsigned(runtime, SESSION_COOKIE, cookie, SIGN_IN_SESSION_S)
    return token if isinstance(token, str) else None


def current(runtime: AccountsParts, cookie: str | None) -> SignedIn | None:
    """The live session the cookie names, or None."""
    token = _token(runtime, cookie)
    if token is None:
        return None
    with runtime.db.read() as session:
        row = session.execute(
            select(SignInSession, User.username, User.kudos)
            .join(User, User.id == SignInSession.user_id)
            .where(SignInSession.token_hash == hash_api_key(token), SignInSession.expires_at > utcnow())
        ).first()
    if row is None:
        return None
    held, username, kudos = row
    return SignedIn(
        token_hash=held.token_hash,
        user_id=held.user_id,
        username=alias(username, held.user_id, anonymous=False),
        kudos=kudos,
        new_account=held.new_account,
        csrf_token=held.csrf_token,
        expires_at=held.expires_at,
    )


def required(runtime: AccountsParts, cookie: str | None, csrf_token: str | None) -> SignedIn:
    """The live session, for a change: 401 SignInRequired without one, 403 InvalidCsrfToken without its token."""
    signed_in = current(runtime, cookie)
    if signed_in is None:
        raise errors.SignInRequired("Sign in through the OpenID Connect provider first (/oidc/login).")
    if not csrf_token or not hmac.compare_digest(csrf_token.encode(), signed_in.csrf_token.encode()):
        raise errors.InvalidCsrfToken(
            f"Send the session's csrf_token (GET /api/v2/oidc/session) in the {CSRF_HEADER} header."
        )
    return signed_in


def new_key(runtime: AccountsParts, signed_in: SignedIn) -> str:
    """A new API key for the signed-in account (its first, after a sign-in that made it), shown this once; the old
    key is refused from the next request on, in every process."""
    with runtime.db.transaction() as session:
        key = replace_api_key(session, signed_in.user_id)
        session.execute(
            update(SignInSession).where(SignInSession.token_hash == signed_in.token_hash).values(new_account=False),
            execution_options={"synchronize_session": False},
        )
    forget_identities(runtime)
    return key


def end(runtime: AccountsParts, cookie: str | None) -> None:
    """Sign out: the session the cookie names ends at once (a cookie that names none changes nothing)."""
    token = _token(runtime, cookie)
    if token is not None:
        with runtime.db.transaction() as session:
            session.execute(delete(SignInSession).where(SignInSession.token_hash == hash_api_key(token)))


def forget_expired(runtime: AccountsParts) -> None:
    """The sweeper's: drop the sessions past their end."""
    with runtime.db.transaction() as session:
        session.execute(delete(SignInSession).where(SignInSession.expires_at <= utcnow()))
