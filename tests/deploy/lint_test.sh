#!/usr/bin/env bash
# deploy_lint: ansible-lint (production profile, ansible/.ansible-lint) on ansible/ and
# ansible-playbook --syntax-check for every playbook. Skipped (77) without ansible or ansible-lint.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
for tool in ansible-playbook ansible-lint; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "skipped: $tool not found (Debian packages ansible, ansible-lint; scripts/install-deps.sh installs them)"
    exit 77
  fi
done
cd "$root/ansible"
export ANSIBLE_LOCAL_TEMP="${TMPDIR:-/tmp}/benchfleet-deploy-lint-$$" ANSIBLE_HOME="${TMPDIR:-/tmp}/benchfleet-deploy-lint-$$"
trap 'rm -rf "$ANSIBLE_HOME"' EXIT
echo "== ansible-lint ($(ansible-lint --version 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'))"
ansible-lint --nocolor
for playbook in site.yml upgrade-agents.yml; do
  echo "== ansible-playbook --syntax-check $playbook"
  ansible-playbook -i inventory.example.yml --syntax-check "$playbook"
done
echo "deploy_lint: ok"
