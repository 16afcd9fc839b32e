#!/usr/bin/env bash
# A local Kubernetes cluster of real components for tests and for trying the operator:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built from their Go
# modules by scripts/kube-build.sh, cached outside the clone) and a node agent
# (devtools/kube_local) that runs the pods the scheduler binds to the node `kube-local`
# as containers on the local Docker engine.
#
#   scripts/kube-local.sh up|down|status|env
#
#   up      start it in the background on 127.0.0.1 (free ports) with TLS from its own
#           CA, then print `export KUBECONFIG=...` (the admin's, group system:masters);
#           does nothing but print that line when it already runs;
#   down    stop it and every container its node ran (no-op when it is not running);
#   status  say whether it runs and where (exit 1 when it does not);
#   env     print the export line (exit 1 when it does not run).
#
# State (CA and credentials under pki/, kubeconfigs, logs/ of each component, etcd data,
# the node's pod volumes, pidfile) lives in $CJOB_KUBE_LOCAL_DIR, default build/kube-local.
# The CA and credentials survive restarts; objects do not (etcd starts empty).
#
# The namespaces cjob-system and streaming (the README's install) are created with
# pod-security.kubernetes.io/enforce=restricted, as the chart claims its pods satisfy.
#
# The node runs when a Docker engine answers (`docker info`); otherwise pods stay Pending
# and `up` says so. CJOB_KUBE_LOCAL_KUBELET=1 requires the node (fails without an
# engine), =0 never starts it. Pod addresses come from CJOB_KUBE_LOCAL_POD_CIDR (default
# 127.1.0.0/16; loopback addresses, host networking): give each cluster that runs at the
# same time its own range.
set -euo pipefail
cd "$(dirname "$0")/.."

state=${CJOB_KUBE_LOCAL_DIR:-build/kube-local}
pidfile="$state/kube-local.pid"
python=${PYTHON:-.venv/bin/python}

running() {
    [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

export_line() {
    echo "export KUBECONFIG=$(cd "$state" && pwd)/kubeconfig"
}

up() {
    if running && [ -f "$state/ready" ]; then
        export_line
        return 0
    fi
    [ -x "$python" ] || bash scripts/bootstrap.sh >&2
    mkdir -p "$state"
    rm -f "$state/ready"
    local kubelet=()
    case "${CJOB_KUBE_LOCAL_KUBELET:-auto}" in
        0) ;;
        1)
            if ! "${DOCKER:-docker}" info >/dev/null 2>&1; then
                echo "kube-local: CJOB_KUBE_LOCAL_KUBELET=1 but no Docker engine answers" \
                    "(start one: scripts/docker-smoke.sh --build-only starts and keeps it)" >&2
                return 1
            fi
            kubelet=(--node --docker "${DOCKER:-docker}")
            ;;
        *)
            if "${DOCKER:-docker}" info >/dev/null 2>&1; then
                kubelet=(--node --docker "${DOCKER:-docker}")
            else
                echo "kube-local: no Docker engine answers: no node, pods stay Pending" >&2
            fi
            ;;
    esac
    PYTHONPATH="$PWD/devtools/kube_local${PYTHONPATH:+:$PYTHONPATH}" \
        nohup "$python" -m kube_local serve --state-dir "$state" \
        --bin-dir "$(bash scripts/kube-build.sh)" ${kubelet[@]+"${kubelet[@]}"} \
        >"$state/server.log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1200); do
        [ -f "$state/ready" ] && break
        if ! running; then
            echo "kube-local: the server stopped while starting; see $state/server.log" >&2
            tail -5 "$state/server.log" >&2
            rm -f "$pidfile"
            return 1
        fi
        sleep 0.1
    done
    if [ ! -f "$state/ready" ]; then
        echo "kube-local: not ready after 120s; see $state/server.log" >&2
        return 1
    fi
    echo "kube-local: serving $(cat "$state/ready") (pid $(cat "$pidfile"))" >&2
    export_line
}

down() {
    if running; then
        pid=$(cat "$pidfile")
        kill "$pid"
        for _ in $(seq 900); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid"
        fi
        echo "kube-local: stopped (pid $pid)" >&2
    fi
    # Components of a server that was killed (they run in sessions of their own).
    if [ -f "$state/components.pid" ]; then
        local component
        for component in $(cat "$state/components.pid"); do
            if { tr '\0' ' ' <"/proc/$component/cmdline"; } 2>/dev/null |
                grep -qF "$(cd "$state" && pwd -P)"; then
                kill -9 "$component" 2>/dev/null || true
            fi
        done
        rm -f "$state/components.pid"
    fi
    # The node removes its containers as it stops; this catches one that was killed
    # (the label is the state directory's identity, as kube_local.node.engine sets it).
    if [ -d "$state" ] && command -v "${DOCKER:-docker}" >/dev/null 2>&1; then
        local id left
        id=$(printf %s "$(cd "$state" && pwd -P)" | sha256sum | cut -c1-12)
        left=$("${DOCKER:-docker}" ps --all --quiet --filter "label=kube-local.state=$id" \
            2>/dev/null || true)
        if [ -n "$left" ]; then
            # shellcheck disable=SC2086 # one id per word
            "${DOCKER:-docker}" rm --force $left >/dev/null 2>&1 || true
        fi
    fi
    rm -f "$pidfile" "$state/ready"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status)
        if running && [ -f "$state/ready" ]; then
            echo "kube-local: running at $(cat "$state/ready") (pid $(cat "$pidfile"))"
        else
            echo "kube-local: not running"
            exit 1
        fi ;;
    env) running || { echo "kube-local: not running (scripts/kube-local.sh up)" >&2; exit 1; }
         export_line ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) echo "usage: scripts/kube-local.sh up|down|status|env" >&2; exit 2 ;;
esac
