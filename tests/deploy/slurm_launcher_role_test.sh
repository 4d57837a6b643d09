#!/usr/bin/env bash
# deploy_slurm_launcher_role: a real converge of ansible/roles/slurm_launcher on this
# machine into a scratch prefix (slurm_launcher_service_manager=none, the current user), with a
# release archive holding the launcher binary of this build:
#  1. the config is rendered and accepted by the launcher itself (--print-script of each class,
#     the script ending in the agent in allocation mode), the unit is verified by the role
#     (systemd-analyze verify, when present) and runs the installed binary with that config;
#     no token file without a token;
#  2. a second converge changes nothing;
#  3. an API token is written 0640 and named by api_token_file;
#  4. a class the launcher refuses (max_allocations: 0) fails the converge naming the key, and the
#     installed config stays as it was.
# Usage: slurm_launcher_role_test.sh LAUNCHER_BINARY. Skipped (77) without ansible-playbook.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
launcher="${1:?usage: $0 LAUNCHER_BINARY}"
if ! command -v ansible-playbook >/dev/null 2>&1; then
  echo "skipped: ansible-playbook not found (Debian package ansible; scripts/install-deps.sh installs it)"
  exit 77
fi
[ -x "$launcher" ] || { echo "FAIL: $launcher is not an executable" >&2; exit 1; }

scratch="$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-slurm-role.XXXXXX")"
trap '[ -n "${BENCHFLEET_KEEP_SCRATCH:-}" ] || rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

# A release archive with what the role needs from it.
release="benchfleet-0.0.0-roletest-linux-$(uname -m)"
mkdir -p "$scratch/stage/$release/bin"
cp "$launcher" "$scratch/stage/$release/bin/benchfleet-slurm-launcher"
tar -C "$scratch/stage" -czf "$scratch/$release.tar.gz" "$release"

prefix="$scratch/prefix"
user="$(id -un)"
group="$(id -gn)"
cat >"$scratch/playbook.yml" <<YAML
---
- name: Converge the slurm_launcher role
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: slurm_launcher
YAML
cat >"$scratch/vars.yml" <<VARS
ansible_python_interpreter: /usr/bin/python3
benchfleet_release_archive: "$scratch/$release.tar.gz"
benchfleet_coordinator_url: "http://127.0.0.1:18080"
benchfleet_slurm_launcher_enabled: true
slurm_launcher_service_manager: none
slurm_launcher_install_dir: "$prefix/opt/benchfleet"
slurm_launcher_config_dir: "$prefix/etc/benchfleet"
slurm_launcher_unit_dir: "$prefix/etc/systemd/system"
slurm_launcher_state_dir: "$prefix/var/lib/benchfleet-slurm-launcher"
slurm_launcher_user: "$user"
slurm_launcher_group: "$group"
slurm_launcher_poll_s: 5
slurm_launcher_environment:
  SLURM_CONF: /etc/slurm/test.conf
slurm_launcher_classes:
  - gpu_class: cpu
    time_limit: "00:10:00"
    max_allocations: 2
    idle_exit_s: 30
    agent_command: "/opt/benchfleet/current/bin/benchfleet-agent --config /etc/benchfleet/agent.yaml"
  - gpu_class: a100
    partition: gpu
    gres: "gpu:a100:1"
    builds: [stable, nightly]
    sbatch_options: ["--exclusive"]
    agent_command: "benchfleet-agent"
VARS

converge() {  # converge LOG [extra ansible-playbook args]
  local log="$1"
  shift
  ANSIBLE_ROLES_PATH="$root/ansible/roles" ANSIBLE_LOCAL_TEMP="$scratch/ansible-tmp" ANSIBLE_HOME="$scratch/ansible-home" \
    ANSIBLE_NOCOLOR=1 ansible-playbook -i localhost, -e "@$scratch/vars.yml" "$@" "$scratch/playbook.yml" >"$scratch/$log" 2>&1
}

step "converge 1"
converge converge1.log || { cat "$scratch/converge1.log"; fail "the first converge failed"; }
config="$prefix/etc/benchfleet/slurm-launcher.yaml"
unit="$prefix/etc/systemd/system/benchfleet-slurm-launcher.service"
binary="$prefix/opt/benchfleet/current/bin/benchfleet-slurm-launcher"
[ -f "$config" ] || fail "no $config"
[ -x "$binary" ] || fail "no $binary"
[ -d "$prefix/var/lib/benchfleet-slurm-launcher/logs" ] || fail "no logs directory"
[ ! -e "$prefix/etc/benchfleet/slurm-launcher.token" ] || fail "a token file without a token"
grep -qx 'coordinator: "http://127.0.0.1:18080"' "$config" || fail "coordinator not in $config: $(cat "$config")"
grep -qx 'api_token_file: ""' "$config" || fail "api_token_file not empty"
grep -qx 'poll_s: 5' "$config" || fail "poll_s not 5"
for class in cpu a100; do
  script="$("$binary" --config "$config" --print-script "$class")" || fail "the launcher refuses $config for $class"
  echo "$script" | grep -q '^#!/bin/bash' || fail "$class: not a bash script: $script"
  echo "$script" | grep -q -- '--allocation slurm --idle-exit-s' || fail "$class: no agent in allocation mode: $script"
done
"$binary" --config "$config" --print-script cpu | grep -qx '#SBATCH --time=00:10:00' || fail "cpu: time limit"
"$binary" --config "$config" --print-script cpu |
  grep -qx '#SBATCH --output='"$prefix"'/var/lib/benchfleet-slurm-launcher/logs/slurm-%A_%a.out' || fail "cpu: output"
"$binary" --config "$config" --print-script a100 | grep -qx '#SBATCH --gres=gpu:a100:1' || fail "a100: gres"
"$binary" --config "$config" --print-script a100 | grep -qx '#SBATCH --exclusive' || fail "a100: extra option"
grep -qx "ExecStart=$binary --config $config --log-level info" "$unit" || fail "ExecStart: $(grep ExecStart "$unit")"
grep -qx "User=$user" "$unit" || fail "User"
grep -qx 'Environment="SLURM_CONF=/etc/slurm/test.conf"' "$unit" || fail "Environment"
grep -qx "ReadWritePaths=$prefix/var/lib/benchfleet-slurm-launcher" "$unit" || fail "ReadWritePaths"
if [ -x /usr/bin/systemd-analyze ]; then
  grep -q 'TASK \[slurm_launcher : Verify the unit\]' "$scratch/converge1.log" || fail "the unit was not verified"
  grep -A2 'TASK \[slurm_launcher : Verify the unit\]' "$scratch/converge1.log" | grep -q '^ok:' ||
    fail "the unit's verification did not pass: $(cat "$scratch/converge1.log")"
fi

step "converge 2 must change nothing"
converge converge2.log || { cat "$scratch/converge2.log"; fail "the second converge failed"; }
grep -Eq 'localhost +: ok=[0-9]+ +changed=0 ' "$scratch/converge2.log" ||
  { cat "$scratch/converge2.log"; fail "the second converge changed something"; }

step "an API token"
converge converge3.log -e slurm_launcher_api_token=s3cret-token || { cat "$scratch/converge3.log"; fail "converge 3"; }
token="$prefix/etc/benchfleet/slurm-launcher.token"
[ "$(cat "$token")" = s3cret-token ] || fail "token file content"
[ "$(stat -c %a "$token")" = 640 ] || fail "token file mode $(stat -c %a "$token")"
grep -qx "api_token_file: \"$token\"" "$config" || fail "api_token_file not set: $(cat "$config")"
! grep -q s3cret-token "$scratch/converge3.log" || fail "the token appears in the converge output"

step "a class the launcher refuses fails the converge and leaves the config alone"
cp "$config" "$scratch/config.before"
cat >"$scratch/bad.yml" <<VARS
slurm_launcher_classes:
  - gpu_class: cpu
    max_allocations: 0
    agent_command: benchfleet-agent
VARS
if converge converge4.log -e slurm_launcher_api_token=s3cret-token -e "@$scratch/bad.yml"; then
  fail "a converge with max_allocations: 0 passed"
fi
grep -q 'classes\[0\].max_allocations' "$scratch/converge4.log" ||
  { cat "$scratch/converge4.log"; fail "the failure does not name classes[0].max_allocations"; }
cmp -s "$config" "$scratch/config.before" || fail "the refused config was installed"
echo "deploy_slurm_launcher_role: ok"
