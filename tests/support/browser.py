"""Debian's Chromium as the end-to-end tests drive it through Playwright (never a browser of Playwright's own).

Set HORDE_SCREENSHOTS_DIR to write the pages' screenshots (docs/images/ holds the committed ones)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextlib.contextmanager
def chromium() -> Iterator:
    """A fresh headless Debian Chromium, closed afterwards; skips where Playwright is not installed."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def chromium_page(width: int, height: int, timeout_ms: int) -> Iterator:
    """A page of a fresh headless Chromium, closed afterwards."""
    with chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        page.set_default_timeout(timeout_ms)
        yield page


def screenshot(page, name: str, full_page: bool = True) -> None:
    """`name`.png of the page in HORDE_SCREENSHOTS_DIR, when it is set."""
    folder = os.environ.get("HORDE_SCREENSHOTS_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=full_page)
