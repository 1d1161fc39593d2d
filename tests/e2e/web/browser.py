"""Debian's Chromium driven by Playwright for the page's tests (never a downloaded browser), and their screenshots.

Set HORDE_SCREENSHOTS_DIR to write the screenshots (docs/images/ holds the committed ones).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import CHROMIUM, chromium
from tests.support.browser import screenshot as shared_screenshot

TIMEOUT_MS = 30_000
DESKTOP = {"width": 1200, "height": 800}
PHONE = {"width": 390, "height": 844}

needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason=f"Chromium is not installed at {CHROMIUM} (apt-get install chromium chromium-driver; .ci/run installs it)",
)


@contextlib.contextmanager
def chromium_page(viewport: dict | None = None, origin: str = "") -> Iterator[tuple[object, list[str]]]:
    """A fresh page (its own context: storage, clipboard rights) and the list its console errors go to: those of
    pages at `origin` only, when given (another site's pages, such as a sign-in provider's, are not ours)."""
    with chromium() as browser:
        context = browser.new_context(viewport=viewport or DESKTOP)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        problems: list[str] = []

        def heard(message) -> None:
            if message.type == "error" and message.location.get("url", "").startswith(origin):
                problems.append(message.text)

        page.on("console", heard)
        page.on("pageerror", lambda error: problems.append(str(error)))
        yield page, problems


def screenshot(page, name: str, full_page: bool = True) -> None:
    """web-`name`.png: the page's views are named apart from other programs' screenshots."""
    shared_screenshot(page, f"web-{name}", full_page)


def sign_in(page, key: str) -> None:
    """Sign in with `key` through the header's form, and wait for the user's name and kudos."""
    page.fill("#api-key", key)
    page.press("#api-key", "Enter")
    page.locator("#kudos").filter(has_text="kudos").wait_for()
