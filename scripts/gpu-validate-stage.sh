#!/usr/bin/env bash
# shellcheck disable=SC2153  # the GV_* variables come from gpu-validate.sh
# One stage of scripts/gpu-validate.sh, run by it as a process of its own under `timeout` (so a
# stage past its limit is killed with everything it started), output to the stage's log.
#   gpu-validate-stage.sh STAGE        STAGE: probe build capabilities worker oom runner seeds
# Reads (exported by gpu-validate.sh): GV_PYTHON, GV_DEVICE (cuda|cpu), GV_DEPS, GV_LOG (results/
# holds jobs and results), GV_WORK (artifacts/), GV_STATE, GV_TOOLPY (a python3 for
# gpu_validate.py), GV_BUILD_OUT, GV_WORKER_BIN, GV_NO_WORKER / GV_NO_PYTHON (why a case's worker
# or python is missing), GV_SEED_MODELS, GV_SEED_JOBS, GV_STAGE_DEADLINE (epoch seconds: every
# command is cut to end before it).
# Writes: GV_STATE/STAGE.cases.jsonl (a case per line, as each ends) or GV_STATE/STAGE.verdict.json.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
model=torchvision/resnet18

# ---- helpers -------------------------------------------------------------------------------------

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
# shellcheck disable=SC2317  # a trap handler
on_term() { [ -n "$current" ] && kill -TERM "$current" 2>/dev/null; wait; exit 143; }

no_time() { tool case --cases "$cases" --name "$1" --status SKIP --reason "no time left in the stage"; }

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
  if [ "$rc" = 125 ]; then no_time "$name"; return 1; fi
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
    runner)
      bounded "$seconds" "$GV_PYTHON" "$repo/agent/python/benchfleet_runner.py" --job "$job" --out "$result" ||
        rc=$? ;;
  esac
  if [ "$rc" = 125 ]; then no_time "$name"; return 1; fi
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
worker_has() { [[ "$(worker_caps)" == *"\"$1\":true"* ]]; }

artifact_dir() { echo "$GV_WORK/artifacts/resnet18-b1-$1-$2-$GV_DEVICE"; }

# ---- the stages (each runs as its own process under timeout, output in its log) -----------------

stage_probe() {
  echo "== system"; uname -a; nproc; free -g 2>/dev/null | head -2
  echo "== nvidia-smi"
  local smi=""
  if command -v nvidia-smi >/dev/null; then
    timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,uuid --format=csv ||
      echo "nvidia-smi failed"
    smi="$(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  else
    echo "no nvidia-smi"
  fi
  local tools=() t line
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
  echo "== python ($GV_PYTHON)"
  local rc=0
  rm -f "$GV_STATE/probe.verdict.json"
  GV_TOOLS="$(printf '%s\n' "${tools[@]}")" GV_SMI="$smi"
  export GV_TOOLS GV_SMI  # for gpu_validate.py probe
  bounded 60 "$GV_PYTHON" "$repo/scripts/gpu_validate.py" probe \
    --state "$GV_STATE" --device "$GV_DEVICE" --figures "$GV_STATE/probe.figures.json" || rc=$?
  if [ ! -s "$GV_STATE/probe.verdict.json" ]; then
    tool verdict --state "$GV_STATE" --stage probe --status FAIL --reason "$GV_PYTHON does not run (exit $rc)"
  fi
}

stage_build() {
  local out="$GV_BUILD_OUT" rc=0 dep_args=()
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

runner_case() {  # runner_case NAME MODE SECONDS [CAP [MINIMUM]]: MINIMUM seconds left, or SKIP
  local name="$1" mode="$2" seconds="$3" cap="${4:-}" minimum="${5:-0}" expect=ok
  [ -n "$cap" ] && expect=oom
  local left=$(( GV_STAGE_DEADLINE - $(date +%s) ))
  if [ "$left" -lt "$minimum" ]; then
    tool case --cases "$cases" --name "$name" --status SKIP \
      --reason "no time left in the stage: ${left} s, the case needs ${minimum} s (a cold compile)"
    return
  fi
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
  # A cold max-autotune compile of ResNet-18 benchmarks every Triton and ATen choice of each
  # convolution: more than 114 s on an H200 with 16 cores. Started with less, it would only be
  # killed, which says nothing about the build.
  runner_case max-autotune-no-cudagraphs max-autotune-no-cudagraphs 240 "" "${GV_AUTOTUNE_MIN_S:-150}"
}

stage_seeds() {
  local left=$(( GV_STAGE_DEADLINE - $(date +%s) )) rc=0
  local jobs="${GV_SEED_JOBS:-}"
  [ -n "$jobs" ] || { [ "$GV_DEVICE" = cuda ] && jobs=4 || jobs=1; }
  # Every model ends some seconds before the stage, so the report is written in time.
  bounded "$left" "$GV_PYTHON" "$repo/agent/python/benchfleet_seed_smoke.py" --device "$GV_DEVICE" \
    --out "$GV_LOG/seeds.json" --jobs "$jobs" --model-timeout 150 --deadline-s "$(( left - 8 ))" \
    ${GV_SEED_MODELS:+--models "$GV_SEED_MODELS"} || rc=$?
  echo "seed smoke test: exit $rc"
  tool seeds-verdict --state "$GV_STATE" --seeds "$GV_LOG/seeds.json"
}

[ $# = 1 ] || { echo "usage: gpu-validate-stage.sh STAGE" >&2; exit 2; }
: "${GV_STATE:?gpu-validate.sh sets it}" "${GV_LOG:?}" "${GV_WORK:?}" "${GV_PYTHON:?}" "${GV_DEVICE:?}" "${GV_TOOLPY:?}"
GV_STAGE="$1"
cases="$GV_STATE/$GV_STAGE.cases.jsonl"
trap on_term TERM INT
cd "$repo" || exit 1
# A stage's last command's status says nothing about the stage: its verdict is in the state files,
# and a non-zero exit means the stage itself broke.
case "$GV_STAGE" in
  probe) stage_probe ;;
  build) stage_build ;;
  capabilities) stage_capabilities ;;
  worker) stage_worker ;;
  oom) stage_oom ;;
  runner) stage_runner ;;
  seeds) stage_seeds ;;
  *) echo "gpu-validate-stage.sh: unknown stage '$GV_STAGE'" >&2; exit 2 ;;
esac
exit 0
