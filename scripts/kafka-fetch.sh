#!/usr/bin/env bash
# Fetches the Apache Kafka broker (kafka_2.13, KRaft) and its runtime dependencies from Maven
# Central, once per machine, into a cache outside the clone; prints the libs directory.
#
#   scripts/kafka-fetch.sh [MAVEN_ARG...]      e.g. -Dmaven.repo.local=/tmp/empty-m2
#
# The jars are the ones devtools/kafka_build/pom.xml names (its kafka.version), copied by
# `mvn dependency:copy-dependencies`. The cache key is that version plus a digest of the pom,
# so an edit of the pom fetches anew and an unchanged machine reuses what it fetched:
#   ${CJOB_CACHE:-~/.cache/cjob}/kafka/<version>-<digest>/libs/
# barrier_runtime.connectors.embedded_kafka finds them there (or in $CJOB_KAFKA_LIBS) and
# runs them on the Java the runtime uses. Maven is installed with apt-get when it is missing
# and we are root. Parallel callers wait on a lock; the libs directory appears whole or not
# at all.
set -euo pipefail
cd "$(dirname "$0")/.."
pom=devtools/kafka_build/pom.xml
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
[ -n "$version" ] || { echo "kafka-fetch: no <kafka.version> in $pom" >&2; exit 2; }
digest=$(sha256sum "$pom" | cut -c1-12)
cache=${CJOB_CACHE:-$HOME/.cache/cjob}/kafka/$version-$digest
libs=$cache/libs
mkdir -p "$cache"

if [ ! -d "$libs" ]; then
    exec 9>"$cache/.lock"
    flock 9
fi
if [ ! -d "$libs" ]; then
    if ! command -v mvn >/dev/null 2>&1; then
        if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
            echo "==> installing Maven (Debian package maven) to fetch the Kafka broker" >&2
            log=$(mktemp)
            if ! { apt-get update -qq &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                    maven; } >"$log" 2>&1; then
                tail -n 20 "$log" >&2
                rm -f "$log"
                echo "kafka-fetch: could not install Maven with apt-get" >&2
                exit 1
            fi
            rm -f "$log"
        else
            echo "kafka-fetch: Maven (mvn) is missing and cannot be installed here (needs root" \
                "and apt-get: apt-get install maven)" >&2
            exit 1
        fi
    fi
    start=$SECONDS
    rm -rf "$libs.tmp"
    # (Maven 3.8 prints colour codes even in batch mode: strip them)
    mvn -q -B -Dstyle.color=never -f "$pom" "$@" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$libs.tmp" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2
    ls "$libs.tmp"/kafka_2.13-"$version".jar >/dev/null
    mv "$libs.tmp" "$libs"
    echo "kafka-fetch: fetched Apache Kafka $version ($(ls "$libs" | wc -l) jars," \
        "$(du -sh "$libs" | cut -f1)) in $((SECONDS - start)) s" >&2
fi
touch "$libs" # the newest libs directory is the one embedded_kafka picks by default
echo "$libs"
