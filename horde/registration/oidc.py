"""OpenID Connect sign-in with Authlib: discovery from HORDE_OIDC_ISSUER, the authorization-code flow with PKCE
(S256), state and nonce, and the ID token checked against the provider's keys (signature, issuer, audience,
expiry, nonce, at_hash).

Off unless the issuer and the client's id and secret are set. The provider's metadata and keys are read once per
process and kept for METADATA_S (the keys read again at once when a token names a key id they lack). A sign-in's
failure is SignInFailed, whose message the callback page shows; nothing here answers a route.
"""

from __future__ import annotations

import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from horde.registration.usernames import username_from

if TYPE_CHECKING:
    from horde.config import Settings

DISCOVERY_PATH = "/.well-known/openid-configuration"
SCOPES = "openid profile email"
#: How long a process keeps the provider's metadata and keys.
METADATA_S = 3600.0
PROVIDER_TIMEOUT_S = 10.0
#: Clock skew allowed on the ID token's times.
LEEWAY_S = 120
#: The longest issuer or subject kept (the columns of oidc_identities).
MAX_IDENTIFIER_CHARS = 255
STATE_BYTES = 24
VERIFIER_BYTES = 48
DEFAULT_ALGORITHMS = ["RS256"]


class SignInFailed(Exception):
    """The sign-in did not complete; the message says why, for the person at the browser."""

    def __init__(self, message: str, *, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Provider:
    issuer: str
    client_id: str
    client_secret: str
    name: str
    redirect_url: str | None


@dataclass(frozen=True)
class Flow:
    """A sign-in under way, kept in the browser's signed cookie between the login and the callback."""

    state: str
    nonce: str
    verifier: str
    redirect_uri: str

    def to_json(self) -> dict:
        return {"state": self.state, "nonce": self.nonce, "verifier": self.verifier, "redirect_uri": self.redirect_uri}

    @classmethod
    def of(cls, value: Any) -> Flow | None:
        fields = ("state", "nonce", "verifier", "redirect_uri")
        if not isinstance(value, dict) or not all(isinstance(value.get(name), str) for name in fields):
            return None
        return cls(*(value[name] for name in fields))


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in: its (issuer, subject), and the name the new account would take."""

    issuer: str
    subject: str
    username: str


def provider_of(settings: Settings) -> Provider | None:
    """The configured provider, or None when the sign-in is off."""
    if not (settings.oidc_issuer and settings.oidc_client_id and settings.oidc_client_secret):
        return None
    issuer = settings.oidc_issuer
    name = settings.oidc_provider_name or urllib.parse.urlsplit(issuer).hostname or issuer
    return Provider(issuer, settings.oidc_client_id, settings.oidc_client_secret, name, settings.oidc_redirect_url)


class _Metadata:
    """The provider's discovery document and keys, per process and issuer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._documents: dict[str, tuple[float, dict]] = {}
        self._keys: dict[str, tuple[float, dict]] = {}

    def document(self, issuer: str) -> dict:
        kept = self._documents.get(issuer)
        if kept is not None and time.monotonic() < kept[0]:
            return kept[1]
        document = _get_json(issuer.rstrip("/") + DISCOVERY_PATH)
        if document.get("issuer") != issuer:  # OpenID Connect Discovery 1.0, §4.3
            raise SignInFailed("The provider's discovery document names another issuer.", status=502)
        for endpoint in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(document.get(endpoint), str):
                raise SignInFailed(f"The provider's discovery document lacks {endpoint}.", status=502)
        with self._lock:
            self._documents[issuer] = (time.monotonic() + METADATA_S, document)
        return document

    def keys(self, issuer: str, *, fresh: bool = False) -> dict:
        kept = self._keys.get(issuer)
        if kept is not None and not fresh and time.monotonic() < kept[0]:
            return kept[1]
        keys = _get_json(self.document(issuer)["jwks_uri"])
        with self._lock:
            self._keys[issuer] = (time.monotonic() + METADATA_S, keys)
        return keys


METADATA = _Metadata()


def _get_json(url: str) -> dict:
    try:
        answer = requests.get(url, timeout=PROVIDER_TIMEOUT_S)
        answer.raise_for_status()
        document = answer.json()
    except (requests.RequestException, ValueError) as error:
        raise _unreachable(error) from None
    if not isinstance(document, dict):
        raise SignInFailed("The sign-in provider answered something other than a JSON object.", status=502)
    return document


def _unreachable(error: Exception) -> SignInFailed:
    return SignInFailed(f"The sign-in provider could not be reached ({error.__class__.__name__}).", status=502)


def _client(provider: Provider, redirect_uri: str) -> OAuth2Session:
    return OAuth2Session(
        provider.client_id,
        provider.client_secret,
        scope=SCOPES,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        default_timeout=PROVIDER_TIMEOUT_S,
    )


def begin(provider: Provider, redirect_uri: str) -> tuple[str, Flow]:
    """Where to send the browser, and the flow to keep until it comes back."""
    flow = Flow(
        state=secrets.token_urlsafe(STATE_BYTES),
        nonce=secrets.token_urlsafe(STATE_BYTES),
        verifier=secrets.token_urlsafe(VERIFIER_BYTES),
        redirect_uri=redirect_uri,
    )
    endpoint = METADATA.document(provider.issuer)["authorization_endpoint"]
    with _client(provider, redirect_uri) as client:
        url, _state = client.create_authorization_url(
            endpoint, state=flow.state, code_verifier=flow.verifier, nonce=flow.nonce
        )
    return url, flow


def finish(provider: Provider, flow: Flow | None, arguments: dict[str, str]) -> Identity:
    """The provider's user, from the callback's query `arguments` and the flow that began the sign-in."""
    if flow is None:
        raise SignInFailed("The sign-in expired or was begun in another browser: sign in again.")
    if "error" in arguments:
        reason = arguments.get("error_description") or arguments["error"]
        raise SignInFailed(f"The provider refused the sign-in: {reason[:200]}")
    if not secrets.compare_digest(arguments.get("state", "").encode(), flow.state.encode()):
        raise SignInFailed("The sign-in's state does not match: sign in again.")
    code = arguments.get("code")
    if not code:
        raise SignInFailed("The provider sent no authorization code.")
    document = METADATA.document(provider.issuer)
    try:
        with _client(provider, flow.redirect_uri) as client:
            token = client.fetch_token(document["token_endpoint"], code=code, code_verifier=flow.verifier)
    except requests.RequestException as error:
        raise _unreachable(error) from None
    except (AuthlibBaseError, ValueError) as error:  # an error answer, or not a token: the code was refused
        raise SignInFailed(f"The provider refused the authorization code: {str(error)[:200]}") from None
    claims = _checked_id_token(provider, document, token, flow.nonce)
    subject = claims.get("sub")
    if not isinstance(subject, str) or not 0 < len(subject) <= MAX_IDENTIFIER_CHARS:
        raise SignInFailed("The provider's ID token carries no usable subject.")
    if len(provider.issuer) > MAX_IDENTIFIER_CHARS:
        raise SignInFailed("The provider's issuer is too long to keep.", status=500)
    named = _user_info(document, token, subject) | {key: value for key, value in claims.items() if value}
    email = named.get("email")
    local_part = email.split("@", 1)[0] if isinstance(email, str) else None
    name = username_from([named.get("preferred_username"), named.get("nickname"), named.get("name"), local_part])
    return Identity(provider.issuer, subject, name)


def _user_info(document: dict, token: dict, subject: str) -> dict:
    """The provider's claims of the user from its userinfo endpoint, where it has one: with the code flow, the
    profile's and email's claims may come there rather than in the ID token (OpenID Connect Core 1.0, §5.4). They
    only name a new account; an answer for another subject, or none, leaves the ID token's claims alone."""
    endpoint, access_token = document.get("userinfo_endpoint"), token.get("access_token")
    if not isinstance(endpoint, str) or not isinstance(access_token, str):
        return {}
    try:
        answer = requests.get(endpoint, headers={"Authorization": f"Bearer {access_token}"}, timeout=PROVIDER_TIMEOUT_S)
        info = answer.json() if answer.status_code == 200 else {}
    except (requests.RequestException, ValueError):
        return {}
    return info if isinstance(info, dict) and info.get("sub") == subject else {}


def _checked_id_token(provider: Provider, document: dict, token: dict, nonce: str) -> dict:
    """The ID token's claims once its signature and claims hold."""
    id_token = token.get("id_token")
    if not isinstance(id_token, str):
        raise SignInFailed("The provider sent no ID token.")
    registry = JWSRegistry(
        algorithms=document.get("id_token_signing_alg_values_supported") or DEFAULT_ALGORITHMS,
        strict_check_header=False,
    )
    try:
        try:
            decoded = jwt.decode(
                id_token, KeySet.import_key_set(cast(Any, METADATA.keys(provider.issuer))), registry=registry
            )
        except InvalidKeyIdError:  # the provider rolled its keys since this process read them
            keys = KeySet.import_key_set(cast(Any, METADATA.keys(provider.issuer, fresh=True)))
            decoded = jwt.decode(id_token, keys, registry=registry)
        claims = CodeIDToken(
            decoded.claims,
            decoded.header,
            {
                "iss": {"essential": True, "value": provider.issuer},
                "aud": {"essential": True, "value": provider.client_id},
            },
            {"nonce": nonce, "client_id": provider.client_id, "access_token": token.get("access_token")},
        )
        claims.validate(leeway=LEEWAY_S)
    except (JoseError, ValueError) as error:
        raise SignInFailed(f"The provider's ID token does not hold: {error.__class__.__name__}.") from None
    return dict(claims)
