"""The web page's sign-in session (/api/v2/oidc/session, /api/v2/oidc/api_key) with a session started as the
OpenID Connect callback starts it: who is signed in, a new key only with the session's CSRF token, signing out,
and the cookies that name no session (altered, from another secret, ended, expired).

The whole sign-in against a real provider is tests/e2e/test_oidc_sign_in.py."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import update

from horde.registration import signin
from horde.registration.models import SignInSession
from horde.runtime import Runtime


def _signed_in(client, runtime, user_id: int, *, new_account: bool = False) -> str:
    cookie, _ends = signin.start(runtime, user_id, new_account=new_account)
    client.set_cookie(signin.SESSION_COOKIE, cookie)
    return cookie


def _session(client) -> dict:
    return client.get("/api/v2/oidc/session").json


def test_no_cookie_is_no_session(client):
    assert _session(client) == {"signed_in": False}
    refused = client.post("/api/v2/oidc/api_key")
    assert (refused.status_code, refused.json["rc"]) == (401, "SignInRequired")


def test_the_session_shows_the_account_and_gives_it_a_key_once_asked_with_its_token(client, make_user, runtime):
    user, old_key = make_user(kudos=12)
    _signed_in(client, runtime, user.id, new_account=True)
    seen = _session(client)
    assert seen["signed_in"] is True and seen["new_account"] is True
    assert seen["user"] == {"id": user.id, "username": f"{user.username}#{user.id}", "kudos": 12.0}
    assert seen["expires_at"].endswith("Z") and len(seen["csrf_token"]) >= 32
    without = client.post("/api/v2/oidc/api_key")
    assert (without.status_code, without.json["rc"]) == (403, "InvalidCsrfToken")
    wrong = client.post("/api/v2/oidc/api_key", headers={signin.CSRF_HEADER: "x" * 43})
    assert wrong.json["rc"] == "InvalidCsrfToken"
    made = client.post("/api/v2/oidc/api_key", headers={signin.CSRF_HEADER: seen["csrf_token"]})
    assert made.status_code == 200
    new_key = made.json["api_key"]
    assert client.get("/api/v2/find_user", headers={"apikey": new_key}).json["id"] == user.id
    assert client.get("/api/v2/find_user", headers={"apikey": old_key}).status_code == 401
    assert _session(client)["new_account"] is False  # its first key was given


def test_signing_out_ends_the_session(client, make_user, runtime):
    user, _key = make_user()
    _signed_in(client, runtime, user.id)
    token = _session(client)["csrf_token"]
    assert client.delete("/api/v2/oidc/session").json["rc"] == "InvalidCsrfToken"
    assert client.delete("/api/v2/oidc/session", headers={signin.CSRF_HEADER: token}).json == {"message": "OK"}
    assert _session(client) == {"signed_in": False}
    after = client.post("/api/v2/oidc/api_key", headers={signin.CSRF_HEADER: token})
    assert after.json["rc"] == "SignInRequired"


def test_an_altered_cookie_names_no_session(client, make_user, runtime):
    user, _key = make_user()
    cookie = _signed_in(client, runtime, user.id)
    client.set_cookie(signin.SESSION_COOKIE, cookie[:-2] + ("AA" if not cookie.endswith("AA") else "BB"))
    assert _session(client) == {"signed_in": False}
    client.set_cookie(signin.SESSION_COOKIE, "x" * (signin.MAX_COOKIE_CHARS + 1))
    assert _session(client) == {"signed_in": False}


def test_a_cookie_signed_with_another_secret_names_no_session(client, make_user, runtime, settings):
    user, _key = make_user()
    other = Runtime.build(settings.replace(secret_key="another server's secret, 32 chars or more"))
    try:
        cookie, _ends = signin.start(other, user.id, new_account=False)  # the row exists; the signature is foreign
    finally:
        other.close()
    client.set_cookie(signin.SESSION_COOKIE, cookie)
    assert _session(client) == {"signed_in": False}


def test_an_expired_session_is_over_and_swept(client, make_user, runtime):
    user, _key = make_user()
    _signed_in(client, runtime, user.id)
    with runtime.db.transaction() as session:
        session.execute(update(SignInSession).values(expires_at=dt.datetime(2000, 1, 1)))
    assert _session(client) == {"signed_in": False}
    signin.forget_expired(runtime)
    with runtime.db.read() as session:
        assert session.query(SignInSession).count() == 0


def test_the_sign_in_legs_say_when_the_sign_in_is_off(client):
    for path in ("/oidc/login", "/oidc/callback?code=x&state=y"):
        answer = client.get(path)
        assert answer.status_code == 404 and "no sign-in provider" in answer.text
