#!/usr/bin/env bash
# The test suite against the newest releases the requirements allow, ignoring requirements-lock.txt: a separate
# venv (.venv-newest), upgraded on every run, so that moving the lock forward is a measured step. It prints what
# differs from the lock, then runs pytest with the arguments given (as scripts/test.sh does).
#
#   bash scripts/test-newest.sh tests/unit               # the newest releases within requirements*.txt's bounds
#   bash scripts/test-newest.sh --past-bounds tests/unit # also past the upper bounds (`~=`, `<`): the next line
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-newest
requirements=requirements-test.txt
if [[ "${1:-}" == "--past-bounds" ]]; then
  shift
  requirements=$(mktemp)
  trap 'rm -f "$requirements"' EXIT
  python3 scripts/lockfile.py unbounded requirements-test.txt >"$requirements"
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade -r "$requirements"
if ! "$venv/bin/python" -m pip show --quiet horde >/dev/null 2>&1; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -e .
fi
echo "Versions that differ from requirements-lock.txt (locked -> installed):"
"$venv/bin/python" -m pip freeze --exclude-editable | python3 scripts/lockfile.py changes requirements-lock.txt
exec "$venv/bin/python" -m pytest -n "${HORDE_TEST_PROCESSES:-2}" "$@"
