"""The real coding agents' clients against a running Horde (issue 39), one module per client; they run with
HORDE_TEST_AGENTS=1 (tests/support/agents). One server per module on SQLite: what is under test is how each client's
dialect is served, end to end, not the database. A module that installs and runs no client says
`RUNS_CLIENTS = False`."""

from __future__ import annotations

import pytest

from tests.support.agents import require_agents
from tests.support.harness import Harness


@pytest.fixture(scope="module", autouse=True)
def _agents_enabled(request):
    if getattr(request.module, "RUNS_CLIENTS", True):
        require_agents()


@pytest.fixture(scope="module")
def horde(tmp_path_factory):
    harness = Harness(f"sqlite:///{tmp_path_factory.mktemp('agents') / 'horde.db'}")
    yield harness
    harness.close()
