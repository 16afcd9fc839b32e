#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/install-test-tools.sh
echo "==> ruff"
.venv/bin/ruff check runtime operator tests bench examples devtools
.venv/bin/ruff format --check runtime operator tests bench examples devtools
echo "==> import layers (import-linter contracts in pyproject.toml; tests/unit/test_import_layers.py shows they catch a wrong import)"
.venv/bin/lint-imports
echo "==> mypy (strict)"
.venv/bin/mypy runtime/src/barrier_runtime operator/src/cjob_operator
# test support and benchmark code that used to ship inside the packages (issue 12)
.venv/bin/mypy tests/support/barrier_runtime_testing tests/support/cjob_operator_testing \
    tests/support/chart_testing tests/support/docker_testing tests/support/e2e_k8s_testing \
    tests/support/waiting.py tests/support/cli_contract.py tests/support/stored_checkpoints.py \
    tests/support/http_fakes.py bench/cjob_bench
.venv/bin/mypy devtools/kube_local/kube_local tests/integration/kube_local
.venv/bin/mypy devtools/docs_gen/docs_gen tests/unit/docs
echo "==> pytest"
# helm (and kubectl where none is installed) live in .venv/bin: scripts/get-helm.sh
export PATH="$PWD/.venv/bin:$PATH"
# the 30 slowest tests and fixtures, so that the 60-minute budget of CI can be watched
.venv/bin/python -m pytest -p no:cacheprovider --durations=30 "$@"
