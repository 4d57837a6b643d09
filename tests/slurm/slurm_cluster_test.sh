#!/bin/bash
# slurm-cluster.sh itself: start a cluster under a temporary directory, run a batch job with the
# fake GPU GRES (Slurm must bind it: SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES set), see it in squeue,
# scancel a second one mid-run, then stop: no daemon, job step or job process of the cluster is
# left and the directory is gone. Exit 77 (skip) when not root or Slurm is missing.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
script=$here/slurm-cluster.sh
"$script" check || exit $?

dir=$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-slurm-cluster-XXXXXX")
trap '"$script" stop "$dir" >/dev/null 2>&1' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# wait_for SECONDS COMMAND...: polls COMMAND every 0.5 s; whether it succeeded in time.
wait_for() {
  local limit=$1 deadline
  shift
  deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)); do
    "$@" && return 0
    sleep 0.5
  done
  return 1
}

# The first try's controller port is already taken by a listener (as another process could take
# it between the script's choice and slurmctld's bind): the script must see the daemon's bind
# fail and start the cluster on new ports.
held_file="$dir.held"
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
with open(sys.argv[1], "w") as f:
    f.write(str(s.getsockname()[1]))
time.sleep(600)
' "$held_file" &
holder=$!
trap '"$script" stop "$dir" >/dev/null 2>&1; kill "$holder" 2>/dev/null; rm -f "$held_file"' EXIT
wait_for 10 test -s "$held_file" || { echo "FAIL: the port holder did not start" >&2; exit 1; }
held=$(<"$held_file")
start_err=$dir.start-err
started=$(BENCHFLEET_SLURM_PORTS="$held" "$script" start "$dir" 2>"$start_err") || {
  echo "FAIL: start: $started $(cat "$start_err")" >&2
  exit 1
}
[[ $started == "export SLURM_CONF=$dir/slurm.conf" ]] || fail "start printed '$started'"
grep -q "retrying on new ports" "$start_err" || fail "start did not say it retried: $(cat "$start_err")"
grep -qx "SlurmctldPort=$held" "$dir/slurm.conf" && fail "the cluster's controller is configured on the taken port $held"
rm -f "$start_err"
kill "$holder" 2>/dev/null
eval "$started"
sinfo -h -o '%P %T %G' | grep -q '^test\* idle gpu:cpu:2' || fail "sinfo: $(sinfo -h -o '%P %T %G')"

# A batch job with one fake GPU: its environment shows what Slurm bound.
gpu_job=$(sbatch --parsable --gres=gpu:cpu:1 --time=1 -o "$dir/gpu-%j.out" \
  --wrap 'env | grep -E "^(SLURM_JOB_GPUS|CUDA_VISIBLE_DEVICES|SLURM_CLUSTER_NAME|SLURM_JOB_ID)=" | sort') ||
  fail "sbatch failed: $gpu_job"
job_over() { [[ -z $(squeue -h -j "$1" -o %i 2>/dev/null) ]]; }
wait_for 30 job_over "$gpu_job" || fail "job $gpu_job did not finish within 30 s"
out=$(cat "$dir/gpu-$gpu_job.out" 2>/dev/null)
for want in "SLURM_JOB_GPUS=0" "CUDA_VISIBLE_DEVICES=0" "SLURM_CLUSTER_NAME=bftest" "SLURM_JOB_ID=$gpu_job"; do
  grep -qx "$want" <<<"$out" || fail "job environment lacks $want: $out"
done
grep -q "JobId=$gpu_job .*JobState=COMPLETED" "$dir/jobcomp.txt" || fail "jobcomp: $(cat "$dir/jobcomp.txt")"

# The jobs' sleeps carry this test's pid in their argument, so pgrep finds them and never
# another test's `sleep 300` running beside this one.
long_sleep=300.$$
left_sleep=301.$$

# A long job: listed RUNNING, then cancelled.
long_job=$(sbatch --parsable -o /dev/null --wrap "sleep $long_sleep") || fail "sbatch failed: $long_job"
is_running() { [[ $(squeue -h -j "$1" -o %T 2>/dev/null) == RUNNING ]]; }
wait_for 30 is_running "$long_job" || fail "job $long_job not RUNNING in squeue within 30 s"
sleeper=$(pgrep -f "^sleep ${long_sleep//./\\.}\$" | head -n1)
scancel "$long_job" || fail "scancel $long_job"
wait_for 30 job_over "$long_job" || fail "job $long_job still listed 30 s after scancel"
grep -q "JobId=$long_job .*JobState=CANCELLED" "$dir/jobcomp.txt" || fail "jobcomp: $(cat "$dir/jobcomp.txt")"

# A third job left running for stop to clean up.
sbatch --parsable -o /dev/null --wrap "sleep $left_sleep" >/dev/null || fail "sbatch (third job)"
third_started() { pgrep -f "^sleep ${left_sleep//./\\.}\$" >/dev/null; }
wait_for 30 third_started || fail "third job did not start"
left_sleeper=$(pgrep -f "^sleep ${left_sleep//./\\.}\$" | head -n1)
daemons=$(cat "$dir/munged.pid" "$dir/slurmctld.pid" "$dir/slurmd.pid")

"$script" stop "$dir" || fail "stop exited $?"
[[ ! -e $dir ]] || fail "$dir still exists after stop"
# gone PID: the process has exited (a zombie awaiting its reaper counts as gone).
gone() { ! kill -0 "$1" 2>/dev/null || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
for pid in $daemons $sleeper $left_sleeper; do
  [[ -n $pid ]] || continue
  # A SIGKILLed process may take a moment on a loaded machine to be scheduled and die.
  wait_for 5 gone "$pid" ||
    fail "process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)) survived stop: state $(awk '{print $3}' \
      "/proc/$pid/stat" 2>/dev/null), $(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -E '^SLURM_(CONF|JOB_ID)=' | tr '\n' ' ')"
done
# A second stop of a removed directory is fine.
"$script" stop "$dir" || fail "second stop exited $?"

if ((failures)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "slurm-cluster.sh: start, GRES binding, squeue, scancel and stop work"
