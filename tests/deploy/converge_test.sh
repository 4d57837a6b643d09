#!/usr/bin/env bash
# deploy_converge: a real converge of ansible/site.yml on this machine (ansible_connection=local)
# into a scratch prefix, then the deployed services at work, then a rolling upgrade.
#  1. ansible/build-release.sh builds the release archive (version 0.1.0-deploytest) from the build.
#  2. site.yml with localhost in `coordinator` and `agents:cpu` (group_vars/cpu.yml: build
#     `stable` = /usr/bin/python3 + Debian's torch), every path under the scratch prefix, the
#     current user as service user, coordinator_/agent_service_manager=none (systemd is not PID 1
#     here): the roles unpack the release, render configs, env files and units, and check the
#     units with `systemd-analyze verify`.
#  3. This script plays systemd: it runs each rendered unit's ExecStart in its WorkingDirectory
#     with its EnvironmentFile (the agent under a restart loop, like Restart=). The coordinator
#     answers /healthz on a free 127.0.0.1 port and the agent comes online.
#  4. A second converge must report changed=0.
#  5. `benchfleet submit` (the installed CLI) of a one-cell CPU matrix with --wait ends ok.
#  6. upgrade-agents.yml with a second archive (0.1.1-deploytest) while the agent runs an ~8 s job:
#     the agent is drained, the playbook waits until the job is done (no leases), the agent is upgraded
#     (current -> the new release), restarted through agent_external_restart_command (this
#     script's supervisor: SIGTERM, the agent drains and exits, the loop starts it), seen again,
#     and resumed (draining=false).
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

scratch="$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-deploy.XXXXXX")"
prefix="$scratch/root"
pids=()
cleanup() {
  local rc=$?
  touch "$scratch/stop"
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
# Extra vars: every path in the scratch prefix, the current user, no systemd, a loopback port.
cat >"$scratch/vars.yml" <<VARS
benchfleet_become: false
benchfleet_release_archive: "$archive1"
benchfleet_coordinator_port: $port
benchfleet_coordinator_url: "$url"
benchfleet_operator_token: "$operator_token"
benchfleet_enrollment_token: "$enrollment_token"
coordinator_listen: "127.0.0.1:$port"
coordinator_health_url: "$url/healthz"
coordinator_install_dir: "$prefix/opt/benchfleet"
coordinator_config_dir: "$prefix/etc/benchfleet"
coordinator_state_dir: "$prefix/var/lib/benchfleet-coordinator"
coordinator_unit_dir: "$prefix/etc/systemd/system"
coordinator_user: "$(id -un)"
coordinator_group: "$(id -gn)"
coordinator_create_user: false
coordinator_service_manager: none
agent_install_dir: "$prefix/opt/benchfleet"
agent_config_dir: "$prefix/etc/benchfleet"
agent_state_dir: "$prefix/var/lib/benchfleet-agent"
agent_unit_dir: "$prefix/etc/systemd/system"
agent_user: "$(id -un)"
agent_group: "$(id -gn)"
agent_create_user: false
agent_service_manager: none
agent_name: "$agent_name"
agent_extra_config: {}
VARS

export ANSIBLE_CONFIG="$root/ansible/ansible.cfg" ANSIBLE_HOME="$scratch/ansible-home" \
       ANSIBLE_LOCAL_TEMP="$scratch/ansible-tmp" ANSIBLE_REMOTE_TEMP="$scratch/ansible-tmp" \
       ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
converge() {  # converge LOG PLAYBOOK [ARGS...]: runs a playbook, prints its recap, returns its status
  local log="$1" playbook="$2"; shift 2
  local rc=0
  ansible-playbook -i "$scratch/inventory.yml" -e "@$scratch/vars.yml" "$@" "$root/ansible/$playbook" \
    >"$scratch/$log" 2>&1 || rc=$?
  sed -n '/PLAY RECAP/,$p' "$scratch/$log"
  return "$rc"
}
recap_changed() { sed -n 's/^localhost *:.* changed=\([0-9]*\).*/\1/p' "$scratch/$1" | tail -1; }

step "converge 1 (site.yml)"
converge converge1.log site.yml || fail "the first converge failed (converge1.log above)"
[ "$(recap_changed converge1.log)" -gt 0 ] || fail "the first converge changed nothing"

step "check what the roles installed"
for unit in coordinator agent; do
  command -v systemd-analyze >/dev/null 2>&1 || { echo "note: no systemd-analyze, units not verified"; break; }
  grep -A1 "TASK \[$unit : Verify the unit\]" "$scratch/converge1.log" | grep -q '^ok:' ||
    fail "systemd-analyze verify did not run on the $unit unit"
done
etc="$prefix/etc/benchfleet"
units="$prefix/etc/systemd/system"
[ "$(readlink "$prefix/opt/benchfleet/current")" = "releases/benchfleet-0.1.0-deploytest-linux-$(uname -m)" ] ||
  fail "current does not point at the release: $(readlink "$prefix/opt/benchfleet/current")"
for f in coordinator.env agent.env; do
  [ "$(stat -c %a "$etc/$f")" = 600 ] || fail "$f is mode $(stat -c %a "$etc/$f"), not 0600"
done
grep -qx "BENCHFLEET_OPERATOR_TOKEN=$operator_token" "$etc/coordinator.env" || fail "coordinator.env lacks the operator token"
grep -qx "BENCHFLEET_ENROLLMENT_TOKEN=$enrollment_token" "$etc/agent.env" || fail "agent.env lacks the enrolment token"
if grep -q -e "$operator_token" -e "$enrollment_token" "$scratch/converge1.log"; then
  fail "a token appears in the ansible output"
fi
for dir in var/lib/benchfleet-coordinator var/lib/benchfleet-agent; do
  [ "$(stat -c %U "$prefix/$dir")" = "$(id -un)" ] || fail "$dir is not owned by the service user"
done
grep -q '^KillMode=process$' "$units/benchfleet-agent.service" || fail "the agent unit lacks KillMode=process"
for unit in benchfleet-coordinator benchfleet-agent; do
  for key in NoNewPrivileges=true ProtectSystem=strict PrivateTmp=true ProtectHome=true Restart=on-failure; do
    grep -qx "$key" "$units/$unit.service" || fail "$unit.service lacks $key"
  done
done
{ grep -q 'name: "stable"' "$etc/agent.yaml" && grep -q 'python: "/usr/bin/python3"' "$etc/agent.yaml"; } ||
  fail "agent.yaml lacks the cpu group's stable build: $(cat "$etc/agent.yaml")"

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

step "rolling upgrade (upgrade-agents.yml) to the second archive while the agent runs a job"
# A job of about 8 s is running when the upgrade starts: the drain must wait for it, and it must
# finish on its first attempt (not be killed and requeued by the restart).
sed -e 's/^name: .*/name: deploy upgrade/' -e 's/min_duration_s: 0/min_duration_s: 8/' \
    -e 's/max_iterations: 3/max_iterations: 1000000/' -e 's/max_duration_s: 5/max_duration_s: 8/' \
    "$scratch/one-cell.yaml" >"$scratch/long-cell.yaml"
long_run="$(BENCHFLEET_URL="$url" BENCHFLEET_OPERATOR_TOKEN="$operator_token" "$cli" submit "$scratch/long-cell.yaml" --print-id)"
for _ in $(seq 1 100); do
  [ "$(agent_field "len(a['leases'])")" = 1 ] && break
  sleep 0.1
done
[ "$(agent_field "len(a['leases'])")" = 1 ] || fail "the agent did not lease the upgrade-time job"
agent_pid_before="$(cat "$scratch/agent.pid")"
converge upgrade.log upgrade-agents.yml -e "benchfleet_release_archive=$archive2" \
  -e "agent_external_restart_command=$scratch/restart-agent.sh" ||
  fail "upgrade-agents.yml failed (upgrade.log above)"
[ "$(readlink "$prefix/opt/benchfleet/current")" = "releases/benchfleet-0.1.1-deploytest-linux-$(uname -m)" ] ||
  fail "current does not point at the new release"
[ "$(cat "$scratch/agent.pid")" != "$agent_pid_before" ] || fail "the agent was not restarted"
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
