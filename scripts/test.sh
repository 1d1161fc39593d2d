#!/usr/bin/env bash
# Set up and run the tests. PostgreSQL, Redis and llama.cpp tests run when
# HORDE_TEST_DATABASE_URL, HORDE_TEST_REDIS_URL and HORDE_TEST_LLAMA=1 are set.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements-test.txt
exec .venv/bin/python -m pytest -n "${HORDE_TEST_PROCESSES:-2}" "$@"
