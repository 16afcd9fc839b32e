#!/usr/bin/env bash
# Sets everything up and runs the demo job: a checkpointed keyed running
# count with an injected crash, a recovery from the last completed
# checkpoint, and a check that the output equals the crash-free result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/cjob demo "$@"
