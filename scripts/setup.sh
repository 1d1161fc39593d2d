#!/usr/bin/env bash
# Create .venv and install the project's requirements into it (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "${1:-requirements.txt}"
