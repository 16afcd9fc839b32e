#!/usr/bin/env bash
# Regenerates docs/reference/ (CRD, cjob command line, metrics) from the code and the CRD.
#
#   scripts/gen-docs.sh           write the pages that changed
#   scripts/gen-docs.sh --check   write nothing; exit 1 naming the pages that are out of date
#
# tests/unit/docs runs the same generator and fails when a committed page drifts.
# This checkout's sources come first on PYTHONPATH, so it also works in a git worktree
# whose .venv was installed from another checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
PYTHONPATH="devtools/docs_gen:runtime/src:operator/src${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$python" -m docs_gen "$@"
