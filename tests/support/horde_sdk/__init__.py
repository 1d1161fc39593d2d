"""Runs a horde-sdk script against a running Horde in a process of its own: the SDK reads AI_HORDE_URL at import."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.processes import ROOT

SCENARIO_TIMEOUT_S = 180


def run_sdk_module(horde, module: str, *argv: str, timeout_s: float = SCENARIO_TIMEOUT_S) -> dict:
    """`python -m module *argv` pointed at `horde`'s server; the JSON object it prints last."""
    env = dict(horde.env, AI_HORDE_URL=horde.url + "/api/")
    done = subprocess.run(
        [sys.executable, "-m", module, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
