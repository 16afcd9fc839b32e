#!/usr/bin/env bash
# First contact on a fresh machine: a clone of this repository's committed HEAD, in a
# Debian container that has Python and git but no Java, no Docker and no .venv, runs
# the README's quick start exactly as written, as an unprivileged user.
#
#   scripts/fresh-machine.sh [--report FILE] [--tests | --only-tests] [--revision REV]
#                            [--keep-daemon] [--rebuild-base] [--rebuild-image]
#
# Idempotent and CI-safe; the engine steps are those of scripts/docker-smoke.sh
# (scripts/lib/docker-engine.sh):
#   1-3. tools, engine, base image: docker.io and debootstrap installed with apt-get
#      when missing (root), dockerd started when no engine answers, the debootstrap
#      image cjob-base:bookworm made once;
#   4. image: cjob-fresh-python:bookworm, built once (again when the base image
#      changed, or with --rebuild-image) FROM the base with only python3, python3-venv,
#      python3-pip, git and ca-certificates added and the user newuser (uid 1000, home
#      /home/newuser); step java_absent checks that the image has no `java` at all;
#   5. clone: `git clone --no-local` of the repository's HEAD (or of the commit
#      --revision names) into WORKDIR/clone, so only committed files take part:
#      uncommitted changes and untracked files of the working tree are NOT tested (the
#      step's detail says when there are some);
#   6. container: one container of that image, as newuser, --network host (PyPI and
#      the Debian mirror are reached as on the host), the clone mounted at
#      /home/newuser/checkpointed-jobs and the host's CA bundle mounted read-only with
#      PIP_CERT, SSL_CERT_FILE and REQUESTS_CA_BUNDLE pointing at it;
#   7. demo: `./scripts/demo.sh` in the clone with no other setup (it makes .venv and
#      installs everything, the JRE included); log WORKDIR/demo.log. Passes when it
#      exits 0 and its last line says "OK: ... lost 0, duplicated 0, out-of-order 0";
#      step demo_kill_restore checks the log for the worker's SIGKILL ("KILL:") and the
#      restart from a checkpoint ("restores checkpoint");
#   8. wordcount: the README's `CJOB_INPUT=... CJOB_OUTPUT=... .venv/bin/cjob run -p 3
#      --checkpoint-interval 1 examples/pipelines/wordcount.py` over generated
#      JSON-lines files, then every word's published counts must be exactly 1..n with
#      n its number of occurrences in the input; log WORKDIR/wordcount.log;
#   9. with --tests (after 7-8) or --only-tests (instead of them): `./scripts/test.sh`,
#      the README's test command, on this machine without Java and Docker (a manual
#      check, not run by CI: it takes long); log WORKDIR/tests.log, the pytest
#      summary line in the step's detail;
#  10. removes the container, and stops dockerd again if step 2 started it (unless
#      --keep-daemon).
#
# Environment: BASE_IMAGE (a base to use as is), DEBIAN_MIRROR, DOCKER (client binary),
# CJOB_FRESH_WORKDIR (clone, logs and report; default build/fresh-machine),
# PIP_DEFAULT_TIMEOUT (passed on to the container). Exit status: 0 when every step
# passed, 1 otherwise (one error line on stderr names the failed steps and the
# workdir), 2 for a bad argument. The report (JSON, default WORKDIR/report.json) has
# one entry per step: ok, seconds, detail.
set -euo pipefail
cd "$(dirname "$0")/.."

report=""
keep_daemon=""
rebuild_base=""
rebuild_image=""
run_quick_start=1
run_tests=""
revision=HEAD
while [ $# -gt 0 ]; do
    case "$1" in
        --report) report="$2"; shift 2 ;;
        --tests) run_tests=1; shift ;;
        --revision) revision="$2"; shift 2 ;;
        --only-tests) run_tests=1; run_quick_start=""; shift ;;
        --keep-daemon) keep_daemon=1; shift ;;
        --rebuild-base) rebuild_base=1; shift ;;
        --rebuild-image) rebuild_image=1; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "fresh-machine: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

prog=fresh-machine
# shellcheck source=SCRIPTDIR/lib/report.sh
source scripts/lib/report.sh
# shellcheck source=SCRIPTDIR/lib/docker-engine.sh
source scripts/lib/docker-engine.sh
report_init "${CJOB_FRESH_WORKDIR:-build/fresh-machine}" "$report"
repo=$(pwd)
image="cjob-fresh-python:$suite"
user_uid=1000
home=/home/newuser
checkout="$home/checkpointed-jobs"
container="cjob-fresh-machine-$$"
started_container=""
failures=()

cleanup() {
    local status=$?
    if [ -n "$started_container" ]; then
        "$DOCKER" rm -f "$container" >/dev/null 2>&1 || true
    fi
    [ -n "$keep_daemon" ] || engine_stop
    write_report || true
    exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

check() { # check NAME T0 OK DETAIL -- records the step and remembers a failure
    local name=$1 t0=$2 ok=$3 detail=$4
    if [ "$ok" = 1 ]; then
        say "PASS $name: $detail"
        record "$name" ok "$(since "$t0")" "$detail"
    else
        say "FAIL $name: $detail"
        record "$name" fail "$(since "$t0")" "$detail"
        failures+=("$name")
    fi
}

# The root cause a log shows, for a step's detail: its first exception line
# ("java.lang.module.FindException: Module ... not found"), else its last error line.
first_error() {
    local line
    line=$(grep -m 1 -E '[A-Za-z.]+(Exception|Error): ' "$1" || true)
    [ -n "$line" ] || line=$(grep -iE 'error|not found|failed' "$1" | tail -n 1 || true)
    cut -c1-400 <<<"${line:-no error line}"
}

# -- 1-3. engine and base image ---------------------------------------------------------
engine_tools
engine_start
engine_base_image ${rebuild_base:+--rebuild}
engine_ca_bundle

# -- 4. the fresh machine's image ---------------------------------------------------------
build_image() {
    local log="$workdir/build-image.log"
    say "building $image FROM $base"
    # The base's sources.list names the Debian mirror; --network host reaches it.
    if ! DOCKER_BUILDKIT=1 "$DOCKER" build --network host --progress=plain \
        --build-arg "BASE_IMAGE=$base" --label "io.checkpointed-jobs.base=$base_id" \
        --label io.checkpointed-jobs.target=fresh-python --tag "$image" - \
        >"$log" 2>&1 <<EOF; then
ARG BASE_IMAGE
FROM \$BASE_IMAGE
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
        python3 python3-venv python3-pip git ca-certificates \\
 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid $user_uid --shell /bin/bash newuser
USER $user_uid:$user_uid
WORKDIR $home
EOF
        tail -n 30 "$log" >&2
        die "building $image failed; the log is $workdir/build-image.log"
    fi
    "$DOCKER" image prune --force --filter label=io.checkpointed-jobs.target=fresh-python \
        >/dev/null 2>&1 || true
}

t0=$(now)
base_id=$("$DOCKER" image inspect -f '{{.Id}}' "$base")
built_on=$("$DOCKER" image inspect -f '{{index .Config.Labels "io.checkpointed-jobs.base"}}' \
    "$image" 2>/dev/null || true)
if [ -n "$rebuild_image" ] || [ "$built_on" != "$base_id" ]; then
    build_image
    record image ok "$(since "$t0")" "built $image FROM $base"
else
    record image ok "$(since "$t0")" "present: $image (FROM $base)"
fi

t0=$(now)
# shellcheck disable=SC2016 # expanded by the container's shell
found=$("$DOCKER" run --rm --network none --entrypoint /bin/sh "$image" -c '
    command -v java; ls -d /usr/lib/jvm /usr/lib/jvm/* /opt/java 2>/dev/null
    echo "user $(id -un) uid $(id -u); $(python3 --version); $(git --version)" >&2' 2>"$workdir/image-check.err") ||
    found="docker run failed: $found $(cat "$workdir/image-check.err")"
if [ -z "$found" ]; then
    check java_absent "$t0" 1 "no java, no JVM directory in $image; $(cat "$workdir/image-check.err")"
else
    check java_absent "$t0" 0 "Java found in $image: $(tr '\n' ' ' <<<"$found")"
    die "the fresh-machine image $image must have no Java (rebuild it with --rebuild-image)"
fi

# -- 5. clone -------------------------------------------------------------------------------
t0=$(now)
clone="$workdir/clone"
rm -rf "$clone"
git clone --quiet --no-local "$repo" "$clone" >"$workdir/clone.log" 2>&1 ||
    { cat "$workdir/clone.log" >&2; die "git clone of $repo failed; the log is $workdir/clone.log"; }
commit=$(git rev-parse --verify --quiet "$revision^{commit}") ||
    die "--revision $revision names no commit of $repo"
git -C "$clone" checkout --quiet --detach "$commit"
detail=$(git -C "$clone" log -1 --format="$revision %H %s")
chown -R "$user_uid:$user_uid" "$clone"
uncommitted=$(git status --porcelain | wc -l)
[ "$uncommitted" = 0 ] ||
    detail+="; $uncommitted uncommitted or untracked path(s) of the working tree NOT included"
record clone ok "$(since "$t0")" "$detail"

# -- 6. container ---------------------------------------------------------------------------
t0=$(now)
run_args=(run --detach --name "$container" --network host --user "$user_uid:$user_uid"
    --volume "$clone:$checkout" --workdir "$checkout")
if [ -n "$ca_bundle" ]; then
    run_args+=(--volume "$ca_bundle:/etc/ssl/host-ca-bundle.crt:ro"
        --env PIP_CERT=/etc/ssl/host-ca-bundle.crt --env SSL_CERT_FILE=/etc/ssl/host-ca-bundle.crt
        --env REQUESTS_CA_BUNDLE=/etc/ssl/host-ca-bundle.crt)
fi
[ -z "${PIP_DEFAULT_TIMEOUT:-}" ] || run_args+=(--env "PIP_DEFAULT_TIMEOUT=$PIP_DEFAULT_TIMEOUT")
started_container=1
"$DOCKER" "${run_args[@]}" "$image" sleep infinity >"$workdir/container.log" 2>&1 ||
    { cat "$workdir/container.log" >&2; die "starting the container failed; the log is $workdir/container.log"; }
record container ok "$(since "$t0")" \
    "$container as uid $user_uid, --network host, CA bundle ${ca_bundle:-none} mounted read-only"

in_container() { # in_container SECONDS LOG COMMAND... -- exit status of the command
    local limit=$1 log=$2
    shift 2
    timeout "$limit" "$DOCKER" exec "$container" "$@" >"$log" 2>&1
}

# -- 7. the demo, exactly as the README says -------------------------------------------------
if [ -n "$run_quick_start" ]; then
    t0=$(now)
    log="$workdir/demo.log"
    say "running ./scripts/demo.sh in the container (installs everything; log $log)"
    in_container 1800 "$log" ./scripts/demo.sh && status=0 || status=$?
    verified=$(grep -E '^\[ *[0-9.]+s\] (OK|FAILED): ' "$log" | tail -n 1 || true)
    verified=${verified#*] }
    if [ "$status" = 0 ] && [[ "$verified" == OK:* ]] &&
        [[ "$verified" == *"lost 0, duplicated 0, out-of-order 0"* ]]; then
        check demo "$t0" 1 "$verified"
    else
        [ "$status" != 124 ] || status="124 (timed out after 1800 s)"
        check demo "$t0" 0 "exit $status: ${verified:-no verified line; $(first_error "$log")}; the log is $log"
    fi

    t0=$(now)
    kill_line=$(grep -m 1 'KILL: ' "$log" || true)
    restore_line=$(grep -m 1 'restores checkpoint' "$log" || true)
    if [ -n "$kill_line" ] && [ -n "$restore_line" ]; then
        check demo_kill_restore "$t0" 1 "${kill_line#*] } / ${restore_line#*] }"
    else
        check demo_kill_restore "$t0" 0 \
            "KILL line: ${kill_line:-missing}; restore line: ${restore_line:-missing}; the log is $log"
    fi

    # -- 8. the README's `cjob run` of the word count -----------------------------------------
    t0=$(now)
    log="$workdir/wordcount.log"
    say "running examples/pipelines/wordcount.py with cjob run (log $log)"
    # shellcheck disable=SC2016 # expanded by the container's shell
    in_container 900 "$log" bash -euo pipefail -c '
        data=$HOME/wordcount
        rm -rf "$data" && mkdir -p "$data/in"
        python3 - "$data/in" <<"PY"
import json, random, sys
rng = random.Random(9)
vocabulary = "the quick brown fox jumps over lazy dog barrier snapshot checkpoint " \
    "Spark Stream state key exactly once restore".split()
for f in range(4):
    with open(f"{sys.argv[1]}/part-{f}.jsonl", "w", encoding="utf-8") as out:
        for _ in range(2500):
            words = rng.choices(vocabulary, k=rng.randint(1, 12))
            out.write(json.dumps({"line": " ".join(words)}) + "\n")
PY
        CJOB_INPUT=$data/in CJOB_OUTPUT=$data/out \
            .venv/bin/cjob run -p 3 --checkpoint-interval 1 examples/pipelines/wordcount.py
        python3 - "$data" <<"PY"
import collections, json, pathlib, sys
data = pathlib.Path(sys.argv[1])
expected = collections.Counter(
    word.lower()
    for path in sorted((data / "in").glob("*.jsonl"))
    for line in path.read_text(encoding="utf-8").splitlines()
    for word in json.loads(line)["line"].split()
)
published = collections.defaultdict(list)
parts = sorted(p for p in (data / "out").rglob("part-*.jsonl") if "_staging" not in p.parts)
for path in parts:
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        published[record["word"]].append(record["count"])
wrong = {
    word: f"expected 1..{expected[word]}, got {sorted(published[word])[-3:]} as the top counts"
    f" of {len(published[word])}"
    for word in sorted(set(expected) | set(published))
    if sorted(published[word]) != list(range(1, expected[word] + 1))
}
total = sum(expected.values())
if wrong:
    print(f"WORDCOUNT WRONG: {len(wrong)} of {len(expected)} words: {dict(sorted(wrong.items())[:5])}")
    sys.exit(1)
print(f"WORDCOUNT OK: {len(expected)} words, {total:,} occurrences in {len(parts)} published "
      f"file(s); every word counted exactly 1..n")
PY' && status=0 || status=$?
    verdict=$(grep -E '^WORDCOUNT (OK|WRONG): ' "$log" | tail -n 1 || true)
    summary=$(grep -E '\] job (finished|stopped): ' "$log" | tail -n 1 || true)
    if [ "$status" = 0 ] && [[ "$verdict" == "WORDCOUNT OK: "* ]]; then
        check wordcount "$t0" 1 "${verdict#WORDCOUNT } (${summary#*] })"
    else
        check wordcount "$t0" 0 "exit $status: ${verdict:-$(first_error "$log")}; the log is $log"
    fi
fi

# -- 9. the README's test command (manual check) ---------------------------------------------
if [ -n "$run_tests" ]; then
    t0=$(now)
    log="$workdir/tests.log"
    say "running ./scripts/test.sh in the container (log $log)"
    in_container 5400 "$log" ./scripts/test.sh && status=0 || status=$?
    summary=$(grep -E '^=+ .*[0-9.]+s( \([0-9:]+\))? =+$' "$log" | tail -n 1 || true)
    summary=$(sed -E 's/^=+ //; s/ =+$//' <<<"$summary")
    say "pytest: ${summary:-no summary line}"
    if [ "$status" = 0 ]; then
        check tests "$t0" 1 "$summary"
    else
        check tests "$t0" 0 "exit $status: ${summary:-$(first_error "$log")}; the log is $log"
    fi
fi

if [ "${#failures[@]}" -gt 0 ]; then
    echo "fresh-machine: ${#failures[@]} step(s) failed (${failures[*]}); logs and $report are in $workdir" >&2
    exit 1
fi
say "every step passed; report: $report"
