#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs dependencies, builds, starts a
# coordinator on the embedded SQLite default (state in .state/), submits the default matrix,
# prints the comparison table and the URLs, then keeps the coordinator up until Ctrl-C.
#   scripts/quickstart.sh            # run in the foreground; Ctrl-C stops it
#   scripts/quickstart.sh --detach   # leave it running; stop later with:
#   scripts/quickstart.sh stop
# Re-running is safe: finished set-up is skipped and a running coordinator is reused.
# Stage: the agent daemon and worker land with issues 3-4; until then jobs stay queued and the
# table shows "-" (not run) in every cell.
set -euo pipefail
cd "$(dirname "$0")/.."
state="$PWD/.state"
port="${BENCHFLEET_PORT:-8080}"
pidfile="$state/coordinator.pid"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

stop() {
  if running; then
    kill -TERM "$(cat "$pidfile")"
    for _ in $(seq 50); do running || break; sleep 0.1; done
    echo "quickstart: coordinator stopped"
  fi
  rm -f "$pidfile"
}

case "${1:-}" in
  stop) stop; exit 0 ;;
  --detach|"") ;;
  *) echo "usage: scripts/quickstart.sh [--detach] | stop" >&2; exit 2 ;;
esac
detach="${1:-}"

t0=$(date +%s)
scripts/install-deps.sh
t1=$(date +%s)
cmake --preset default >/dev/null
cmake --build --preset default --target benchfleet-coordinator
t2=$(date +%s)

mkdir -p "$state"
if ! running; then
  build/default/coordinator/benchfleet-coordinator --listen "127.0.0.1:$port" --db "$state/benchfleet.db" \
    --port-file "$state/port" >>"$state/coordinator.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    running || { echo "quickstart: the coordinator did not start; see $state/coordinator.log" >&2; tail -5 "$state/coordinator.log" >&2; exit 1; }
    sleep 0.1
  done
fi
base="http://127.0.0.1:$port"
token=$(cat "$state/benchfleet.db.operator-token")

run=$(curl -fsS -X POST "$base/api/v1/runs" -H "Authorization: Bearer $token" \
        -H 'Content-Type: application/json' --data @examples/cpu-demo.json)
run_id=$(printf '%s' "$run" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
echo "quickstart: submitted run $run_id ($(printf '%s' "$run" | sed -n 's/.*"job_count":\([0-9]*\).*/\1/p') jobs)"
echo
curl -fsS "$base/api/v1/runs/$run_id/report?format=md"
echo
echo "Report (JSON): $base/api/v1/runs/$run_id/report   CSV: $base/api/v1/runs/$run_id/report?format=csv"
echo "API: $base/api/v1/runs   OpenAPI: $base/api/v1/openapi.json   Metrics: $base/metrics"
echo "Dashboard: $base/ (lands with issue 6)   Operator token: $state/benchfleet.db.operator-token"
echo "Timings: dependencies $((t1 - t0)) s, build $((t2 - t1)) s, run $(( $(date +%s) - t2 )) s"

if [ "$detach" = "--detach" ]; then
  echo "quickstart: coordinator left running (pid $(cat "$pidfile")); stop it with: scripts/quickstart.sh stop"
  exit 0
fi
trap 'stop; exit 0' INT TERM
echo "quickstart: coordinator running; Ctrl-C stops it"
while running; do sleep 1; done
