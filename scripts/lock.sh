#!/usr/bin/env bash
# Write requirements-lock.txt: the exact version of everything requirements-test.txt pulls in (requirements.txt
# included), as pip resolves them today in a fresh venv. Run it after changing requirements*.txt, then commit the
# lock with them (tests/unit/test_packaging.py fails on a requirement the lock does not pin or a pin outside it).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
# --ignore-installed: the fresh venv's own pip and setuptools are resolved like any other requirement.
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --dry-run --ignore-installed \
  --report "$work/report.json" -r requirements-test.txt
python3 scripts/lockfile.py write "$work/report.json" >"$work/requirements-lock.txt"
mv "$work/requirements-lock.txt" requirements-lock.txt
echo "requirements-lock.txt: $(grep -c '==' requirements-lock.txt) distributions pinned"
