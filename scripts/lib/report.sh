# shellcheck shell=bash disable=SC2034,SC2154 # prog: set by the caller
# Sourced (bash) by scripts that run a sequence of steps and write a JSON report of them:
# scripts/docker-smoke.sh and scripts/fresh-machine.sh.
#
#   prog=NAME                       # the name messages start with
#   report_init WORKDIR [REPORT]    # sets workdir (absolute), report (default
#                                   # WORKDIR/report.json) and results; empties results
#   say TEXT                        # "==> NAME: TEXT" on stdout
#   t0=$(now); ...; record STEP ok|fail "$(since "$t0")" DETAIL
#   die TEXT                        # one error line on stderr, step "fatal", exit 1
#   write_report                    # results -> report (call it from the EXIT trap)
#
# The report maps each step to {"ok", "status", "seconds", "detail"} (detail: one line,
# at most 600 characters).

report_init() {
    workdir=$1
    mkdir -p "$workdir"
    workdir=$(cd "$workdir" && pwd)
    report=${2:-$workdir/report.json}
    results="$workdir/results.tsv" # step<TAB>status<TAB>seconds<TAB>detail
    : >"$results"
}

say() { echo "==> $prog: $*"; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(printf '%s' "${4:-}" | tr '\t\n' '  ' | cut -c1-600)" >>"$results"; }
die() {
    echo "$prog: error: $*" >&2
    record fatal fail 0 "$*"
    exit 1
}

write_report() {
    python3 - "$results" "$report" <<'PY'
import json, sys
steps = {}
for line in open(sys.argv[1], encoding="utf-8"):
    name, status, seconds, detail = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
    steps[name] = {"ok": status == "ok", "status": status, "seconds": float(seconds or 0),
                   "detail": detail}
with open(sys.argv[2], "w", encoding="utf-8") as out:
    json.dump(steps, out, indent=2, sort_keys=True)
PY
}
