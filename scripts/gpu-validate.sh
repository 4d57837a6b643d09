#!/usr/bin/env bash
# Proves benchfleet's GPU paths on one machine in the least GPU time: staged, each stage bounded,
# a failed stage never stopping the others, ending with a PASS/FAIL/SKIP table.
#   scripts/gpu-validate.sh [--log DIR | --out DIR] [--work DIR] [--build-out DIR] [--python PY]
#                           [--device cuda|cpu] [--deps DIR] [--worker PATH] [--budget S]
#                           [--limit STAGE=S]... [--seed-models IDS] [--seed-jobs N] [--no-overlap]
#                           STAGE...|all
#
# On a GPU host with a torch build but no Debian -dev packages (prepare the headers the worker
# build needs on a Debian machine first, scripts/worker-deps.sh --out .carry/worker-deps, and copy
# them along with the repository):
#   scripts/gpu-validate.sh all
# The table ends the output; the log folder holds summary.txt, summary.json, seeds.json and
# logs.tar.gz (each stage's log, jobs and results). On the CPU (a test of the
# script itself; CUDA-only cases SKIP with "CUDA only"):
#   scripts/gpu-validate.sh --device cpu --python /usr/bin/python3 \
#       --worker build/default/agent/worker/benchfleet-worker probe capabilities worker oom runner seeds
#
# Stages, in the order `all` runs them (cheap and most telling first; the seeds stage, which
# needs no worker, runs while the build compiles in the background, unless --no-overlap):
#   probe         versions (nvidia-smi, python, torch + CUDA + cuDNN, transformers, timm,
#                 torchvision, cmake, nvcc, gcc), GPU name and memory, one matrix product on it
#   build         the worker against PY's LibTorch: scripts/build-worker.sh --python PY
#                 --out build/gpu-worker (--build-out) [--deps DIR]; SKIP with --worker PATH
#   capabilities  the worker's and the python runner's --capabilities: on cuda CUDA compiled and
#                 visible, AOTInductor in the worker, torch.compile in the runner, the modes
#   worker        torchvision/resnet18 at batch 1 through the worker: eager, torchscript,
#                 default (AOTInductor), reduce-overhead (that package replayed as a CUDA graph;
#                 the exporter makes the same package for default and reduce-overhead)
#   oom           a 16 MB memory cap (memory_limit_mb 16; ResNet-18's weights alone are 46 MB):
#                 worker eager and default, runner eager, each must end `oom` with its phase
#   runner        the same model through agent/python/benchfleet_runner.py: eager, torch.compile
#                 default, reduce-overhead, max-autotune-no-cudagraphs
#   seeds         the catalog's 12 seed models built from their configs (random weights):
#                 build, forward, torch.jit.trace, torch.export (agent/python/benchfleet_seed_smoke.py)
#
# Options:
#   --log DIR          results, each stage's log beside them (default build/gpu-validate/log)
#   --out DIR          results with the stage logs packed into DIR/logs.tar.gz: four files in all,
#                      for copying back from a GPU host (instead of --log)
#   --python PY        the torch build's python (default python3)
#   --device D         cuda (default) or cpu; on cuda an `unsupported` mode fails its case, on the
#                      CPU it is SKIP with the build's reason
#   --deps DIR         header-only packages for the worker build (default .carry/worker-deps if present)
#   --worker PATH      a prebuilt worker: the build stage is SKIP
#   --budget S         seconds for all stages together (default 540): each stage's limit is cut so
#                      that the stages after it keep their minimum; a stage that cannot get its
#                      minimum is SKIP
#   --limit STAGE=S    that stage's own limit (defaults: probe 40, build 300, capabilities 30,
#                      worker 200, oom 60, runner 360, seeds 200); a stage past it is killed (FAIL);
#                      the runner's max-autotune case is SKIP when less than 150 s of its stage
#                      are left when it would start (a cold max-autotune compile takes minutes)
#   --seed-models IDS  comma-separated catalog ids for the seeds stage (default: the 12 seeds)
#   --seed-jobs N      seed models at a time (default 4 on cuda, 1 on cpu)
#   --no-overlap       run the seeds stage after the others instead of beside the build
#   --work DIR         artifacts, state and Inductor's cache (default build/gpu-validate/work; keep
#                      it out of --out, which should hold only what is copied back)
#   --build-out DIR    where the build stage builds the worker (default build/gpu-worker; kept, so
#                      a second run on the same machine rebuilds incrementally)
# Exit status: 0 when no stage FAILed, 1 otherwise, 2 on a usage error.
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
run_stage="$repo/scripts/gpu-validate-stage.sh"  # the stages themselves
all_stages=(probe build capabilities worker oom runner seeds)
# Each stage's own time limit and the minimum it needs to be worth starting (seconds).
declare -A limit_of=([probe]=40 [build]=300 [capabilities]=30 [worker]=200 [oom]=60 [runner]=360 [seeds]=200)
declare -A minimum_of=([probe]=10 [build]=60 [capabilities]=10 [worker]=45 [oom]=20 [runner]=45 [seeds]=60)

now() { if [ -n "${EPOCHREALTIME:-}" ]; then printf '%s' "${EPOCHREALTIME/,/.}"; else date +%s.%N; fi; }
tool() { "$GV_TOOLPY" "$repo/scripts/gpu_validate.py" "$@"; }

# ---- the driver ----------------------------------------------------------------------------------

usage="usage: gpu-validate.sh [--log DIR | --out DIR] [--work DIR] [--build-out DIR] [--python PY] [--device cuda|cpu] [--deps DIR] [--worker PATH] [--budget S] [--limit STAGE=S]... [--seed-models IDS] [--seed-jobs N] [--no-overlap] STAGE...|all
stages: ${all_stages[*]}"
log="" pack=0 python=python3 device=cuda deps="" worker="" budget=540 seed_models="" seed_jobs="" work="" overlap_build=1
build_out=""
stages=()
# Paths are taken relative to the caller's directory (the stages run in the repository root).
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
while [ $# -gt 0 ]; do
  case "$1" in
    --log|--out|--work|--build-out|--python|--device|--deps|--worker|--budget|--seed-models|--seed-jobs|--limit)
      [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
      case "$1" in
        --log) log="$(abspath "$2")" pack=0 ;;
        --out) log="$(abspath "$2")" pack=1 ;;
        --work) work="$(abspath "$2")" ;;
        --build-out) build_out="$(abspath "$2")" ;;
        --python) case "$2" in */*) python="$(abspath "$2")" ;; *) python="$2" ;; esac ;;  # a bare name: PATH
        --device) device="$2" ;;
        --deps) deps="$(abspath "$2")" ;;
        --worker) worker="$(abspath "$2")" ;;
        --budget) budget="$2" ;;
        --seed-models) seed_models="$2" ;;
        --seed-jobs) seed_jobs="$2" ;;
        --limit)
          if ! [[ "$2" =~ ^([a-z]+)=([0-9]+)$ ]] || [ -z "${limit_of[${BASH_REMATCH[1]}]:-}" ]; then
            echo "gpu-validate: --limit takes STAGE=SECONDS, a stage of: ${all_stages[*]}" >&2; exit 2
          fi
          limit_of[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}"
          limited="${BASH_REMATCH[1]}"
          [ "${BASH_REMATCH[2]}" -lt "${minimum_of[$limited]}" ] && minimum_of[$limited]="${BASH_REMATCH[2]}" ;;
      esac
      shift 2 ;;
    --no-overlap) overlap_build=0; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    all) stages+=("${all_stages[@]}"); shift ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *)
      [ -n "${limit_of[$1]:-}" ] || { echo "gpu-validate: unknown stage '$1'" >&2; echo "$usage" >&2; exit 2; }
      stages+=("$1"); shift ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || { echo "$usage" >&2; exit 2; }
[ "$device" = cuda ] || [ "$device" = cpu ] || { echo "gpu-validate: --device must be cuda or cpu" >&2; exit 2; }
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "gpu-validate: --budget must be whole seconds" >&2; exit 2; }
# Each stage once, in the canonical order.
selected=()
for s in "${all_stages[@]}"; do
  for want in "${stages[@]}"; do [ "$s" = "$want" ] && { selected+=("$s"); break; }; done
done
cd "$repo" || exit 1

if [ -z "$log" ]; then
  log="$repo/build/gpu-validate/log"
fi
[ -z "$deps" ] && [ -d "$repo/.carry/worker-deps" ] && deps="$repo/.carry/worker-deps"
[ -n "$work" ] || work="$repo/build/gpu-validate/work"
[ -n "$build_out" ] || build_out="$repo/build/gpu-worker"
# nvcc where the CUDA toolkit keeps it, for the build and the probe.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
toolpy="$(command -v python3 || true)"; [ -n "$toolpy" ] || toolpy="$python"

# Only what an earlier run of this script wrote there is removed (--log may name any folder).
mkdir -p "$log" "$work" || exit 1
rm -rf "$log/results" "$work/state" "$work/artifacts"
rm -f "$log"/summary.json "$log"/summary.txt "$log"/seeds.json "$log"/logs.tar.gz "$log"/*.log
mkdir -p "$log/results" "$work/state" "$work/artifacts" "$work/inductor" || exit 1
export GV_PYTHON="$python" GV_DEVICE="$device" GV_DEPS="$deps" GV_LOG="$log" GV_WORK="$work" GV_BUILD_OUT="$build_out" \
  GV_STATE="$work/state" GV_TOOLPY="$toolpy" GV_SEED_MODELS="$seed_models" GV_SEED_JOBS="$seed_jobs" \
  PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR="$work/inductor" TRITON_CACHE_DIR="$work/inductor/triton"

started_at="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
t0="$(now)"
deadline=$(( $(date +%s) + budget ))
echo "gpu-validate: ${selected[*]} on $device with $python; logs in $log; budget ${budget}s"

record_skip() {  # record_skip STAGE REASON
  tool verdict --state "$work/state" --stage "$1" --status SKIP --reason "$2" >/dev/null
  tool finish --state "$work/state" --stage "$1" --rc 0 --seconds 0 --limit 0
}
stage_status() { tool field --file "$work/state/$1.json" --key status; }
stage_reason() { tool field --file "$work/state/$1.json" --key reason; }
ran() { [ -f "$work/state/$1.json" ]; }

# Prerequisites: "" when met, else why not.
python_problem() {
  if ran probe; then
    [ "$(stage_status probe)" = PASS ] || echo "probe $(stage_status probe): $(stage_reason probe)"
    return
  fi
  local check='import sys, torch; sys.exit(0 if sys.argv[1] != "cuda" or torch.cuda.is_available() else 3)'
  timeout 60 "$python" -c "$check" "$device" >/dev/null 2>&1 ||
    echo "$python cannot import torch$([ "$device" = cuda ] && echo ' or sees no CUDA device')"
}
worker_problem() {
  if [ -n "$worker" ]; then
    [ -x "$worker" ] || echo "--worker $worker is not an executable file"
    return
  fi
  if ran build; then
    [ "$(stage_status build)" = PASS ] || echo "no worker: build $(stage_status build)"
    return
  fi
  [ -x "$build_out/bin/benchfleet-worker" ] ||
    echo "no worker: run the build stage or pass --worker PATH"
}
worker_path() {  # --worker, else the one the build stage made, else where it would make it
  if [ -n "$worker" ]; then echo "$worker"
  elif [ -f "$work/state/worker.path" ]; then cat "$work/state/worker.path"
  else echo "$build_out/bin/benchfleet-worker"
  fi
}
problem_for() {
  local why
  case "$1" in
    probe) ;;
    build)
      [ -n "$worker" ] && { echo "prebuilt worker given (--worker $worker)"; return; }
      why="$(python_problem)"; [ -n "$why" ] && echo "$why" ;;
    capabilities) why="$(worker_problem)"; [ -n "$why" ] && echo "$why" ;;
    worker)
      why="$(python_problem)"; [ -n "$why" ] && { echo "$why"; return; }
      why="$(worker_problem)"; [ -n "$why" ] && { echo "$why"; return; }
      if ran capabilities && ! grep -q '"modes"' "$work/state/worker.caps.json" 2>/dev/null; then
        echo "the worker does not answer --capabilities (capabilities $(stage_status capabilities))"
      fi ;;
    oom|runner|seeds) why="$(python_problem)"; [ -n "$why" ] && echo "$why" ;;
  esac
}

# The order stages run in: as listed, except that the seeds stage (which needs no worker) runs
# beside the build when both run, the build compiling in the background meanwhile.
order=("${selected[@]}")
overlap=0
if [[ " ${selected[*]} " == *" build "* && " ${selected[*]} " == *" seeds "* ]] && [ -z "$worker" ] &&
   [ "$overlap_build" = 1 ]; then
  overlap=1
  order=()
  for s in "${selected[@]}"; do
    case "$s" in
      seeds) ;;
      build) order+=(build seeds) ;;
      *) order+=("$s") ;;
    esac
  done
fi

# stage_limit INDEX: the stage's time limit, keeping each later stage's minimum (the last ones may
# use the rest); prints nothing when not even its own minimum is left.
stage_limit() {
  local i="$1" stage="${order[$1]}" reserve=0 later left limit
  for later in "${order[@]:$((i + 1))}"; do reserve=$(( reserve + ${minimum_of[$later]} )); done
  left=$(( deadline - $(date +%s) ))
  limit=$(( left - reserve < ${limit_of[$stage]} ? left - reserve : ${limit_of[$stage]} ))
  [ "$limit" -ge "${minimum_of[$stage]}" ] || limit=$(( left < ${limit_of[$stage]} ? left : ${limit_of[$stage]} ))
  [ "$limit" -ge "${minimum_of[$stage]}" ] && echo "$limit"
}

# stage_env STAGE: what a stage's cases need beyond the stage's own prerequisites.
stage_env() {
  GV_WORKER_BIN="" GV_NO_WORKER="" GV_NO_PYTHON=""
  case "$1" in
    oom)
      GV_NO_WORKER="$(worker_problem)"
      [ -z "$GV_NO_WORKER" ] && GV_WORKER_BIN="$(worker_path)" ;;
    capabilities)
      GV_NO_PYTHON="$(python_problem)"
      GV_WORKER_BIN="$(worker_path)" ;;
    *) GV_WORKER_BIN="$(worker_path)" ;;
  esac
  export GV_WORKER_BIN GV_NO_WORKER GV_NO_PYTHON
}

# finish_stage STAGE RC START LIMIT: the stage's record, and the end of its log when it FAILed.
finish_stage() {
  local stage="$1" rc="$2" s0="$3" limit="$4" seconds
  seconds="$(awk -v a="$s0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
  tool finish --state "$work/state" --stage "$stage" --rc "$rc" --seconds "$seconds" --limit "$limit"
  if [ "$(stage_status "$stage")" = FAIL ]; then
    echo "---- last lines of $stage.log"
    tail -n 25 "$log/$stage.log" | cut -c1-400
    echo "----"
  fi
}

bg_pid="" bg_start="" bg_limit=""
wait_build() {  # the background build's record, once it ends
  [ -n "$bg_pid" ] || return 0
  echo "gpu-validate: waiting for the build"
  local rc=0
  wait "$bg_pid" || rc=$?
  bg_pid=""
  finish_stage build "$rc" "$bg_start" "$bg_limit"
}

for i in "${!order[@]}"; do
  stage="${order[$i]}"
  case "$stage" in capabilities|worker|oom) wait_build ;; esac
  why="$(problem_for "$stage")"
  if [ -n "$why" ]; then
    echo "gpu-validate: $stage: SKIP: $why"
    record_skip "$stage" "$why"
    continue
  fi
  limit="$(stage_limit "$i")"
  if [ -z "$limit" ]; then
    left=$(( deadline - $(date +%s) ))
    echo "gpu-validate: $stage: SKIP: ${left}s left of the ${budget}s budget (needs ${minimum_of[$stage]}s)"
    record_skip "$stage" "no time left: ${left}s of the --budget ${budget}s (the stage needs ${minimum_of[$stage]}s)"
    continue
  fi
  stage_env "$stage"
  s0="$(now)"
  if [ "$stage" = build ] && [ "$overlap" = 1 ]; then
    echo "gpu-validate: build: started in the background (at most ${limit}s)"
    GV_STAGE_DEADLINE=$(( $(date +%s) + limit - 3 )) timeout -k 10 "$limit" bash "$run_stage" build \
      >"$log/build.log" 2>&1 </dev/null &
    bg_pid=$! bg_start="$s0" bg_limit="$limit"
    continue
  fi
  echo "gpu-validate: $stage: started (at most ${limit}s)"
  rc=0
  GV_STAGE_DEADLINE=$(( $(date +%s) + limit - 3 )) timeout -k 10 "$limit" bash "$run_stage" "$stage" \
    >"$log/$stage.log" 2>&1 </dev/null || rc=$?
  finish_stage "$stage" "$rc" "$s0" "$limit"
done
wait_build

total="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
for f in "$work"/state/*.caps.json "$work"/state/probe.figures.json; do [ -f "$f" ] && cp "$f" "$log/results/"; done
stage_list="$(IFS=,; echo "${selected[*]}")"
echo
tool summary --state "$work/state" --stages "$stage_list" --json "$log/summary.json" --table "$log/summary.txt" \
  --meta "device=$device" --meta "python=$python" --meta "worker=$(worker_path)" --meta "deps=$deps" \
  --meta "started=$started_at" --meta "seconds_s=$total" --meta "budget_s=$budget" --meta "host=$(uname -n)" \
  >"$work/summary.out"
if [ "$pack" = 1 ]; then
  # With --out the logs travel as one archive: a copy-back may take only a few files.
  (cd "$log" && tar -czf logs.tar.gz -- *.log results && rm -rf -- *.log results)
fi
cat "$work/summary.out"
[ "$(tool field --file "$log/summary.json" --key ok)" = true ]
