"""The page's side of the OpenID Connect sign-in, in headless Chromium with a real provider (node-oidc-provider,
tests/support/oidc/): the "Sign in with" link, the provider's forms, the return to `/#account?signed_in=oidc`,
the first key shown once and used, a later sign-in that replaces a lost key, and signing out."""

from __future__ import annotations

import secrets

import pytest
import requests

from tests.e2e.web.browser import chromium_page, needs_chromium
from tests.support.harness import Harness
from tests.support.oidc.provider import OidcProvider, horde_settings, missing_tools
from tests.support.processes import free_port

pytestmark = [pytest.mark.e2e, needs_chromium]

CLIENT_ID = "horde-page"
CLIENT_SECRET = secrets.token_urlsafe(24)
PROVIDER = "Test ID"
#: The provider's forms: its login, then its consent.
MAX_FORMS = 4


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    if missing_tools():
        pytest.skip(missing_tools())
    port = free_port()
    settings = horde_settings(port, CLIENT_ID, CLIENT_SECRET, PROVIDER)
    harness = Harness(f"sqlite:///{tmp_path_factory.mktemp('oidc-page') / 'horde.db'}", settings)
    provider = None
    try:
        provider = OidcProvider(port, CLIENT_ID, CLIENT_SECRET, [f"{harness.url}/oidc/callback"])
        yield harness
    finally:
        if provider is not None:
            provider.stop()
        harness.close()


def through_the_provider(page, harness: Harness, login: str) -> None:
    """From the Register view, the "Sign in with" link, the provider's login (any password) and consent."""
    page.goto(harness.url + "/#register")
    link = page.locator("#view-register .oidc-link", has_text=f"Sign in with {PROVIDER}")
    link.click()
    for _ in range(MAX_FORMS):
        page.wait_for_load_state()
        if "/interaction/" not in page.url:
            break
        if page.locator("input[name=login]").count():
            page.fill("input[name=login]", login)
            page.fill("input[name=password]", "any")
        with page.expect_navigation():
            page.locator("button[type=submit]").first.click()
    # the callback's /#account?signed_in=oidc, whose query the page drops once it has asked who signed in
    page.wait_for_url(lambda url: url.startswith(f"{harness.url}/#account"))


def me(harness: Harness, key: str) -> requests.Response:
    return requests.get(harness.url + "/api/v2/find_user", headers={"apikey": key}, timeout=10)


def test_a_first_sign_in_shows_the_new_key_once_and_signs_the_page_in(world):
    harness = world
    with chromium_page(origin=harness.url) as (page, problems):
        through_the_provider(page, harness, "pat")
        shown = page.locator("#account-oidc input.secret")
        shown.wait_for()
        key = shown.input_value()
        assert "cannot show it again" in page.locator("#account-oidc .warning").inner_text()
        page.locator("#kudos", has_text="pat#").wait_for()
        assert me(harness, key).json()["username"].startswith("pat#")
        page.locator("#account-body").wait_for()

        page.wait_for_function("location.hash === '#account'")  # a reload does not ask again
        page.click("#sign-out")
        page.locator("#sign-in-form").wait_for()
        assert page.locator("input.secret").count() == 0  # the key shown once goes with its owner
        session = page.evaluate("fetch('/api/v2/oidc/session').then((answer) => answer.json())")
        assert session == {"signed_in": False}
        assert page.evaluate("sessionStorage.length") == 0
        assert problems == []


def test_signing_in_again_offers_a_new_key_that_replaces_the_lost_one(world):
    harness = world
    with chromium_page() as (page, _):
        through_the_provider(page, harness, "quinn")
        first = page.locator("#account-oidc input.secret")
        first.wait_for()
        lost = first.input_value()
    with chromium_page(origin=harness.url) as (page, problems):  # another browser, without the key
        through_the_provider(page, harness, "quinn")
        offer = page.locator("#account-oidc button", has_text="Get a new API key")
        offer.wait_for()
        assert page.locator("#account-oidc input.secret").count() == 0
        offer.click()
        shown = page.locator("#account-oidc input.secret")
        shown.wait_for()
        assert me(harness, lost).status_code == 401
        assert me(harness, shown.input_value()).json()["username"].startswith("quinn#")
        page.locator("#kudos", has_text="quinn#").wait_for()
        assert problems == []
