#!/usr/bin/env bash
# Builds and runs benchfleet's libFuzzer targets (fuzz/): the JSON reader and codecs, the result
# decoder, the CLI's matrix YAML reader, the HTTP request path and the history routes' request
# readers (schedules, series and regression queries, notes), under ASan + UBSan.
#   scripts/fuzz.sh build [--dir DIR]
#   scripts/fuzz.sh run [--dir DIR] [--seconds S | --runs N] [--jobs J] [--keep] [TARGET...]
#   scripts/fuzz.sh merge [--dir DIR] [TARGET...]
# build  configures and builds DIR (default build/fuzz) with clang++-14 and
#        -fsanitize=fuzzer-no-link,address,undefined (ccache where found).
# run    runs each TARGET (default: all) for S seconds (default 10) or N executions, one at a
#        time, on a scratch copy of its seed corpus fuzz/corpus/<target>/ (the seeds stay
#        unchanged), with J parallel fuzzing processes (default 1). Prints per target the
#        executions, the executions per second and the corpus size; a crash, sanitizer report or
#        broken property is saved as DIR/findings/<target>/crash-* and makes the exit status 1.
#        --keep keeps the scratch corpora in DIR/corpus/<target> for merge.
# merge  minimises DIR/corpus/<target> (kept by run --keep) into fuzz/corpus/<target>, so what
#        a long run found becomes seeds of the next.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: fuzz.sh build|run|merge [--dir DIR] [--seconds S|--runs N] [--jobs J] [--keep] [TARGET...]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
action="$1"; shift
dir=build/fuzz
seconds=10
runs=""
jobs=1
keep=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=(fuzz_json_codecs fuzz_result_decoder fuzz_matrix_yaml fuzz_http_request fuzz_history_requests)
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
die() { echo "fuzz: $*" >&2; exit 1; }

case "$action" in
  build)
    # -fno-sanitize=function: clang 14 cannot assemble UBSan's function-type prologue in split
    # coroutines (Asio's awaitables): "Cannot represent a difference across sections".
    command -v clang++-14 >/dev/null || die "clang++-14 is missing (apt-get install clang-14 libclang-rt-14-dev)"
    flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
    cmake -S . -B "$dir" -G Ninja -DBENCHFLEET_FUZZ=ON -DBUILD_TESTING=OFF -DBENCHFLEET_BUILD_BENCHMARKS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 \
      -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >"$dir.configure.log" 2>&1 ||
      { cat "$dir.configure.log" >&2; die "configuring $dir failed"; }
    # -g makes ccache hash the build directory too; without it a fresh clone elsewhere hits what
    # another compiled (the debug info then names that clone's paths).
    CCACHE_NOHASHDIR=1 cmake --build "$dir" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log" >&2; die "building $dir failed"; }
    echo "fuzz: targets built in $dir/fuzz"
    ;;
  run)
    export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    status=0
    printf '%-22s %12s %10s %8s %s\n' target executions exec/s corpus verdict
    for t in "${targets[@]}"; do
      bin="$dir/fuzz/$t"
      [ -x "$bin" ] || die "$bin is missing (scripts/fuzz.sh build)"
      corpus="$dir/corpus/$t"
      findings="$dir/findings/$t"
      rm -rf "$corpus"
      mkdir -p "$corpus" "$findings"
      [ -d "fuzz/corpus/$t" ] && cp -R "fuzz/corpus/$t/." "$corpus/"
      limit=(-max_total_time="$seconds")
      [ -n "$runs" ] && limit=(-runs="$runs")
      log="$dir/$t.log"
      start=$(date +%s.%N)
      set +e
      if [ "$jobs" -gt 1 ]; then
        "$bin" "${limit[@]}" -jobs="$jobs" -workers="$jobs" -print_final_stats=1 -artifact_prefix="$findings/" \
          -close_fd_mask=3 "$corpus" >"$log" 2>&1
      else
        "$bin" "${limit[@]}" -print_final_stats=1 -artifact_prefix="$findings/" -close_fd_mask=3 "$corpus" >"$log" 2>&1
      fi
      rc=$?
      set -e
      elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
      # With -jobs each worker logs to fuzz-N.log in the current directory; sum their counts.
      executions=$({ cat "$log"; cat fuzz-*.log 2>/dev/null || true; } |
                   awk '/^stat::number_of_executed_units:/ { n += $2 } END { print n + 0 }')
      rm -f fuzz-*.log
      rate=$(awk -v n="$executions" -v t="$elapsed" 'BEGIN { printf "%d", (t > 0 ? n / t : 0) }')
      verdict=ok
      if [ "$rc" -ne 0 ] || ls "$findings"/crash-* "$findings"/leak-* "$findings"/timeout-* >/dev/null 2>&1; then
        verdict="FINDING (see $log and $findings)"
        status=1
      fi
      printf '%-22s %12s %10s %8s %s\n' "$t" "$executions" "$rate" "$(ls "$corpus" | wc -l)" "$verdict"
      [ "$keep" = 1 ] || rm -rf "$corpus"
    done
    exit "$status"
    ;;
  merge)
    for t in "${targets[@]}"; do
      [ -d "$dir/corpus/$t" ] || die "$dir/corpus/$t is missing (run with --keep first)"
      mkdir -p "fuzz/corpus/$t"
      "$dir/fuzz/$t" -merge=1 -close_fd_mask=3 "fuzz/corpus/$t" "$dir/corpus/$t" >"$dir/$t.merge.log" 2>&1 ||
        { tail -n 20 "$dir/$t.merge.log" >&2; die "merging $t failed"; }
      echo "fuzz: fuzz/corpus/$t now holds $(ls "fuzz/corpus/$t" | wc -l) inputs"
    done
    ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
