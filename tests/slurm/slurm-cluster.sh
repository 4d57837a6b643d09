#!/bin/bash
# A single-node Slurm cluster on loopback for tests, everything under one directory.
#
#   tests/slurm/slurm-cluster.sh start DIR   # prints `export SLURM_CONF=DIR/slurm.conf`
#   tests/slurm/slurm-cluster.sh stop DIR    # cancels jobs, kills the daemons, removes DIR
#   tests/slurm/slurm-cluster.sh check       # exit 77 with the reason when it cannot run here
#
# start: a generated munge key and munged on its own socket, slurm.conf with free ports below the
# ephemeral range (started again on new ones when a daemon finds its port taken; the first try's
# can be named, for tests: BENCHFLEET_SLURM_PORTS="CTLD [SLURMD]"), state, spool, pid and log
# files under DIR, one node (this host at 127.0.0.1) with 4 CPU slots (declared, whatever the
# real core count: SlurmdParameters=config_overrides) and a fake GRES `gpu` of type `cpu`, count
# 2, bound to /dev/null and /dev/zero (so Slurm sets SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES
# for a --gres=gpu job, as on a GPU node), partition `test`. No cgroups (proctrack/linuxproc,
# task/none), no accounting database (accounting_storage/none: sacct fails, `scontrol show job`
# answers while MinJobAge keeps the record); finished jobs are also written to DIR/jobcomp.txt (jobcomp/filetxt).
# Waits (bounded: BENCHFLEET_SLURM_START_S, default 30 s) until sinfo shows the node idle; on
# failure prints the logs' tails, stops what it started and exits 1.
#
# stop: scancel of every job, slurmd, slurmctld and munged by their pid files (SIGTERM, then
# SIGKILL), then every process left whose environment names this cluster's slurm.conf (job
# steps, the jobs' own processes), then removes DIR. Safe to run twice or on a half-started DIR.
#
# Root only (slurmd runs jobs as their users); exit 77 with the reason when not root or when a
# Slurm or munge binary is missing.
set -euo pipefail

usage() {
  echo "usage: $0 start DIR | stop DIR | check" >&2
  exit 2
}

# Exit 77 (ctest's skip) with the reason when this host cannot run the cluster.
check_host() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: the Slurm test cluster needs root (slurmd runs jobs as their owners); running as uid $(id -u)" >&2
    exit 77
  fi
  local missing=()
  for b in slurmctld slurmd munged sbatch squeue scontrol scancel sinfo; do
    command -v "$b" >/dev/null 2>&1 || [[ -x /usr/sbin/$b ]] || missing+=("$b")
  done
  if ((${#missing[@]})); then
    echo "SKIP: Slurm binaries missing: ${missing[*]} (apt-get install slurmctld slurmd slurm-client munge)" >&2
    exit 77
  fi
}

sbin() { command -v "$1" 2>/dev/null || echo "/usr/sbin/$1"; }

# free_port [AVOID...]: a port no process listens on, below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range), other than AVOID. A port from bind(0) lies inside that range, so
# any test's client connection or port-0 server could be handed it between this choice and the
# daemon's bind ("Error binding slurm stream socket: Address already in use"); below the range,
# only a process binding that very port by number can take it.
free_port() {
  /usr/bin/python3 -c '
import random, socket, sys
avoid = {int(p) for p in sys.argv[1:]}
with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
    low = int(f.read().split()[0])
for _ in range(200):
    port = random.randint(10000, max(10001, low - 1))
    if port in avoid:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    sys.exit(0)
sys.exit("no free port below the ephemeral range")
' "$@"
}

# kill_pidfile FILE NAME: SIGTERM the pid in FILE, wait up to 10 s, then SIGKILL.
kill_pidfile() {
  local file=$1 pid
  [[ -s $file ]] || return 0
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# The pids of this cluster's job steps and jobs: slurmstepd processes (they inherit slurmd's
# environment, which names $1 in SLURM_CONF) and processes of a job (SLURM_JOB_ID set, and the
# submitter's SLURM_CONF=$1). Not the submitter itself, nor anything else that merely has
# SLURM_CONF set (a test, a launcher).
cluster_pids() {
  local conf=$1 p env comm
  for p in /proc/[0-9]*; do
    [[ ${p#/proc/} == "$$" ]] && continue
    env=$(tr '\0' '\n' 2>/dev/null <"$p/environ") || continue
    grep -qxF "SLURM_CONF=$conf" <<<"$env" || continue
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    if [[ $comm == slurmstepd* ]] || grep -q '^SLURM_JOB_ID=' <<<"$env"; then
      echo "${p#/proc/}"
    fi
  done
}

stop_cluster() {
  local dir=$1
  [[ -d $dir ]] || return 0
  dir=$(cd "$dir" && pwd)
  local conf=$dir/slurm.conf
  if [[ -f $conf && -s $dir/slurmctld.pid ]] && kill -0 "$(<"$dir/slurmctld.pid")" 2>/dev/null; then
    export SLURM_CONF=$conf
    # Cancel every job and give the steps KillWait to end them (bounded).
    timeout 10 scancel --full --quiet --user=root 2>/dev/null || true
    for _ in $(seq 50); do
      [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  kill_pidfile "$dir/slurmd.pid"
  kill_pidfile "$dir/slurmctld.pid"
  # Whatever still carries this cluster's environment: job steps and the jobs' processes.
  local left
  left=$(cluster_pids "$conf")
  if [[ -n $left ]]; then
    # shellcheck disable=SC2086
    kill -TERM $left 2>/dev/null || true
    sleep 1
    left=$(cluster_pids "$conf")
    # shellcheck disable=SC2086
    [[ -z $left ]] || kill -KILL $left 2>/dev/null || true
  fi
  kill_pidfile "$dir/munged.pid"
  rm -rf "$dir"
}

log_tails() {
  local dir=$1 f
  for f in "$dir"/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [[ -f $f ]] || continue
    echo "---- tail of $f" >&2
    tail -n 25 "$f" >&2
  done
}

start_cluster() {
  local dir=$1
  if [[ -e $dir/slurm.conf ]]; then
    echo "error: $dir already holds a cluster (run: $0 stop $dir)" >&2
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  chmod 0755 "$dir"
  mkdir -p "$dir"/{munge,state,spool,log}
  chmod 0755 "$dir/munge"
  # Stop what was started when anything below fails.
  trap 'status=$?; if ((status != 0)); then log_tails "$dir"; stop_cluster "$dir"; fi' EXIT

  # munge: a fresh key, its own socket, pid, log and seed files.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  "$(sbin munged)" --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munged.seed"
  for _ in $(seq 50); do
    [[ -S $dir/munge/munge.socket ]] && break
    sleep 0.1
  done
  [[ -S $dir/munge/munge.socket ]] || {
    echo "error: munged did not create $dir/munge/munge.socket" >&2
    exit 1
  }

  local host attempt ctld_port slurmd_port
  host=$(hostname -s)
  # A port can still be taken between its choice and the daemon's bind (by a process binding that
  # number): when a daemon says so, the cluster is started again on new ports.
  for attempt in 1 2 3; do
    if [[ $attempt == 1 && -n ${BENCHFLEET_SLURM_PORTS:-} ]]; then
      read -r ctld_port slurmd_port <<<"$BENCHFLEET_SLURM_PORTS"  # tests: the first try's ports
      [[ -n $slurmd_port ]] || slurmd_port=$(free_port "$ctld_port")
    else
      ctld_port=$(free_port)
      slurmd_port=$(free_port "$ctld_port")
    fi
    write_conf "$dir" "$host" "$ctld_port" "$slurmd_port"
    start_daemons "$dir" "$host" && break
    ((attempt < 3)) && port_taken "$dir" || exit 1
    echo "slurm-cluster: port $ctld_port or $slurmd_port was taken before the daemons bound it; retrying on new ports" >&2
    kill_pidfile "$dir/slurmd.pid"
    kill_pidfile "$dir/slurmctld.pid"
    for f in slurmctld.log slurmd.log; do [[ -f $dir/$f ]] && mv "$dir/$f" "$dir/$f.try$attempt"; done
    rm -rf "$dir/state" "$dir/spool" && mkdir -p "$dir/state" "$dir/spool"
  done
  trap - EXIT
  echo "export SLURM_CONF=$SLURM_CONF"
}

# port_taken DIR: whether a daemon of this try could not bind its port.
port_taken() {
  grep -qs "Address already in use" "$1/slurmctld.log" "$1/slurmd.log"
}

# write_conf DIR HOST CTLD_PORT SLURMD_PORT: the cluster's gres.conf and slurm.conf.
write_conf() {
  local dir=$1 host=$2 ctld_port=$3 slurmd_port=$4
  cat >"$dir/gres.conf" <<EOF
# A fake GPU GRES on a CPU-only node: two "devices" so Slurm binds and exports indices
# (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES) as it does on a real GPU node.
AutoDetect=off
NodeName=$host Name=gpu Type=cpu File=/dev/null
NodeName=$host Name=gpu Type=cpu File=/dev/zero
EOF
  cat >"$dir/slurm.conf" <<EOF
# benchfleet's single-node test cluster (tests/slurm/slurm-cluster.sh); generated.
ClusterName=bftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
MinJobAge=60
KillWait=5
OverTimeLimit=0
InactiveLimit=0
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 Gres=gpu:cpu:2 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

# start_daemons DIR HOST: slurmctld and slurmd on DIR's slurm.conf, then waits (bounded:
# BENCHFLEET_SLURM_START_S) until sinfo shows the node idle. Fails at once when a daemon could not
# bind its port.
start_daemons() {
  local dir=$1 host=$2
  export SLURM_CONF=$dir/slurm.conf
  "$(sbin slurmctld)" -f "$SLURM_CONF" || return 1
  "$(sbin slurmd)" -f "$SLURM_CONF" || return 1

  local limit=${BENCHFLEET_SLURM_START_S:-30} state=""
  local deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)); do
    state=$(timeout 5 sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [[ $state == idle ]] && return 0
    port_taken "$dir" && return 1
    sleep 0.5
  done
  echo "error: node $host not idle within ${limit} s (sinfo says: '${state}')" >&2
  return 1
}

[[ $# -ge 1 ]] || usage
case $1 in
  check)
    check_host
    ;;
  start)
    [[ $# -eq 2 ]] || usage
    check_host
    start_cluster "$2"
    ;;
  stop)
    [[ $# -eq 2 ]] || usage
    stop_cluster "$2"
    ;;
  *) usage ;;
esac
