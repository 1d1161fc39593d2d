#!/usr/bin/env bash
# The main job: server on SQLite + scripted worker + a real OpenAI SDK call through /v1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements-test.txt
exec .venv/bin/python scripts/demo.py "$@"
