#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs dependencies, makes (or reuses) a Debian 13
# root with torch 2.6 while it builds, builds the worker inside that root, starts a coordinator on
# the embedded SQLite default (state in .state/) and one local agent (GPU slots if nvidia-smi
# finds GPUs, else the CPU slot) with two torch builds — `debian12` (this host's torch 1.13) and
# `debian13` (torch 2.6 in its root) — submits the default matrix with the CLI
# (examples/cpu-compile-demo.yaml without a GPU: eager vs torch.compile on both builds, with an
# OOM cell; examples/gpu-demo.yaml on the local GPU classes with one), shows progress, prints the
# comparison table and the URLs, then keeps both services up until Ctrl-C.
#   scripts/quickstart.sh            # run in the foreground; Ctrl-C stops it
#   scripts/quickstart.sh --detach   # leave it running; stop later with:
#   scripts/quickstart.sh stop
# Re-running is safe: installed packages and an up-to-date build are skipped, and a running
# coordinator and agent are reused; each run submits the matrix again (exports are cached).
#
# Environment (all optional):
#   BENCHFLEET_PORT                    coordinator port on 127.0.0.1 (default 8080; 0: a free one)
#   BENCHFLEET_QUICKSTART_STATE        database, tokens, logs, agent state (default .state)
#   BENCHFLEET_QUICKSTART_MATRIX       matrix file to submit instead of the default
#   BENCHFLEET_QUICKSTART_BUILD        build tree (default build/default, CMake preset "default")
#   BENCHFLEET_QUICKSTART_SKIP_SETUP   1: skip installing and building (the binaries must exist)
#   BENCHFLEET_QUICKSTART_TIMEOUT_S    give up waiting for the run after this long (default 3600)
#   BENCHFLEET_TORCH_ROOT              the torch 2.6 root (default ~/.cache/benchfleet/torch-roots/trixie);
#                                      none: the fast path, the host's torch 1.13 alone and
#                                      examples/cpu-demo.yaml (eager vs TorchScript), no root to make
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
state="${BENCHFLEET_QUICKSTART_STATE:-$root/.state}"
build="${BENCHFLEET_QUICKSTART_BUILD:-$root/build/default}"
pidfile="$state/coordinator.pid"
agent_pidfile="$state/agent.pid"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
running() { alive "$pidfile"; }

stop_one() {  # pidfile, name
  if alive "$1"; then
    kill -TERM "$(cat "$1")"
    for _ in $(seq 100); do alive "$1" || break; sleep 0.1; done
    alive "$1" && kill -TERM "$(cat "$1")"  # a second SIGTERM aborts a draining agent
    for _ in $(seq 50); do alive "$1" || break; sleep 0.1; done
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

torch_root="${BENCHFLEET_TORCH_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/torch-roots/trixie}"
root_worker="$build/torch-root-worker/bin/benchfleet-worker"
setup=1
[ "${BENCHFLEET_QUICKSTART_SKIP_SETUP:-0}" = 1 ] && setup=0
mkdir -p "$state"

t0=$(date +%s)
[ "$setup" = 1 ] && scripts/install-deps.sh --no-browser --no-fuzz --no-slurm
t1=$(date +%s)
root_pid=""
if [ "$setup" = 1 ] && [ "$torch_root" != none ]; then
  # Made beside the C++ build (minutes the first time, seconds after); its lines go to a log.
  echo "quickstart: making the torch 2.6 root in the background: $torch_root (log: $state/torch-root.log)"
  scripts/torch-root.sh --root "$torch_root" >"$state/torch-root.log" 2>&1 &
  root_pid=$!
fi
if [ "$setup" = 1 ]; then
  cmake --preset default >/dev/null
  cmake --build --preset default --target benchfleet benchfleet-coordinator benchfleet-agent benchfleet-worker
fi
t2=$(date +%s)
if [ -n "$root_pid" ]; then
  if wait "$root_pid"; then
    echo "quickstart: $(grep -E '^torch-root: root (ready|is current)' "$state/torch-root.log" | tail -n 1 | sed 's/^torch-root: //')"
    echo "quickstart: building benchfleet-worker inside the root against its LibTorch 2.6"
    scripts/build-worker.sh --root "$torch_root" --out "$build/torch-root-worker" >/dev/null ||
      { echo "quickstart: the worker did not build in the root; going on with the host's torch only" >&2; torch_root=none; }
  else
    tail -n 5 "$state/torch-root.log" >&2
    echo "quickstart: the torch 2.6 root could not be made (see $state/torch-root.log); going on with the host's torch only" >&2
    torch_root=none
  fi
fi
t2b=$(date +%s)

# The agent's torch builds: this host's (Debian 12, torch 1.13) and, where its root and the worker
# built in it exist, Debian 13's torch 2.6 in its root.
with_root=0
if [ "$torch_root" != none ] && [ -f "$torch_root/etc/benchfleet-root.json" ] && [ -x "$root_worker" ]; then
  with_root=1
fi
{
  echo "# written by scripts/quickstart.sh"
  echo "builds:"
  echo "  - {name: debian12, python: /usr/bin/python3, worker: $build/agent/worker/benchfleet-worker}"
  if [ "$with_root" = 1 ]; then
    echo "  - {name: debian13, python: /usr/bin/python3, worker: $root_worker, root: $torch_root}"
  fi
} >"$state/agent.yaml.new"
if ! cmp -s "$state/agent.yaml.new" "$state/agent.yaml" 2>/dev/null; then
  mv "$state/agent.yaml.new" "$state/agent.yaml"
  stop_one "$agent_pidfile" "agent (its builds changed)"
else
  rm -f "$state/agent.yaml.new"
fi

cli="$build/cli/benchfleet"
if ! running; then
  rm -f "$state/port"
  "$build/coordinator/benchfleet-coordinator" --listen "127.0.0.1:${BENCHFLEET_PORT:-8080}" \
    --db "$state/benchfleet.db" --port-file "$state/port" >>"$state/coordinator.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 100); do
    [ -s "$state/port" ] && break
    running || { echo "quickstart: the coordinator did not start; see $state/coordinator.log" >&2
                 tail -n 5 "$state/coordinator.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -s "$state/port" ] || { echo "quickstart: the coordinator did not listen; see $state/coordinator.log" >&2; exit 1; }
fi
base="http://127.0.0.1:$(cat "$state/port")"
# The CLI reads these (flags and a config file work too: benchfleet --help).
export BENCHFLEET_URL="$base"
export BENCHFLEET_OPERATOR_TOKEN_FILE="$state/benchfleet.db.operator-token"

if ! alive "$agent_pidfile"; then
  BENCHFLEET_ENROLLMENT_TOKEN=$(cat "$state/benchfleet.db.enrollment-token") \
    "$build/agent/daemon/benchfleet-agent" --config "$state/agent.yaml" --coordinator "$base" \
    --state-dir "$state/agent" --name local \
    >>"$state/agent.log" 2>&1 &
  echo $! >"$agent_pidfile"
fi

# The local agent's GPU classes, once it has enrolled ("" when it only has the CPU slot).
gpu_classes=""
for _ in $(seq 100); do
  agents=$("$cli" agents --json 2>/dev/null || true)
  classes=$(printf '%s' "$agents" | /usr/bin/python3 -c '
import json, sys
try:
    agents = json.load(sys.stdin)["agents"]
except Exception:
    sys.exit(1)
local = [a for a in agents if a["name"] == "local" and a["online"]]
if not local:
    sys.exit(1)
print(",".join(sorted({s["gpu_class"] for s in local[0]["slots"] if s["gpu_class"] != "cpu"})))
') && { gpu_classes="$classes"; break; }
  alive "$agent_pidfile" || { echo "quickstart: the agent exited; see $state/agent.log" >&2
                              tail -n 5 "$state/agent.log" >&2; exit 1; }
  sleep 0.2
done

submit_args=()
if [ -n "${BENCHFLEET_QUICKSTART_MATRIX:-}" ]; then
  matrix="$BENCHFLEET_QUICKSTART_MATRIX"
elif [ -n "$gpu_classes" ]; then
  matrix=examples/gpu-demo.yaml
  submit_args=(--gpus "$gpu_classes")
elif [ "$with_root" = 1 ]; then
  matrix=examples/cpu-compile-demo.yaml
else
  matrix=examples/cpu-demo.yaml
fi
echo "quickstart: submitting $matrix ${submit_args[*]:-} (the agent log is $state/agent.log)"
run_status=0
run_id=$(timeout "${BENCHFLEET_QUICKSTART_TIMEOUT_S:-3600}" \
           "$cli" submit "$matrix" "${submit_args[@]}" --wait --print-id) || run_status=$?
[ -n "$run_id" ] || { echo "quickstart: the matrix was not submitted" >&2; exit 1; }
case "$run_status" in
  0) ;;
  3) echo "quickstart: run $run_id finished with failed cells (shown in the table)" >&2 ;;
  *) echo "quickstart: waiting for run $run_id ended with exit code $run_status" >&2; exit 1 ;;
esac
t3=$(date +%s)

echo
"$cli" report "$run_id"
echo
echo "Dashboard: $base/#/runs/$run_id   Report: $base/api/v1/runs/$run_id/report (?format=md|csv)"
echo "API: $base/api/v1/runs   OpenAPI: $base/api/v1/openapi.json   Metrics: $base/metrics"
echo "CLI: export BENCHFLEET_URL=$base BENCHFLEET_OPERATOR_TOKEN_FILE=$BENCHFLEET_OPERATOR_TOKEN_FILE"
echo "     $cli runs | run $run_id | report $run_id --format csv | agents | watch ID | --help"
echo "Timings: dependencies $((t1 - t0)) s, build $((t2 - t1)) s, torch root and its worker $((t2b - t2)) s, run $((t3 - t2b)) s"

if [ "$detach" = "--detach" ]; then
  echo "quickstart: coordinator and agent left running; stop them with: scripts/quickstart.sh stop"
  exit 0
fi
trap 'stop; exit 0' INT TERM
echo "quickstart: coordinator and agent running; Ctrl-C stops them"
while running; do sleep 1; done
