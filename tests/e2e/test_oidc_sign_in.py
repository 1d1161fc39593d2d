"""Signing in through a real OpenID Connect provider (node-oidc-provider, started here: tests/support/oidc/), driven
as a browser would with `requests`: the Horde's /oidc/login, the provider's sign-in and consent, the Horde's
callback, then the web page's session API. Authorization code with PKCE (the provider requires it), state and
nonce; the account bound to the provider's subject; its key shown once asked and replaceable by its owner."""

from __future__ import annotations

import secrets

import pytest
import requests

from tests.support.harness import Harness
from tests.support.oidc.provider import OidcProvider, horde_settings, missing_tools, sign_in
from tests.support.processes import Server, free_port

CLIENT_ID = "horde"
CLIENT_SECRET = secrets.token_urlsafe(24)
SIGNED_IN_PAGE = "/#account?signed_in=oidc"
HTTP_TIMEOUT_S = 15


@pytest.fixture(scope="module")
def world(e2e_database_url):
    """The Horde (open registration), a second server on the same database with registration closed, and the
    provider whose client may come back to both."""
    if missing_tools():
        pytest.skip(missing_tools())
    provider_port = free_port()
    oidc = horde_settings(provider_port, CLIENT_ID, CLIENT_SECRET)
    harness = Harness(e2e_database_url, oidc)
    closed = Server({**harness.env, "HORDE_REGISTRATION": "closed"})
    provider = None
    try:
        callbacks = [f"{server.url}/oidc/callback" for server in (harness.server, closed)]
        provider = OidcProvider(provider_port, CLIENT_ID, CLIENT_SECRET, callbacks)
        yield harness, closed, provider
    finally:
        if provider is not None:
            provider.stop()
        closed.stop()
        harness.close()


def _session(browser: requests.Session, url: str) -> dict:
    return browser.get(f"{url}/api/v2/oidc/session", timeout=HTTP_TIMEOUT_S).json()


def _new_key(browser: requests.Session, url: str, csrf_token: str) -> requests.Response:
    return browser.post(f"{url}/api/v2/oidc/api_key", headers={"X-CSRF-Token": csrf_token}, timeout=HTTP_TIMEOUT_S)


def _me(url: str, key: str) -> requests.Response:
    return requests.get(f"{url}/api/v2/find_user", headers={"apikey": key}, timeout=HTTP_TIMEOUT_S)


def _callback_answer(answer: requests.Response) -> requests.Response:
    return next(step for step in answer.history if "/oidc/callback" in step.url)


def test_the_status_offers_the_providers_sign_in(world):
    harness, _closed, _provider = world
    status = requests.get(f"{harness.url}/api/v2/register", timeout=HTTP_TIMEOUT_S).json()
    assert status["oidc"] == {"enabled": True, "login_url": "/oidc/login", "provider": "Test ID"}
    assert "Sign in with Test ID" in requests.get(f"{harness.url}/register", timeout=HTTP_TIMEOUT_S).text


def test_a_first_sign_in_makes_an_account_named_from_the_claims_whose_key_comes_once_asked(world):
    harness, _closed, _provider = world
    browser = requests.Session()
    landed = sign_in(browser, harness.url, "alice")
    assert landed.status_code == 200 and landed.url == harness.url + SIGNED_IN_PAGE
    callback = _callback_answer(landed)
    assert callback.status_code == 303 and callback.headers["Location"] == SIGNED_IN_PAGE
    cookie = callback.headers["Set-Cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie and "max-age=28800" in cookie
    session = _session(browser, harness.url)
    assert session["signed_in"] is True and session["new_account"] is True
    assert session["user"]["username"] == f"alice#{session['user']['id']}"
    made = _new_key(browser, harness.url, session["csrf_token"])
    assert made.status_code == 200
    assert _me(harness.url, made.json()["api_key"]).json()["id"] == session["user"]["id"]
    assert _session(browser, harness.url)["new_account"] is False
    assert requests.get(f"{harness.url}/api/v2/oidc/session", timeout=HTTP_TIMEOUT_S).json() == {"signed_in": False}


def test_signing_in_again_finds_the_same_account_and_lets_its_owner_replace_the_key(world):
    harness, _closed, _provider = world
    first = requests.Session()
    sign_in(first, harness.url, "carol")
    account = _session(first, harness.url)
    key = _new_key(first, harness.url, account["csrf_token"]).json()["api_key"]
    again = requests.Session()  # another browser, another day
    assert sign_in(again, harness.url, "carol").url == harness.url + SIGNED_IN_PAGE
    seen = _session(again, harness.url)
    assert seen["user"]["id"] == account["user"]["id"] and seen["new_account"] is False
    assert _me(harness.url, key).status_code == 200  # signing in changes no key
    replaced = _new_key(again, harness.url, seen["csrf_token"]).json()["api_key"]
    assert _me(harness.url, key).status_code == 401 and _me(harness.url, replaced).status_code == 200
    other = requests.Session()
    sign_in(other, harness.url, "dave")
    assert _session(other, harness.url)["user"]["id"] != account["user"]["id"]  # another subject, another account


def test_signing_out_ends_the_session(world):
    harness, _closed, _provider = world
    browser = requests.Session()
    sign_in(browser, harness.url, "erin")
    token = _session(browser, harness.url)["csrf_token"]
    answer = browser.delete(f"{harness.url}/api/v2/oidc/session", headers={"X-CSRF-Token": token})
    assert answer.json() == {"message": "OK"}
    assert _session(browser, harness.url) == {"signed_in": False}
    assert _new_key(browser, harness.url, token).json()["rc"] == "SignInRequired"


def test_a_callback_that_the_browser_did_not_begin_is_refused(world):
    harness, _closed, _provider = world
    browser = requests.Session()
    first_leg = browser.get(f"{harness.url}/oidc/login", allow_redirects=False, timeout=HTTP_TIMEOUT_S)
    assert first_leg.status_code == 302 and "code_challenge_method=S256" in first_leg.headers["Location"]
    assert "nonce=" in first_leg.headers["Location"] and "state=" in first_leg.headers["Location"]
    forged = browser.get(f"{harness.url}/oidc/callback?code=made-up&state=guessed", timeout=HTTP_TIMEOUT_S)
    assert forged.status_code == 400 and "state does not match" in forged.text
    stranger = requests.get(f"{harness.url}/oidc/callback?code=made-up&state=guessed", timeout=HTTP_TIMEOUT_S)
    assert stranger.status_code == 400 and "begun in another browser" in stranger.text
    refused = requests.Session()
    refused.get(f"{harness.url}/oidc/login", allow_redirects=False, timeout=HTTP_TIMEOUT_S)
    denied = refused.get(
        f"{harness.url}/oidc/callback?error=access_denied&error_description=The+user+said+no", timeout=HTTP_TIMEOUT_S
    )
    assert denied.status_code == 400 and "The user said no" in denied.text


def test_closed_registration_refuses_a_first_sign_in_but_not_an_account_bound_before(world):
    harness, closed, _provider = world
    bound = requests.Session()
    sign_in(bound, harness.url, "frank")  # bound while registration was open
    frank = _session(bound, harness.url)["user"]["id"]
    newcomer = sign_in(requests.Session(), closed.url, "grace")
    assert newcomer.status_code == 403 and "not taking new accounts" in newcomer.text
    returning = requests.Session()
    assert sign_in(returning, closed.url, "frank").url == closed.url + SIGNED_IN_PAGE
    assert _session(returning, closed.url)["user"]["id"] == frank


def test_an_unreachable_provider_is_a_page_that_says_so(world, tmp_path):
    harness, _closed, _provider = world
    dead = Server({**harness.env, "HORDE_OIDC_ISSUER": f"http://127.0.0.1:{free_port()}"})
    try:
        answer = requests.get(f"{dead.url}/oidc/login", allow_redirects=False, timeout=HTTP_TIMEOUT_S)
        assert answer.status_code == 502 and "could not be reached" in answer.text
    finally:
        dead.stop()
