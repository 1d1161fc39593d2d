"""The coding agents' real clients against a running Horde (tests/e2e/agents/): pinned installs in a cache outside
the repository (install.py, clients.py), one sealed run of a client (run.py), and a test's scene: a fresh user, a
capable scripted worker whose rules call the client's own tool, and the checks on the Horde's side (scene.py).

They run when HORDE_TEST_AGENTS=1 (CI sets it in .ci/run); the first run installs the clients (a few minutes, about
2 GB), later runs reuse them.
"""

from __future__ import annotations

import os

import pytest

ENABLED_VARIABLE = "HORDE_TEST_AGENTS"


def require_agents() -> None:
    if os.environ.get(ENABLED_VARIABLE) != "1":
        pytest.skip(f"the real agents' clients run with {ENABLED_VARIABLE}=1 (they install about 2 GB once)")
