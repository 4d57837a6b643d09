#!/usr/bin/env bash
# ctest gpu_study_script: scripts/gpu-study.sh end to end on the CPU, as it runs on a GPU host
# (about a minute; up to 8 on a loaded machine):
#   1. bundle: the CLI, coordinator and agent from this build, stripped, with every library they
#      load but the C/C++ runtimes, so that each program resolves its other libraries there;
#   2. start: coordinator and agent in sessions of their own (they outlive the command), the
#      agent's class and build given to the two runs of tests/data/gpu-study at submit;
#   3. collect --final once the quick run has finished: the long one is cancelled, report.md holds
#      the quick run's table, report.json its result with the fingerprint, logs.tar.gz the logs,
#      and both services are gone.
#   gpu_study_test.sh SOURCE_DIR BUILD_DIR PYTHON SCRATCH
set -uo pipefail
src="$1" build="$2" python="$3" scratch="$4"
script="$src/scripts/gpu-study.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
state="$scratch/state" bundle="$scratch/bundle" out="$scratch/out"
cleanup() { "$script" stop --state "$state" >/dev/null 2>&1; }
trap cleanup EXIT

# 1 --------------------------------------------------------------------------------------------
"$script" bundle --build "$build" --out "$bundle" || fail "bundle: exit $?"
for p in benchfleet benchfleet-coordinator benchfleet-agent; do
  [ -x "$bundle/bin/$p" ] || fail "bundle: no bin/$p"
  # Each library but the C/C++ runtimes comes from the bundle.
  ldd "$bundle/bin/$p" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    case "$name" in ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libstdc++.so*|libgcc_s.so*) ;;
      *) case "$path" in "$bundle/"*) ;; *) echo "FAIL: bundle: $p loads $name from $path" >&2; exit 1 ;; esac ;;
    esac
  done || failures=$((failures + 1))
done
ls "$bundle/lib" | grep -q spdlog || fail "bundle: no spdlog library in lib/"
[ -f "$bundle/web/index.html" ] || fail "bundle: no dashboard"

# 2 --------------------------------------------------------------------------------------------
"$script" start --bundle "$bundle" --state "$state" --python "$python" --worker "$build/agent/worker/benchfleet-worker" \
  --build-name host --matrices "$src/tests/data/gpu-study" --cache "$scratch/inductor" || fail "start: exit $?"
[ "$(wc -l <"$state/runs.txt")" = 2 ] || fail "start: runs.txt: $(cat "$state/runs.txt")"
grep -q ' 1-quick.yaml$' "$state/runs.txt" || fail "start: the quick run is not listed first"
for f in coordinator agent; do
  pid="$(cat "$state/$f.pid")"
  [ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ] || fail "start: the $f does not lead a session of its own"
done

# 3 --------------------------------------------------------------------------------------------
quick="$(awk 'NR==1{print $1}' "$state/runs.txt")" long="$(awk 'NR==2{print $1}' "$state/runs.txt")"
export BENCHFLEET_URL="http://127.0.0.1:$(cat "$state/port")"
# The quick run's one job takes seconds on an idle machine and minutes beside a parallel ctest:
# wait for it by its state (up to 7 minutes), so that a slow machine is not read as a failure.
quick_state=""
for _ in $(seq 840); do
  quick_state="$("$bundle/bin/benchfleet" run "$quick" --json 2>/dev/null |
    "$python" -c 'import json, sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)"
  case "$quick_state" in done|failed|cancelled) break ;; esac
  sleep 0.5
done
[ "$quick_state" = done ] || fail "the quick run did not finish: state '$quick_state'"
"$script" collect --state "$state" --out "$out" --final || fail "collect: exit $?"
cat "$out/report.md"
grep -q 'SqueezeNet\|squeezenet' "$out/report.md" || fail "collect: report.md has no table of the quick run"
"$python" - "$out/report.json" "$quick" "$long" <<'PY' || fail "collect: report.json"
import json, sys
doc = json.load(open(sys.argv[1]))
runs = {r["id"]: r for r in doc["runs"]}
quick, long = runs[int(sys.argv[2])], runs[int(sys.argv[3])]
assert quick["run"]["state"] == "done", quick["run"]
assert long["run"]["state"] == "cancelled", long["run"]
(result,) = quick["results"]
assert result["result"]["status"] == "ok", result
assert result["result"]["environment"]["torch_version"], result
assert quick["report"] is not None
assert doc["agents"]["agents"][0]["name"] == "study"
PY
# The listing is read whole first: under pipefail, `tar -t | grep -q` fails whenever grep stops
# at its first match and tar, still writing, dies of SIGPIPE.
listing="$(tar -tzf "$out/logs.tar.gz")" || fail "collect: logs.tar.gz cannot be listed"
grep -q 'agent.log' <<<"$listing" || fail "collect: logs.tar.gz has no agent.log"
grep -q 'matrices/1-quick.yaml' <<<"$listing" || fail "collect: logs.tar.gz has no matrices"
grep -q 'token' <<<"$listing" && fail "collect: logs.tar.gz holds a token"
for f in coordinator agent; do [ -f "$state/$f.pid" ] && fail "collect --final: the $f is still running"; done
if [ "$failures" = 0 ]; then
  echo "gpu_study_script: all checks passed"
else
  for log in coordinator.log agent.log runs-table.txt; do  # what a failure needs to be understood
    echo "---- $state/$log (end)"; tail -n 40 "$state/$log" 2>/dev/null
  done
fi
[ "$failures" = 0 ]
