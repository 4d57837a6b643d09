#!/usr/bin/env bash
# Installs benchfleet's build and test dependencies on Debian 12.
# Works as root or through sudo; safe to re-run: installed packages are skipped, and `npm ci` runs
# only when package-lock.json changed since the last successful one.
#   scripts/install-deps.sh                # everything: build, run and test
#   scripts/install-deps.sh --no-browser   # without chromium, which only the browser tests use
#                                          # (the quick start)
#   scripts/install-deps.sh --no-npm      # Debian packages only
#   scripts/install-deps.sh --no-fuzz     # without clang and libFuzzer, which only the fuzz
#                                          # targets use (the quick start)
set -euo pipefail
with_npm=1
with_browser=1
with_fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-npm) with_npm=0 ;;
    --no-browser) with_browser=0 ;;
    --no-fuzz) with_fuzz=0 ;;
    *) echo "usage: scripts/install-deps.sh [--no-browser] [--no-npm] [--no-fuzz]" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-all-dev nlohmann-json3-dev libsqlite3-dev sqlite3
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libcli11-dev libyaml-cpp-dev libssl-dev
  libtorch-dev python3-torch python3-torchvision python3-yaml
  curl ca-certificates
  ansible ansible-lint
  debootstrap bubblewrap
  clang-format-14 clang-tidy-14 flake8
)
# Node for chart.js and the tests' tools: Debian's nodejs and npm, unless a node with its npm is
# already there (e.g. from NodeSource, whose nodejs conflicts with Debian's npm).
if [ "$with_npm" = 1 ]; then
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi
# The browser tests drive Debian's chromium (with a font for readable screenshots).
[ "$with_browser" = 1 ] && packages+=(chromium fonts-dejavu-core)
# The fuzz targets (scripts/fuzz.sh) are built with clang and its libFuzzer runtime.
[ "$with_fuzz" = 1 ] && packages+=(clang-14 libclang-rt-14-dev)

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

# Node packages (package.json / package-lock.json in the repository root): chart.js, which the
# build copies into the dashboard, and the tests' tools (OpenAPI validator, playwright-core for the
# browser tests, which drive Debian's chromium). Optional: without them the dashboard says "charts
# unavailable" and those tests are skipped.
[ "$with_npm" = 1 ] || exit 0
cd "$(dirname "$0")/.."
stamp=node_modules/.benchfleet-lock.sha256
if [ -f "$stamp" ] && [ "$(sha256sum package-lock.json)" = "$(cat "$stamp")" ]; then
  echo "install-deps: node_modules is up to date"
elif command -v npm >/dev/null 2>&1; then
  echo "install-deps: npm ci (chart.js, OpenAPI validator, playwright-core)"
  if npm ci --no-audit --no-fund --loglevel=error; then
    sha256sum package-lock.json >"$stamp"
  else
    echo "install-deps: npm ci failed; openapi_validate and the browser tests will be skipped" >&2
  fi
else
  echo "install-deps: npm not found; openapi_validate and the browser tests will be skipped"
fi
