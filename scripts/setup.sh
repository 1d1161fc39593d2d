#!/usr/bin/env bash
# Create .venv, install a requirements file into it (requirements.txt unless given) at the versions of
# requirements-lock.txt, and the project itself, editable (idempotent). Further arguments go to pip install.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
# The lock constrains the install: what the requirements pull in comes at the tested versions, nothing more.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "${1:-requirements.txt}" -c requirements-lock.txt \
  "${@:2}"
# The editable install points at this tree, so it is made once per venv (bench/ and tests import the project).
if ! .venv/bin/python -m pip show --quiet horde >/dev/null 2>&1; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
fi
# The test support (tests/support/: real processes, throwaway databases, the llama.cpp backend) is not part of
# the wheel; the benchmarks import it too, so a path file puts this checkout on the venv's path.
site_packages=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
pwd >"$site_packages/horde-checkout.pth"
