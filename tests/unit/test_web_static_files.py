"""The web page's files: each one the page names exists, and the wheel ships each one (pyproject's package data),
so that an installed Horde serves the same page as a checkout, with nothing fetched from elsewhere."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

from horde.web.routes import STATIC_DIR

ROOT = Path(__file__).resolve().parents[2]
#: What index.html and the modules name: /ui/... in the page, "./x.js" or "/ui/..." in an import.
PAGE_REFERENCE = re.compile(r'(?:src|href)="(/ui/[^"]+)"')
IMPORT = re.compile(r'^import\s[^;]*?from\s"([^"]+)";', re.MULTILINE)


def _static_files() -> list[str]:
    return sorted(str(path.relative_to(STATIC_DIR.parent)) for path in STATIC_DIR.rglob("*") if path.is_file())


def _served(url: str) -> Path:
    return STATIC_DIR / url.removeprefix("/ui/")


def test_the_wheel_ships_every_file_of_the_page():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["horde.web"]
    left_out = [name for name in _static_files() if not any(fnmatch.fnmatch(name, pattern) for pattern in patterns)]
    assert left_out == []


def test_every_file_the_page_names_exists_and_is_served_by_the_horde():
    named = PAGE_REFERENCE.findall((STATIC_DIR / "index.html").read_text())
    assert "/ui/js/main.js" in named
    assert [url for url in named if not _served(url).is_file()] == []


def test_every_module_imports_files_that_exist():
    modules = sorted((STATIC_DIR / "js").glob("*.js"))
    assert modules
    missing = []
    for module in modules:
        for target in IMPORT.findall(module.read_text()):
            path = _served(target) if target.startswith("/ui/") else module.parent / target
            if not path.is_file():
                missing.append(f"{module.name} imports {target}")
    assert missing == []
    assert not any(re.search(r"https?://", module.read_text()) for module in modules)  # nothing from elsewhere
