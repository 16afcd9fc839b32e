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
# the 30 slowest tests and fixtures of each run, so that the 60-minute budget of CI can be watched
pytest=(.venv/bin/python -m pytest -p no:cacheprovider --durations=30)

# Arguments that name tests (anything not an option) run as one pytest, as given.
for arg in "$@"; do
    if [[ $arg != -* ]]; then
        exec "${pytest[@]}" "$@"
    fi
done

# The whole suite runs as two pytest processes side by side (CI's budget is 60 minutes):
# the tests bound to containers (the images, a fresh machine in a container, Kubernetes
# on a real node: mostly waiting on builds, pods and the Docker engine) and all the
# others. The two share nothing but the Docker engine, which only the first group uses;
# each has its own temporary directory. The container group's output goes to a log
# printed when it ends (and followed with `tail -f` meanwhile).
containers=(tests/docker tests/e2e_k8s tests/integration/kube_local)
ignored=()
for dir in "${containers[@]}"; do ignored+=("--ignore=$dir"); done
work=$(mktemp -d "${TMPDIR:-/tmp}/cjob-tests.XXXXXX")
log="$work/containers.log"
echo "==> pytest: ${containers[*]} run beside the rest; their output: $log"
# job control: the background pytest gets its own process group and keeps SIGINT, so
# that an interrupted run stops it the way Ctrl-C would (its fixtures tear down)
set -m
"${pytest[@]}" --basetemp="$work/containers" "$@" "${containers[@]}" >"$log" 2>&1 &
container_pid=$!
set +m
stop_containers() { kill -INT "$container_pid" 2>/dev/null && wait "$container_pid"; }
trap stop_containers INT TERM
rest_rc=0
"${pytest[@]}" --basetemp="$work/rest" "${ignored[@]}" "$@" || rest_rc=$?
containers_rc=0
wait "$container_pid" || containers_rc=$?
trap - INT TERM
echo "==> pytest: ${containers[*]} (exit status $containers_rc)"
cat "$log"
echo "==> pytest: exit status $rest_rc (the rest), $containers_rc (${containers[*]})"
if ((rest_rc != 0 || containers_rc != 0)); then
    echo "==> pytest: what the tests left is kept in $work"
    exit 1
fi
rm -rf "$work"
