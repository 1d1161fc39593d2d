#!/usr/bin/env bash
# Set up and run the tests. PostgreSQL, Redis and llama.cpp tests run when
# HORDE_TEST_DATABASE_URL, HORDE_TEST_REDIS_URL and HORDE_TEST_LLAMA=1 are set.
set -euo pipefail
cd "$(dirname "$0")/.."
# Bytecode is compiled when first imported and kept, even where PYTHONDONTWRITEBYTECODE is set: the suite starts
# some 150 Python processes (servers, workers, gunicorn), and each would compile what it imports again. So pip
# need not compile the whole venv up front: most of it (type checkers, linters, unused parts) is never imported.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh requirements-test.txt --no-compile
# Four test processes on two cores: the end-to-end tests spend much of their time waiting on the servers and
# workers they start, and the other processes use the cores meanwhile. Work stealing: a process that runs out of
# tests takes the pending ones of another, so the slow ones do not queue at the end of one process's share.
exec .venv/bin/python -m pytest -n "${HORDE_TEST_PROCESSES:-4}" --dist worksteal "$@"
