#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs dependencies, makes (or reuses) two Debian
# roots while it builds — Debian 13 with torch 2.6 and Debian unstable with torch 2.14 and
# transformers — starts a coordinator on the embedded SQLite default (state in .state/) and one
# local agent (GPU slots if nvidia-smi finds GPUs, else the CPU slot) with its torch builds —
# `stable` (torch 2.6 in its root), `unstable` (torch 2.14 in its root) and, where this host has
# Debian's torch 1.13 (installed only when something runs on it), `debian12` — submits the default
# matrices with the CLI, each build's part as soon as its root is ready (without
# a GPU examples/cpu-compile-demo.yaml, eager vs torch.compile on stable and unstable,
# examples/cpu-seed-demo.yaml, a seed model on unstable, and examples/cpu-memory-demo.yaml, the
# meant OOM cell; examples/gpu-demo.yaml on the local GPU classes with one), shows progress,
# prints the comparison tables and the URLs, then keeps both services up until Ctrl-C. The default
# matrices are torch.compile's (the python runtime): benchfleet-worker (the libtorch runtime) is
# built, on the host and in each root, only for a matrix that runs it (one given in
# BENCHFLEET_QUICKSTART_MATRIX, the fast path's, a GPU host's).
#   scripts/quickstart.sh            # run in the foreground; Ctrl-C stops it
#   scripts/quickstart.sh --detach   # leave it running; stop later with:
#   scripts/quickstart.sh stop
# Re-running is safe: installed packages, the roots and an up-to-date build are skipped, and a
# running coordinator and agent are reused (restarted if the build made them anew); each run
# submits the matrix again (exports are cached).
#
# Environment (all optional):
#   BENCHFLEET_PORT                    coordinator port on 127.0.0.1 (default 8080; 0: a free one)
#   BENCHFLEET_QUICKSTART_STATE        database, tokens, logs, agent state (default .state)
#   BENCHFLEET_QUICKSTART_MATRIX       matrix file(s) to submit instead of the default (space-separated)
#   BENCHFLEET_QUICKSTART_BUILD        build tree (default build/default, CMake preset "default")
#   BENCHFLEET_QUICKSTART_SKIP_SETUP   1: skip installing and building (the binaries must exist)
#   BENCHFLEET_QUICKSTART_TIMEOUT_S    give up waiting for the run after this long (default 3600)
#   BENCHFLEET_TORCH_ROOT              the torch 2.6 root (default ~/.cache/benchfleet/torch-roots/trixie)
#   BENCHFLEET_SID_ROOT                the torch 2.14 root (default ~/.cache/benchfleet/torch-roots/sid);
#                                      none: no unstable build (and examples/cpu-demo.yaml)
#                                      BENCHFLEET_TORCH_ROOT=none is the fast path: no root to make, the
#                                      host's torch 1.13 alone and examples/cpu-demo.yaml (eager vs
#                                      TorchScript)
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

roots_dir="${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/torch-roots"
torch_root="${BENCHFLEET_TORCH_ROOT:-$roots_dir/trixie}"
sid_root="${BENCHFLEET_SID_ROOT:-$roots_dir/sid}"
[ "$torch_root" = none ] && sid_root=none  # the fast path: the host's torch alone
setup=1
[ "${BENCHFLEET_QUICKSTART_SKIP_SETUP:-0}" = 1 ] && setup=0
mkdir -p "$state"

t0=$(date +%s)
# The libtorch runtime (AOTInductor, TorchScript) needs benchfleet-worker: in each root for a
# matrix given in BENCHFLEET_QUICKSTART_MATRIX that names it, on the host for such a matrix, the
# fast path's examples/cpu-demo.yaml and a GPU host's examples/gpu-demo.yaml. The default CPU
# matrices are torch.compile's (the python runtime) and need none: they are built only when run.
runs_libtorch() {  # matrix file: whether it runs the libtorch runtime (the default without runtimes:)
  if grep -Eq '^runtimes:' "$1" 2>/dev/null; then grep -Eq '^runtimes:.*libtorch' "$1"; else true; fi
}
needs_workers=0
for matrix in ${BENCHFLEET_QUICKSTART_MATRIX:-}; do
  runs_libtorch "$matrix" && needs_workers=1
done
needs_host_worker="$needs_workers"
[ "$torch_root" = none ] && needs_host_worker=1
nvidia-smi -L 2>/dev/null | grep -q '^GPU' && needs_host_worker=1
# The two roots are made side by side, beside the other packages' install and the C++ build. The
# unstable root comes first: every default matrix runs on it (the seed model's on it alone), so it
# runs at the normal CPU priority and best-effort I/O, and the first table waits for it and the
# build, not for the second root; the stable root runs at the lowest priority (nice 19, ionice
# idle), using what the install, the build and the first root leave of the cores and the disk.
# They start as soon as mmdebstrap is there. Each writes its own log and, when it ends, its exit
# status (torch-root-SUITE.rc), which the loop below polls: a matrix's builds run as soon as their
# roots are ready, so a root that is ready first is used first, and a root still being made
# yields its CPU and disk to the measurement.
declare -A root_pids=()
# tree_pids PID: PID and its descendants, each parent before its children (from /proc: a minimal
# machine may have no ps).
tree_pids() {
  local f stat rest pid ppid
  local -A children=()
  for f in /proc/[0-9]*/stat; do
    stat="$(<"$f")" 2>/dev/null || continue
    rest="${stat##*) }"  # after the command's name, which may hold spaces and parentheses
    read -r _ ppid _ <<<"$rest"
    pid="${f#/proc/}"; pid="${pid%/stat}"
    children[$ppid]+=" $pid"
  done
  local queue=("$1")
  while [ ${#queue[@]} -gt 0 ]; do
    pid="${queue[0]}"; queue=("${queue[@]:1}")
    echo "$pid"
    # shellcheck disable=SC2206  # the list is pids, split on spaces
    queue+=(${children[$pid]:-})
  done
}
# pause_roots / resume_roots: a root still being made is stopped (SIGSTOP, its whole process tree)
# while a run measures, and continued after it: its unpacking beside a measurement made the
# unstable build read 0.71x "slower" than the stable one in an A/B of one machine (high_load set on
# the unstable side). Parents are stopped before their children, twice, so none forks past it.
roots_paused=0
signal_roots() {
  local suite pid
  for suite in "${!root_pids[@]}"; do
    [ "${root_state[$suite]:-pending}" = pending ] || continue
    for pid in $(tree_pids "${root_pids[$suite]}"); do kill "-$1" "$pid" 2>/dev/null || true; done
  done
}
pause_roots() { signal_roots STOP; signal_roots STOP; roots_paused=1; }
resume_roots() { [ "$roots_paused" = 0 ] || signal_roots CONT; roots_paused=0; }
trap resume_roots EXIT
if [ "$setup" = 1 ]; then
  [ "$torch_root" = none ] || scripts/install-deps.sh --roots-only
  first_root=""
  for pair in "sid $sid_root" "trixie $torch_root"; do
    read -r suite dir <<<"$pair"
    [ "$dir" = none ] && continue
    priority=(ionice -t -c 3 nice -n 19)
    [ -z "$first_root" ] && { first_root="$suite"; priority=(ionice -t -c 2 -n 7); }
    echo "quickstart: making the $suite root in the background (log: $state/torch-root-$suite.log)"
    rm -f "$state/torch-root-$suite.rc"
    (
      rc=0
      "${priority[@]}" scripts/torch-root.sh --suite "$suite" --root "$dir" \
        >"$state/torch-root-$suite.log" 2>&1 || rc=$?
      echo "$rc" >"$state/torch-root-$suite.rc"
    ) &
    root_pids[$suite]=$!
  done
  # This host's torch 1.13 (the debian12 build) only where something runs on it: the fast path, a
  # GPU host's or a given matrix's worker; the default matrices run in the roots (about 190
  # packages less to download and unpack beside the roots).
  host_torch=(--no-host-torch)
  [ "$needs_host_worker" = 1 ] && host_torch=()
  scripts/install-deps.sh --chart-js-only --no-browser --no-fuzz --no-slurm --no-lint "${host_torch[@]}"
fi
t1=$(date +%s)
if [ "$setup" = 1 ]; then
  cmake --preset default >/dev/null
  targets=(benchfleet benchfleet-coordinator benchfleet-agent)
  [ "$needs_host_worker" = 1 ] && targets+=(benchfleet-worker)
  cmake --build --preset default --target "${targets[@]}"
fi
t2=$(date +%s)

# Each root's state: pending (being made), ready (its directory), or none (not wanted, or it could
# not be made or checked: its build is left out and the others still run).
declare -A root_dir=([trixie]="$torch_root" [sid]="$sid_root")
declare -A root_state=()
declare -A root_ready_s=()
for suite in trixie sid; do
  if [ "${root_dir[$suite]}" = none ]; then root_state[$suite]=none
  elif [ -n "${root_pids[$suite]:-}" ]; then root_state[$suite]=pending
  elif [ -f "${root_dir[$suite]}/etc/benchfleet-root.json" ]; then root_state[$suite]=ready
  else root_state[$suite]=none
  fi
done
root_name() { case "$1" in trixie) echo stable ;; sid) echo unstable ;; esac; }
# settle_root SUITE: a root whose making ended is checked (and its worker built when a matrix
# needs it); prints nothing, sets root_state.
settle_root() {
  local suite="$1" dir="${root_dir[$1]}" name rc
  name="$(root_name "$suite")"
  [ "${root_state[$suite]}" = pending ] || return 0
  [ -s "$state/torch-root-$suite.rc" ] || return 0
  wait "${root_pids[$suite]}" 2>/dev/null || true
  rc="$(cat "$state/torch-root-$suite.rc")"
  root_ready_s[$suite]=$(($(stat -c %Y "$state/torch-root-$suite.rc") - t0))  # when it ended, not when seen
  if [ "$rc" != 0 ]; then
    tail -n 5 "$state/torch-root-$suite.log" >&2
    echo "quickstart: the $suite root could not be made (see $state/torch-root-$suite.log); no $name build" >&2
    root_state[$suite]=none; return 0
  fi
  grep -E '^torch-root: root (ready|is current)' "$state/torch-root-$suite.log" | sed 's/^torch-root: /quickstart: /' || true
  if [ "$needs_workers" = 1 ]; then
    echo "quickstart: building benchfleet-worker inside the $suite root against its LibTorch" >&2
    if ! scripts/build-worker.sh --root "$dir" --out "$build/$suite-root-worker" >/dev/null; then
      echo "quickstart: the worker did not build in the $suite root; the $name build runs the python runtime only" >&2
    fi
  fi
  if [ -f "$dir/etc/benchfleet-root.json" ]; then root_state[$suite]=ready; else root_state[$suite]=none; fi
}
settle_roots() { local s; for s in trixie sid; do settle_root "$s"; done; }

# The agent's torch builds: Debian 13's torch 2.6 and Debian unstable's torch 2.14, each in its
# root (with the worker where one was built there) once the root is ready, and this host's
# (Debian 12, torch 1.13). A changed set restarts the agent (between runs, never during one).
write_agent_config() {
  echo "# written by scripts/quickstart.sh"
  echo "builds:"
  for suite in trixie sid; do
    [ "${root_state[$suite]}" = ready ] || continue
    local name dir="${root_dir[$suite]}" worker="$build/$suite-root-worker/bin/benchfleet-worker"
    name="$(root_name "$suite")"
    if [ "$needs_workers" = 1 ] && [ -x "$worker" ]; then
      echo "  - {name: $name, python: /usr/bin/python3, worker: $worker, root: $dir}"
    else
      echo "  - {name: $name, python: /usr/bin/python3, root: $dir}"  # the python runtime only
    fi
  done
  if [ "$needs_host_worker" = 1 ] && [ -x "$build/agent/worker/benchfleet-worker" ]; then
    echo "  - {name: debian12, python: /usr/bin/python3, worker: $build/agent/worker/benchfleet-worker}"
  elif host_has_torch; then
    echo "  - {name: debian12, python: /usr/bin/python3}"
  fi
}
host_has_torch() {  # whether this host's python has Debian's torch (the debian12 build)
  dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"
}
update_agent_config() {
  write_agent_config >"$state/agent.yaml.new"
  if ! cmp -s "$state/agent.yaml.new" "$state/agent.yaml" 2>/dev/null; then
    mv "$state/agent.yaml.new" "$state/agent.yaml"
    stop_one "$agent_pidfile" "agent (its builds changed)"
  else
    rm -f "$state/agent.yaml.new"
  fi
}
settle_roots
update_agent_config

# A service started from an older build (a re-run after a pull rebuilt it) is restarted, so the
# tables are made by the code just built; the database and the agent's caches stay.
if alive "$agent_pidfile" && [ "$build/agent/daemon/benchfleet-agent" -nt "$agent_pidfile" ]; then
  stop_one "$agent_pidfile" "agent (rebuilt)"
fi
if running && [ "$build/coordinator/benchfleet-coordinator" -nt "$pidfile" ]; then
  stop_one "$agent_pidfile" "agent"
  stop_one "$pidfile" "coordinator (rebuilt)"
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

# ensure_agent: the local agent running with agent.yaml's builds, enrolled and online with all of
# them; sets gpu_classes (its GPU classes, "" when it only has the CPU slot).
gpu_classes=""
ensure_agent() {
  if ! alive "$agent_pidfile"; then
    BENCHFLEET_ENROLLMENT_TOKEN=$(cat "$state/benchfleet.db.enrollment-token") \
      "$build/agent/daemon/benchfleet-agent" --config "$state/agent.yaml" --coordinator "$base" \
      --state-dir "$state/agent" --name local \
      >>"$state/agent.log" 2>&1 &
    echo $! >"$agent_pidfile"
  fi
  local wanted agents classes
  wanted="$(sed -n 's/^  - {name: \([^,]*\),.*/\1/p' "$state/agent.yaml" | tr '\n' ' ')"
  for _ in $(seq 600); do  # 2 min: the agent probes each build (torch imported in its root) before it enrols
    agents=$("$cli" agents --json 2>/dev/null || true)
    classes=$(printf '%s' "$agents" | /usr/bin/python3 -c '
import json, sys
try:
    agents = json.load(sys.stdin)["agents"]
except Exception:
    sys.exit(1)
local = [a for a in agents if a["name"] == "local" and a["online"]]
if not local or not set(sys.argv[1].split()) <= {b["name"] for b in local[0].get("torch_builds", [])}:
    sys.exit(1)
print(",".join(sorted({s["gpu_class"] for s in local[0]["slots"] if s["gpu_class"] != "cpu"})))
' "$wanted") && { gpu_classes="$classes"; return 0; }
    alive "$agent_pidfile" || { echo "quickstart: the agent exited; see $state/agent.log" >&2
                                tail -n 5 "$state/agent.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "quickstart: the agent did not come online with the builds $wanted; see $state/agent.log" >&2
  exit 1
}
# Started now when it has a build already (a re-run, this host's torch), which also tells a GPU
# host's classes; else with the first root that is ready (no GPU: a GPU host has the debian12 build).
if grep -q '^  - {name:' "$state/agent.yaml"; then ensure_agent; fi

submit_args=()
if [ -n "${BENCHFLEET_QUICKSTART_MATRIX:-}" ]; then
  read -r -a matrices <<<"$BENCHFLEET_QUICKSTART_MATRIX"
elif [ -n "$gpu_classes" ]; then
  matrices=(examples/gpu-demo.yaml)
  submit_args=(--gpus "$gpu_classes")
elif [ "$torch_root" != none ] && [ "$sid_root" != none ]; then
  # In this order among those whose roots are ready: the memory table is a 30 s run, and the
  # compile table is the comparison the quick start ends with.
  matrices=(examples/cpu-memory-demo.yaml examples/cpu-seed-demo.yaml examples/cpu-compile-demo.yaml)
else
  matrices=(examples/cpu-demo.yaml)
fi

# Medians in the tables: the statistic the matrices' stopping rule measures to a 95% CI, and the
# one a few slow calls (a busy scheduler) do not move. Each table is printed as its run ends.
# The order of runs (scripts/quickstart_plan.py, given each root build's state): the matrices in
# their order, and of each the builds whose roots are ready, as soon as they are (the unstable
# build's cells when its root is ready, the stable build's in a run of their own when that root
# follows; then both side by side with `compare`); a build whose root could not be made is left
# out, said.
plan="$state/quickstart-plan.json"
/usr/bin/python3 scripts/quickstart_plan.py "$plan" init "${matrices[@]}"
run_ids=()
first_table_s=""
waiting_said=""
while true; do
  settle_roots
  step="$(/usr/bin/python3 scripts/quickstart_plan.py "$plan" next \
            "$(root_name trixie)=${root_state[trixie]}" "$(root_name sid)=${root_state[sid]}")"
  grep -E '^(skip|drop) ' <<<"$step" | sed 's/^[a-z]* /quickstart: leaving out /' >&2 || true
  read -r verb matrix builds partial < <(tail -n 1 <<<"$step")
  case "$verb" in
    done) break ;;
    wait)
      if [ -z "$waiting_said" ]; then
        echo "quickstart: waiting for the roots of ${step##*wait }"
        waiting_said=1
      fi
      sleep 1; continue ;;
  esac
  waiting_said=""
  update_agent_config
  ensure_agent
  part_args=()
  [ "$partial" = 1 ] && part_args=(--builds "$builds")
  echo "quickstart: submitting $matrix${part_args[*]:+ ${part_args[*]}}${submit_args[*]:+ ${submit_args[*]}} (the agent log is $state/agent.log)"
  run_status=0
  pause_roots
  run_id=$(timeout "${BENCHFLEET_QUICKSTART_TIMEOUT_S:-3600}" \
             "$cli" submit "$matrix" "${part_args[@]}" "${submit_args[@]}" --wait --print-id) || run_status=$?
  resume_roots
  [ -n "$run_id" ] || { echo "quickstart: $matrix was not submitted" >&2; exit 1; }
  case "$run_status" in
    0) ;;
    3) echo "quickstart: run $run_id finished with failed cells (shown in the table)" >&2 ;;
    *) echo "quickstart: waiting for run $run_id ended with exit code $run_status" >&2; exit 1 ;;
  esac
  run_ids+=("$run_id")
  echo
  "$cli" report "$run_id" --stat median
  echo "Dashboard: $base/#/runs/$run_id"
  echo
  [ -n "$first_table_s" ] || first_table_s=$(($(date +%s) - t0))
  compare="$(/usr/bin/python3 scripts/quickstart_plan.py "$plan" ran "$matrix" "$builds" "$run_id")"
  if [ -n "$compare" ]; then
    read -r _ run_a run_b build_a build_b <<<"$compare"
    echo "$matrix ran in two parts, each as its root was ready; $build_a (run $run_a) vs $build_b (run $run_b):"
    "$cli" compare "$run_a" "$run_b" --build-a "$build_a" --build-b "$build_b" || true
    echo
  fi
done
t3=$(date +%s)
[ ${#run_ids[@]} -gt 0 ] || { echo "quickstart: no matrix could run (see above)" >&2; exit 1; }

for run_id in "${run_ids[@]}"; do
  echo "Dashboard: $base/#/runs/$run_id   Report: $base/api/v1/runs/$run_id/report (?format=md|csv)"
done
echo "API: $base/api/v1/runs   OpenAPI: $base/api/v1/openapi.json   Metrics: $base/metrics"
echo "CLI: export BENCHFLEET_URL=$base BENCHFLEET_OPERATOR_TOKEN_FILE=$BENCHFLEET_OPERATOR_TOKEN_FILE"
echo "     $cli runs | run ${run_ids[0]} | report ${run_ids[0]} --format csv | agents | watch ID | --help"
roots_said=""
for suite in trixie sid; do
  if [ -n "${root_ready_s[$suite]:-}" ]; then roots_said+=", $suite root ready at ${root_ready_s[$suite]} s"; fi
done
echo "Timings: dependencies $((t1 - t0)) s, build $((t2 - t1)) s$roots_said, first table at ${first_table_s} s, all at $((t3 - t0)) s"

if [ "$detach" = "--detach" ]; then
  echo "quickstart: coordinator and agent left running; stop them with: scripts/quickstart.sh stop"
  exit 0
fi
trap 'stop; exit 0' INT TERM
echo "quickstart: coordinator and agent running; Ctrl-C stops them"
while running; do sleep 1; done
