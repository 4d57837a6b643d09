#!/usr/bin/env bash
# Runs the whole benchfleet test suite from a fresh checkout: installs dependencies, makes (or
# reuses) the torch roots in parallel with the C++ build — Debian 13 (torch 2.6) and Debian
# unstable (torch 2.14 with transformers) — builds the worker inside each, and runs every test
# through CTest.
#   scripts/test.sh                      # Release build (preset "default")
#   PRESET=asan scripts/test.sh          # same suite under ASan+UBSan
#   BENCHFLEET_TORCH_ROOT=DIR scripts/test.sh   # the torch 2.6 root elsewhere (default
#                                        # ~/.cache/benchfleet/torch-roots/trixie)
#   BENCHFLEET_SID_ROOT=DIR scripts/test.sh     # the torch 2.14 root elsewhere (default .../sid)
#   BENCHFLEET_TORCH_ROOT=none scripts/test.sh  # without the roots: their tests skip
#   BENCHFLEET_SID_ROOT=none scripts/test.sh    # without the torch 2.14 root: its tests skip
#   BENCHFLEET_FUZZ=1 scripts/test.sh    # with the fuzz targets too (ctest fuzz_short; the
#                                        # scheduled tier builds and runs them)
#   BENCHFLEET_CUDA_HEADERS=none scripts/test.sh  # without the CUDA compile check
#                                        # (ctest worker_cuda_compile; headers from scripts/cuda-headers.sh)
#   scripts/test.sh --scheduled          # the scheduled tier (ctest --preset scheduled): clang-tidy
#                                        # over every unit, the fuzz targets (built with clang, ASan +
#                                        # UBSan, in build/fuzz), and scripts/fresh-check.sh (the
#                                        # README's two commands in a new Debian 12 root, empty caches)
#   scripts/test.sh --fast               # the fast tier while developing: no installs, no root, no
#                                        # CUDA headers, no fuzz tree; an incremental build, then the
#                                        # tests labelled `fast` (ctest --preset fast: unit tests,
#                                        # the light integration tests, lint format and python)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${PRESET:-default}"
jobs="${JOBS:-$(nproc)}"

case "${1:-}" in
  --fast)
    [ "$preset" = default ] || { echo "test: --fast runs the default preset's build" >&2; exit 2; }
    [ -f build/default/CMakeCache.txt ] || cmake --preset default
    cmake --build --preset default -j "$jobs"
    exec ctest --preset fast -j "$jobs" --timeout 300 ;;
  --scheduled)
    scripts/install-deps.sh --no-browser --no-slurm
    cmake --preset "$preset" -DBENCHFLEET_FUZZ_DIR="$PWD/build/fuzz"
    cmake --build --preset "$preset" -j "$jobs"
    scripts/fuzz.sh build --dir "$PWD/build/fuzz"
    exec ctest --preset scheduled ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--fast | --scheduled]" >&2; exit 2 ;;
esac
roots_dir="${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/torch-roots"
root="${BENCHFLEET_TORCH_ROOT:-$roots_dir/trixie}"
sid_root="${BENCHFLEET_SID_ROOT:-$roots_dir/sid}"
[ "$root" = none ] && sid_root=none  # the fast path: the host's torch alone

t0=$SECONDS
# cpu_ticks: the machine's busy and total CPU ticks since boot (/proc/stat's first line), so each
# phase says how much of the cores it used: a phase well below 100% waits on something (the
# network, a sleep, one thread), one at 100% is bound by the cores.
cpu_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8; exit}' /proc/stat; }
phase_t=$SECONDS
read -r phase_busy phase_all < <(cpu_ticks)
phase_times=()
phase_done() {  # phase_done NAME: records how long the phase since the last one took, and its CPU use
  local busy all share
  read -r busy all < <(cpu_ticks)
  share=$(( all > phase_all ? 100 * (busy - phase_busy) / (all - phase_all) : 0 ))
  phase_times+=("$1 $((SECONDS - phase_t)) s (CPU ${share}%)")
  echo "test: $1 took $((SECONDS - phase_t)) s, the cores ${share}% busy"
  phase_t=$SECONDS phase_busy=$busy phase_all=$all
}

# The roots take minutes to make the first time (downloads, dpkg) and are reused afterwards;
# making them side by side (at the lowest CPU and I/O priority) beside the other packages'
# install and the compile saves that time on a fresh machine: each is mostly one process at a
# time, so together they use both cores once the compile is done. They start as soon as
# mmdebstrap is there. Each writes its own log.
root_pids=()
if [ "$root" != none ]; then
  scripts/install-deps.sh --roots-only
  mkdir -p build
  for pair in "trixie $root" "sid $sid_root"; do
    read -r suite dir <<<"$pair"
    [ "$dir" = none ] && continue
    ionice -t -c 3 nice -n 19 scripts/torch-root.sh --suite "$suite" --root "$dir" >"build/torch-root-$suite.log" 2>&1 &
    root_pids+=("$suite:$!")
  done
fi
# The fuzz targets are the scheduled tier's (below), so clang and libFuzzer are left out unless
# BENCHFLEET_FUZZ=1 asks for them here too.
if [ "${BENCHFLEET_FUZZ:-}" = 1 ]; then scripts/install-deps.sh; else scripts/install-deps.sh --no-fuzz; fi
phase_done "installing the packages"

# The CUDA compile check (ctest worker_cuda_compile) compiles the worker's CUDA code against a
# CUDA LibTorch's headers (2.4 MB, unpacked once into ~/.cache) and a CUDA toolkit's
# (/usr/local/cuda, where NVIDIA's installer puts it; Debian's own is non-free, so a fresh Debian
# machine has none): without a toolkit the check is left out, saying so.
cuda_headers=""
cuda_include="${BENCHFLEET_CUDA_INCLUDE_DIR:-/usr/local/cuda/include}"
if [ "${BENCHFLEET_CUDA_HEADERS:-}" != none ] && [ ! -f "$cuda_include/cuda_runtime_api.h" ]; then
  echo "test: no CUDA toolkit at $cuda_include (cuda_runtime_api.h): the suite runs without the CUDA compile check (worker_cuda_compile)"
elif [ "${BENCHFLEET_CUDA_HEADERS:-}" != none ]; then
  cuda_headers="$(scripts/cuda-headers.sh)" ||
    { echo "test: the CUDA LibTorch headers could not be fetched (BENCHFLEET_CUDA_HEADERS=none runs the suite without the CUDA compile check)" >&2; exit 1; }
fi

# The libFuzzer targets live in their own tree (clang, ASan + UBSan; scripts/fuzz.sh); ctest
# fuzz_short runs each for a few seconds. That tree is a second build of the libraries they reach
# (314 s on a fresh 2-core machine): the scheduled tier's, here only with BENCHFLEET_FUZZ=1.
fuzz_dir=""
[ "${BENCHFLEET_FUZZ:-}" = 1 ] && fuzz_dir="$PWD/build/fuzz"

cmake --preset "$preset" -DBENCHFLEET_TORCH_ROOT="$root" -DBENCHFLEET_SID_ROOT="$sid_root" -DBENCHFLEET_CUDA_TORCH_HEADERS="$cuda_headers" \
  -DBENCHFLEET_CUDA_INCLUDE_DIR="$cuda_include" \
  -DBENCHFLEET_FUZZ_DIR="$fuzz_dir"
cmake --build --preset "$preset" -j "$jobs"
phase_done "the build"
if [ -n "$fuzz_dir" ]; then
  echo "test: building the fuzz targets (clang, ASan + UBSan) in $fuzz_dir"
  scripts/fuzz.sh build --dir "$fuzz_dir"
  phase_done "the fuzz targets"
fi

if [ ${#root_pids[@]} -gt 0 ]; then
  for entry in "${root_pids[@]}"; do
    suite="${entry%%:*}"
    if ! wait "${entry#*:}"; then
      cat "build/torch-root-$suite.log" >&2
      echo "test: the $suite torch root could not be made (BENCHFLEET_TORCH_ROOT=none runs the suite without the roots)" >&2
      exit 1
    fi
    grep -E '^torch-root: (root|creating|updating)' "build/torch-root-$suite.log" || true
  done
  phase_done "waiting for the roots"
  echo "test: building benchfleet-worker inside the roots against their LibTorch"
  scripts/build-worker.sh --root "$root" --out "build/$preset/trixie-root-worker" --jobs "$jobs"
  [ "$sid_root" = none ] || scripts/build-worker.sh --root "$sid_root" --out "build/$preset/sid-root-worker" --jobs "$jobs"
  phase_done "the workers in the roots"
  export BENCHFLEET_REQUIRE_TORCH_ROOT=1
fi
# install-deps.sh installed bubblewrap and the archive was reachable: the worker's build from
# extracted -dev packages (ctest worker_deps) must run, not skip.
export BENCHFLEET_REQUIRE_WORKER_DEPS=1
# The Slurm tests (label slurm) run one at a time on one cluster and mostly wait on Slurm: they
# get a CTest of their own beside the rest, so their waiting does not hold one of the slots of
# the CPU-bound tests (about 4 minutes of a slot on 2 cores). Their output follows the rest's.
slurm_log="build/$preset/ctest-slurm.log"
ctest --preset "$preset" -L '^slurm$' -j 1 --timeout 300 >"$slurm_log" 2>&1 &
slurm_pid=$!
status=0
# The scheduled tier's tests (labels tidy_full, fresh: ctest --preset scheduled) are not this
# command's: each takes longer than the rest of the suite on a small machine.
main_log="build/$preset/ctest-main.log"
ctest --preset "$preset" -LE '^(slurm|tidy_full|fresh)$' -j "$jobs" --timeout 300 2>&1 | tee "$main_log" || status=$?
slurm_status=0
wait "$slurm_pid" || slurm_status=$?
echo "test: the Slurm tests (run beside the rest):"
cat "$slurm_log"
[ "$slurm_status" -eq 0 ] || status=$slurm_status
# What the time went to, for whoever trims the suite: the longest tests of this run, from its
# own lines (CTest's cost record is no measure: it blends in each test's COST).
echo "test: the 25 longest tests (s):"
sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' "$main_log" "$slurm_log" |
  sort -rn | head -n 25 | awk '{ printf "%9.1f  %s\n", $1, $2 }'
echo "test: the tests' times add up to $(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: .* ([0-9.]+) sec$/\1/p' "$main_log" |
  awk '{ s += $1 } END { printf "%d", s }') s of a core"
phase_done "the tests"
echo "test: $(IFS=,; echo "${phase_times[*]}" | sed 's/,/, /g'); in all $((SECONDS - t0)) s"
exit "$status"
