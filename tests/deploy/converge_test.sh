#!/usr/bin/env bash
# deploy_converge: a real converge of ansible/site.yml on this machine (ansible_connection=local),
# then the deployed services at work, then a rolling upgrade.
#
# Where it can (root, unshare, overlayfs, /lib/systemd/systemd), the test runs the roles exactly as
# on a fleet host: it re-executes itself in a private mount namespace whose /etc, /opt and /var/lib
# are overlays (writes land in the scratch directory, the host is untouched) and /run a tmpfs, boots
# systemd as PID 1 of a new PID namespace (unit path: /etc/systemd/system plus stub targets), and
# runs ansible-playbook inside it. The roles' defaults apply: system users benchfleet and
# benchfleet-agent, /opt/benchfleet, /etc/benchfleet, /var/lib/benchfleet-*, units enabled and
# started by the systemd module, the handlers' health and online checks, the hardening checked on
# the running processes. Otherwise (or with BENCHFLEET_DEPLOY_SYSTEMD=0) it says why and falls back
# to a scratch prefix, the current user and coordinator_/agent_service_manager=none: the roles
# render and `systemd-analyze verify` the units, and this script runs their ExecStart itself.
#  1. ansible/build-release.sh builds two release archives (0.1.0-deploytest, 0.1.1-deploytest).
#  2. site.yml with localhost in `coordinator` and `agents:cpu` (group_vars/cpu.yml: build `stable`
#     = /usr/bin/python3 + Debian's torch, its worker compiled on the host from the release's sources).
#  3. The coordinator answers /healthz on a free 127.0.0.1 port, the agent comes online with build
#     `stable` running the worker built for it.
#  4. A second converge must report changed=0.
#  5. `benchfleet submit` (the installed CLI) of a one-cell CPU matrix with --wait ends ok.
#  6. upgrade-agents.yml with the second archive while the agent runs an ~8 s job: the agent is
#     drained, the playbook waits until the job is done, the agent is upgraded and restarted (by
#     systemd, or by this script's supervisor), seen again and resumed; the job ends ok on its
#     first attempt.
# Everything started here is stopped by the EXIT trap. Skipped (77) without ansible-playbook.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build_dir="${BENCHFLEET_BUILD_DIR:-$root/build/default}"
if ! command -v ansible-playbook >/dev/null 2>&1; then
  echo "skipped: ansible-playbook not found (Debian package ansible; scripts/install-deps.sh installs it)"
  exit 77
fi
for tool in curl python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "skipped: $tool not found"; exit 77; }
done

# Can systemd run here as it does on a host? Then do it from a private mount namespace.
systemd_reason=""
if [ "${BENCHFLEET_DEPLOY_SYSTEMD:-1}" = 0 ]; then
  systemd_reason="BENCHFLEET_DEPLOY_SYSTEMD=0"
elif [ "$(id -u)" != 0 ]; then
  systemd_reason="not root (namespaces, overlays and system users need it)"
elif [ ! -x /lib/systemd/systemd ] || ! command -v unshare >/dev/null || ! command -v nsenter >/dev/null; then
  systemd_reason="/lib/systemd/systemd, unshare or nsenter is missing"
elif ! grep -qw overlay /proc/filesystems; then
  systemd_reason="the kernel has no overlayfs"
fi
if [ -z "$systemd_reason" ] && [ "${BENCHFLEET_DEPLOY_IN_NAMESPACE:-}" != 1 ]; then
  BENCHFLEET_DEPLOY_IN_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$@"
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-deploy.XXXXXX")"
pids=()
systemd_pid=""
cleanup() {
  local rc=$?
  touch "$scratch/stop"
  if [ -n "$systemd_pid" ]; then
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
      nsenter -t "$systemd_pid" -m -p systemctl --no-pager status benchfleet-coordinator benchfleet-agent 2>&1 | tail -n 30 || true
    fi
    kill -KILL "$systemd_pid" 2>/dev/null || true  # PID 1 of its namespace: everything in it dies
  fi
  # Supervisor loops first (they would restart the agent), then the services themselves.
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for f in "$scratch"/*.pid; do
    if [ -f "$f" ]; then kill -TERM "$(cat "$f")" 2>/dev/null || true; fi
  done
  sleep 1
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for f in "$scratch"/*.pid; do
    if [ -f "$f" ]; then kill -KILL "$(cat "$f")" 2>/dev/null || true; fi
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for log in "$scratch"/*.log; do
      [ -f "$log" ] || continue
      echo "---- tail of $log"; tail -n 40 "$log"
    done
  fi
  if [ -n "$systemd_pid" ]; then
    sleep 0.5
    umount -l /run /etc/systemd/system /etc /opt /var/lib 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "${BENCHFLEET_DEPLOY_KEEP_LOGS:-}" ]; then
    mkdir -p "$BENCHFLEET_DEPLOY_KEEP_LOGS" && cp "$scratch"/*.log "$BENCHFLEET_DEPLOY_KEEP_LOGS"/ 2>/dev/null || true
  fi
  rm -rf "$scratch"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "deploy_converge: FAIL: $*" >&2; exit 1; }
step() { echo "== $(date +%T) $*"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
port="$(free_port)"
url="http://127.0.0.1:$port"
operator_token="op-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
enrollment_token="en-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
agent_name="deploy-test-$$"

# in_ns CMD...: runs CMD where systemd is PID 1 (its PID and mount namespaces), or as is.
in_ns() {
  if [ -n "$systemd_pid" ]; then nsenter -t "$systemd_pid" -m -p "$@"; else "$@"; fi
}

boot_systemd() {  # sets systemd_pid, or systemd_reason when systemd does not come up
  local layer
  for layer in etc opt var-lib; do mkdir -p "$scratch/overlay/$layer/upper" "$scratch/overlay/$layer/work"; done
  mount -t overlay overlay -o "lowerdir=/etc,upperdir=$scratch/overlay/etc/upper,workdir=$scratch/overlay/etc/work" /etc &&
    mount -t overlay overlay -o "lowerdir=/opt,upperdir=$scratch/overlay/opt/upper,workdir=$scratch/overlay/opt/work" /opt &&
    mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$scratch/overlay/var-lib/upper,workdir=$scratch/overlay/var-lib/work" /var/lib &&
    mount -t tmpfs -o mode=0755 tmpfs /etc/systemd/system &&
    mount -t tmpfs -o mode=0755 tmpfs /run || { systemd_reason="mounting the overlays failed"; return 0; }
  # Only the units this test needs: the roles' units in /etc/systemd/system and empty targets for
  # their default dependencies (the host's own units are not loaded).
  mkdir -p "$scratch/units"
  local target
  for target in sysinit basic multi-user network network-online shutdown sockets timers paths local-fs; do
    printf '[Unit]\nDescription=%s (deploy test stub)\nDefaultDependencies=no\n' "$target" >"$scratch/units/$target.target"
  done
  printf '[Unit]\nDescription=System slice (deploy test stub)\nDefaultDependencies=no\n' >"$scratch/units/system.slice"
  SYSTEMD_UNIT_PATH="/etc/systemd/system:$scratch/units" \
    unshare --pid --fork --mount-proc /lib/systemd/systemd --system --unit=multi-user.target \
    --show-status=false --log-target=null >"$scratch/systemd.log" 2>&1 &
  local unshare_pid=$! state=""
  for _ in $(seq 1 100); do
    systemd_pid="$(pgrep -P "$unshare_pid" -x systemd || true)"
    if [ -n "$systemd_pid" ]; then
      state="$(nsenter -t "$systemd_pid" -m -p systemctl is-system-running 2>/dev/null || true)"
      case "$state" in running|degraded) break ;; esac
    fi
    sleep 0.1
  done
  case "$state" in
    running|degraded) echo "systemd is PID 1 of a private namespace (pid $systemd_pid here): $state" ;;
    *) systemd_reason="systemd did not come up in a PID namespace (state: ${state:-none})"
       [ -n "$systemd_pid" ] && kill -KILL "$systemd_pid" 2>/dev/null
       systemd_pid="" ;;
  esac
}

if [ -z "$systemd_reason" ]; then
  step "boot systemd in a private namespace"
  boot_systemd
fi
if [ -n "$systemd_pid" ]; then
  mode=systemd
  prefix=""
  coordinator_user=benchfleet  # the roles' defaults
  agent_user=benchfleet-agent
  # The units log to journald, which does not run here: drop-ins send their output to files.
  for unit in coordinator agent; do
    mkdir -p "/etc/systemd/system/benchfleet-$unit.service.d"
    printf '[Service]\nStandardOutput=append:%s\nStandardError=inherit\n' "$scratch/$unit.log" \
      >"/etc/systemd/system/benchfleet-$unit.service.d/deploy-test-log.conf"
  done
else
  mode=none
  echo "note: the roles' systemd path is not exercised: $systemd_reason; units are rendered, verified"
  echo "      with systemd-analyze and their ExecStart is run by this script instead"
  prefix="$scratch/root"
  coordinator_user="$(id -un)"
  agent_user="$(id -un)"
fi

step "build the release archives"
archive1="$("$root/ansible/build-release.sh" --build-dir "$build_dir" --out-dir "$scratch/release" --version 0.1.0-deploytest)"
archive2="$("$root/ansible/build-release.sh" --build-dir "$build_dir" --out-dir "$scratch/release" --version 0.1.1-deploytest)"

cat >"$scratch/inventory.yml" <<INV
all:
  children:
    coordinator:
      hosts:
        localhost:
    agents:
      children:
        cpu:
          hosts:
            localhost:
  vars:
    ansible_connection: local
    ansible_python_interpreter: /usr/bin/python3
INV
# Extra vars: the coordinator on a loopback port, fresh tokens, this test's agent name. Without
# systemd also every path in the scratch prefix, the current user and no service manager.
cat >"$scratch/vars.yml" <<VARS
benchfleet_become: false
benchfleet_release_archive: "$archive1"
benchfleet_coordinator_port: $port
benchfleet_coordinator_url: "$url"
benchfleet_operator_token: "$operator_token"
benchfleet_enrollment_token: "$enrollment_token"
coordinator_listen: "127.0.0.1:$port"
coordinator_health_url: "$url/healthz"
agent_name: "$agent_name"
agent_extra_config: {}
VARS
if [ "$mode" = none ]; then
  # Without root, apt cannot run: the build packages must be there already (install-deps.sh).
  install_build_packages=true
  [ "$(id -u)" = 0 ] || install_build_packages=false
  cat >>"$scratch/vars.yml" <<VARS
coordinator_install_dir: "$prefix/opt/benchfleet"
coordinator_config_dir: "$prefix/etc/benchfleet"
coordinator_state_dir: "$prefix/var/lib/benchfleet-coordinator"
coordinator_unit_dir: "$prefix/etc/systemd/system"
coordinator_user: "$coordinator_user"
coordinator_group: "$(id -gn)"
coordinator_create_user: false
coordinator_backup_keep: 2
coordinator_service_manager: none
agent_install_dir: "$prefix/opt/benchfleet"
agent_config_dir: "$prefix/etc/benchfleet"
agent_state_dir: "$prefix/var/lib/benchfleet-agent"
agent_unit_dir: "$prefix/etc/systemd/system"
agent_user: "$agent_user"
agent_group: "$(id -gn)"
agent_create_user: false
agent_service_manager: none
agent_install_build_packages: $install_build_packages
VARS
fi

export ANSIBLE_CONFIG="$root/ansible/ansible.cfg" ANSIBLE_HOME="$scratch/ansible-home" \
       ANSIBLE_LOCAL_TEMP="$scratch/ansible-tmp" ANSIBLE_REMOTE_TEMP="$scratch/ansible-tmp" \
       ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
converge() {  # converge LOG PLAYBOOK [ARGS...]: runs a playbook, prints its recap, returns its status
  local log="$1" playbook="$2"; shift 2
  local rc=0
  in_ns ansible-playbook -i "$scratch/inventory.yml" -e "@$scratch/vars.yml" "$@" "$root/ansible/$playbook" \
    >"$scratch/$log" 2>&1 || rc=$?
  sed -n '/PLAY RECAP/,$p' "$scratch/$log"
  return "$rc"
}
recap_changed() { sed -n 's/^localhost *:.* changed=\([0-9]*\).*/\1/p' "$scratch/$1" | tail -1; }

step "converge 1 (site.yml)"
converge converge1.log site.yml || fail "the first converge failed (converge1.log above)"
[ "$(recap_changed converge1.log)" -gt 0 ] || fail "the first converge changed nothing"

step "check what the roles installed"
etc="$prefix/etc/benchfleet"
units="$prefix/etc/systemd/system"
if [ "$mode" = none ]; then
  for unit in coordinator agent; do
    command -v systemd-analyze >/dev/null 2>&1 || { echo "note: no systemd-analyze, units not verified"; break; }
    grep -A1 "TASK \[$unit : Verify the units*\]" "$scratch/converge1.log" | grep -q '^ok:' ||
      fail "systemd-analyze verify did not run on the $unit unit"
  done
else
  for unit in coordinator agent; do
    in_ns systemd-analyze verify "$units/benchfleet-$unit.service" >"$scratch/verify-$unit.log" 2>&1 ||
      { cat "$scratch/verify-$unit.log"; fail "systemd-analyze verify refuses the $unit unit"; }
  done
  for user in "$coordinator_user" "$agent_user"; do
    entry="$(in_ns getent passwd "$user")" || fail "the role did not create the system user $user"
    uid="$(echo "$entry" | cut -d: -f3)"; shell="$(echo "$entry" | cut -d: -f7)"
    [ "$uid" -lt 1000 ] && [ "$shell" = /usr/sbin/nologin ] || fail "$user is not a system account: $entry"
  done
fi
[ "$(readlink "$prefix/opt/benchfleet/current")" = "releases/benchfleet-0.1.0-deploytest-linux-$(uname -m)" ] ||
  fail "current does not point at the release: $(readlink "$prefix/opt/benchfleet/current")"
for f in coordinator.env agent.env; do
  [ "$(in_ns stat -c %a:%U "$etc/$f")" = 600:root ] || [ "$mode" = none ] ||
    fail "$f is $(in_ns stat -c %a:%U "$etc/$f"), not 600:root"
  [ "$(stat -c %a "$etc/$f")" = 600 ] || fail "$f is mode $(stat -c %a "$etc/$f"), not 0600"
done
grep -qx "BENCHFLEET_OPERATOR_TOKEN=$operator_token" "$etc/coordinator.env" || fail "coordinator.env lacks the operator token"
grep -qx "BENCHFLEET_ENROLLMENT_TOKEN=$enrollment_token" "$etc/agent.env" || fail "agent.env lacks the enrolment token"
if grep -q -e "$operator_token" -e "$enrollment_token" "$scratch/converge1.log"; then
  fail "a token appears in the ansible output"
fi
[ "$(in_ns stat -c %U "$prefix/var/lib/benchfleet-coordinator")" = "$coordinator_user" ] ||
  fail "the coordinator's state directory is not owned by $coordinator_user"
[ "$(in_ns stat -c %U "$prefix/var/lib/benchfleet-agent")" = "$agent_user" ] ||
  fail "the agent's state directory is not owned by $agent_user"
grep -q '^KillMode=mixed$' "$units/benchfleet-agent.service" || fail "the agent unit lacks KillMode=mixed"
for unit in benchfleet-coordinator benchfleet-agent; do
  for key in NoNewPrivileges=true ProtectSystem=strict PrivateTmp=true ProtectHome=true Restart=on-failure; do
    grep -qx "$key" "$units/$unit.service" || fail "$unit.service lacks $key"
  done
done
{ grep -q 'name: "stable"' "$etc/agent.yaml" && grep -q 'python: "/usr/bin/python3"' "$etc/agent.yaml"; } ||
  fail "agent.yaml lacks the cpu group's stable build: $(cat "$etc/agent.yaml")"
# build_worker: the stable build runs a worker compiled on the host against /usr/bin/python3's torch.
built_worker="$(sed -n 's/^ *worker: "\(.*\)"$/\1/p' "$etc/agent.yaml")"
case "$built_worker" in
  "$prefix/opt/benchfleet/workers/stable-torch"*/bin/benchfleet-worker) ;;
  *) fail "the stable build's worker is not one built by the role: $built_worker" ;;
esac
[ -x "$built_worker" ] || fail "$built_worker does not exist"
torch_version="$(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
"$built_worker" --capabilities | python3 -c "
import json, sys
caps = json.load(sys.stdin)
assert '$torch_version'.startswith(caps['torch_version']), caps
print('built worker: LibTorch', caps['torch_version'], 'for torch $torch_version, modes', caps['modes']['cpu'])" ||
  fail "the built worker does not match the build's torch"

if [ "$mode" = systemd ]; then
  step "the services systemd started"
  for unit in benchfleet-coordinator benchfleet-agent; do
    [ "$(in_ns systemctl is-enabled "$unit.service")" = enabled ] || fail "$unit is not enabled"
    [ "$(in_ns systemctl is-active "$unit.service")" = active ] || fail "$unit is not active"
  done
  curl -fsS "$url/healthz" >/dev/null || fail "the coordinator does not answer /healthz"
  curl -fsS -o /dev/null "$url/" || fail "the coordinator does not serve the dashboard from the release's web root"
  main_pid() { in_ns systemctl show -p MainPID --value "$1.service"; }
  # The hardening is in force on the running processes (seen from inside the PID namespace).
  for unit in benchfleet-coordinator:"$coordinator_user" benchfleet-agent:"$agent_user"; do
    name="${unit%%:*}"; user="${unit#*:}"
    pid="$(main_pid "$name")"
    status="$(in_ns cat "/proc/$pid/status")"
    [ "$(in_ns ps -o user= -p "$pid" | tr -d ' ')" = "$user" ] || fail "$name does not run as $user"
    echo "$status" | grep -q '^NoNewPrivs:[[:space:]]*1$' || fail "$name runs without NoNewPrivs"
    echo "$status" | grep -q '^CapBnd:[[:space:]]*0000000000000000$' || fail "$name keeps capabilities"
    in_ns nsenter -t "$pid" -m sh -c 'touch /opt/.benchfleet-write-test' 2>/dev/null &&
      fail "$name can write to /opt (ProtectSystem=strict is not in force)"
    echo "$name: pid $pid as $user, NoNewPrivs, no capabilities, /opt read-only"
  done
else
# Plays systemd for one unit: runs-unit.sh UNIT_FILE runs its ExecStart in WorkingDirectory with
# EnvironmentFile= and Environment= applied (the rendered units use plain word lists, no quoting).
cat >"$scratch/run-unit.sh" <<'RUN'
#!/usr/bin/env bash
set -eu
unit="$1"
field() { sed -n "s/^$1=//p" "$unit" | head -1; }
cd "$(field WorkingDirectory)"
set -a
# shellcheck disable=SC1090
. "$(field EnvironmentFile)"
for assignment in $(sed -n 's/^Environment=//p' "$unit"); do export "${assignment?}"; done
set +a
# shellcheck disable=SC2046
exec $(field ExecStart)
RUN
chmod +x "$scratch/run-unit.sh"

step "start the coordinator from its rendered unit on 127.0.0.1:$port"
"$scratch/run-unit.sh" "$units/benchfleet-coordinator.service" >"$scratch/coordinator.log" 2>&1 &
echo $! >"$scratch/coordinator.pid"
for _ in $(seq 1 100); do
  curl -fsS "$url/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$url/healthz" >/dev/null || fail "the coordinator does not answer /healthz"
curl -fsS -o /dev/null "$url/" || fail "the coordinator does not serve the dashboard from the release's web root"

step "start the agent from its rendered unit (restart loop like Restart=)"
cat >"$scratch/agent-supervisor.sh" <<SUP
#!/usr/bin/env bash
# Restarts the agent whenever it exits, until $scratch/stop exists.
while [ ! -e "$scratch/stop" ]; do
  "$scratch/run-unit.sh" "$units/benchfleet-agent.service" &
  echo \$! >"$scratch/agent.pid"
  wait \$! || true
  sleep 0.2
done
SUP
chmod +x "$scratch/agent-supervisor.sh"
# The role's restart hook: SIGTERM (the agent drains and exits 0), then wait for the next one.
cat >"$scratch/restart-agent.sh" <<RST
#!/usr/bin/env bash
set -eu
old=\$(cat "$scratch/agent.pid")
kill -TERM "\$old"
for _ in \$(seq 1 300); do
  kill -0 "\$old" 2>/dev/null || break
  sleep 0.1
done
for _ in \$(seq 1 100); do
  new=\$(cat "$scratch/agent.pid")
  [ "\$new" != "\$old" ] && kill -0 "\$new" 2>/dev/null && exit 0
  sleep 0.1
done
echo "the agent did not come back" >&2
exit 1
RST
chmod +x "$scratch/restart-agent.sh"
"$scratch/agent-supervisor.sh" >>"$scratch/agent.log" 2>&1 &
pids+=($!)

fi

agent_field() {  # agent_field EXPR: a Python expression over `a` (this agent) from GET /agents
  curl -fsS "$url/api/v1/agents" | python3 -c "
import json, sys
agents = [a for a in json.load(sys.stdin)['agents'] if a['name'] == '$agent_name']
a = agents[0] if agents else None
print($1 if a else '')"
}
for _ in $(seq 1 150); do
  [ "$(agent_field "a['online']")" = True ] && break
  sleep 0.2
done
[ "$(agent_field "a['online']")" = True ] || fail "the agent did not come online"
[ "$(agent_field "','.join(b['name'] for b in a['torch_builds'])")" = stable ] ||
  fail "the agent advertises builds $(agent_field "a['torch_builds']")"
grep -q "BENCHFLEET_ENROLLMENT_TOKEN\|$enrollment_token" "$scratch/agent.log" && fail "the agent logged its token"

step "converge 2 (site.yml) must change nothing"
converge converge2.log site.yml || fail "the second converge failed"
[ "$(recap_changed converge2.log)" = 0 ] || { grep -B2 -A3 '^changed:' "$scratch/converge2.log" || true; fail "the second converge reported changes"; }

step "submit a one-cell CPU matrix with the installed CLI"
cat >"$scratch/one-cell.yaml" <<'MAT'
name: deploy converge
models: [torchvision/resnet18]
batch_sizes: [1]
modes: [eager]
torch_builds: [stable]
gpus: [cpu]
runtimes: [libtorch]
measurement:
  warmup: 1
  min_iterations: 3
  max_iterations: 3
  min_duration_s: 0
  max_duration_s: 5
timeout_s: 300
MAT
cli="$prefix/opt/benchfleet/current/bin/benchfleet"
BENCHFLEET_URL="$url" BENCHFLEET_OPERATOR_TOKEN="$operator_token" \
  timeout 280 "$cli" submit "$scratch/one-cell.yaml" --wait >"$scratch/submit.log" 2>&1 ||
  { cat "$scratch/submit.log"; fail "benchfleet submit --wait failed"; }
tail -n 3 "$scratch/submit.log"
BENCHFLEET_URL="$url" "$cli" runs --json >"$scratch/runs.json"
curl -fsS "$url/api/v1/runs/1/results?samples=false" >"$scratch/results.json"
python3 - "$scratch/runs.json" "$scratch/results.json" <<'PY' || fail "the run did not end with one ok result"
import json, sys
doc = json.load(open(sys.argv[1]))
run = (doc["runs"] if isinstance(doc, dict) else doc)[0]
assert run["state"] == "done", run["state"]
assert run["jobs"]["done"] == 1 and run["results"].get("ok") == 1, (run["jobs"], run["results"])
results = json.load(open(sys.argv[2]))
results = results.get("results", results) if isinstance(results, dict) else results
assert len(results) == 1, results
text = json.dumps(results[0])
assert '"stable"' in text and '"ok"' in text, text[:400]
print("run 1: done, 1 ok result on build stable")
PY

if [ "$mode" = none ]; then
  step "back the database up with the role's backup script while the coordinator serves (keep 2)"
  for _ in 1 2 3; do
    "$prefix/opt/benchfleet/benchfleet-coordinator-backup.sh" >>"$scratch/backup.log" 2>&1 ||
      { cat "$scratch/backup.log"; fail "the backup script failed"; }
  done
  backups="$prefix/var/lib/benchfleet-coordinator/backups"
  [ "$(ls "$backups"/benchfleet-*.db | wc -l)" = 2 ] || { ls -l "$backups"; fail "the backups kept are not the newest 2"; }
  newest="$(ls -1t "$backups"/benchfleet-*.db | head -1)"
  [ "$(sqlite3 "$newest" 'PRAGMA integrity_check')" = ok ] || fail "the backup fails integrity_check"
  [ "$(sqlite3 "$newest" "SELECT count(*) FROM results WHERE status = 'ok'")" = 1 ] ||
    fail "the backup does not hold run 1's result"
  echo "backups: 2 kept, the newest whole with run 1's result"
fi

step "rolling upgrade (upgrade-agents.yml) to the second archive while the agent runs a job"
# A job of about 30 s is running when the upgrade starts: the drain must wait for it, and it must
# finish on its first attempt (not be killed and requeued by the restart). On a loaded machine
# ansible takes over 8 s to reach the drain, so a shorter job could end before the wait began.
sed -e 's/^name: .*/name: deploy upgrade/' -e 's/min_duration_s: 0/min_duration_s: 30/' \
    -e 's/max_iterations: 3/max_iterations: 1000000/' -e 's/max_duration_s: 5/max_duration_s: 30/' \
    "$scratch/one-cell.yaml" >"$scratch/long-cell.yaml"
long_run="$(BENCHFLEET_URL="$url" BENCHFLEET_OPERATOR_TOKEN="$operator_token" "$cli" submit "$scratch/long-cell.yaml" --print-id)"
for _ in $(seq 1 100); do
  [ "$(agent_field "len(a['leases'])")" = 1 ] && break
  sleep 0.1
done
[ "$(agent_field "len(a['leases'])")" = 1 ] || fail "the agent did not lease the upgrade-time job"
agent_pid() {
  if [ "$mode" = systemd ]; then main_pid benchfleet-agent; else cat "$scratch/agent.pid"; fi
}
agent_pid_before="$(agent_pid)"
restart_args=()
[ "$mode" = none ] && restart_args=(-e "agent_external_restart_command=$scratch/restart-agent.sh")
converge upgrade.log upgrade-agents.yml -e "benchfleet_release_archive=$archive2" "${restart_args[@]}" ||
  fail "upgrade-agents.yml failed (upgrade.log above)"
[ "$(readlink "$prefix/opt/benchfleet/current")" = "releases/benchfleet-0.1.1-deploytest-linux-$(uname -m)" ] ||
  fail "current does not point at the new release"
[ "$(agent_pid)" != "$agent_pid_before" ] || fail "the agent was not restarted"
if [ "$mode" = systemd ]; then
  [ "$(in_ns systemctl is-active benchfleet-agent.service)" = active ] || fail "the agent is not active after the upgrade"
  # The worker sources did not change between the two releases: the built worker is reused.
  grep -q "workers/stable-torch" "$etc/agent.yaml" && [ "$(sed -n 's/^ *worker: "\(.*\)"$/\1/p' "$etc/agent.yaml")" = "$built_worker" ] ||
    fail "the upgrade did not keep the worker built from the same sources"
fi
grep -A2 "TASK \[Drain the agent\]" "$scratch/upgrade.log" | grep -q '^changed:' || fail "the agent was not drained"
[ "$(agent_field "a['online'] and not a['draining']")" = True ] || fail "the agent is not back online and resumed"
grep -A1 "TASK \[Wait until the agent holds no leases\]" "$scratch/upgrade.log" | grep -q RETRYING ||
  fail "the upgrade did not wait for the running job"
curl -fsS "$url/api/v1/runs/$long_run/jobs" >"$scratch/long-jobs.json"
python3 - "$scratch/long-jobs.json" <<'PY' || fail "the job running during the upgrade did not finish ok on its first attempt"
import json, sys
doc = json.load(open(sys.argv[1]))
jobs = doc.get("jobs", doc) if isinstance(doc, dict) else doc
assert len(jobs) == 1, jobs
job = jobs[0]
text = json.dumps(job)
assert job["status"] == "done" and job["attempt"] == 1 and '"ok"' in text, text[:400]
print("the job leased before the upgrade: done, attempt 1, ok")
PY
if grep -q -e "$operator_token" -e "$enrollment_token" "$scratch"/converge2.log "$scratch"/upgrade.log; then
  fail "a token appears in the ansible output"
fi
echo "deploy_converge: ok"
