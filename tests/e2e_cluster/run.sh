#!/usr/bin/env bash
# End to end on a real Kubernetes cluster (kind, k3d or any other) with Helm:
#
#   1. apply the chart's CRD the documented way (helm show crds | kubectl apply --server-side)
#   2. helm install the chart in namespaced mode with the evaluation MinIO and
#      NetworkPolicies, into a namespace that enforces the restricted Pod Security
#      Standard (so every pod the chart and the operator create must comply)
#   3. create a CheckpointedJob; wait for phase Running and a completed checkpoint
#   4. kill the driver pod; wait for the operator to restart it from the last
#      completed checkpoint and for checkpoints to advance past it
#   5. read the operator's metrics through the API server (cjob_jobs, checkpoints)
#   6. suspend (final savepoint, pods gone) and resume
#   7. clean up (job first, so its finalizer runs, then the release and the namespace)
#
# No cluster reachable: prints "SKIPPED: ..." and exits 0 (exit 1 with
# CJOB_E2E_REQUIRE_CLUSTER=1).
#
# Environment:
#   KUBECONFIG, the current context      the cluster to use
#   CJOB_E2E_CREATE_CLUSTER=kind|k3d     create a throwaway cluster if none is reachable
#   CJOB_OPERATOR_IMAGE                  default ghcr.io/checkpointed-jobs/cjob-operator:0.1.0
#   CJOB_RUNTIME_IMAGE                   default ghcr.io/checkpointed-jobs/cjob-runtime:0.1.0
#                                        (both loaded into a created kind/k3d cluster when
#                                        the local Docker engine has them)
#   CJOB_E2E_PIPELINE_MODULE             pipeline module inside the runtime image
#                                        (default barrier_runtime.demo; it is given
#                                        --out S3_URL --rate 500)
#   CJOB_E2E_TIMEOUT                     seconds per wait (default 300)
#   CJOB_E2E_KEEP=1                      keep the namespace for debugging
set -euo pipefail
cd "$(dirname "$0")/../.."

CHART=charts/checkpointed-operator
OPERATOR_IMAGE=${CJOB_OPERATOR_IMAGE:-ghcr.io/checkpointed-jobs/cjob-operator:0.1.0}
RUNTIME_IMAGE=${CJOB_RUNTIME_IMAGE:-ghcr.io/checkpointed-jobs/cjob-runtime:0.1.0}
PIPELINE=${CJOB_E2E_PIPELINE_MODULE:-barrier_runtime.demo}
TIMEOUT=${CJOB_E2E_TIMEOUT:-300}
SUFFIX=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
NS=cjob-e2e-$SUFFIX
RELEASE=cjob-e2e-$SUFFIX
JOB=e2e-counts
# build_flow of barrier_runtime.demo needs --out: the counts go to the evaluation MinIO
# (the driver and executor pods get its keys from the job's credentialsSecret).
OUT_URL="s3://cjob-e2e/$JOB-out?endpoint=http://$RELEASE-checkpointed-operator-minio.$NS.svc:9000"
CREATED_CLUSTER=""

log() { echo "==> $*"; }
skip() {
    echo "SKIPPED: $*"
    if [ "${CJOB_E2E_REQUIRE_CLUSTER:-}" = 1 ]; then exit 1; fi
    exit 0
}
dump() {
    set +e
    echo "---- diagnostics ($NS) ----" >&2
    kubectl -n "$NS" get all,cjob,events --sort-by=.metadata.creationTimestamp >&2
    kubectl -n "$NS" get cjob "$JOB" -o yaml >&2
    kubectl -n "$NS" logs "deployment/$RELEASE-checkpointed-operator" --tail=200 >&2
    kubectl -n "$NS" logs "pod/$JOB-driver" --tail=200 >&2
}
fail() {
    echo "FAILED: $*" >&2
    dump
    exit 1
}
# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 3 s until it succeeds.
wait_for() {
    local limit=$1 what=$2
    shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then fail "timed out after ${limit}s: $what"; fi
        sleep 3
    done
}
field() { kubectl -n "$NS" get cjob "$JOB" -o "jsonpath=$1" 2>/dev/null; }
phase_is() { [ "$(field '{.status.phase}')" = "$1" ]; }
completed_after() { [ "$(field '{.status.checkpoints.lastCompleted.id}')" -gt "$1" ] 2>/dev/null; }
restarted() { [ "$(field '{.status.restarts.count}')" -ge 1 ] 2>/dev/null; }
driver_restored() {
    [ -n "$(kubectl -n "$NS" get pod "$JOB-driver" \
        -o 'jsonpath={.metadata.annotations.checkpointed\.dev/restore-from}' 2>/dev/null)" ]
}
no_driver() { ! kubectl -n "$NS" get pod "$JOB-driver" >/dev/null 2>&1; }
metrics() {
    kubectl get --raw \
        "/api/v1/namespaces/$NS/services/$RELEASE-checkpointed-operator-metrics:metrics/proxy/metrics"
}
metrics_show_running() {
    metrics | grep -E "^cjob_jobs\{.*job=\"$JOB\".*phase=\"Running\".*\} 1(\.0)?$"
}

# -- tools and cluster ---------------------------------------------------------------
HELM=$(command -v .venv/bin/helm || command -v helm || true)
[ -n "$HELM" ] || skip "helm is not installed (run scripts/get-helm.sh)"
command -v kubectl >/dev/null || skip "kubectl is not installed"

if ! kubectl version --request-timeout=5s >/dev/null 2>&1; then
    case "${CJOB_E2E_CREATE_CLUSTER:-}" in
    kind)
        command -v kind >/dev/null || skip "no cluster reachable and kind is not installed"
        log "creating kind cluster cjob-e2e"
        kind create cluster --name cjob-e2e --wait 180s
        CREATED_CLUSTER=kind
        for image in "$OPERATOR_IMAGE" "$RUNTIME_IMAGE"; do
            if docker image inspect "$image" >/dev/null 2>&1; then
                kind load docker-image --name cjob-e2e "$image"
            fi
        done
        ;;
    k3d)
        command -v k3d >/dev/null || skip "no cluster reachable and k3d is not installed"
        log "creating k3d cluster cjob-e2e"
        k3d cluster create cjob-e2e --wait --timeout 180s
        CREATED_CLUSTER=k3d
        for image in "$OPERATOR_IMAGE" "$RUNTIME_IMAGE"; do
            if docker image inspect "$image" >/dev/null 2>&1; then
                k3d image import --cluster cjob-e2e "$image"
            fi
        done
        ;;
    *)
        skip "no Kubernetes cluster reachable (kubectl version failed for the current" \
            "context); start one (kind create cluster) or set CJOB_E2E_CREATE_CLUSTER=kind|k3d"
        ;;
    esac
fi

cleanup() {
    set +e
    if [ "${CJOB_E2E_KEEP:-}" = 1 ]; then
        log "keeping namespace $NS (CJOB_E2E_KEEP=1)"
    else
        log "cleaning up"
        kubectl -n "$NS" delete cjob --all --wait=true --timeout=120s >/dev/null 2>&1
        "$HELM" uninstall "$RELEASE" -n "$NS" --wait >/dev/null 2>&1
        kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
    fi
    case "$CREATED_CLUSTER" in
    kind) kind delete cluster --name cjob-e2e ;;
    k3d) k3d cluster delete cjob-e2e ;;
    esac
}
trap cleanup EXIT

# -- 1. CRD, the documented way ----------------------------------------------------------
log "applying the CRD (helm show crds | kubectl apply --server-side)"
"$HELM" show crds "$CHART" | kubectl apply --server-side --force-conflicts -f -
kubectl wait --for=condition=Established --timeout=60s crd/checkpointedjobs.checkpointed.dev

# -- 2. the chart -------------------------------------------------------------------------
log "installing $RELEASE into $NS (namespaced mode, restricted Pod Security)"
kubectl create namespace "$NS"
kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=restricted \
    pod-security.kubernetes.io/warn=restricted
monitoring=()
if kubectl get crd servicemonitors.monitoring.coreos.com >/dev/null 2>&1; then
    monitoring=(--set metrics.serviceMonitor.enabled=true --set prometheusRule.enabled=true)
fi
"$HELM" install "$RELEASE" "$CHART" -n "$NS" --wait --timeout "${TIMEOUT}s" \
    --set "watchNamespaces={$NS}" \
    --set minio.enabled=true --set networkPolicy.enabled=true \
    --set "image.repository=${OPERATOR_IMAGE%:*}" --set "image.tag=${OPERATOR_IMAGE##*:}" \
    --set image.pullPolicy=IfNotPresent "${monitoring[@]}" ||
    fail "helm install failed"
# The evaluation MinIO starts empty and the runtime never creates buckets (a typo in
# spec.storage.bucket must fail clearly, not write somewhere new): make the job's bucket
# with the mc client that ships in the MinIO image.
kubectl -n "$NS" exec "deploy/$RELEASE-checkpointed-operator-minio" -- sh -c \
    'mc alias set local http://127.0.0.1:9000 "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null &&
     mc mb --ignore-existing local/cjob-e2e' ||
    fail "could not create the bucket cjob-e2e in the evaluation MinIO"

# -- 3. a job -------------------------------------------------------------------------------
log "creating CheckpointedJob $JOB"
kubectl -n "$NS" apply -f - <<EOF
apiVersion: checkpointed.dev/v1alpha1
kind: CheckpointedJob
metadata:
  name: $JOB
spec:
  image: $RUNTIME_IMAGE
  imagePullPolicy: IfNotPresent
  pipeline:
    module: $PIPELINE
    args: ["--out", "$OUT_URL", "--rate", "500"]
  parallelism: 2
  driver:
    serviceAccount: cjob-driver
    memory: 1Gi
  executor:
    memory: 1Gi
    instances: 2
  checkpointing:
    interval: 10s
  storage:
    endpoint: http://$RELEASE-checkpointed-operator-minio.$NS.svc:9000
    bucket: cjob-e2e
    credentialsSecret:
      name: $RELEASE-checkpointed-operator-minio
EOF
wait_for "$TIMEOUT" "phase Running" phase_is Running
wait_for "$TIMEOUT" "a first completed checkpoint" completed_after 0
first=$(field '{.status.checkpoints.lastCompleted.id}')
log "running; checkpoint $first completed"

# -- 4. recovery ------------------------------------------------------------------------------
log "killing the driver pod"
kubectl -n "$NS" delete pod "$JOB-driver" --grace-period=0 --force --wait=false
wait_for "$TIMEOUT" "the operator to count a restart" restarted
wait_for "$TIMEOUT" "a driver restoring from a checkpoint" driver_restored
wait_for "$TIMEOUT" "phase Running again" phase_is Running
wait_for "$TIMEOUT" "checkpoints to advance past $first" completed_after "$first"
log "restored from $(kubectl -n "$NS" get pod "$JOB-driver" \
    -o 'jsonpath={.metadata.annotations.checkpointed\.dev/restore-from}')"

# -- 5. metrics -------------------------------------------------------------------------------
log "reading the operator's metrics through the API server"
wait_for 60 "cjob_jobs{phase=Running} == 1 for $JOB" metrics_show_running
metrics | grep -q '^cjob_checkpoints_completed_total{' || fail "no cjob_checkpoints_completed_total"

# -- 6. suspend and resume --------------------------------------------------------------------
log "suspending"
kubectl -n "$NS" patch cjob "$JOB" --type merge -p '{"spec":{"state":"Suspended"}}'
wait_for "$TIMEOUT" "phase Suspended" phase_is Suspended
wait_for "$TIMEOUT" "the driver pod to be gone" no_driver
log "resuming"
kubectl -n "$NS" patch cjob "$JOB" --type merge -p '{"spec":{"state":"Running"}}'
wait_for "$TIMEOUT" "phase Running after resume" phase_is Running

log "PASSED: install, first checkpoint, recovery from the last completed checkpoint, metrics, suspend/resume"
