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
#   4. the object store: MinIO (cjob-minio:<release>, scripts/minio-image.sh, from the
#      binary scripts/minio-build.sh builds from MinIO's Go module and caches: minutes
#      the first time, Go itself fetched from the module proxy when missing) loaded into the node and run in
#      namespace minio by devtools/kube_local/manifests/minio.yaml (the pods reach it as
#      minio.minio.svc:9000), its Secret `minio` with a random password, the bucket
#      `checkpoints` created from here through the Service's ClusterIP;
#   5. the README's install: namespaces cjob-system and streaming, the storage Secret,
#      `helm install cjob charts/checkpointed-operator --set 'driver.namespaces={streaming}'`;
#   6. `kubectl apply -f examples/manifests/minimal.yaml` with the image set to
#      cjob-runtime:dev, then waits for phase Running and a completed checkpoint.
# `down` stops the local control plane with every container it ran (MinIO's too).
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
RELEASE=cjob
JOB=running-count
TAG=${CJOB_IMAGE_TAG:-dev} # of the images built here (scripts/docker-smoke.sh)
export CJOB_IMAGE_TAG=$TAG

say() { echo "==> $*" >&2; }
die() { echo "try-kubernetes: error: $*" >&2; exit 1; }

# MinIO in namespace minio, ready; sets S3_ACCESS_KEY and S3_SECRET_KEY.
minio_up() { # IMAGE
    S3_ACCESS_KEY=cjob
    kubectl apply -f - >/dev/null <<<"$(sed -n '1,/^---$/p' devtools/kube_local/manifests/minio.yaml)"
    S3_SECRET_KEY=$(kubectl -n minio get secret minio \
        -o 'jsonpath={.data.MINIO_ROOT_PASSWORD}' 2>/dev/null | base64 -d || true)
    if [ -z "$S3_SECRET_KEY" ]; then
        S3_SECRET_KEY=$("$python" -c 'import secrets; print(secrets.token_urlsafe(24))')
        kubectl -n minio create secret generic minio --from-literal=MINIO_ROOT_USER=$S3_ACCESS_KEY \
            --from-literal="MINIO_ROOT_PASSWORD=$S3_SECRET_KEY" >/dev/null
    fi
    say "MinIO ($1) in namespace minio"
    sed "s#image: cjob-minio:.*#image: $1#" devtools/kube_local/manifests/minio.yaml |
        kubectl apply -f - >/dev/null
    kubectl -n minio rollout status deployment/minio --timeout=180s >&2
    local endpoint
    endpoint="http://$(kubectl -n minio get service minio -o 'jsonpath={.spec.clusterIP}'):9000"
    say "creating the bucket checkpoints ($endpoint from here, minio.minio.svc:9000 in pods)"
    S3_ACCESS_KEY=$S3_ACCESS_KEY S3_SECRET_KEY=$S3_SECRET_KEY "$python" - "$endpoint" <<'PY'
import os, sys, time
from barrier_runtime.storage import s3
deadline = time.monotonic() + 60  # kube-proxy's rule for a new Service may lag a little
while True:
    try:
        s3.S3ObjectStore(sys.argv[1], "checkpoints", access_key=os.environ["S3_ACCESS_KEY"],
                         secret_key=os.environ["S3_SECRET_KEY"], create_bucket=True)
        break
    except Exception as exc:
        if time.monotonic() > deadline:
            sys.exit(f"try-kubernetes: error: MinIO at {sys.argv[1]} did not answer: {exc}")
        time.sleep(1)
PY
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
    local minio_image
    minio_image=$(bash scripts/minio-image.sh)
    say "loading the images into the node's containerd (kube-local.sh load)"
    bash scripts/kube-local.sh load "$OPERATOR_IMAGE" "$RUNTIME_IMAGE" "$minio_image"
    minio_up "$minio_image"
    namespaces
    storage_secret "$S3_ACCESS_KEY" "$S3_SECRET_KEY"
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
