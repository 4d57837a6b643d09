#!/usr/bin/env bash
# Runs the long forms of the fault-injection programs (tests/fault/) and prints their rows
# side by side in tests/fault/fault_table.h's table:
#   R1  fault_agent_kill --kills 100                         kill -9 of the agent mid-job
#   R2  fault_coordinator_kill --kills 20 --agents 100       kill -9 of the coordinator under load
#   R3  fault_partition                                      a partition between namespaces mid-job
#   scripts/fault-suite.sh [--build DIR] [--out DIR] [PROGRAM...]
# --build  the build tree holding tests/fault/<program> (default build/default)
# --out    where each program's full output goes, as <program>.log (default <build>/fault-suite)
# PROGRAM  run only these (default: all three). A program that is not built is skipped with a
#          line saying so; fault_partition skips itself (exit 77) without root.
# Exit status 0 when every program that ran exited 0 (nothing lost or duplicated, recoveries in
# bounds), 1 otherwise, 2 on a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: fault-suite.sh [--build DIR] [--out DIR] [fault_agent_kill|fault_coordinator_kill|fault_partition...]"
build=build/default
out=""
programs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *) programs+=("$1"); shift ;;
  esac
done
[ ${#programs[@]} -gt 0 ] || programs=(fault_agent_kill fault_coordinator_kill fault_partition)
[ -n "$out" ] || out="$build/fault-suite"
mkdir -p "$out"

long_form() {
  case "$1" in
    fault_agent_kill) echo "--kills 100" ;;
    fault_coordinator_kill) echo "--kills 20 --agents 100" ;;
    fault_partition) echo "" ;;
    *) return 1 ;;
  esac
}

rows="$out/rows.jsonl"
: >"$rows"
status=0
notes=()
for program in "${programs[@]}"; do
  if ! args=$(long_form "$program"); then
    echo "$usage" >&2
    exit 2
  fi
  binary="$build/tests/fault/$program"
  if [ ! -x "$binary" ]; then
    notes+=("$program: skipped, not built ($binary is missing)")
    echo "== $program: skipped, not built ($binary is missing)"
    continue
  fi
  log="$out/$program.log"
  echo "== $program $args --json (output in $log)"
  start=$(date +%s)
  set +e
  # shellcheck disable=SC2086  # $args is a list of options
  "$binary" $args --json 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  took=$(( $(date +%s) - start ))
  if [ "$rc" -eq 77 ]; then
    notes+=("$program: skipped by itself (exit 77, see $log)")
    continue
  fi
  # The row is the program's one JSON line with a fault_class.
  row=$(grep -E '^\{.*"fault_class"' "$log" | tail -n 1 || true)
  if [ -z "$row" ]; then
    notes+=("$program: exit $rc after ${took} s and printed no row (see $log)")
    status=1
    continue
  fi
  echo "$row" >>"$rows"
  notes+=("$program: exit $rc after ${took} s")
  [ "$rc" -eq 0 ] || status=1
done

echo
echo "== fault-injection suite, long forms, from $build"
/usr/bin/python3 - "$rows" <<'EOF'
import json, statistics, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
# The format of tests/fault/fault_table.cpp's print_fault_table.
print("%-36s %9s %8s %6s %11s %20s" % ("fault class", "injected", "checked", "lost", "duplicated",
                                       "recovery p50 / max"))
for r in rows:
    rec = r.get("recovery_s") or []
    recovery = "%.2f s / %.2f s" % (statistics.median(rec), max(rec)) if rec else "-"
    print("%-36s %9d %8d %6d %11d %20s" % (r["fault_class"], r["injected"], r["checked"], r["lost"],
                                          r["duplicated"], recovery))
for r in rows:
    if r.get("recovery_meaning"):
        print("  %s: recovery = %s" % (r["fault_class"], r["recovery_meaning"]))
EOF
for note in "${notes[@]}"; do echo "  $note"; done
exit "$status"
