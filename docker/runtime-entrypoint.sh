#!/bin/bash
# Entry point of the runtime image (runs under tini as PID 1).
#
#   executor        start a Spark executor: Spark on Kubernetes creates executor pods
#                   from this image with the single argument `executor` and describes
#                   the executor in SPARK_* environment variables;
#   PROGRAM ARGS... a program on PATH (python, java, bash, cjob, ...) runs as given;
#   ARGS...         anything else is a `cjob` command line (`demo ...`, `driver ...`).
#
# Nothing here writes to the filesystem, so the image works read-only.
set -euo pipefail

spark_executor() {
    local missing=() name
    for name in SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES \
        SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP SPARK_EXECUTOR_MEMORY; do
        [ -n "${!name:-}" ] || missing+=("$name")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "cjob-entrypoint: error: 'executor' is started by Spark on Kubernetes, which sets" \
            "${missing[*]}; they are not set here" >&2
        exit 2
    fi
    # SPARK_JAVA_OPT_<n> carry the executor's JVM options, in order of <n>.
    local java_opts=()
    while read -r name; do
        [ -n "$name" ] && java_opts+=("${!name}")
    done < <(compgen -v SPARK_JAVA_OPT_ | sort -t_ -k4 -n)
    local classpath="${SPARK_HOME}/jars/*"
    [ -n "${SPARK_CLASSPATH:-}" ] && classpath="${SPARK_CLASSPATH}:${classpath}"
    [ -n "${SPARK_EXTRA_CLASSPATH:-}" ] && classpath="${classpath}:${SPARK_EXTRA_CLASSPATH}"
    [ -n "${HADOOP_CONF_DIR:-}" ] && classpath="${HADOOP_CONF_DIR}:${classpath}"
    classpath="${SPARK_CONF_DIR:-${SPARK_HOME}/conf}:${classpath}"
    [ -n "${SPARK_DIST_CLASSPATH:-}" ] && classpath="${classpath}:${SPARK_DIST_CLASSPATH}"
    exec "${JAVA_HOME}/bin/java" "${java_opts[@]}" \
        "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" \
        -cp "$classpath" \
        org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
        --driver-url "$SPARK_DRIVER_URL" \
        --executor-id "$SPARK_EXECUTOR_ID" \
        --cores "$SPARK_EXECUTOR_CORES" \
        --app-id "$SPARK_APPLICATION_ID" \
        --hostname "$SPARK_EXECUTOR_POD_IP" \
        --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
        --podName "${SPARK_EXECUTOR_POD_NAME:-${HOSTNAME}}"
}

if [ "${1:-}" = "executor" ]; then
    shift
    spark_executor "$@"
elif [ $# -gt 0 ] && [ "${1#-}" = "$1" ] && command -v -- "$1" >/dev/null 2>&1; then
    exec "$@"
else
    exec cjob "$@"
fi
