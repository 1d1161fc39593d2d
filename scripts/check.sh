#!/usr/bin/env bash
# Static checks with the venv's tools: lint, format, types of horde/ (and its public functions annotated),
# import layers. Fails on any finding.
# HORDE_CHECK_SKIP_FORMAT=1 skips only the format check (until the tree is formatted once).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
status=0
run() {
  echo "+ $*"
  "$@" || status=1
}
run "$bin/ruff" check .
if [[ "${HORDE_CHECK_SKIP_FORMAT:-0}" != "1" ]]; then
  run "$bin/ruff" format --check .
else
  echo "+ ruff format --check: skipped (HORDE_CHECK_SKIP_FORMAT=1)"
fi
run "$bin/mypy" horde
run "$bin/python" scripts/public_annotations.py horde
run "$bin/lint-imports"
exit "$status"
