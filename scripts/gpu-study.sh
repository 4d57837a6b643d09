#!/usr/bin/env bash
# Runs a study through the whole product on one GPU host that has a torch build but none of the
# coordinator's libraries (a lent machine with pip's torch, bare at every start): the
# coordinator, the CLI and the agent are built elsewhere and travel as a bundle with their
# libraries; the worker is built on the host against its own LibTorch (scripts/build-worker.sh,
# or the build stage of scripts/gpu-validate.sh).
#   scripts/gpu-study.sh bundle [--build DIR] [--out DIR]
#   scripts/gpu-study.sh start [--bundle DIR] [--state DIR] [--python PY] [--worker PATH]
#                              [--build-name NAME] [--matrices DIR] [--cache DIR]
#   scripts/gpu-study.sh collect [--state DIR] [--out DIR] [--wait-s S] [--final]
#   scripts/gpu-study.sh stop [--state DIR]
#
# bundle   (where the project builds) copies benchfleet, benchfleet-coordinator and
#          benchfleet-agent from --build (default build/default) into --out (default
#          .carry/gpu-study; git-ignored) with every shared library they load except the C and C++
#          runtimes (lib/, found through the programs' RPATH $ORIGIN/../lib; needs patchelf), and
#          the dashboard (web/). The folder then travels with the sources.
# start    (on the GPU host) starts the coordinator (SQLite in --state, default
#          build/gpu-study/state, 127.0.0.1 on a free port) and one agent in sessions of their own,
#          so they outlive the command that started them, with one torch build --build-name
#          (default stable): --python (default python3) and --worker (default
#          build/gpu-worker/bin/benchfleet-worker; a missing worker leaves the build python-only).
#          Inductor's cache is --cache (default build/gpu-study/inductor). Once the agent has
#          enrolled, every *.yaml of --matrices (default examples/gpu-study) is submitted in name
#          order with the agent's GPU class and the build's name (--gpus, --builds). The run ids
#          go to STATE/runs.txt.
# collect  waits until every submitted run has ended or --wait-s (default 0) has passed, then
#          writes into --out (default STATE/collected):
#          report.md (each run's comparison tables), report.json (each run's report, results with
#          their fingerprints, and the agent list) and logs.tar.gz (logs, matrices, agent
#          config). --final first cancels the runs that have not ended (their measured cells
#          stay) and stops both services. Three files in all, so that a copy-back limited to a
#          few files takes them all.
# stop     stops the agent (drain, then kill) and the coordinator.
# Exit status: 0 done, 1 an error (named), 2 usage.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
usage="usage: gpu-study.sh bundle [--build DIR] [--out DIR]
       gpu-study.sh start [--bundle DIR] [--state DIR] [--python PY] [--worker PATH] [--build-name NAME] [--matrices DIR] [--cache DIR]
       gpu-study.sh collect [--state DIR] [--out DIR] [--wait-s S] [--final]
       gpu-study.sh stop [--state DIR]"
die() { echo "gpu-study: $*" >&2; exit 1; }
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
command="$1"; shift
case "$command" in -h|--help) echo "$usage"; exit 0 ;; bundle|start|collect|stop) ;; *) echo "$usage" >&2; exit 2 ;; esac

build="$repo/build/default" bundle="$repo/.carry/gpu-study" state="$repo/build/gpu-study/state"
python=python3 worker="$repo/build/gpu-worker/bin/benchfleet-worker" build_name=stable
matrices="$repo/examples/gpu-study" cache="$repo/build/gpu-study/inductor" out="" wait_s=0 final=0
while [ $# -gt 0 ]; do
  case "$1" in
    --final) final=1; shift; continue ;;
    -h|--help) echo "$usage"; exit 0 ;;
  esac
  [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
  case "$1" in
    --build) build="$(abspath "$2")" ;;
    --out) out="$(abspath "$2")" ;;
    --bundle) bundle="$(abspath "$2")" ;;
    --state) state="$(abspath "$2")" ;;
    --python) case "$2" in */*) python="$(abspath "$2")" ;; *) python="$2" ;; esac ;;
    --worker) worker="$(abspath "$2")" ;;
    --build-name) build_name="$2" ;;
    --matrices) matrices="$(abspath "$2")" ;;
    --cache) cache="$(abspath "$2")" ;;
    --wait-s) wait_s="$2" ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift 2
done
[[ "$wait_s" =~ ^[0-9]+$ ]] || die "--wait-s takes whole seconds, not '$wait_s'"

# ---- bundle --------------------------------------------------------------------------------------

programs=(cli/benchfleet coordinator/benchfleet-coordinator agent/daemon/benchfleet-agent)
if [ "$command" = bundle ]; then
  [ -n "$out" ] || out="$bundle"
  for p in "${programs[@]}"; do [ -x "$build/$p" ] || die "$build/$p is missing (cmake --build --preset default first)"; done
  command -v patchelf >/dev/null || die "patchelf is missing (apt-get install patchelf)"
  [ -f "$build/web/index.html" ] || die "$build/web has no dashboard (cmake --build --preset default builds it)"
  rm -rf "$out.new" && mkdir -p "$out.new/bin" "$out.new/lib" || die "cannot write $out.new"
  for p in "${programs[@]}"; do cp "$build/$p" "$out.new/bin/" && strip "$out.new/bin/${p##*/}"; done
  # Every library the programs load, but the C and C++ runtimes: the host's own are newer (a
  # program built against older ones runs with them) and must match its loader.
  ldd "${programs[@]/#/$build/}" | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
    case "${lib##*/}" in
      ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libstdc++.so*|libgcc_s.so*) ;;
      *) cp -L "$lib" "$out.new/lib/" ;;
    esac
  done
  # DT_RPATH (not RUNPATH): it also serves the libraries' own dependencies (spdlog's fmt), and
  # the programs need no LD_LIBRARY_PATH, which the agent would hand on to the torch build's
  # python and worker.
  for p in "${programs[@]}"; do
    patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$out.new/bin/${p##*/}" || die "patchelf failed on ${p##*/}"
  done
  cp -r "$build/web" "$out.new/web"
  {
    echo "built on: $(uname -n) $(. /etc/os-release && echo "$PRETTY_NAME") $(uname -m)"
    echo "from: $(git -C "$repo" rev-parse HEAD 2>/dev/null)$(git -C "$repo" diff --quiet 2>/dev/null || echo ' (with changes)')"
    echo "glibc: $(ldd --version | head -1)"
  } >"$out.new/MANIFEST"
  rm -rf "$out" && mv "$out.new" "$out"
  echo "gpu-study: bundle in $out ($(du -sh "$out" | cut -f1)): $(ls "$out/bin" | tr '\n' ' ')" >&2
  exit 0
fi

# ---- the services --------------------------------------------------------------------------------

# collect and stop use the bundle start used.
[ "$command" != start ] && [ -s "$state/bundle" ] && bundle="$(cat "$state/bundle")"
cli() { "$bundle/bin/benchfleet" "$@"; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
base_url() { echo "http://127.0.0.1:$(cat "$state/port")"; }
toolpy="$(command -v python3 || echo /usr/bin/python3)"  # JSON handling only: the standard library

stop_one() {  # stop_one PIDFILE NAME: SIGTERM (an agent drains), a second one after 10 s, then SIGKILL
  alive "$1" || { rm -f "$1"; return 0; }
  local pid; pid="$(cat "$1")"
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null
  echo "gpu-study: $2 stopped" >&2
  rm -f "$1"
}
stop_all() { stop_one "$state/agent.pid" agent; stop_one "$state/coordinator.pid" coordinator; }

if [ "$command" = stop ]; then stop_all; exit 0; fi

if [ "$command" = start ]; then
  [ -x "$bundle/bin/benchfleet-coordinator" ] || die "no bundle in $bundle (make it with: scripts/gpu-study.sh bundle)"
  [ -d "$matrices" ] || die "--matrices $matrices is not a folder"
  python_path="$(command -v "$python")" || die "--python $python is not found"
  alive "$state/coordinator.pid" && die "a study is running in $state (scripts/gpu-study.sh stop --state $state)"
  rm -rf "$state" && mkdir -p "$state" "$cache" || die "cannot make $state"
  echo "$bundle" >"$state/bundle"
  cp -r "$matrices" "$state/matrices" || die "cannot copy $matrices"
  {
    echo "# written by scripts/gpu-study.sh"
    echo "exporter: $repo/agent/python/benchfleet_export.py"
    echo "runner: $repo/agent/python/benchfleet_runner.py"
    echo "catalog: $repo/common/catalog/models.yaml"
    echo "builds:"
    if [ -x "$worker" ]; then
      echo "  - {name: $build_name, python: $python_path, worker: $worker}"
    else
      echo "gpu-study: no worker at $worker: the build offers the python runtime alone" >&2
      echo "  - {name: $build_name, python: $python_path, worker: $state/no-worker}"
    fi
  } >"$state/agent.yaml"
  # setsid: a session of their own, so they run on after this command returns.
  setsid "$bundle/bin/benchfleet-coordinator" --listen 127.0.0.1:0 --db "$state/benchfleet.db" \
    --port-file "$state/port" --catalog "$repo/common/catalog/models.yaml" --web-root "$bundle/web" \
    >"$state/coordinator.log" 2>&1 </dev/null &
  echo $! >"$state/coordinator.pid"
  for _ in $(seq 200); do [ -s "$state/port" ] && break; alive "$state/coordinator.pid" || break; sleep 0.1; done
  [ -s "$state/port" ] || { tail -n 20 "$state/coordinator.log" >&2; die "the coordinator did not start (log above)"; }
  export BENCHFLEET_URL; BENCHFLEET_URL="$(base_url)"
  export BENCHFLEET_OPERATOR_TOKEN_FILE="$state/benchfleet.db.operator-token"
  TORCHINDUCTOR_CACHE_DIR="$cache" BENCHFLEET_ENROLLMENT_TOKEN="$(cat "$state/benchfleet.db.enrollment-token")" \
    setsid "$bundle/bin/benchfleet-agent" --config "$state/agent.yaml" --coordinator "$BENCHFLEET_URL" \
    --state-dir "$state/agent" --name study >"$state/agent.log" 2>&1 </dev/null &
  echo $! >"$state/agent.pid"
  classes=""
  for _ in $(seq 600); do  # the agent asks each program for its capabilities first (python imports torch)
    classes="$(cli agents --json 2>/dev/null | "$toolpy" -c '
import json, sys
try:
    agents = [a for a in json.load(sys.stdin)["agents"] if a["name"] == "study" and a["online"]]
except Exception:
    sys.exit(1)
if not agents:
    sys.exit(1)
print(",".join(sorted({s["gpu_class"] for s in agents[0]["slots"]})))')" && break
    alive "$state/agent.pid" || { tail -n 20 "$state/agent.log" >&2; die "the agent exited (log above)"; }
    sleep 0.2
  done
  [ -n "$classes" ] || { tail -n 20 "$state/agent.log" >&2; die "the agent did not enrol in 120 s (log above)"; }
  echo "gpu-study: coordinator $BENCHFLEET_URL, agent 'study' with slots of class $classes, build $build_name" >&2
  : >"$state/runs.txt"
  for m in "$matrices"/*.yaml; do
    [ -f "$m" ] || continue
    id="$(cli submit "$m" --gpus "$classes" --builds "$build_name" --print-id)" || die "submitting $m failed"
    echo "$id ${m##*/}" >>"$state/runs.txt"
    echo "gpu-study: run $id: ${m##*/}" >&2
  done
  [ -s "$state/runs.txt" ] || die "no *.yaml in $matrices"
  exit 0
fi

# ---- collect -------------------------------------------------------------------------------------

[ -s "$state/port" ] && [ -s "$state/runs.txt" ] || die "no study in $state (scripts/gpu-study.sh start)"
export BENCHFLEET_URL; BENCHFLEET_URL="$(base_url)"
export BENCHFLEET_OPERATOR_TOKEN_FILE="$state/benchfleet.db.operator-token"
if [ -z "$out" ]; then
  out="$state/collected"
fi
mkdir -p "$out" || die "cannot write $out"
alive "$state/coordinator.pid" || die "the coordinator is not running (its log: $state/coordinator.log)"

run_ids=()
while read -r id _; do run_ids+=("$id"); done <"$state/runs.txt"
ended() {  # every run in a final state
  local id s
  for id in "${run_ids[@]}"; do
    s="$(cli run "$id" --json 2>/dev/null | "$toolpy" -c '
import json, sys
try:
    print(json.load(sys.stdin).get("state", ""))
except ValueError:
    pass')"
    case "$s" in done|failed|cancelled) ;; *) return 1 ;; esac
  done
}
deadline=$(( $(date +%s) + wait_s ))
until ended || [ "$(date +%s)" -ge "$deadline" ]; do sleep 5; done

if [ "$final" = 1 ]; then
  for id in "${run_ids[@]}"; do cli cancel "$id" >/dev/null 2>&1 || true; done
  sleep 1
fi
cli runs --limit 50 >"$state/runs-table.txt" 2>&1 || true
{
  echo "# benchfleet GPU study ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo
  echo '```'
  cat "$state/runs-table.txt"
  echo '```'
  while read -r id file; do
    echo
    echo "## run $id ($file)"
    echo
    cli report "$id" --format md 2>&1 || echo "(no report: $?)"
  done <"$state/runs.txt"
} >"$out/report.md"
# report.json: {runs: [{id, file, run, report, results}], agents}; results carry the fingerprints.
(
  set -e
  tmp="$state/collect"
  rm -rf "$tmp" && mkdir -p "$tmp"
  while read -r id file; do
    cli run "$id" --json >"$tmp/run-$id.json" 2>/dev/null || echo null >"$tmp/run-$id.json"
    cli report "$id" --format json >"$tmp/report-$id.json" 2>/dev/null || echo null >"$tmp/report-$id.json"
    "$toolpy" - "$(base_url)" "$id" "$tmp/results-$id.json" <<'PY' || echo null >"$tmp/results-$id.json"
import json, sys, urllib.request
base, run, out = sys.argv[1], sys.argv[2], sys.argv[3]
items, cursor = [], None
while True:  # keyset pages of results, samples left out (their statistics stay)
    url = f"{base}/api/v1/runs/{run}/results?limit=1000" + (f"&cursor={cursor}" if cursor else "")
    with urllib.request.urlopen(url, timeout=30) as r:
        page = json.load(r)
    items += page["results"]
    cursor = page.get("next_cursor")
    if not cursor:
        break
json.dump(items, open(out, "w"))
PY
  done <"$state/runs.txt"
  cli agents --json >"$tmp/agents.json" 2>/dev/null || echo null >"$tmp/agents.json"
  "$toolpy" - "$state/runs.txt" "$tmp" "$out/report.json" <<'PY'
import json, sys
runs_file, tmp, out = sys.argv[1], sys.argv[2], sys.argv[3]
def load(path):
    try:
        return json.load(open(path))
    except Exception:
        return None
runs = []
for line in open(runs_file):
    run_id, name = line.split(maxsplit=1)
    runs.append({"id": int(run_id), "file": name.strip(), "run": load(f"{tmp}/run-{run_id}.json"),
                 "report": load(f"{tmp}/report-{run_id}.json"),
                 "results": load(f"{tmp}/results-{run_id}.json")})
json.dump({"runs": runs, "agents": load(f"{tmp}/agents.json")}, open(out, "w"), indent=1)
PY
) || echo "gpu-study: report.json is incomplete" >&2
[ "$final" = 1 ] && stop_all
tar -czf "$out/logs.tar.gz" -C "$state" --exclude='*.db*' --exclude='*token*' --exclude=./agent/artifacts --exclude=./collect \
  --exclude=./collected . || echo "gpu-study: logs.tar.gz is incomplete" >&2
echo "gpu-study: collected into $out: $(ls "$out" | tr '\n' ' ')" >&2
cat "$state/runs-table.txt"
