#!/usr/bin/env bash
# Try the operator on Kubernetes: the README's cluster path, ending with a job Running.
#
#   scripts/try-kubernetes.sh [up] [--use-current-context]
#   scripts/try-kubernetes.sh down [--use-current-context]
#
# Without --use-current-context (nothing but Python, root and Docker's Debian package on
# the machine), `up` brings up a local Kubernetes and everything around it:
#   1. .venv (scripts/bootstrap.sh) and helm, kubectl (scripts/install-test-tools.sh);
#   2. the Docker engine and both images from this checkout (cjob-operator:dev,
#      cjob-runtime:dev; scripts/docker-smoke.sh --build-only);
#   3. the local Kubernetes (scripts/kube-local.sh up): etcd v3.7.3 and kube-apiserver,
#      kube-controller-manager, kube-scheduler v1.37.2 built from the Go modules
#      (scripts/kube-build.sh, cached), and a real node: kubelet v1.37.2 on containerd
#      (installed by scripts/install-test-tools.sh) with kube-proxy and CoreDNS, both
#      images loaded into its containerd;
#   4. an S3 server where a cluster would have MinIO: SeaweedFS on the node address
#      10.250.0.1:9000, named minio.minio.svc by
#      devtools/kube_local/manifests/minio-on-node.yaml;
#   5. the README's install: namespaces cjob-system and streaming, the storage Secret,
#      `helm install cjob charts/checkpointed-operator --set 'driver.namespaces={streaming}'`;
#   6. `kubectl apply -f examples/manifests/minimal.yaml` with the image set to
#      cjob-runtime:dev, then waits for phase Running and a completed checkpoint.
# `down` stops the S3 server and the local control plane with every container it ran.
#
# With --use-current-context the cluster of the current kubeconfig (kind, k3d, minikube,
# any other) is used instead of steps 3 and 4:
#   * images: CJOB_OPERATOR_IMAGE and CJOB_RUNTIME_IMAGE when the cluster can pull them;
#     otherwise both are built here and loaded with `kind load docker-image`,
#     `k3d image import` or `minikube image load` (chosen by the context's name);
#   * S3: CJOB_TRY_S3_ENDPOINT (as the pods reach it, e.g. http://minio.minio.svc:9000)
#     with CJOB_TRY_S3_ACCESS_KEY and CJOB_TRY_S3_SECRET_KEY and an existing bucket
#     `checkpoints`; without them the chart's evaluation MinIO (minio.enabled=true,
#     image quay.io/minio/minio, which the cluster must pull) and its bucket.
# `down --use-current-context` deletes the job, the release and both namespaces.
#
# It ends by printing the KUBECONFIG to export and what to try next. Idempotent.
# State: $CJOB_KUBE_LOCAL_DIR (default build/kube-local); images built here are tagged
# $CJOB_IMAGE_TAG (default dev); the node's address: $CJOB_KUBE_LOCAL_NODE_IP.
set -euo pipefail
cd "$(dirname "$0")/.."

state=${CJOB_KUBE_LOCAL_DIR:-build/kube-local}
export CJOB_KUBE_LOCAL_DIR=$state
python=.venv/bin/python
s3_pidfile="$state/s3.pid"
S3_HOST=${CJOB_KUBE_LOCAL_NODE_IP:-10.250.0.1} # the node's address: bridge pods reach it
S3_PORT=9000
RELEASE=cjob
JOB=running-count
TAG=${CJOB_IMAGE_TAG:-dev} # of the images built here (scripts/docker-smoke.sh)
export CJOB_IMAGE_TAG=$TAG

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

tools() {
    [ -x "$python" ] || bash scripts/bootstrap.sh
    bash scripts/install-test-tools.sh >/dev/null # helm, and kubectl when none is installed
    export PATH="$PWD/.venv/bin:$PATH"
}

# The images the cluster of the current context runs: OPERATOR_IMAGE, RUNTIME_IMAGE, PULL.
user_images() {
    if [ -n "${CJOB_OPERATOR_IMAGE:-}" ] && [ -n "${CJOB_RUNTIME_IMAGE:-}" ]; then
        OPERATOR_IMAGE=$CJOB_OPERATOR_IMAGE RUNTIME_IMAGE=$CJOB_RUNTIME_IMAGE PULL=IfNotPresent
        return 0
    fi
    local context load
    context=$(kubectl config current-context)
    case "$context" in
        kind-*) load=(kind load docker-image --name "${context#kind-}") ;;
        k3d-*) load=(k3d image import --cluster "${context#k3d-}") ;;
        minikube) load=(minikube image load) ;;
        *) die "the context $context is not kind, k3d or minikube: push both images where" \
            "it pulls from and set CJOB_OPERATOR_IMAGE and CJOB_RUNTIME_IMAGE" ;;
    esac
    command -v "${load[0]}" >/dev/null || die "${load[0]} is not installed"
    say "building the images (cached after the first time)"
    bash scripts/docker-smoke.sh --build-only >&2
    OPERATOR_IMAGE=cjob-operator:$TAG RUNTIME_IMAGE=cjob-runtime:$TAG PULL=IfNotPresent
    for image in "$OPERATOR_IMAGE" "$RUNTIME_IMAGE"; do
        say "${load[*]} $image"
        "${load[@]}" "$image" >&2
    done
}

namespaces() {
    for ns in cjob-system streaming; do
        kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null
    done
}

storage_secret() { # ACCESS_KEY SECRET_KEY
    kubectl -n streaming create secret generic minio-credentials \
        --from-literal=AWS_ACCESS_KEY_ID="$1" --from-literal="AWS_SECRET_ACCESS_KEY=$2" \
        --dry-run=client -o yaml | kubectl apply -f - >/dev/null
}

helm_install() { # more --set arguments
    say "helm install $RELEASE charts/checkpointed-operator (operator image $OPERATOR_IMAGE)"
    .venv/bin/helm upgrade --install "$RELEASE" charts/checkpointed-operator \
        --namespace cjob-system --set 'driver.namespaces={streaming}' \
        --set "image.repository=${OPERATOR_IMAGE%:*}" --set "image.tag=${OPERATOR_IMAGE##*:}" \
        --set "image.pullPolicy=$PULL" "$@" >/dev/null
}

apply_job() { # S3 endpoint as the pods reach it
    say "kubectl apply -f examples/manifests/minimal.yaml (image $RUNTIME_IMAGE, S3 $1)"
    sed -e "s#image: .*cjob-runtime:.*#image: $RUNTIME_IMAGE#" \
        -e "s#http://minio.minio.svc:9000#$1#g" examples/manifests/minimal.yaml |
        kubectl apply -f - >/dev/null
}

wait_running() {
    say "waiting for phase Running and a completed checkpoint (Spark starts in pods: ~1-2 min)"
    local phase="" last=""
    for _ in $(seq 100); do
        phase=$(kubectl -n streaming get cjob "$JOB" -o 'jsonpath={.status.phase}')
        last=$(kubectl -n streaming get cjob "$JOB" \
            -o 'jsonpath={.status.checkpoints.lastCompleted.id}')
        if [ "$phase" = Running ] && [ -n "$last" ]; then
            kubectl -n streaming get cjob
            kubectl -n streaming get pods
            cat <<MSG

The job runs on the cluster of $KUBECONFIG. Try:
  export KUBECONFIG=$KUBECONFIG
  kubectl -n streaming get cjob -w
  kubectl -n streaming describe cjob $JOB
  kubectl -n streaming patch cjob $JOB --type merge -p '{"spec":{"state":"Suspended"}}'
  kubectl -n streaming logs $JOB-driver
  scripts/try-kubernetes.sh down $1
MSG
            return 0
        fi
        sleep 3
    done
    kubectl -n streaming get cjob,pods >&2 || true
    die "the job did not reach Running with a checkpoint in 5 minutes (phase: ${phase:-none})"
}

up_local() {
    tools
    say "building the images (cached after the first time)"
    bash scripts/docker-smoke.sh --build-only >&2
    mkdir -p "$state"
    local line
    line=$(CJOB_KUBE_LOCAL_NODE=kubelet bash scripts/kube-local.sh up |
        grep '^export KUBECONFIG=')
    export KUBECONFIG=${line#export KUBECONFIG=}
    OPERATOR_IMAGE=cjob-operator:$TAG RUNTIME_IMAGE=cjob-runtime:$TAG PULL=Never
    say "loading the images into the node's containerd (kube-local.sh load)"
    bash scripts/kube-local.sh load "$OPERATOR_IMAGE" "$RUNTIME_IMAGE"
    s3_up
    sed "s/10\.250\.0\.1/$S3_HOST/" devtools/kube_local/manifests/minio-on-node.yaml |
        kubectl apply -f - >/dev/null
    namespaces
    storage_secret cjob "$(cat "$state/s3-secret-key")"
    helm_install
    apply_job http://minio.minio.svc:9000
    wait_running ""
}

up_current_context() {
    tools
    export KUBECONFIG=${KUBECONFIG:-$HOME/.kube/config}
    kubectl version --request-timeout=10s >/dev/null 2>&1 ||
        die "no cluster answers for the current context ($(kubectl config current-context 2>&1))"
    say "using the cluster of the current context $(kubectl config current-context)"
    user_images
    namespaces
    if [ -n "${CJOB_TRY_S3_ENDPOINT:-}" ]; then
        storage_secret "${CJOB_TRY_S3_ACCESS_KEY:?set CJOB_TRY_S3_ACCESS_KEY}" \
            "${CJOB_TRY_S3_SECRET_KEY:?set CJOB_TRY_S3_SECRET_KEY}"
        helm_install
        apply_job "$CJOB_TRY_S3_ENDPOINT"
    else
        local minio=$RELEASE-checkpointed-operator-minio
        helm_install --set minio.enabled=true --wait --timeout 300s
        say "creating the bucket checkpoints in the chart's evaluation MinIO"
        kubectl -n cjob-system exec "deploy/$minio" -- sh -c \
            'mc alias set local http://127.0.0.1:9000 "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null &&
             mc mb --ignore-existing local/checkpoints' >/dev/null
        storage_secret \
            "$(kubectl -n cjob-system get secret "$minio" -o 'jsonpath={.data.AWS_ACCESS_KEY_ID}' | base64 -d)" \
            "$(kubectl -n cjob-system get secret "$minio" -o 'jsonpath={.data.AWS_SECRET_ACCESS_KEY}' | base64 -d)"
        apply_job "http://$minio.cjob-system.svc:9000"
    fi
    wait_running --use-current-context
}

down_local() {
    s3_down
    bash scripts/kube-local.sh down
}

down_current_context() {
    export PATH="$PWD/.venv/bin:$PATH"
    kubectl -n streaming delete cjob "$JOB" --ignore-not-found --timeout=120s || true
    .venv/bin/helm uninstall "$RELEASE" --namespace cjob-system --wait || true
    kubectl delete namespace streaming cjob-system --ignore-not-found --wait=false
}

command=up current=""
for arg in "$@"; do
    case "$arg" in
        up | down) command=$arg ;;
        --use-current-context) current=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $arg (up or down, --use-current-context)" ;;
    esac
done
case "$command${current:+-current}" in
    up) up_local ;;
    down) down_local ;;
    up-current) up_current_context ;;
    down-current) down_current_context ;;
esac
