#!/usr/bin/env bash
# Set up and run the tests. PostgreSQL, Redis and llama.cpp tests run when
# HORDE_TEST_DATABASE_URL, HORDE_TEST_REDIS_URL and HORDE_TEST_LLAMA=1 are set.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements-test.txt
# Four test processes on two cores: the end-to-end tests spend much of their time waiting on the servers and
# workers they start, and the other processes use the cores meanwhile. Work stealing: a process that runs out of
# tests takes the pending ones of another, so the slow ones do not queue at the end of one process's share.
exec .venv/bin/python -m pytest -n "${HORDE_TEST_PROCESSES:-4}" --dist worksteal "$@"
