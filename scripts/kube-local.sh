#!/usr/bin/env bash
# A local Kubernetes API server (devtools/kube_local) for tests and for trying the
# operator without a cluster.
#
#   scripts/kube-local.sh up|down|status|env
#
#   up      start it in the background on 127.0.0.1 (port $CJOB_KUBE_LOCAL_PORT, default
#           any free one) with TLS from its own CA, then print `export KUBECONFIG=...`;
#           does nothing but print that line when it already runs;
#   down    stop it (no-op when it is not running);
#   status  say whether it runs and where (exit 1 when it does not);
#   env     print the export line (exit 1 when it does not run).
#
# State (CA, serving certificate, admin token, kubeconfig, log, pidfile) lives in
# $CJOB_KUBE_LOCAL_DIR, default build/kube-local. The CA and token survive restarts;
# objects do not (storage is in memory). No Docker needed yet: Pods are stored, not run.
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
    PYTHONPATH="$PWD/devtools/kube_local${PYTHONPATH:+:$PYTHONPATH}" \
        nohup "$python" -m kube_local serve --state-dir "$state" \
        --port "${CJOB_KUBE_LOCAL_PORT:-0}" >"$state/server.log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 300); do
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
        echo "kube-local: not ready after 30s; see $state/server.log" >&2
        return 1
    fi
    echo "kube-local: serving $(cat "$state/ready") (pid $(cat "$pidfile"))" >&2
    export_line
}

down() {
    if running; then
        pid=$(cat "$pidfile")
        kill "$pid"
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid"
        fi
        echo "kube-local: stopped (pid $pid)" >&2
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
