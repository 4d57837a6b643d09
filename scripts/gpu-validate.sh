#!/usr/bin/env bash
# Proves benchfleet's GPU paths on one machine in the least GPU time: staged, each stage bounded,
# a failed stage never stopping the others, ending with a PASS/FAIL/SKIP table.
#   scripts/gpu-validate.sh [--log DIR] [--work DIR] [--python PY] [--device cuda|cpu]
#                           [--deps DIR] [--worker PATH] [--budget S] [--limit STAGE=S]... [--seed-models IDS]
#                           [--seed-jobs N] [--no-overlap] STAGE...|all
#
# On a lent GPU machine (one device `run` call; prepare the headers the worker build needs here
# first, scripts/worker-deps.sh --out .carry/worker-deps, and carry them):
#   run(command="scripts/gpu-validate.sh all", carry=[".carry"], timeout_s=600)
# The table ends the output; $OUT/gpu-validate/ comes back with summary.txt, summary.json,
# seeds.json and logs.tar.gz (each stage's log, jobs and results). On the CPU (a test of the
# script itself; CUDA-only cases SKIP with "CUDA only"):
#   scripts/gpu-validate.sh --device cpu --python /usr/bin/python3 \
#       --worker build/default/agent/worker/benchfleet-worker probe capabilities worker oom runner seeds
#
# Stages, in the order `all` runs them (cheap and most telling first; the seeds stage, which
# needs no worker, runs while the build compiles in the background, unless --no-overlap):
#   probe         versions (nvidia-smi, python, torch + CUDA + cuDNN, transformers, timm,
#                 torchvision, cmake, nvcc, gcc), GPU name and memory, one matrix product on it
#   build         the worker against PY's LibTorch: scripts/build-worker.sh --python PY
#                 --out build/gpu-worker [--deps DIR]; SKIP with --worker PATH (a prebuilt one)
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
#   --log DIR          results (default $OUT/gpu-validate where $OUT is set, else build/gpu-validate/log);
#                      inside $OUT the stage logs are packed into DIR/logs.tar.gz (the device tool
#                      brings back at most 8 files)
#   --python PY        the torch build's python (default python3)
#   --device D         cuda (default) or cpu; on cuda an `unsupported` mode fails its case, on the
#                      CPU it is SKIP with the build's reason
#   --deps DIR         header-only packages for the worker build (default .carry/worker-deps if present)
#   --worker PATH      a prebuilt worker: the build stage is SKIP
#   --budget S         seconds for all stages together (default 540): each stage's limit is cut so
#                      that the stages after it keep their minimum; a stage that cannot get its
#                      minimum is SKIP
#   --limit STAGE=S    that stage's own limit (defaults: probe 40, build 300, capabilities 30,
#                      worker 200, oom 60, runner 180, seeds 200); a stage past it is killed (FAIL)
#   --seed-models IDS  comma-separated catalog ids for the seeds stage (default: the 12 seeds)
#   --seed-jobs N      seed models at a time (default 4 on cuda, 1 on cpu)
#   --no-overlap       run the seeds stage after the others instead of beside the build
#   --work DIR         artifacts, state and Inductor's cache (default build/gpu-validate/work; never
#                      under $OUT, whose files all travel back)
# Exit status: 0 when no stage FAILed, 1 otherwise, 2 on a usage error.
set -uo pipefail

self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
repo="$(cd "$(dirname "$self")/.." && pwd)"
all_stages=(probe build capabilities worker oom runner seeds)
# Each stage's own time limit and the minimum it needs to be worth starting (seconds).
declare -A limit_of=([probe]=40 [build]=300 [capabilities]=30 [worker]=200 [oom]=60 [runner]=180 [seeds]=200)
declare -A minimum_of=([probe]=10 [build]=60 [capabilities]=10 [worker]=45 [oom]=20 [runner]=45 [seeds]=60)
model=torchvision/resnet18

# ---- helpers shared by the stages ----------------------------------------------------------------

now() { printf '%s' "${EPOCHREALTIME/,/.}"; }

tool() { "$GV_TOOLPY" "$repo/scripts/gpu_validate.py" "$@"; }

# bounded SECONDS CMD...: CMD under timeout, cut to what is left of the stage; 124 on timeout, 125
# when the stage has no time left to start it. A TERM to the stage reaches CMD's process group.
# bounded_limit is the limit it applied (for messages).
current="" bounded_limit=0
bounded() {
  local want="$1"; shift
  local left=$(( GV_STAGE_DEADLINE - $(date +%s) ))
  local limit=$(( want < left ? want : left ))
  bounded_limit="$limit"
  if [ "$limit" -lt 5 ]; then echo "gpu-validate: no time left in the stage for: $*"; return 125; fi
  echo "+ (at most ${limit}s) $*"
  timeout -k 5 "$limit" "$@" <&0 &  # explicit stdin: an asynchronous command would get /dev/null
  current=$!
  wait "$current"; local rc=$?
  current=""
  return "$rc"
}
on_term() { [ -n "$current" ] && kill -TERM "$current" 2>/dev/null; wait; exit 143; }

unsupported_policy() { [ "$GV_DEVICE" = cuda ] && echo fail || echo skip; }

# export_artifact NAME DIR FORMAT MODE: exports $model at batch 1 into DIR unless DIR holds it
# already; on failure records case NAME and returns 1.
export_artifact() {
  local name="$1" dir="$2" format="$3" mode="$4" rc=0
  local output="$GV_LOG/results/export-${dir##*/}.json"
  [ -f "$dir/metadata.json" ] && { echo "reusing $dir"; return 0; }
  rm -rf "$dir"; mkdir -p "$dir"
  local mode_args=()
  [ "$format" = aotinductor ] && mode_args=(--mode "$mode")  # the TorchScript formats have theirs
  bounded 240 "$GV_PYTHON" "$repo/agent/python/benchfleet_export.py" --model "$model" --batch 1 \
    --format "$format" "${mode_args[@]}" --device "$GV_DEVICE" --out "$dir" >"$output" || rc=$?
  cat "$output"
  if [ "$rc" = 125 ]; then tool case --cases "$cases" --name "$name" --status SKIP --reason "no time left in the stage"; return 1; fi
  tool export-case --cases "$cases" --name "$name" --output "$output" --rc "$rc" --limit "$bounded_limit" \
    --unsupported "$(unsupported_policy)" || { rm -rf "$dir"; return 1; }
}

# run_job NAME PROGRAM JOB SECONDS EXPECT: runs a job through the worker or the runner and records
# the case from its result.
run_job() {
  local name="$1" program="$2" job="$3" seconds="$4" expect="$5" rc=0
  local result="$GV_LOG/results/${job##*/}"; result="${result%.job.json}.result.json"
  cat "$job"; echo
  rm -f "$result"
  case "$program" in
    worker) bounded "$seconds" "$GV_WORKER_BIN" --job "$job" --out "$result" || rc=$? ;;
    runner) bounded "$seconds" "$GV_PYTHON" "$repo/agent/python/benchfleet_runner.py" --job "$job" --out "$result" || rc=$? ;;
  esac
  if [ "$rc" = 125 ]; then tool case --cases "$cases" --name "$name" --status SKIP --reason "no time left in the stage"; return 1; fi
  [ -f "$result" ] && cat "$result"
  tool result-case --cases "$cases" --name "$name" --result "$result" --rc "$rc" --limit "$bounded_limit" --expect "$expect" \
    --unsupported "$(unsupported_policy)"
}

# The worker's capabilities (JSON), asked once per run.
worker_caps() {
  local caps="$GV_STATE/worker.caps.json"
  [ -s "$caps" ] || timeout -k 5 30 "$GV_WORKER_BIN" --capabilities >"$caps" 2>"$GV_STATE/worker.caps.err" || true
  cat "$caps"
}
worker_has() { worker_caps | grep -q "\"$1\":true"; }

artifact_dir() { echo "$GV_WORK/artifacts/resnet18-b1-$1-$2-$GV_DEVICE"; }

# ---- the stages (each runs as its own process under timeout, output in its log) -----------------

stage_probe() {
  local figures="$GV_STATE/probe.figures.json"
  echo "== system"; uname -a; nproc; free -g 2>/dev/null | head -2
  echo "== nvidia-smi"
  if command -v nvidia-smi >/dev/null; then
    timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,uuid --format=csv ||
      echo "nvidia-smi failed"
  else
    echo "no nvidia-smi"
  fi
  local tools=()
  local t line
  for t in cmake ninja nvcc gcc g++ ccache; do
    if command -v "$t" >/dev/null; then
      line="$("$t" --version 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+' | tr -d '\r')"
      [ "$t" = nvcc ] && line="$("$t" --version 2>&1 | grep -m1 release)"
      echo "$t: $(command -v "$t"): $line"
      tools+=("$t=$line")
    else
      echo "$t: not found"; tools+=("$t=absent")
    fi
  done
  local smi=""
  command -v nvidia-smi >/dev/null &&
    smi="$(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "== python ($GV_PYTHON)"
  local rc=0
  export GV_TOOLS GV_SMI
  GV_TOOLS="$(printf '%s\n' "${tools[@]}")" GV_SMI="$smi"
  bounded 60 "$GV_PYTHON" - "$GV_DEVICE" "$figures" <<'EOF' || rc=$?
import importlib.metadata as md, json, os, sys, time
device, out = sys.argv[1], sys.argv[2]
fig = {"python": sys.version.split()[0], "python_path": sys.executable}
for line in os.environ.get("GV_TOOLS", "").splitlines():
    k, _, v = line.partition("=")
    fig[k] = v
if os.environ.get("GV_SMI"):
    fig["nvidia_smi"] = os.environ["GV_SMI"]
for name in ("transformers", "timm", "torchvision", "triton", "numpy"):
    try:
        fig[name] = md.version(name)
    except md.PackageNotFoundError:
        fig[name] = "absent"
ok, why = True, ""
try:
    import torch
    fig.update(torch=torch.__version__, torch_cuda=str(torch.version.cuda), torch_git=getattr(torch.version, "git_version", "?"))
    try:
        import torch.utils
        fig["cmake_prefix_path"] = torch.utils.cmake_prefix_path
    except AttributeError:
        pass
    fig["cudnn"] = str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else "absent"
    fig["cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        fig.update(gpu=p.name, gpu_memory_mb=p.total_memory // 2**20, gpu_capability=f"{p.major}.{p.minor}",
                   gpu_count=torch.cuda.device_count())
        a = torch.randn(4096, 4096, device="cuda")
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(10):
            b = a @ a
        torch.cuda.synchronize()
        fig["matmul_4096_fp32_ms"] = round((time.perf_counter() - t) * 100, 3)
        fig["matmul_finite"] = bool(torch.isfinite(b).all())
        ok = fig["matmul_finite"]
        why = "" if ok else "a matrix product on the GPU gave non-finite values"
    elif device == "cuda":
        ok, why = False, f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"
except Exception as e:  # the probe reports, it does not crash
    ok, why = False, f"{sys.executable} cannot use torch: {type(e).__name__}: {e}"
fig["ok"], fig["why"] = ok, why
json.dump(fig, open(out, "w"), indent=2)
print(json.dumps(fig, indent=2))
sys.exit(0 if ok else 1)
EOF
  if [ ! -s "$figures" ]; then
    tool verdict --state "$GV_STATE" --stage probe --status FAIL --reason "$GV_PYTHON does not run (exit $rc)"
    return 0
  fi
  local summary
  summary="$("$GV_TOOLPY" - "$figures" <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))
parts = [f"python {f.get('python')}", f"torch {f.get('torch', '-')}", f"CUDA {f.get('torch_cuda', '-')}",
         f"cuDNN {f.get('cudnn', '-')}"]
if f.get("gpu"):
    parts.append(f"{f['gpu']} ({f['gpu_memory_mb']} MiB, sm {f['gpu_capability']}, 4096^2 fp32 matmul {f['matmul_4096_fp32_ms']} ms)")
parts += [f"transformers {f.get('transformers')}", f"timm {f.get('timm')}", f"torchvision {f.get('torchvision')}"]
print(("" if f.get("ok") else f.get("why", "") + "; ") + ", ".join(parts))
EOF
)"
  if [ "$rc" = 0 ]; then
    tool verdict --state "$GV_STATE" --stage probe --status PASS --reason "$summary" --figures "$figures"
  else
    tool verdict --state "$GV_STATE" --stage probe --status FAIL --reason "$summary" --figures "$figures"
  fi
}

stage_build() {
  local out="$repo/build/gpu-worker" rc=0 dep_args=()
  [ -n "$GV_DEPS" ] && dep_args=(--deps "$GV_DEPS")
  bounded 100000 "$repo/scripts/build-worker.sh" --python "$GV_PYTHON" --out "$out" "${dep_args[@]}" \
    --jobs "$(nproc)" || rc=$?
  for f in configure.log build.log; do [ -f "$out/$f" ] && cp "$out/$f" "$GV_LOG/build-$f"; done
  if [ "$rc" = 0 ] && [ -x "$out/bin/benchfleet-worker" ]; then
    echo "$out/bin/benchfleet-worker" >"$GV_STATE/worker.path"
    local warnings
    warnings="$(grep -c 'warning:' "$out/build.log" 2>/dev/null || true)"
    tool verdict --state "$GV_STATE" --stage build --status PASS \
      --reason "built $out/bin/benchfleet-worker (${warnings:-0} compiler warnings)"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    tool verdict --state "$GV_STATE" --stage build --status FAIL --reason "build-worker.sh timed out after ${bounded_limit}s"
  else
    local last
    last="$(grep -v '^\s*$' "$GV_LOG/build.log" | grep -m1 -E 'error|Error|failed|usage' || true)"
    tool verdict --state "$GV_STATE" --stage build --status FAIL --reason "build-worker.sh exit $rc: ${last:-see build.log}"
  fi
}

stage_capabilities() {
  local rc=0
  echo "== worker $GV_WORKER_BIN"
  rm -f "$GV_STATE/worker.caps.json"
  bounded 30 "$GV_WORKER_BIN" --capabilities >"$GV_STATE/worker.caps.json" || rc=$?
  cat "$GV_STATE/worker.caps.json"
  tool capabilities --cases "$cases" --name worker --file "$GV_STATE/worker.caps.json" --rc "$rc" --kind worker --device "$GV_DEVICE"
  echo "== runner ($GV_PYTHON)"
  if [ -n "$GV_NO_PYTHON" ]; then
    tool case --cases "$cases" --name runner --status SKIP --reason "$GV_NO_PYTHON"
    return
  fi
  rc=0
  bounded 60 "$GV_PYTHON" "$repo/agent/python/benchfleet_runner.py" --capabilities >"$GV_STATE/runner.caps.json" || rc=$?
  cat "$GV_STATE/runner.caps.json"
  tool capabilities --cases "$cases" --name runner --file "$GV_STATE/runner.caps.json" --rc "$rc" --kind runner --device "$GV_DEVICE"
}

# The libtorch case MODE from an artifact of FORMAT (exported with EXPORT_MODE), under CAP MB when set.
worker_case() {
  local name="$1" mode="$2" format="$3" export_mode="$4" cap="${5:-}" expect=ok
  [ -n "$cap" ] && expect=oom
  local dir; dir="$(artifact_dir "$format" "$export_mode")"
  if [ "$format" = aotinductor ] && ! worker_has aoti; then
    local why version
    version="$(tool field --file "$GV_STATE/worker.caps.json" --key torch_version)"
    why="the worker has no AOTInductor loader (LibTorch $version)"
    if [ "$(unsupported_policy)" = fail ]; then
      tool case --cases "$cases" --name "$name" --status FAIL --reason "$why"
    else
      tool case --cases "$cases" --name "$name" --status SKIP --reason "$why"
    fi
    return
  fi
  if [ "$GV_STAGE" = oom ] && [ "$format" = aotinductor ] && [ ! -f "$dir/metadata.json" ] && [ -f "$GV_STATE/worker.json" ]; then
    # A second AOTInductor compile would not fit the stage's minute; the worker stage's failed.
    tool case --cases "$cases" --name "$name" --status SKIP --reason "no AOTInductor package (the worker stage's default case did not make one)"
    return
  fi
  export_artifact "$name" "$dir" "$format" "$export_mode" || return
  local job="$GV_LOG/results/$GV_STAGE-$name.job.json"
  tool libtorch-job --metadata "$dir/metadata.json" --mode "$mode" --device "$GV_DEVICE" --out "$job" \
    ${cap:+--memory-limit-mb "$cap"}
  run_job "$name" worker "$job" 90 "$expect"
}

stage_worker() {
  worker_case eager eager torchscript eager
  worker_case torchscript torchscript torchscript-frozen torchscript
  worker_case default default aotinductor default
  if [ "$GV_DEVICE" != cuda ]; then
    tool case --cases "$cases" --name reduce-overhead --status SKIP --reason "CUDA only"
  elif [ ! -f "$(artifact_dir aotinductor default)/metadata.json" ]; then
    tool case --cases "$cases" --name reduce-overhead --status SKIP --reason "no AOTInductor package (see the default case)"
  else
    worker_case reduce-overhead reduce-overhead aotinductor default
  fi
}

runner_case() {
  local name="$1" mode="$2" seconds="$3" cap="${4:-}" expect=ok
  [ -n "$cap" ] && expect=oom
  local job="$GV_LOG/results/$GV_STAGE-$name.job.json"
  tool python-job --model "$model" --mode "$mode" --device "$GV_DEVICE" --out "$job" ${cap:+--memory-limit-mb "$cap"}
  run_job "$name" runner "$job" "$seconds" "$expect"
}

stage_oom() {
  if [ -n "${GV_WORKER_BIN:-}" ]; then
    worker_case libtorch-eager eager torchscript eager 16
    worker_case libtorch-default default aotinductor default 16
  else
    tool case --cases "$cases" --name libtorch --status SKIP --reason "$GV_NO_WORKER"
  fi
  runner_case python-eager eager 90 16
}

stage_runner() {
  runner_case eager eager 90
  runner_case default default 150
  if [ "$GV_DEVICE" = cuda ]; then
    runner_case reduce-overhead reduce-overhead 150
  else
    tool case --cases "$cases" --name reduce-overhead --status SKIP --reason "CUDA only"
  fi
  runner_case max-autotune-no-cudagraphs max-autotune-no-cudagraphs 180
}

stage_seeds() {
  local left=$(( GV_STAGE_DEADLINE - $(date +%s) )) rc=0
  local jobs="${GV_SEED_JOBS:-}"
  [ -n "$jobs" ] || { [ "$GV_DEVICE" = cuda ] && jobs=4 || jobs=1; }
  local per_model=$(( left - 10 < 150 ? left - 10 : 150 ))
  bounded "$left" "$GV_PYTHON" "$repo/agent/python/benchfleet_seed_smoke.py" --device "$GV_DEVICE" \
    --out "$GV_LOG/seeds.json" --jobs "$jobs" --model-timeout "$per_model" --deadline-s "$(( left - 15 ))" \
    ${GV_SEED_MODELS:+--models "$GV_SEED_MODELS"} || rc=$?
  echo "seed smoke test: exit $rc"
  tool seeds-verdict --state "$GV_STATE" --seeds "$GV_LOG/seeds.json"
}

if [ "${1:-}" = __stage ]; then
  GV_STAGE="$2"
  cases="$GV_STATE/$GV_STAGE.cases.jsonl"
  trap on_term TERM INT
  cd "$repo" || exit 1
  "stage_$GV_STAGE"
  exit 0
fi

# ---- the driver ----------------------------------------------------------------------------------

usage="usage: gpu-validate.sh [--log DIR] [--work DIR] [--python PY] [--device cuda|cpu] [--deps DIR] [--worker PATH] [--budget S] [--limit STAGE=S]... [--seed-models IDS] [--seed-jobs N] [--no-overlap] STAGE...|all
stages: ${all_stages[*]}"
log="" python=python3 device=cuda deps="" worker="" budget=540 seed_models="" seed_jobs="" work="" overlap_build=1
stages=()
# Paths are taken relative to the caller's directory (the stages run in the repository root).
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
while [ $# -gt 0 ]; do
  case "$1" in
    --log|--work|--python|--device|--deps|--worker|--budget|--seed-models|--seed-jobs|--limit)
      [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
      case "$1" in
        --log) log="$(abspath "$2")" ;;
        --work) work="$(abspath "$2")" ;;
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
          [ "${BASH_REMATCH[2]}" -lt "${minimum_of[${BASH_REMATCH[1]}]}" ] && minimum_of[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}" ;;
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
  if [ -n "${OUT:-}" ]; then log="$OUT/gpu-validate"; else log="$repo/build/gpu-validate/log"; fi
fi
pack=0
if [ -n "${OUT:-}" ]; then case "$log/" in "${OUT%/}"/*) pack=1 ;; esac; fi
[ -z "$deps" ] && [ -d "$repo/.carry/worker-deps" ] && deps="$repo/.carry/worker-deps"
[ -n "$work" ] || work="$repo/build/gpu-validate/work"
# nvcc where the CUDA toolkit keeps it, for the build and the probe.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
toolpy="$(command -v python3 || true)"; [ -n "$toolpy" ] || toolpy="$python"

# Only what an earlier run of this script wrote there is removed (--log may name any folder).
mkdir -p "$log" "$work" || exit 1
rm -rf "$log/results" "$work/state" "$work/artifacts"
rm -f "$log"/summary.json "$log"/summary.txt "$log"/seeds.json "$log"/logs.tar.gz "$log"/*.log
mkdir -p "$log/results" "$work/state" "$work/artifacts" "$work/inductor" || exit 1
export GV_PYTHON="$python" GV_DEVICE="$device" GV_DEPS="$deps" GV_LOG="$log" GV_WORK="$work" \
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
  [ -x "$repo/build/gpu-worker/bin/benchfleet-worker" ] ||
    echo "no worker: run the build stage or pass --worker PATH"
}
worker_path() { [ -n "$worker" ] && echo "$worker" || { [ -f "$work/state/worker.path" ] && cat "$work/state/worker.path"; } || echo "$repo/build/gpu-worker/bin/benchfleet-worker"; }
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
if [[ " ${selected[*]} " == *" build "* && " ${selected[*]} " == *" seeds "* ]] && [ -z "$worker" ] && [ "$overlap_build" = 1 ]; then
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
    GV_STAGE_DEADLINE=$(( $(date +%s) + limit - 3 )) timeout -k 10 "$limit" bash "$self" __stage build \
      >"$log/build.log" 2>&1 </dev/null &
    bg_pid=$! bg_start="$s0" bg_limit="$limit"
    continue
  fi
  echo "gpu-validate: $stage: started (at most ${limit}s)"
  rc=0
  GV_STAGE_DEADLINE=$(( $(date +%s) + limit - 3 )) timeout -k 10 "$limit" bash "$self" __stage "$stage" \
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
  --meta "started=$started_at" --meta "seconds_s=$total" --meta "budget_s=$budget" --meta "host=$(hostname)" \
  >"$work/summary.out"
if [ "$pack" = 1 ]; then
  # The device tool brings back at most 8 files: the logs travel as one archive.
  (cd "$log" && tar -czf logs.tar.gz -- *.log results && rm -rf -- *.log results)
fi
cat "$work/summary.out"
[ "$(tool field --file "$log/summary.json" --key ok)" = true ]
