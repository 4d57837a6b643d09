#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs dependencies, builds, starts a
# coordinator on the embedded SQLite default (state in .state/) and one local agent (GPU slots
# if nvidia-smi finds GPUs, else the CPU slot) with the local torch build, submits the default
# matrix (examples/cpu-demo.json), shows progress, prints the comparison table and the URLs,
# then keeps both services up until Ctrl-C.
#   scripts/quickstart.sh            # run in the foreground; Ctrl-C stops it
#   scripts/quickstart.sh --detach   # leave it running; stop later with:
#   scripts/quickstart.sh stop
# Re-running is safe: finished set-up is skipped and a running coordinator is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
state="$PWD/.state"
port="${BENCHFLEET_PORT:-8080}"
pidfile="$state/coordinator.pid"
agent_pidfile="$state/agent.pid"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
running() { alive "$pidfile"; }

stop_one() {  # pidfile, name
  if alive "$1"; then
    kill -TERM "$(cat "$1")"
    for _ in $(seq 100); do alive "$1" || break; sleep 0.1; done
    alive "$1" && kill -TERM "$(cat "$1")"  # a second SIGTERM aborts a draining agent
    echo "quickstart: $2 stopped"
  fi
  rm -f "$1"
}

stop() {
  stop_one "$agent_pidfile" agent
  stop_one "$pidfile" coordinator
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
cmake --build --preset default --target benchfleet-coordinator benchfleet-agent benchfleet-worker
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
if ! alive "$agent_pidfile"; then
  BENCHFLEET_ENROLLMENT_TOKEN=$(cat "$state/benchfleet.db.enrollment-token") \
    build/default/agent/daemon/benchfleet-agent --coordinator "$base" --state-dir "$state/agent" --name local \
    >>"$state/agent.log" 2>&1 &
  echo $! >"$agent_pidfile"
fi

run=$(curl -fsS -X POST "$base/api/v1/runs" -H "Authorization: Bearer $token" \
        -H 'Content-Type: application/json' --data @examples/cpu-demo.json)
run_id=$(printf '%s' "$run" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
echo "quickstart: submitted run $run_id ($(printf '%s' "$run" | sed -n 's/.*"job_count":\([0-9]*\).*/\1/p') jobs); the agent log is $state/agent.log"

# Progress until the run is done (plain lines: the CLI with a progress bar comes with issue 5).
deadline=$(( $(date +%s) + ${BENCHFLEET_QUICKSTART_TIMEOUT_S:-1800} ))
while :; do
  status=$(curl -fsS "$base/api/v1/runs/$run_id")
  state_now=$(printf '%s' "$status" | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')
  finished=$(printf '%s' "$status" | sed -n 's/.*"finished_jobs":\([0-9]*\).*/\1/p')
  total=$(printf '%s' "$status" | sed -n 's/.*"job_count":\([0-9]*\).*/\1/p')
  echo "quickstart: run $run_id $state_now: $finished/$total jobs finished"
  case "$state_now" in done|cancelled) break ;; esac
  alive "$agent_pidfile" || { echo "quickstart: the agent exited; see $state/agent.log" >&2; tail -5 "$state/agent.log" >&2; exit 1; }
  [ "$(date +%s)" -lt "$deadline" ] || { echo "quickstart: gave up waiting for run $run_id" >&2; exit 1; }
  sleep 3
done
echo
curl -fsS "$base/api/v1/runs/$run_id/report?format=md"
echo
echo "Report (JSON): $base/api/v1/runs/$run_id/report   CSV: $base/api/v1/runs/$run_id/report?format=csv"
echo "API: $base/api/v1/runs   OpenAPI: $base/api/v1/openapi.json   Metrics: $base/metrics"
echo "Dashboard: $base/ (lands with issue 6)   Operator token: $state/benchfleet.db.operator-token"
echo "Timings: dependencies $((t1 - t0)) s, build $((t2 - t1)) s, run $(( $(date +%s) - t2 )) s"

if [ "$detach" = "--detach" ]; then
  echo "quickstart: coordinator and agent left running; stop them with: scripts/quickstart.sh stop"
  exit 0
fi
trap 'stop; exit 0' INT TERM
echo "quickstart: coordinator and agent running; Ctrl-C stops them"
while running; do sleep 1; done
