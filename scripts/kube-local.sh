#!/usr/bin/env bash
# A local Kubernetes cluster of real components for tests and for trying the operator:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built from their Go
# modules by scripts/kube-build.sh, cached outside the clone) and one node, `kube-local`.
#
#   scripts/kube-local.sh up|down|status|env|load IMAGE...
#
#   up      start it in the background (TLS from its own CA, free ports), then print
#           `export KUBECONFIG=...` (the admin's, group system:masters); does nothing but
#           print that line when it already runs;
#   down    stop it and every pod its node ran (no-op when it is not running);
#   status  say whether it runs, where, and which node (exit 1 when it does not);
#   env     print the export line (exit 1 when it does not run);
#   load    import images from the Docker engine into the node (what `kind load
#           docker-image` does); pods name them by their local tag, imagePullPolicy Never.
#
# The node (CJOB_KUBE_LOCAL_NODE):
#   kubelet  a real kubelet of the same release on containerd (Debian containerd and
#            containernetworking-plugins), kube-proxy (iptables) and CoreDNS: real pods on
#            a bridge network (CJOB_KUBE_LOCAL_POD_CIDR, default 10.244.0.0/24), cluster
#            DNS, Services. Needs root; one per machine. The node and the API server use
#            the address CJOB_KUBE_LOCAL_NODE_IP (default 10.250.0.1, put on a link
#            `cjob0`); host services the pods use must listen there.
#   none     no node (the API server on 127.0.0.1): pods stay Pending.
#   auto     (default) kubelet where it can run, else none; `up` says why.
#
# State (CA and credentials under pki/, kubeconfigs, logs/ of each component, etcd data,
# the node's files under node/, pidfile) lives in $CJOB_KUBE_LOCAL_DIR, default
# build/kube-local. The CA and credentials survive restarts; objects do not.
#
# The namespaces cjob-system and streaming (the README's install) are created with
# pod-security.kubernetes.io/enforce=restricted, as the chart claims its pods satisfy.
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
    local node=${CJOB_KUBE_LOCAL_NODE:-auto} why="" components=()
    export PYTHONPATH="$PWD/devtools/kube_local${PYTHONPATH:+:$PYTHONPATH}"
    if [ "$node" = auto ] || [ "$node" = kubelet ]; then
        if why=$("$python" -m kube_local check 2>&1); then
            node=kubelet
        elif [ "$node" = kubelet ]; then
            echo "kube-local: CJOB_KUBE_LOCAL_NODE=kubelet, but $why" >&2
            return 1
        fi
    fi
    if [ "$node" = auto ]; then
        echo "kube-local: no node, pods stay Pending: $why" >&2
        node=none
    fi
    case "$node" in
        kubelet) components=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet
            kubectl kube-proxy coredns pause) ;;
        none) ;;
        *) echo "kube-local: CJOB_KUBE_LOCAL_NODE=$node: use kubelet, none or auto" >&2
           return 2 ;;
    esac
    local bin
    bin=$(bash scripts/kube-build.sh ${components[@]+"${components[@]}"})
    nohup "$python" -m kube_local serve --state-dir "$state" --bin-dir "$bin" \
        --node "$node" >"$state/server.log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1800); do
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
        echo "kube-local: not ready after 180s; see $state/server.log" >&2
        return 1
    fi
    echo "kube-local: serving $(cat "$state/ready") (pid $(cat "$pidfile"), node: $node)" >&2
    export_line
}

down() {
    export PYTHONPATH="$PWD/devtools/kube_local${PYTHONPATH:+:$PYTHONPATH}"
    if running; then
        pid=$(cat "$pidfile")
        kill "$pid"
        for _ in $(seq 1800); do
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
    # A real node whose server was killed: its processes, mounts, links and chains.
    if [ -d "$state/node" ] && "$python" -m kube_local check >/dev/null 2>&1; then
        "$python" -m kube_local sweep --state-dir "$state" \
            --bin-dir "$(bash scripts/kube-build.sh kube-proxy)" >&2 || true
    fi
    rm -f "$pidfile" "$state/ready" "$state/node-kind"
}

load() {
    running && [ -f "$state/ready" ] ||
        { echo "kube-local: not running (scripts/kube-local.sh up)" >&2; return 1; }
    case "$(cat "$state/node-kind" 2>/dev/null)" in
        kubelet) PYTHONPATH="$PWD/devtools/kube_local${PYTHONPATH:+:$PYTHONPATH}" \
            "$python" -m kube_local load --state-dir "$state" --docker "${DOCKER:-docker}" "$@" ;;
        *) echo "kube-local: no node to load images into" >&2; return 1 ;;
    esac
}

case "${1:-}" in
    up) up ;;
    load) shift; load "$@" ;;
    down) down ;;
    status)
        if running && [ -f "$state/ready" ]; then
            echo "kube-local: running at $(cat "$state/ready") (pid $(cat "$pidfile"), node:" \
                "$(cat "$state/node-kind" 2>/dev/null))"
        else
            echo "kube-local: not running"
            exit 1
        fi ;;
    env) running || { echo "kube-local: not running (scripts/kube-local.sh up)" >&2; exit 1; }
         export_line ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) echo "usage: scripts/kube-local.sh up|down|status|env|load IMAGE..." >&2; exit 2 ;;
esac
