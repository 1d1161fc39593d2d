#!/usr/bin/env bash
# Static checks with the venv's tools: lint, format, types of horde/ (and its public functions annotated),
# import layers. Fails on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
status=0
run() {
  echo "+ $*"
  "$@" || status=1
}
run "$bin/ruff" check .
run "$bin/ruff" format --check .
run "$bin/mypy" horde
run "$bin/python" scripts/public_annotations.py horde
run "$bin/lint-imports"
exit "$status"
