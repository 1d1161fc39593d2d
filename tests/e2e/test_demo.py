"""The main command's one-shot form: a Horde, a scripted worker and real OpenAI SDK calls, then it stops."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.processes import ROOT, free_port

pytestmark = pytest.mark.e2e
DEMO_TIMEOUT_S = 180


def test_demo_once_answers_through_the_sdk_and_exits():
    env = {key: value for key, value in os.environ.items() if not key.startswith("HORDE_")}
    env["HORDE_DEMO_PORT"] = str(free_port())
    done = subprocess.run(
        [sys.executable, "scripts/demo.py", "--once"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "models: ['demo/scripted-model']" in done.stdout
    assert 'reply: demo/scripted-model says: you wrote "Hello, Horde!"' in done.stdout
    assert "The web page" not in done.stdout
