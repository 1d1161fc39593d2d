#!/usr/bin/env bash
# Create .venv, install a requirements file into it (requirements.txt unless given) at the versions of
# requirements-lock.txt, and put this checkout on its path (idempotent). Further arguments go to pip install.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
# The lock constrains the install: what the requirements pull in comes at the tested versions, nothing more.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "${1:-requirements.txt}" -c requirements-lock.txt \
  "${@:2}"
# A path file puts this checkout on the venv's path: the venv imports the project from this tree (horde/, and the
# test support in tests/support/ that the benchmarks use too: real processes, throwaway databases, llama.cpp),
# as an editable install would, without building a wheel in an isolated environment on every fresh setup.
site_packages=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
pwd >"$site_packages/horde-checkout.pth"
