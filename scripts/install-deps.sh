#!/usr/bin/env bash
# Installs benchfleet's build and test dependencies on Debian 12.
# Works as root or through sudo; safe to re-run (apt-get skips what is installed).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-all-dev nlohmann-json3-dev libsqlite3-dev sqlite3
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libcli11-dev libyaml-cpp-dev libssl-dev
  libtorch-dev python3-torch python3-torchvision python3-yaml
  curl ca-certificates
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi

  echo "install-deps: installing ${missing[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Node tooling for the openapi_validate test (package.json / package-lock.json in the repository
# root). Optional: without npm, or if npm ci fails, that test is skipped.
if command -v npm >/dev/null 2>&1; then
  echo "install-deps: npm ci (OpenAPI validator)"
  (cd "$(dirname "$0")/.." && npm ci --no-audit --no-fund --loglevel=error) ||
    echo "install-deps: npm ci failed; the openapi_validate test will be skipped" >&2
else
  echo "install-deps: npm not found; the openapi_validate test will be skipped"
fi
