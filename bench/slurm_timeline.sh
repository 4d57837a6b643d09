#!/bin/bash
# The figures: a matrix (default examples/cpu-demo.yaml) run twice on this host,
#   1. through Slurm: a single-node test cluster (tests/slurm/slurm-cluster.sh), the real
#      coordinator and benchfleet-slurm-launcher submitting benchfleet-agent allocations;
#   2. on one resident benchfleet-agent (started and enrolled before the run is submitted),
# and prints the launcher's timeline (allocations submitted, started, ended), the jobs each
# allocation ran (GET /api/v1/runs/{id}/jobs `agent`), the allocation start latency (Slurm's
# SubmitTime -> StartTime, and what the launcher saw), agent start -> enrolled, and the overhead per
# job against the resident agent: total wall (run created -> finished) and the mean per-job wall
# from the agent's lease (its "job N attempt A" log line) to its verdict ("job N -> ok").
# Both agents start with an empty artifact cache. Prints figures; asserts nothing.
#
#   sudo bench/slurm_timeline.sh [--build DIR] [--matrix FILE] [--max-allocations N] [--keep]
#
#   --build DIR            build tree with the binaries (default: build/default)
#   --matrix FILE          matrix to run (default: examples/cpu-demo.yaml; its torch build must be
#                          debian12 = /usr/bin/python3's torch, its GPU class cpu)
#   --max-allocations N    the launcher's max_allocations (default 1: one slot, as the resident
#                          agent has; more run jobs side by side on the node's cores)
#   --keep                 keep the scratch directory (logs, timeline, database)
#
# Root only, like the cluster (exit 77 with the reason otherwise). About 2 x the matrix's time.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build/default
matrix=$repo/examples/cpu-demo.yaml
max_allocations=1
keep=0
while (($#)); do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --matrix) matrix=$(realpath "$2"); shift 2 ;;
    --max-allocations) max_allocations=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $max_allocations =~ ^[1-9][0-9]*$ ]] || { echo "--max-allocations must be >= 1" >&2; exit 2; }

cluster_script=$repo/tests/slurm/slurm-cluster.sh
"$cluster_script" check || exit $?
coordinator_bin=$build/coordinator/benchfleet-coordinator
agent_bin=$build/agent/daemon/benchfleet-agent
worker_bin=$build/agent/worker/benchfleet-worker
launcher_bin=$build/slurm/benchfleet-slurm-launcher
cli_bin=$build/cli/benchfleet
for b in "$coordinator_bin" "$agent_bin" "$worker_bin" "$launcher_bin" "$cli_bin"; do
  [[ -x $b ]] || { echo "missing $b (build it, or pass --build DIR)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-slurm-bench-XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  "$cluster_script" stop "$work/cluster" >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if ((keep)); then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every second; exits with WHAT on timeout.
wait_for() {
  local limit=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + limit))
  until "$@"; do
    ((SECONDS < deadline)) || { echo "timed out after ${limit} s waiting for $what" >&2; exit 1; }
    sleep 1
  done
}

eval "$("$cluster_script" start "$work/cluster")"
operator_token=bench-operator-token-0123456789
enrollment_token=bench-enrollment-token-0123456789
echo "$operator_token" >"$work/operator.token"
"$coordinator_bin" --listen 127.0.0.1:0 --port-file "$work/port" --db "$work/benchfleet.db" \
  --operator-token "$operator_token" --enrollment-token "$enrollment_token" >"$work/coordinator.log" 2>&1 &
pids+=($!)
wait_for 30 "the coordinator's port file" test -s "$work/port"
url=http://127.0.0.1:$(<"$work/port")
api() { curl -sf "$url$1"; }
cli() { "$cli_bin" --url "$url" --operator-token "$operator_token" "$@"; }

# agent_config FILE STATE_DIR: the agent's YAML (the real worker as build debian12).
agent_config() {
  cat >"$1" <<EOF
coordinator: $url
enrollment_token: $enrollment_token
state_dir: $2
builds:
  - {name: debian12, python: /usr/bin/python3, worker: $worker_bin}
EOF
}
run_state() { api "/api/v1/runs/$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])'; }
run_done() { [[ $(run_state "$1") == "done" ]]; }

# ---- 1. through Slurm -------------------------------------------------------------------------
agent_config "$work/agent-slurm.yaml" "$work/slurm-agents"
cat >"$work/launcher.yaml" <<EOF
coordinator: $url
api_token_file: $work/operator.token
poll_s: 2
max_submissions_per_minute: 6
state_dir: $work/launcher
classes:
  - gpu_class: cpu
    partition: test
    gres: "gpu:cpu:1"
    time_limit: "01:00:00"
    cpus_per_task: 1
    max_allocations: $max_allocations
    signal_s: 60
    idle_exit_s: 10
    agent_command: "$agent_bin --config $work/agent-slurm.yaml"
EOF
"$launcher_bin" --config "$work/launcher.yaml" >"$work/launcher.log" 2>&1 &
launcher_pid=$!
pids+=("$launcher_pid")
echo "# run 1: $(basename "$matrix") through Slurm (launcher max_allocations $max_allocations, poll_s 2)" >&2
slurm_run=$(cli submit --print-id --name "slurm timeline" "$matrix")
wait_for 3600 "run $slurm_run" run_done "$slurm_run"
no_allocations() { [[ -z $(squeue -h -n benchfleet-cpu -o %i) ]]; }
wait_for 300 "the allocations to exit" no_allocations
all_ended() {
  python3 - "$work/launcher/timeline.jsonl" <<'EOF'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
started = {e["slurm_job_id"] for e in events if e.get("event") == "started"}
ended = {e["slurm_job_id"] for e in events if e.get("event") == "ended"}
sys.exit(0 if started and started <= ended else 1)
EOF
}
wait_for 60 "the launcher to see every allocation end" all_ended
kill -TERM "$launcher_pid"

# ---- 2. one resident agent --------------------------------------------------------------------
agent_config "$work/agent-resident.yaml" "$work/resident"
echo "# run 2: the same matrix on one resident agent" >&2
env -u SLURM_CONF "$agent_bin" --config "$work/agent-resident.yaml" --name resident >"$work/resident.log" 2>&1 &
resident_pid=$!
pids+=("$resident_pid")
enrolled() { grep -qs "enrolled as agent" "$work/resident.log"; }
wait_for 120 "the resident agent to enrol" enrolled
resident_run=$(cli submit --print-id --name "resident agent" "$matrix")
wait_for 3600 "run $resident_run" run_done "$resident_run"
kill -TERM "$resident_pid"

# ---- figures ----------------------------------------------------------------------------------
api "/api/v1/runs/$slurm_run" >"$work/run-slurm.json"
api "/api/v1/runs/$resident_run" >"$work/run-resident.json"
api "/api/v1/runs/$slurm_run/jobs?limit=1000" >"$work/jobs-slurm.json"
api "/api/v1/runs/$resident_run/jobs?limit=1000" >"$work/jobs-resident.json"
python3 - "$work" "$max_allocations" <<'EOF'
import datetime as dt, glob, json, os, re, statistics, sys

work, max_allocations = sys.argv[1], int(sys.argv[2])

def ts(text):
    """An RFC 3339 time (Z or +00:00, with or without ms) or Slurm's local time, as a datetime."""
    text = text.replace("Z", "+00:00")
    t = dt.datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)

def load(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)

LINE = re.compile(r"^(\S+) \w+ agent: (.*)$")

def agent_log(path):
    """(first line time, enrolled time, {job: (start, end, verdict)}, raw slurm job id) of one agent log."""
    first = enrolled = None
    raw_id = None
    jobs = {}
    for line in open(path, errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        t, msg = ts(m.group(1)), m.group(2)
        first = first or t
        if msg.startswith("enrolled as agent") and enrolled is None:
            enrolled = t
        if (s := re.match(r"slurm job \S+ \(SLURM_JOB_ID (\d+)\) as agent", msg)):
            raw_id = s.group(1)
        if (s := re.match(r"slot \S+: job (\d+) attempt \d+ \(", msg)):
            jobs[int(s.group(1))] = [t, None, None]
        if (s := re.match(r"slot \S+: job (\d+) -> (\w+)", msg)) and int(s.group(1)) in jobs:
            jobs[int(s.group(1))][1:] = [t, s.group(2)]
    return first, enrolled, {j: v for j, v in jobs.items() if v[1]}, raw_id

def mean(values):
    return statistics.mean(values) if values else float("nan")

run_s, run_r = load("run-slurm.json"), load("run-resident.json")
jobs_s, jobs_r = load("jobs-slurm.json")["jobs"], load("jobs-resident.json")["jobs"]
events = [json.loads(l) for l in open(os.path.join(work, "launcher/timeline.jsonl")) if l.strip()]
t0 = ts(run_s["created_at"])

comp = {}
for line in open(os.path.join(work, "cluster/jobcomp.txt")) if os.path.exists(os.path.join(work, "cluster/jobcomp.txt")) else []:
    kv = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
    comp[kv.get("JobId")] = kv

print(f"## Timeline of run {run_s['id']} ({run_s['job_count']} jobs) through Slurm, "
      f"max_allocations {max_allocations} (seconds after the run was submitted)\n")
print("| t (s) | event | allocation | state | count | queued |")
print("|---:|---|---|---|---:|---:|")
for e in events:
    print(f"| {(ts(e['time']) - t0).total_seconds():.1f} | {e['event']} | {e.get('slurm_job_id', '')} | "
          f"{e.get('state', '')} | {e.get('count', '')} | {e.get('queued', '')} |")

per_agent = {}
for j in jobs_s:
    per_agent.setdefault(j.get("agent") or "-", []).append(j["id"])

print("\n## Allocations\n")
print("| allocation | Slurm submit -> start (s) | launcher saw submitted -> started (s) | "
      "agent start -> enrolled (s) | jobs | end state |")
print("|---|---:|---:|---:|---:|---|")
submitted_at = {}
for e in events:
    if e["event"] == "submitted":
        base = e["slurm_job_id"]
        for i in range(e.get("count", 1)):
            submitted_at[base if e.get("count", 1) == 1 else f"{base}_{i}"] = ts(e["time"])
started_at = {e["slurm_job_id"]: ts(e["time"]) for e in events if e["event"] == "started"}
ended_state = {e["slurm_job_id"]: e.get("state", "") for e in events if e["event"] == "ended"}
slurm_latency, launcher_latency, enrol_latency, slurm_walls = [], [], [], []
for log in sorted(glob.glob(os.path.join(work, "launcher/logs/*.out"))):
    first, enrolled, jobs, raw = agent_log(log)
    name = os.path.basename(log)[len("slurm-"):-len(".out")]
    alloc = name.split("_")[0] if name.endswith("_4294967294") else name
    c = comp.get(raw, {})
    lat = (ts(c["StartTime"]) - ts(c["SubmitTime"])).total_seconds() if c.get("StartTime") and c.get("SubmitTime") else None
    seen = (started_at[alloc] - submitted_at[alloc]).total_seconds() if alloc in started_at and alloc in submitted_at else None
    enrol = (enrolled - first).total_seconds() if enrolled and first else None
    if lat is not None: slurm_latency.append(lat)
    if seen is not None: launcher_latency.append(seen)
    if enrol is not None: enrol_latency.append(enrol)
    slurm_walls += [(end - start).total_seconds() for start, end, _ in jobs.values()]
    n = len(per_agent.get(f"slurm-bftest-{alloc}", []))
    fmt = lambda x: "" if x is None else f"{x:.1f}"
    print(f"| {alloc} | {fmt(lat)} | {fmt(seen)} | {fmt(enrol)} | {n} | {ended_state.get(alloc, '?')} |")

first_r, enrolled_r, jobs_res, _ = agent_log(os.path.join(work, "resident.log"))
resident_walls = [(end - start).total_seconds() for start, end, _ in jobs_res.values()]
total_s = (ts(run_s["finished_at"]) - ts(run_s["created_at"])).total_seconds()
total_r = (ts(run_r["finished_at"]) - ts(run_r["created_at"])).total_seconds()
n = run_s["job_count"]
print("\n## Slurm allocations against one resident agent\n")
print("| | through Slurm | resident agent |")
print("|---|---:|---:|")
print(f"| jobs | {run_s['job_count']} | {run_r['job_count']} |")
print(f"| total wall, run submitted -> finished (s) | {total_s:.1f} | {total_r:.1f} |")
print(f"| mean job wall, lease -> verdict (s) | {mean(slurm_walls):.2f} | {mean(resident_walls):.2f} |")
print(f"| allocations | {len(glob.glob(os.path.join(work, 'launcher/logs/*.out')))} | - |")
print(f"| mean Slurm submit -> start (s, 1 s resolution) | {mean(slurm_latency):.1f} | - |")
print(f"| mean launcher submitted -> started seen (s, poll_s 2) | {mean(launcher_latency):.1f} | - |")
print(f"| mean agent start -> enrolled (s) | {mean(enrol_latency):.1f} | "
      f"{(enrolled_r - first_r).total_seconds() if enrolled_r and first_r else float('nan'):.1f} |")
print(f"\nOverhead per job through Slurm: {(total_s - total_r) / n:+.2f} s of total wall "
      f"({total_s - total_r:+.1f} s over {n} jobs), {mean(slurm_walls) - mean(resident_walls):+.2f} s of job wall.")
if max_allocations > 1:
    print(f"(max_allocations {max_allocations}: the Slurm run had up to {max_allocations} slots, the resident agent 1, "
          "on the same cores: compare the job walls, not the totals.)")
EOF
