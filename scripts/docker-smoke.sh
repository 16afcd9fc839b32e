#!/usr/bin/env bash
# Builds both Dockerfile targets with a local Docker engine and smoke-tests them.
#
#   scripts/docker-smoke.sh [--report FILE] [--keep-daemon] [--rebuild-base] [--build-only]
#
# --build-only stops after step 4 and keeps the engine running (the local Kubernetes
# runs pods as containers of these images: tests/e2e_k8s); --stop-engine then stops a
# dockerd these scripts started (and nothing else) and exits.
#
# Idempotent and CI-safe; every step is skipped when it is already done:
#   1. installs docker.io (and debootstrap) with apt-get when they are missing (root);
#   2. starts dockerd in the background when no engine answers (pidfile
#      /var/run/cjob-dockerd.pid; storage driver overlay2, else vfs; no iptables
#      rules, no bridge: builds use --network host, containers --network none);
#   3. makes the base image cjob-base:bookworm once (nothing can be pulled here) with
#      scripts/docker-base-image.sh: debootstrap (Debian bookworm, minbase) from the
#      Debian mirror configured in /etc/apt/sources.list*, then `docker import`;
#      skipped when BASE_IMAGE is set;
#   4. builds `--target operator` and `--target runtime` with BuildKit (the engine
#      keeps the layer cache across runs; PyPI through --network host; the host's CA
#      bundle goes to pip as the build secret `ca-bundle`);
#   5. smoke-tests the images in containers with no network, a read-only root, only
#      /tmp writable, UID 10001 and no capabilities: no build tools in either image,
#      no test or benchmark scaffolding among the installed package files,
#      `cjob --help`, `cjob demo` (a checkpointed job on local Spark with a worker
#      process killed, a restore and an exactly-once check), Spark on the JRE, the Spark executor entry point, and the
#      operator failing clearly without a cluster (healthcheck answering, clean stop);
#   6. stops dockerd again if step 2 (or an interrupted earlier run) started it.
# Steps 1-3 and 6 are scripts/lib/docker-engine.sh, shared with scripts/fresh-machine.sh;
# when dockerd cannot start, the report's step `engine` fails and says why.
#
# Environment: BASE_IMAGE (a base to use as is), CJOB_IMAGE_TAG (default dev),
# DEBIAN_MIRROR, DOCKER (client binary), CJOB_DOCKER_WORKDIR (logs and report,
# default build/docker-smoke). Exit status: 0 when every step and smoke test passed.
# The report (JSON) has one entry per step: ok, seconds, detail.
set -euo pipefail
cd "$(dirname "$0")/.."

report=""
keep_daemon=""
rebuild_base=""
build_only=""
stop_engine=""
while [ $# -gt 0 ]; do
    case "$1" in
        --report) report="$2"; shift 2 ;;
        --keep-daemon) keep_daemon=1; shift ;;
        --rebuild-base) rebuild_base=1; shift ;;
        --build-only) build_only=1; keep_daemon=1; shift ;;
        --stop-engine) stop_engine=1; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "docker-smoke: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

prog=docker-smoke
# shellcheck source=SCRIPTDIR/lib/report.sh
source scripts/lib/report.sh
# shellcheck source=SCRIPTDIR/lib/docker-engine.sh
source scripts/lib/docker-engine.sh
report_init "${CJOB_DOCKER_WORKDIR:-build/docker-smoke}" "$report"
if [ -n "$stop_engine" ]; then
    stop_dockerd
    exit 0
fi
tag=${CJOB_IMAGE_TAG:-dev}
operator_image="cjob-operator:$tag"
runtime_image="cjob-runtime:$tag"
containers=()

cleanup() {
    local status=$?
    for c in "${containers[@]}"; do
        [ -n "$DOCKER" ] || break
        "$DOCKER" rm -f "$c" >/dev/null 2>&1 || true
    done
    [ -n "$keep_daemon" ] || engine_stop
    write_report || true
    exit "$status"
}

trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

engine_tools                                     # 1. tools
engine_start                                     # 2. engine
engine_base_image ${rebuild_base:+--rebuild}     # 3. base image

# -- 4. builds ------------------------------------------------------------------------
engine_ca_bundle

build() {
    local target=$1 image=$2 log="$workdir/build-$1.log" t0
    local args=(build --network host --progress=plain --build-arg "BASE_IMAGE=$base"
        --target "$target" --tag "$image")
    [ -z "$ca_bundle" ] || args+=(--secret "id=ca-bundle,src=$ca_bundle")
    say "building --target $target as $image"
    t0=$(now)
    if ! DOCKER_BUILDKIT=1 "$DOCKER" "${args[@]}" . >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        record "build_$target" fail "$(since "$t0")" "docker build failed; the log is $log"
        die "docker build --target $target failed; the log is $log"
    fi
    local size
    size=$("$DOCKER" image inspect -f '{{.Size}}' "$image")
    record "build_$target" ok "$(since "$t0")" "$image size_bytes=$size"
}

build operator "$operator_image"
build runtime "$runtime_image"
# Earlier builds of our images that lost their tag (only ours: they carry our label),
# and, on an engine this script runs, build cache beyond 6 GB (the layers and pip caches the two builds use take about 3).
"$DOCKER" image prune --force --filter label=io.checkpointed-jobs.target >/dev/null || true
if [ -n "$started_dockerd" ]; then
    "$DOCKER" builder prune --force --keep-storage 6GB >/dev/null 2>&1 || true
fi

if [ -n "$build_only" ]; then
    say "built $operator_image and $runtime_image (--build-only: no smoke tests)"
    exit 0
fi

# -- 5. smoke tests -------------------------------------------------------------------
failures=0
check() {  # check NAME SECONDS_SINCE DETAIL -- records and counts
    local name=$1 t0=$2 ok=$3 detail=$4
    if [ "$ok" = 1 ]; then
        say "PASS $name"
        record "$name" ok "$(since "$t0")" "$detail"
    else
        say "FAIL $name: $detail"
        record "$name" fail "$(since "$t0")" "$detail"
        failures=$((failures + 1))
    fi
}

# Containers: no network, read-only root, nothing but /tmp writable, UID 10001, no
# capabilities. A hostname that resolves keeps the JVM from complaining about it.
locked=(--network none --hostname cjob-smoke --add-host cjob-smoke:127.0.0.1
    --read-only --user 10001:10001 --cap-drop ALL --security-opt no-new-privileges)
# Spark extracts native libraries (netty, snappy, zstd) to /tmp: it must allow exec.
runtime_tmp=(--tmpfs "/tmp:rw,exec,nosuid,nodev,size=1g")

# Hygiene: numeric non-root user, no pip, no compiler, no apt lists in the images.
for image in "$operator_image" "$runtime_image"; do
    name="hygiene_${image%%:*}"
    t0=$(now)
    user=$("$DOCKER" image inspect -f '{{.Config.User}}' "$image")
    # shellcheck disable=SC2016 # expanded by the container's shell
    found=$(timeout 60 "$DOCKER" run --rm --network none --user 0 --entrypoint /bin/sh "$image" -c \
        'for t in gcc cc g++ make pip pip3; do command -v $t; done
         python -m pip --version >/dev/null 2>&1 && echo "python -m pip"
         ls -A /var/lib/apt/lists /root/.cache/pip 2>/dev/null | grep -v "^/\|^$\|^partial$\|^lock$"
         true' 2>&1) || found="docker run failed: $found"
    ok=0
    [ "$user" = "10001:10001" ] && [ -z "$found" ] && ok=1
    check "$name" "$t0" "$ok" "user=$user; build tools or caches found: ${found:-none}"
done

# Shipped files: the installed distribution (its RECORD) and the import system agree
# that no test or benchmark scaffolding is in the image (issue 12): no
# cjob_operator.testing, no probe, no testing module but the public barrier_runtime.testing.
for image in "$operator_image" "$runtime_image"; do
    name="shipped_files_${image%%:*}"
    t0=$(now)
    out=$(timeout 60 "$DOCKER" run --rm "${locked[@]}" --tmpfs /tmp:rw,nosuid,nodev,size=64m \
        --entrypoint python "$image" -c '
import importlib.metadata, importlib.util
files = [str(f) for f in importlib.metadata.files("checkpointed-jobs")]
def scaffolding(path):
    parts = path.split("/")
    if parts[0] not in ("barrier_runtime", "cjob_operator"):
        return False
    in_public = parts[:2] == ["barrier_runtime", "testing"]
    testing = "testing" in parts or parts[-1] == "testing.py"
    return "probe" in parts or (testing and not in_public)
bad = ",".join(sorted(f for f in files if scaffolding(f))) or "none"
modules = sum(f.startswith("cjob_operator/") and f.endswith(".py") for f in files)
found = "yes" if importlib.util.find_spec("cjob_operator.testing") else "no"
print(f"files={len(files)} cjob_operator_modules={modules} scaffolding={bad}",
      f"cjob_operator.testing importable={found}")
' 2>&1) || out="docker run failed: $out"
    ok=0
    grep -q 'scaffolding=none cjob_operator.testing importable=no$' <<<"$out" &&
        ! grep -q 'cjob_operator_modules=0 ' <<<"$out" && ok=1
    check "$name" "$t0" "$ok" "$(tail -n 1 <<<"$out")"
done

# runtime: cjob --help
t0=$(now)
out=$(timeout 60 "$DOCKER" run --rm "${locked[@]}" "${runtime_tmp[@]}" "$runtime_image" \
    cjob --help 2>&1) && grep -q '^usage: cjob' <<<"$out" && ok=1 || ok=0
check runtime_help "$t0" "$ok" "$(head -n 1 <<<"$out")"

# runtime: a checkpointed job on local Spark, a worker killed, a restore, verified exactly-once.
t0=$(now)
out=$(timeout 300 "$DOCKER" run --rm "${locked[@]}" "${runtime_tmp[@]}" "$runtime_image" \
    demo --store file:///tmp/checkpoints --keys 100 --events-per-key 100 --rate 5000 \
    --interval 0.2 --json 2>"$workdir/runtime-demo.err") && status=0 || status=$?
summary=$(tail -n 1 <<<"$out")
printf '%s\n' "$summary" >"$workdir/runtime-demo.json"
ok=$(python3 - "$summary" <<'PY' || echo 0
import json, sys
try:
    s = json.loads(sys.argv[1])
except ValueError:
    print(0)
    raise SystemExit
good = (s.get("exactly_once") is True and s.get("lost") == 0 and s.get("duplicated") == 0
        and s.get("out_of_order") == 0 and s.get("restarts", 0) >= 1
        and s.get("checkpoints_completed", 0) >= 1)
print(1 if good else 0)
PY
)
[ "$status" = 0 ] || ok=0
check runtime_demo "$t0" "$ok" "exit $status: ${summary:-no output; stderr: $(tail -n 3 "$workdir/runtime-demo.err")}"

# runtime: Spark (JRE + pyspark) runs a barrier stage on the read-only image.
t0=$(now)
out=$(timeout 300 "$DOCKER" run --rm "${locked[@]}" "${runtime_tmp[@]}" \
    -e SPARK_LOCAL_IP=127.0.0.1 "$runtime_image" python -c '
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").appName("cjob-smoke")
         .config("spark.driver.host", "127.0.0.1").config("spark.ui.enabled", "false")
         .getOrCreate())
rdd = spark.sparkContext.parallelize(range(100), 2).barrier()
print("spark", spark.version, "sum", sum(rdd.mapPartitions(lambda it: [sum(it)]).collect()))
spark.stop()
' 2>"$workdir/runtime-spark.err") && grep -q 'sum 4950$' <<<"$out" && ok=1 || ok=0
check runtime_spark "$t0" "$ok" "${out:-no output; stderr: $(tail -n 3 "$workdir/runtime-spark.err")}"

# runtime: `executor` (what Spark on Kubernetes runs in executor pods) starts the
# executor backend with Spark's environment; with no driver it fails to connect.
t0=$(now)
out=$(timeout 120 "$DOCKER" run --rm "${locked[@]}" "${runtime_tmp[@]}" \
    -e SPARK_DRIVER_URL=spark://CoarseGrainedScheduler@127.0.0.1:7078 \
    -e SPARK_EXECUTOR_ID=1 -e SPARK_EXECUTOR_CORES=1 -e SPARK_APPLICATION_ID=spark-smoke \
    -e SPARK_EXECUTOR_POD_IP=127.0.0.1 -e SPARK_EXECUTOR_MEMORY=256m \
    -e SPARK_EXECUTOR_POD_NAME=cjob-smoke-exec-1 -e SPARK_JAVA_OPT_0=-Dspark.driver.port=7078 \
    "$runtime_image" executor 2>&1) || true
grep -q 'Failed to connect to /127.0.0.1:7078' <<<"$out" && ! grep -q '^Usage:' <<<"$out" &&
    ok=1 || ok=0
check runtime_executor "$t0" "$ok" "$(grep -m 1 -E 'Failed to connect|Usage:|error' <<<"$out" || tail -n 1 <<<"$out")"

# operator: with no Kubernetes API to manage it must fail visibly: one clear error
# line and a non-zero exit (so a pod shows CrashLoopBackOff), within 90 s.
operator_smoke() {  # prints the detail; runs in a subshell
    local name=$1 line="" code
    "$DOCKER" run -d --name "$name" "${locked[@]}" --tmpfs /tmp:rw,nosuid,nodev,size=64m \
        "$operator_image" >/dev/null || { echo "docker run failed"; return 1; }
    code=$(timeout 90 "$DOCKER" wait "$name" 2>/dev/null) || code="still running after 90 s"
    "$DOCKER" logs "$name" >"$workdir/operator.log" 2>&1 || true
    line=$(grep -m 1 'no Kubernetes API to manage' "$workdir/operator.log" || true)
    echo "${line:-no clear error line (log: $workdir/operator.log)}; exit code $code"
    [ -n "$line" ] && [[ "$code" =~ ^[0-9]+$ ]] && [ "$code" != 0 ]
}
t0=$(now)
containers+=("cjob-smoke-operator-$$")
detail=$(operator_smoke "cjob-smoke-operator-$$") && ok=1 || ok=0
check operator_no_cluster "$t0" "$ok" "$detail"

if [ "$failures" -gt 0 ]; then
    echo "docker-smoke: $failures smoke test(s) failed; logs and $report are in $workdir" >&2
    exit 1
fi
say "all smoke tests passed; report: $report"
