#!/usr/bin/env bash
# Fetches Spark's Kafka connector (org.apache.spark:spark-sql-kafka-0-10_2.13, pinned in
# devtools/spark_kafka/pom.xml) with its runtime dependencies from Maven Central into
#   ${CJOB_CACHE:-$HOME/.cache/cjob}/spark-kafka/<version>-<digest of the pom>/libs
# and prints that directory. Idempotent (a finished copy is reused) and safe to run in
# parallel (flock). Installs Maven with apt-get when it is missing and we are root.
# Used by the W4-on-Kafka benchmark (python -m cjob_bench run W4-kafka), which passes the jars Spark does not
# already ship to spark.jars.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pom="$root/devtools/spark_kafka/pom.xml"
version=$(sed -n 's#.*<version>\(4\.[0-9.]*\)</version>.*#\1#p' "$pom" | head -n 1)
digest=$(sha256sum "$pom" | cut -c1-12)
dest="${CJOB_CACHE:-$HOME/.cache/cjob}/spark-kafka/${version}-${digest}"

if [ -f "$dest/.complete" ]; then
    echo "$dest/libs"
    exit 0
fi
if ! command -v mvn >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing maven (apt-get)" >&2
        { apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                maven; } >&2
    else
        echo "error: Maven (mvn) is missing; install it (apt-get install maven) and run" \
            "$0 again" >&2
        exit 2
    fi
fi
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
if [ ! -f "$dest/.complete" ]; then
    echo "==> fetching spark-sql-kafka-0-10_2.13 $version and its dependencies (Maven)" >&2
    rm -rf "$dest/libs" "$dest/libs.tmp"
    # (Maven 3.8 prints colour codes even in batch mode: strip them)
    mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$dest/libs.tmp" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2
    mv "$dest/libs.tmp" "$dest/libs"
    touch "$dest/.complete"
fi
echo "$dest/libs"
