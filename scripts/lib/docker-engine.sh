# shellcheck shell=bash disable=SC2034,SC2154 # workdir, prog: set by the caller; the variables it sets are the caller's
# Sourced (bash) by scripts/docker-smoke.sh and scripts/fresh-machine.sh: a local Docker
# engine, started when none answers, and the registry-free Debian base image. Needs
# scripts/lib/report.sh (say, record, die, now, since) sourced first, $workdir set
# and the repository root as the working directory.
#
#   engine_tools            step "tools": installs docker.io (and debootstrap unless
#                           BASE_IMAGE is set) with apt-get when missing (root)
#   engine_start            step "engine": starts dockerd in the background when no
#                           engine answers (pidfile /var/run/cjob-dockerd.pid; storage
#                           driver overlay2, else vfs, or CJOB_DOCKER_STORAGE_DRIVERS;
#                           no iptables rules, no bridge: containers use --network host
#                           or none); a dockerd an interrupted earlier run left behind
#                           counts as started here. Records the step failed (and dies)
#                           when dockerd cannot start: its detail says why.
#   engine_base_image [--rebuild]
#                           step "base_image": sets $base to BASE_IMAGE or makes
#                           cjob-base:$CJOB_DEBIAN_SUITE (default bookworm) once with
#                           scripts/docker-base-image.sh (debootstrap minbase + import)
#   engine_stop             stops dockerd if engine_start (or an earlier run) started it
#   engine_ca_bundle        sets $ca_bundle: PIP_CERT, REQUESTS_CA_BUNDLE, SSL_CERT_FILE
#                           or /etc/ssl/certs/ca-certificates.crt, the first non-empty
#                           file ("" when none is)
#
# Variables it sets: DOCKER (the client), started_dockerd, driver, base, ca_bundle.

suite=${CJOB_DEBIAN_SUITE:-bookworm}
pidfile=/var/run/cjob-dockerd.pid
started_dockerd=""
driver=""
DOCKER=${DOCKER:-}

apt_updated=""
apt_install() {
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        die "$* missing and cannot be installed here (needs root and apt-get)"
    fi
    local log="$workdir/apt.log"
    say "installing $* (apt-get)"
    if [ -z "$apt_updated" ]; then
        apt-get update -qq >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get update failed"; }
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
        >>"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get install $* failed"; }
}

# The client that ships with the engine understands its BuildKit without buildx.
pick_client() {
    if [ -n "${DOCKER:-}" ]; then
        return
    fi
    if [ -x /usr/bin/docker ]; then
        DOCKER=/usr/bin/docker
    else
        DOCKER=$(command -v docker || true)
    fi
}

engine_tools() {
    local t0
    t0=$(now)
    pick_client
    if [ -z "$DOCKER" ] || ! "$DOCKER" info >/dev/null 2>&1; then
        command -v dockerd >/dev/null 2>&1 || apt_install docker.io
        DOCKER=""
        pick_client
    fi
    if [ -z "${BASE_IMAGE:-}" ] && ! command -v debootstrap >/dev/null 2>&1; then
        apt_install debootstrap
    fi
    record tools ok "$(since "$t0")" "client $DOCKER"
}

stop_dockerd() {
    local pid
    pid=$(cat "$pidfile" 2>/dev/null || true)
    [ -n "$pid" ] || return 0
    say "stopping dockerd (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    echo "$prog: warning: dockerd (pid $pid) did not stop within 20 s" >&2
}

engine_stop() {
    [ -z "$started_dockerd" ] || stop_dockerd
}

start_dockerd() { # sets driver and started_dockerd
    local pid
    for driver in ${CJOB_DOCKER_STORAGE_DRIVERS:-overlay2 vfs}; do
        say "starting dockerd (storage driver $driver)"
        dockerd --storage-driver="$driver" --iptables=false --ip-forward=false --bridge=none \
            --pidfile="$pidfile" >>"$workdir/dockerd.log" 2>&1 &
        pid=$!
        started_dockerd=1
        for _ in $(seq 1 120); do
            if "$DOCKER" info >/dev/null 2>&1; then
                return 0
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        started_dockerd=""
        echo "$prog: dockerd did not start with $driver; the log is $workdir/dockerd.log" >&2
    done
    return 1
}

engine_start() {
    local t0 old_pid why
    t0=$(now)
    if "$DOCKER" info >/dev/null 2>&1; then
        # One that an interrupted run of these scripts left behind is ours to stop again.
        old_pid=$(cat "$pidfile" 2>/dev/null || true)
        if [ -n "$old_pid" ] && [ "$(cat "/proc/$old_pid/comm" 2>/dev/null)" = dockerd ]; then
            started_dockerd=1
        fi
        record engine ok "$(since "$t0")" \
            "already running${started_dockerd:+ (left by an earlier run)}: $("$DOCKER" info -f '{{.Driver}}')"
    elif [ "$(id -u)" != 0 ]; then
        why="no Docker engine answers and only root can start dockerd"
        record engine fail "$(since "$t0")" "$why"
        die "$why"
    elif ! start_dockerd; then
        tail -n 20 "$workdir/dockerd.log" >&2
        why="dockerd did not start here (storage drivers ${CJOB_DOCKER_STORAGE_DRIVERS:-overlay2 vfs}): $(
            grep -m 1 -iE 'level=(fatal|error)' "$workdir/dockerd.log" |
                sed -E 's/^time="[^"]*" //' | cut -c1-300 || true)"
        record engine fail "$(since "$t0")" "$why; the log is $workdir/dockerd.log"
        die "dockerd did not start; the log is $workdir/dockerd.log"
    else
        record engine ok "$(since "$t0")" "started: storage driver $driver"
    fi
}

engine_base_image() {
    local t0 old_base rebuild=""
    [ "${1:-}" != --rebuild ] || rebuild=1
    t0=$(now)
    if [ -n "${BASE_IMAGE:-}" ]; then
        base=$BASE_IMAGE
        record base_image ok "$(since "$t0")" "given: $base"
        return
    fi
    base="cjob-base:$suite"
    if [ -z "$rebuild" ] && "$DOCKER" image inspect "$base" >/dev/null 2>&1; then
        record base_image ok "$(since "$t0")" "present: $base"
        return
    fi
    old_base=$("$DOCKER" image inspect -f '{{.Id}}' "$base" 2>/dev/null || true)
    if ! DOCKER=$DOCKER CJOB_DEBIAN_SUITE=$suite \
        bash scripts/docker-base-image.sh "$base" "$workdir/rootfs" >"$workdir/base-image.log" 2>&1; then
        tail -n 20 "$workdir/base-image.log" >&2
        die "making the base image $base failed; the log is $workdir/base-image.log"
    fi
    if [ -n "$old_base" ] && [ "$old_base" != "$("$DOCKER" image inspect -f '{{.Id}}' "$base")" ]; then
        "$DOCKER" image rm "$old_base" >/dev/null 2>&1 || true
    fi
    record base_image ok "$(since "$t0")" "created $base ($(tail -n 1 "$workdir/base-image.log"))"
}

engine_ca_bundle() {
    local candidate
    ca_bundle=""
    for candidate in "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" \
        /etc/ssl/certs/ca-certificates.crt; do
        if [ -n "$candidate" ] && [ -s "$candidate" ]; then
            ca_bundle=$candidate
            return
        fi
    done
}
