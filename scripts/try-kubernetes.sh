#!/usr/bin/env bash
# Try the operator on a local Kubernetes, with nothing but Python, root and Docker's
# Debian package on the machine:
#
#   scripts/try-kubernetes.sh [up]   everything below, then the job Running
#   scripts/try-kubernetes.sh down   stop it all (containers, API server, S3 server)
#
# `up` is the README's cluster path on the local Kubernetes (devtools/kube_local):
#   1. .venv (scripts/bootstrap.sh) and helm (scripts/install-test-tools.sh);
#   2. the Docker engine and both images from this checkout (cjob-operator:dev,
#      cjob-runtime:dev; scripts/docker-smoke.sh --build-only);
#   3. the local Kubernetes with its kubelet (scripts/kube-local.sh up): pods run as
#      containers of those images;
#   4. an S3 server where a cluster would have MinIO: SeaweedFS at 127.0.9.1:9000,
#      named minio.minio.svc by devtools/kube_local/manifests/minio.yaml;
#   5. the README's install: namespaces cjob-system and streaming, the storage Secret,
#      `helm install cjob charts/checkpointed-operator --set 'driver.namespaces={streaming}'`
#      (operator image cjob-operator:dev);
#   6. `kubectl apply -f examples/manifests/minimal.yaml` with the image set to
#      cjob-runtime:dev, then waits for phase Running and a completed checkpoint.
# It ends by printing the KUBECONFIG to export and what to try next. Idempotent.
#
# State: $CJOB_KUBE_LOCAL_DIR (default build/kube-local). Without a kubectl on PATH,
# scripts/get-helm.sh puts one in .venv/bin.
set -euo pipefail
cd "$(dirname "$0")/.."

state=${CJOB_KUBE_LOCAL_DIR:-build/kube-local}
export CJOB_KUBE_LOCAL_DIR=$state
python=.venv/bin/python
s3_pidfile="$state/s3.pid"
S3_HOST=127.0.9.1
S3_PORT=9000

say() { echo "==> $*" >&2; }
die() { echo "try-kubernetes: error: $*" >&2; exit 1; }

s3_running() { [ -f "$s3_pidfile" ] && kill -0 "$(cat "$s3_pidfile")" 2>/dev/null; }

s3_up() {
    if s3_running && [ -f "$state/s3.ready" ]; then return 0; fi
    say "starting SeaweedFS S3 at $S3_HOST:$S3_PORT (data in $state/s3-data)"
    rm -f "$state/s3.ready"
    nohup "$python" -m barrier_runtime.storage.embedded --host "$S3_HOST" \
        --s3-port "$S3_PORT" --data-dir "$state/s3-data" --access-key cjob \
        --secret-key-file "$state/s3-secret-key" --bucket checkpoints \
        --ready-file "$state/s3.ready" >"$state/s3.log" 2>&1 &
    echo $! >"$s3_pidfile"
    for _ in $(seq 120); do
        [ -f "$state/s3.ready" ] && return 0
        s3_running || break
        sleep 0.5
    done
    tail -5 "$state/s3.log" >&2
    die "the S3 server did not start; see $state/s3.log"
}

s3_down() {
    if s3_running; then
        kill "$(cat "$s3_pidfile")" 2>/dev/null || true
        say "stopped the S3 server"
    fi
    rm -f "$s3_pidfile" "$state/s3.ready"
}

up() {
    [ -x "$python" ] || bash scripts/bootstrap.sh
    bash scripts/install-test-tools.sh >/dev/null  # helm, and kubectl when none is installed
    export PATH="$PWD/.venv/bin:$PATH"
    say "building the images (cached after the first time)"
    bash scripts/docker-smoke.sh --build-only >&2
    mkdir -p "$state"
    CJOB_KUBE_LOCAL_KUBELET=1 bash scripts/kube-local.sh up >/dev/null
    export KUBECONFIG="$PWD/$state/kubeconfig"
    s3_up
    kubectl apply -f devtools/kube_local/manifests/minio.yaml >/dev/null
    for ns in cjob-system streaming; do
        kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    done
    kubectl -n streaming create secret generic minio-credentials \
        --from-literal=AWS_ACCESS_KEY_ID=cjob \
        --from-literal="AWS_SECRET_ACCESS_KEY=$(cat "$state/s3-secret-key")" \
        --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    say "helm install cjob charts/checkpointed-operator (operator image cjob-operator:dev)"
    .venv/bin/helm upgrade --install cjob charts/checkpointed-operator --namespace cjob-system \
        --set 'driver.namespaces={streaming}' --set image.repository=cjob-operator \
        --set image.tag=dev --set image.pullPolicy=Never >/dev/null
    say "kubectl apply -f examples/manifests/minimal.yaml (image cjob-runtime:dev)"
    sed 's#image: .*cjob-runtime:.*#image: cjob-runtime:dev#' examples/manifests/minimal.yaml |
        kubectl apply -f - >/dev/null
    say "waiting for phase Running and a completed checkpoint (Spark starts in pods: ~1-2 min)"
    for _ in $(seq 100); do
        phase=$(kubectl -n streaming get cjob running-count -o 'jsonpath={.status.phase}')
        last=$(kubectl -n streaming get cjob running-count \
            -o 'jsonpath={.status.checkpoints.lastCompleted.id}')
        if [ "$phase" = Running ] && [ -n "$last" ]; then
            kubectl -n streaming get cjob
            kubectl -n streaming get pods
            cat <<MSG

The job runs on the local Kubernetes. Try:
  export KUBECONFIG=$KUBECONFIG
  kubectl -n streaming get cjob -w
  kubectl -n streaming describe cjob running-count
  kubectl -n streaming patch cjob running-count --type merge -p '{"spec":{"state":"Suspended"}}'
  kubectl -n streaming logs running-count-driver
  scripts/try-kubernetes.sh down
MSG
            return 0
        fi
        sleep 3
    done
    kubectl -n streaming get cjob,pods >&2 || true
    die "the job did not reach Running with a checkpoint in 5 minutes (phase: ${phase:-none})"
}

down() {
    s3_down
    bash scripts/kube-local.sh down
}

case "${1:-up}" in
    up) up ;;
    down) down ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) die "unknown command $1 (up or down)" ;;
esac
