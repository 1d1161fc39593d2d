"""The page at `/` in headless Chromium, against a real server and a real scripted worker.

Debian's `chromium` driven by Playwright (tests/e2e/web/browser.py). Set HORDE_SCREENSHOTS_DIR to write the
screenshots of the views (docs/images/ holds the committed ones). The console's views: test_web_page_console.py.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from horde.chat.models import ChatRequest
from tests.e2e.web.browser import chromium_page, needs_chromium, screenshot
from tests.e2e.web.browser import sign_in as enter_key
from tests.support.harness import Harness, unique_model
from tests.support.processes import wait_until

pytestmark = [pytest.mark.e2e, needs_chromium]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    harness = Harness(f"sqlite:///{tmp_path_factory.mktemp('web') / 'horde.db'}")
    model = unique_model("web")
    harness.worker([model])
    yield harness, model
    harness.close()


@pytest.fixture
def browser_page():
    with chromium_page() as opened:
        yield opened


def test_page_lists_models_and_streams_a_reply_from_a_worker(site, browser_page):
    harness, model = site
    page, problems = browser_page
    key = harness.user(kudos=100)
    page.goto(harness.url + "/")
    page.locator(f'.model-card[data-model="{model}"]').wait_for()
    enter_key(page, key)
    page.fill("#model-filter", model.split("/")[1])
    assert page.locator(".model-card").count() == 1
    screenshot(page, "models")

    page.goto(harness.url + "/#playground")
    page.locator(f'#chat-model option[value="{model}"]').wait_for(state="attached")
    page.select_option("#chat-model", model)
    page.fill("#chat-system", "Answer briefly.")
    page.fill("#chat-input", "Tell me something slow, please.")
    page.click("#chat-send")
    meta = page.locator(".message.assistant .meta")
    meta.wait_for()
    assert page.locator(".message.assistant .content").inner_text() == "A slow answer, in steps."
    assert page.locator(".message.assistant details.reasoning").text_content().endswith("Thinking slowly.")
    assert "worker " in meta.inner_text() and "kudos " in meta.inner_text()
    screenshot(page, "playground")

    page.goto(harness.url + "/#status")
    page.locator("#status-table td", has_text=model).wait_for()
    assert page.locator("#totals .tile", has_text="requests served in all").locator("b").inner_text() != "0"
    assert problems == []


def test_stop_cancels_the_request_on_the_horde(site, browser_page):
    harness, model = site
    page, problems = browser_page
    page.goto(harness.url + "/#playground")
    enter_key(page, harness.user(kudos=100))
    page.locator(f'#chat-model option[value="{model}"]').wait_for(state="attached")
    page.select_option("#chat-model", model)
    page.fill("#chat-input", "Write something very long.")
    page.click("#chat-send")
    page.locator(".message.assistant .content", has_text="This goes").wait_for()
    page.click("#chat-stop")
    page.locator(".message.assistant.error", has_text="Stopped").wait_for()

    def cancelled():
        with harness.runtime.db.read() as session:
            states = session.scalars(
                select(ChatRequest.state)
                .where(ChatRequest.models.is_not(None))
                .order_by(ChatRequest.created_at.desc())
                .limit(1)
            ).all()
        return states == ["cancelled"]

    wait_until(cancelled, what="the stopped request to be cancelled on the Horde")
    assert problems == []
