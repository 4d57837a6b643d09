#!/bin/bash
# The A/A benchmark: how often `compare` calls run-to-run noise a change, and how often it finds a
# real slowdown, through the real coordinator, agent and python runner in the unstable torch root.
#
# One agent offers two builds of the same root: `unstable`, and `unstable-slow`, whose every timed
# CPU call is made --slowdown times as long (the runner's test-only BENCHFLEET_TEST_SLOWDOWN): a
# real 10% slower build. The matrix (3 torchvision models x batch 1 and 2 x eager and `default` x
# both builds, python runtime, --repetitions fresh processes per cell) runs once to warm
# Inductor's cache, then twice more, A and A'. Then, each cell judged by GET /api/v1/compare:
#   - false positives: A against A', within each build (24 cells): any verdict but "same";
#   - detection: unstable against unstable-slow across the two runs, both ways (24 cells):
#     "slower" is found;
#   - the same two with one process a side (the first repetition of each cell, in a run of its
#     own), where the CPU's stated floor decides;
# and the run-to-run spread of each cell's repetitions (the report's run_to_run_spread).
# Prints figures; asserts nothing.
#
#   bench/aa_noise.sh [--build DIR] [--root DIR] [--repetitions N] [--slowdown F] [--modes LIST]
#                     [--batch-sizes LIST] [--keep] [--judge DIR]
#
#   --build DIR        build tree with the binaries (default: build/default)
#   --root DIR         the unstable torch root (default: ~/.cache/benchfleet/torch-roots/sid)
#   --repetitions N    fresh processes per cell in A and A' (default 4)
#   --slowdown F       the slow build's factor (default 1.10)
#   --modes LIST       the modes, comma-separated (default eager,default; eager alone is about 3x
#                      quicker a job, no compile in each fresh process)
#   --batch-sizes LIST the batch sizes, comma-separated (default 1,2; eager alone needs four,
#                      1,2,4,8, for 24 cells)
#   --keep             keep the scratch directory (logs, database)
#   --judge DIR        measure nothing: judge the runs a kept scratch directory DIR holds again,
#                      with this build's rule (its runs 2-5: A, A', and the one-process pair)
#
# About an hour on a 2-core machine at the defaults (264 jobs; eager alone at 8 repetitions and
# four batch sizes, 456 shorter jobs, about as long). Run it on an otherwise idle
# machine: other work beside it is noise it measures.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build/default
root=${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/torch-roots/sid
reps=4
slowdown=1.10
modes=eager,default
batch_sizes=1,2
keep=0
judge=""
while (($#)); do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --root) root=$(cd "$2" && pwd); shift 2 ;;
    --repetitions) reps=$2; shift 2 ;;
    --slowdown) slowdown=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --batch-sizes) batch_sizes=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --judge) judge=$(cd "$2" && pwd); shift 2 ;;
    -h | --help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $reps =~ ^[2-9]$|^[1-9][0-9]+$ ]] || { echo "--repetitions must be >= 2" >&2; exit 2; }
[[ -f $root/etc/benchfleet-root.json ]] || { echo "no torch root at $root (scripts/torch-root.sh --suite sid)" >&2; exit 1; }
coordinator_bin=$build/coordinator/benchfleet-coordinator
agent_bin=$build/agent/daemon/benchfleet-agent
cli=$build/cli/benchfleet
for b in "$coordinator_bin" "$agent_bin" "$cli"; do
  [[ -x $b ]] || { echo "missing $b (build it, or pass --build DIR)" >&2; exit 1; }
done

if [[ -n $judge ]]; then
  work=$judge
  keep=1
  rm -f "$work/port"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-aa-XXXXXX")
fi
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if ((keep)); then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

"$coordinator_bin" --listen 127.0.0.1:0 --db "$work/aa.db" --port-file "$work/port" >"$work/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port ]] || { echo "the coordinator did not start: $work/coordinator.log" >&2; exit 1; }
export BENCHFLEET_URL="http://127.0.0.1:$(cat "$work/port")"
export BENCHFLEET_OPERATOR_TOKEN_FILE="$work/aa.db.operator-token"

if [[ -z $judge ]]; then
cat >"$work/agent.yaml" <<EOF
builds:
  - {name: unstable, python: /usr/bin/python3, root: $root}
  - {name: unstable-slow, python: /usr/bin/python3, root: $root}
EOF
BENCHFLEET_TEST_SLOWDOWN="unstable-slow:*=$slowdown" BENCHFLEET_ENROLLMENT_TOKEN=$(cat "$work/aa.db.enrollment-token") \
  "$agent_bin" --config "$work/agent.yaml" --coordinator "$BENCHFLEET_URL" --state-dir "$work/agent" --name aa \
  >"$work/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 600); do
  "$cli" builds 2>/dev/null | grep -q unstable-slow && break
  sleep 0.2
done
"$cli" builds | grep -q unstable-slow || { echo "the agent did not enrol: $work/agent.log" >&2; exit 1; }
fi

matrix() {  # matrix NAME REPETITIONS
  cat <<EOF
name: $1
models: [torchvision/resnet18, torchvision/squeezenet1_1, torchvision/mobilenet_v3_small]
batch_sizes: [$batch_sizes]
modes: [$modes]
torch_builds: [unstable, unstable-slow]
gpus: [cpu]
runtimes: [python]
repetitions: $2
measurement: {warmup: 3, min_iterations: 10, max_iterations: 300, min_duration_s: 1, max_duration_s: 5, target_ci_rel_width: 0.05}
noise: {max_cv: 0.25}
timeout_s: 900
EOF
}
submit() {  # submit NAME REPETITIONS: the run's id, once it ended
  matrix "$1" "$2" >"$work/$1.yaml"
  "$cli" submit "$work/$1.yaml" --wait --print-id 2>>"$work/progress.log"
}
started=$SECONDS
if [[ -z $judge ]]; then
  echo "aa_noise: warming Inductor's cache (one repetition per cell)" >&2
  warm=$(submit warm-up 1)
  echo "aa_noise: A and A' ($reps fresh processes per cell each), slow build x$slowdown" >&2
  a=$(submit a "$reps")
  b=$(submit a-again "$reps")
  single_a=$(submit one-a 1)
  single_b=$(submit one-b 1)
else
  echo "aa_noise: judging the runs of $work again" >&2
  warm=1 a=2 b=3 single_a=4 single_b=5
  reps=$(/usr/bin/python3 -c 'import json, os, sys, urllib.request
print(json.load(urllib.request.urlopen(os.environ["BENCHFLEET_URL"] + "/api/v1/runs/" + sys.argv[1]))["matrix"]["repetitions"])' "$a")
fi

compare() { "$cli" compare "${1%%:*}" "${2%%:*}" --build-a "${1#*:}" --build-b "${2#*:}" --format json; }
{
  compare "$a:unstable" "$b:unstable" >"$work/aa1.json"
  compare "$a:unstable-slow" "$b:unstable-slow" >"$work/aa2.json"
  compare "$a:unstable" "$b:unstable-slow" >"$work/slow1.json"
  compare "$b:unstable" "$a:unstable-slow" >"$work/slow2.json"
  compare "$single_a:unstable" "$single_b:unstable" >"$work/one-aa1.json"
  compare "$single_a:unstable-slow" "$single_b:unstable-slow" >"$work/one-aa2.json"
  compare "$single_a:unstable" "$single_b:unstable-slow" >"$work/one-slow1.json"
  compare "$single_b:unstable" "$single_a:unstable-slow" >"$work/one-slow2.json"
  "$cli" report "$a" --format json >"$work/report-a.json"
  "$cli" report "$b" --format json >"$work/report-b.json"
}
/usr/bin/python3 - "$work" "$reps" "$slowdown" "$((SECONDS - started))" "$warm" <<'EOF'
import json, statistics, sys
work, reps, slowdown, seconds, warm = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
load = lambda name: json.load(open(f"{work}/{name}.json"))
def cells(*names):
    return [c for n in names for c in load(n)["cells"]]
def rates(aa, slow):
    a, s = cells(*aa), cells(*slow)
    fp = sum(c["verdict"] != "same" for c in a)
    found = sum(c["verdict"] == "slower" for c in s)
    wrong = sum(c["verdict"] == "faster" for c in s)
    moved = [abs(1 / c["ratio"] - 1) for c in a]
    return a, s, fp, found, wrong, moved
spreads = []
for name in ("report-a", "report-b"):
    for t in load(name)["tables"]:
        for col_i, col in enumerate(t["columns"]):
            if col["kind"] != "latency_ms" or col["build"] != "unstable":
                continue
            for row in t["rows"]:
                v = row["cells"][col_i].get("run_to_run_spread")
                if v is not None:
                    spreads.append(v)
print(f"aa_noise: {seconds} s (warm-up run {warm}); slow build x{slowdown}")
for label, aa, slow in ((f"{reps} fresh processes per cell (noise: repetitions)", ("aa1", "aa2"), ("slow1", "slow2")),
                        ("one process per cell (noise: the CPU floor)", ("one-aa1", "one-aa2"), ("one-slow1", "one-slow2"))):
    a, s, fp, found, wrong, moved = rates(aa, slow)
    print(f"  {label}:")
    print(f"    A/A cells called a change: {fp} of {len(a)} ({100 * fp / max(1, len(a)):.0f}%);"
          f" |A/A' - 1| median {100 * statistics.median(moved):.1f}%, max {100 * max(moved):.1f}%")
    print(f"    {100 * (slowdown - 1):.0f}% slower cells found: {found} of {len(s)} ({100 * found / max(1, len(s)):.0f}%);"
          f" called faster: {wrong}")
    def overall(names):
        out = []
        for n in names:
            o = load(n).get("overall")
            out.append("none (no repetitions)" if not o else
                       f"{o['verdict']} (A/B {o['ratio']:.3f}, 95% {o['ratio_ci_low']:.3f}-{o['ratio_ci_high']:.3f})")
        return "; ".join(out)
    print(f"    overall, A/A comparisons: {overall(aa)}")
    print(f"    overall, slower-build comparisons: {overall(slow)}")
if spreads:
    print(f"  run-to-run spread of a cell's {reps} repetitions (max/min - 1, build unstable, {len(spreads)} cells):"
          f" median {100 * statistics.median(spreads):.1f}%, max {100 * max(spreads):.1f}%")
EOF
