"""Open WebUI, the self-hosted chat UI, against a running Horde (tests/e2e/test_open_webui.py): a pinned install in
a cache outside the repository, made once per machine, and its server started on a free port (server.py).

It runs when HORDE_TEST_OPENWEBUI=1; the first run installs it (about 6 minutes and 3 GB with the CPU build of
torch), later runs reuse `~/.cache/horde-tests/open-webui/` (or `$HORDE_TEST_OPENWEBUI_CACHE`).

To move to another version: install it in a scratch venv, `pip freeze` it into open-webui.txt (swapping torch for
its `+cpu` build and dropping the CUDA packages it pulls), change VERSION below and commit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.agents.install import pip_venv

ENABLED_VARIABLE = "HORDE_TEST_OPENWEBUI"
CACHE_VARIABLE = "HORDE_TEST_OPENWEBUI_CACHE"
NAME, VERSION = "open-webui", "0.12.4"
LOCK = Path(__file__).resolve().parent / "open-webui.txt"


def require_open_webui() -> None:
    if os.environ.get(ENABLED_VARIABLE) != "1":
        pytest.skip(f"the real Open WebUI runs with {ENABLED_VARIABLE}=1 (it installs about 3 GB once)")


def cache_root() -> Path:
    root = os.environ.get(CACHE_VARIABLE)
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "horde-tests" / "open-webui"


def python() -> Path:
    """The Python of the pinned Open WebUI's venv, installing it first if this machine has not."""
    return pip_venv(NAME, VERSION, LOCK, root=cache_root()) / "bin" / "python"
