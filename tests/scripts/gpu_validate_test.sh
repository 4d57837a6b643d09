#!/usr/bin/env bash
# ctest gpu_validate_script: scripts/gpu-validate.sh on the CPU with Debian's torch 1.13 and this
# build's worker, three runs (about a minute):
#   1. a missing prerequisite: --python names no python, so probe FAILs; capabilities still runs
#      and PASSes (the worker's case; the runner's is SKIP), worker and runner are SKIP naming the
#      probe; the script exits 1 and the table and summary.json say all that.
#   2. the real thing: probe, capabilities, worker (eager and torchscript measured; default
#      unsupported on LibTorch 1.13 and reduce-overhead CUDA only: SKIP), oom (the 16 MB cap ends
#      the worker's and the runner's eager jobs as `oom` in a named phase), runner (eager measured,
#      torch.compile modes unsupported on 1.13: SKIP, max-autotune SKIP for want of the time a cold
#      compile needs); exit 0, medians recorded.
#   3. a case past its stage's time limit: a runner that hangs, under --limit runner=10, FAILs
#      "timed out" and leaves no process behind, while the seeds stage after it (ResNet-18 only)
#      PASSes.
#   4. --out: the results and one archive of the stage logs, nothing else.
#   gpu_validate_test.sh SOURCE_DIR WORKER PYTHON SCRATCH
set -uo pipefail
src="$1" worker="$2" python="$3" scratch="$4"
script="$src/scripts/gpu-validate.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# check SUMMARY 'python expression over s (the summary) and stage(name) / case(stage, name)' WHAT
check() {
  local summary="$1" expression="$2" what="$3"
  "$python" - "$summary" "$expression" <<'EOF' || fail "$what"
import json, sys
s = json.load(open(sys.argv[1]))
stages = {x["stage"]: x for x in s["stages"]}
def stage(name): return stages[name]
def case(stage_name, name): return next(c for c in stages[stage_name]["cases"] if c["name"] == name)
ok = eval(sys.argv[2])
if not ok:
    print("summary.json:", json.dumps(s, indent=1)[:6000], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

run() {  # run NAME EXPECTED_EXIT ARGS...: the script with its log and work folders in SCRATCH/NAME
  local name="$1" expected="$2"; shift 2
  local rc=0
  mkdir -p "$scratch/$name"
  echo "== $name: gpu-validate.sh $*"
  "$script" --device cpu --log "$scratch/$name/log" --work "$scratch/$name/work" "$@" >"$scratch/$name/out.txt" 2>&1 || rc=$?
  cat "$scratch/$name/out.txt"
  [ "$rc" = "$expected" ] || fail "$name: exit $rc, expected $expected"
  [ -s "$scratch/$name/log/summary.json" ] || fail "$name: no summary.json"
  [ -s "$scratch/$name/log/summary.txt" ] || fail "$name: no summary.txt"
}

rm -rf "$scratch" && mkdir -p "$scratch" || exit 1

# 1 --------------------------------------------------------------------------------------------
run missing 1 --python "$scratch/no-such-python3" --worker "$worker" probe capabilities worker runner
s="$scratch/missing/log/summary.json"
check "$s" 'stage("probe")["status"] == "FAIL" and "does not run" in stage("probe")["reason"]' "missing: probe FAILs"
check "$s" 'stage("capabilities")["status"] == "PASS" and case("capabilities", "worker")["status"] == "PASS"' \
  "missing: capabilities still runs and PASSes"
check "$s" 'case("capabilities", "runner")["status"] == "SKIP" and case("capabilities", "runner")["reason"].startswith("probe FAIL")' \
  "missing: the runner's capabilities SKIP naming the probe"
check "$s" 'all(stage(n)["status"] == "SKIP" and stage(n)["reason"].startswith("probe FAIL") for n in ("worker", "runner"))' \
  "missing: worker and runner SKIP naming the probe"
check "$s" 's["counts"] == {"PASS": 1, "FAIL": 1, "SKIP": 2} and s["ok"] is False and s["device"] == "cpu"' "missing: counts"
grep -Eq '^worker +SKIP +0\.0 +probe FAIL' "$scratch/missing/log/summary.txt" || fail "missing: the table's worker row"
tail -n 1 "$scratch/missing/out.txt" | grep -q 'PASS 1 FAIL 1 SKIP 2' || fail "missing: the printed table's totals"

# 2 --------------------------------------------------------------------------------------------
# GV_AUTOTUNE_MIN_S: more than any stage has, so the max-autotune case must be SKIP, not started.
GV_AUTOTUNE_MIN_S=100000 run real 0 --python "$python" --worker "$worker" probe capabilities worker oom runner
s="$scratch/real/log/summary.json"
check "$s" '[x["stage"] for x in s["stages"]] == ["probe", "capabilities", "worker", "oom", "runner"]' "real: stages in order"
check "$s" 'all(x["status"] == "PASS" for x in s["stages"]) and s["ok"] is True' "real: every stage PASSes"
check "$s" 'stage("probe")["figures"]["torch"].startswith("1.13")' "real: probe records torch"
for mode in eager torchscript; do
  check "$s" "case('worker', '$mode')['status'] == 'PASS' and case('worker', '$mode')['figures']['median_ms'] > 0" \
    "real: worker $mode measured"
done
check "$s" 'case("worker", "default")["status"] == "SKIP" and "AOTInductor" in case("worker", "default")["reason"]' \
  "real: worker default SKIP (no AOTInductor in LibTorch 1.13)"
check "$s" 'case("worker", "reduce-overhead")["status"] == "SKIP" and case("worker", "reduce-overhead")["reason"] == "CUDA only"' \
  "real: worker reduce-overhead SKIP, CUDA only"
for name in libtorch-eager python-eager; do
  check "$s" "case('oom', '$name')['status'] == 'PASS' and case('oom', '$name')['figures']['status'] == 'oom' and case('oom', '$name')['figures']['oom_phase'] in ('load', 'compile', 'warmup', 'measure')" \
    "real: oom $name ends oom with a phase"
done
check "$s" 'case("runner", "eager")["status"] == "PASS" and case("runner", "eager")["figures"]["median_ms"] > 0' "real: runner eager measured"
check "$s" 'case("runner", "default")["status"] == "SKIP" and case("runner", "default")["reason"].startswith("unsupported: ")' \
  "real: runner default unsupported on torch 1.13"
check "$s" 'case("runner", "max-autotune-no-cudagraphs")["status"] == "SKIP" and "the case needs 100000 s" in case("runner", "max-autotune-no-cudagraphs")["reason"]' \
  "real: the max-autotune case is SKIP when its stage has less left than it needs"
[ -s "$scratch/real/log/results/worker-eager.result.json" ] || fail "real: the worker's result is kept"
grep -Eq '^  eager +PASS +median [0-9.]+ ms' "$scratch/real/log/summary.txt" || fail "real: the table's eager row"

# 3 --------------------------------------------------------------------------------------------
# A python whose runner hangs (exec'd, so the marker is the process the limit must end).
hang_marker="$scratch/hanging-runner"
cat >"$scratch/hanging-python" <<EOF
#!/bin/sh
case " \$* " in *benchfleet_runner.py*--job*) exec "$python" -c 'import time; time.sleep(600)' "$hang_marker" ;; esac
exec "$python" "\$@"
EOF
chmod +x "$scratch/hanging-python"
run timeout 1 --python "$scratch/hanging-python" --limit runner=10 --seed-models torchvision/resnet18 runner seeds
s="$scratch/timeout/log/summary.json"
check "$s" 'stage("runner")["status"] == "FAIL" and case("runner", "eager")["reason"].startswith("timed out after")' \
  "timeout: the runner's eager case times out"
check "$s" 'stage("seeds")["status"] == "PASS" and stage("seeds")["figures"]["models"] == {"unsupported": 1}' \
  "timeout: the seeds stage after it still runs (resnet18 built, traced; torch.export unsupported on 1.13)"
sleep 1
if pgrep -f "$hang_marker" >/dev/null; then
  fail "timeout: a runner process outlived its time limit"
fi

# 4 --------------------------------------------------------------------------------------------
# --out: the results and one archive of the logs, nothing else (a copy-back may take few files).
mkdir -p "$scratch/out"
"$script" --device cpu --python "$python" --out "$scratch/out/results" --work "$scratch/out/work" probe \
  >"$scratch/out/out.txt" 2>&1 || fail "out: exit $?"
[ "$(cd "$scratch/out/results" && ls | tr '\n' ' ')" = "logs.tar.gz summary.json summary.txt " ] ||
  fail "out: $(ls "$scratch/out/results")"
# Listed whole first (see gpu_study_test.sh: tar -t | grep -q can die of SIGPIPE under pipefail).
listing="$(tar -tzf "$scratch/out/results/logs.tar.gz")" || fail "out: logs.tar.gz cannot be listed"
grep -q 'probe.log' <<<"$listing" || fail "out: no probe.log in logs.tar.gz"

[ "$failures" = 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "gpu_validate_script: all checks passed"
