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
#   scripts/install-deps.sh --no-slurm    # without slurmctld, slurmd, munge and slurm-client,
#                                          # which only the real-Slurm tests use (the quick start)
#   scripts/install-deps.sh --chart-js-only # no Node.js and npm (Debian's npm is about 700
#                                          # packages): only the dashboard's chart.js, its tarball
#                                          # fetched from the npm registry at package-lock.json's
#                                          # version and checked against its integrity hash (the
#                                          # quick start; the tests' Node tools need npm)
#   scripts/install-deps.sh --roots-only  # only what makes the torch roots (mmdebstrap, curl), so
#                                          # their making can start beside the rest (the quick
#                                          # start and scripts/test.sh run this first)
#   scripts/install-deps.sh --no-host-torch # without Debian 12's torch 1.13 (libtorch-dev,
#                                          # python3-torch, python3-torchvision: about 190 packages),
#                                          # which only the host's worker and the debian12 build
#                                          # use (the quick start when its matrices run in the roots)
#   scripts/install-deps.sh --no-lint     # without ansible, ansible-lint, clang-format, clang-tidy,
#                                          # flake8 and patchelf, which only the lint and deploy
#                                          # tests and the GPU study's bundle use (the quick start)
set -euo pipefail
with_npm=1
with_browser=1
with_fuzz=1
with_slurm=1
with_lint=1
with_host_torch=1
roots_only=0
chart_js_only=0
for arg in "$@"; do
  case "$arg" in
    --chart-js-only) chart_js_only=1; with_npm=0 ;;
    --roots-only) roots_only=1 ;;
    --no-npm) with_npm=0 ;;
    --no-browser) with_browser=0 ;;
    --no-fuzz) with_fuzz=0 ;;
    --no-slurm) with_slurm=0 ;;
    --no-lint) with_lint=0 ;;
    --no-host-torch) with_host_torch=0 ;;
    *) echo "usage: scripts/install-deps.sh [--roots-only] [--chart-js-only] [--no-browser] [--no-npm] [--no-fuzz] [--no-slurm] [--no-lint] [--no-host-torch]" >&2; exit 2 ;;
  esac
done

# Boost is used through its headers only (Asio, Beast, URL): libboost1.81-dev, not -all-dev,
# whose compiled libraries bring MPI, ICU and Python's development files (about 150 packages).
packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev nlohmann-json3-dev libsqlite3-dev sqlite3
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libcli11-dev libyaml-cpp-dev libssl-dev libicu-dev
  python3-yaml
  curl ca-certificates
  mmdebstrap bubblewrap
)
[ "$with_host_torch" = 1 ] && packages+=(libtorch-dev python3-torch python3-torchvision)
[ "$with_lint" = 1 ] && packages+=(ansible ansible-lint clang-format-14 clang-tidy-14 flake8 patchelf)
# Node for chart.js and the tests' tools: a node of 20 or newer with its npm (playwright-core needs
# 20; Debian 12's nodejs is 18). The machine's own when new enough (e.g. from NodeSource), else the
# pinned official binary and npm that scripts/node-toolchain.sh fetches from the npm registry below
# (seconds, where Debian's npm is about 700 packages); Debian's nodejs and npm only on an
# architecture without a pinned binary and no node at all.
if [ "$with_npm" = 1 ] && [ "$(uname -m)" != x86_64 ]; then
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi
# The browser tests drive Debian's chromium (with a font for readable screenshots).
[ "$with_browser" = 1 ] && packages+=(chromium fonts-dejavu-core)
# The fuzz targets (scripts/fuzz.sh) are built with clang and its libFuzzer runtime.
[ "$with_fuzz" = 1 ] && packages+=(clang-14 libclang-rt-14-dev)

# Slurm 22.05 for the real-Slurm tests (tests/slurm, label slurm), which start their own
# single-node cluster as root and stop it afterwards. Installed apart, without starting the
# packages' services (below): nothing of Slurm runs on this host unless a test starts it.
slurm_packages=()
[ "$with_slurm" = 1 ] && slurm_packages=(slurmctld slurmd munge slurm-client)
if [ "$roots_only" = 1 ]; then
  packages=(mmdebstrap curl ca-certificates bubblewrap)
  slurm_packages=()
  with_npm=0
fi

not_installed() {  # not_installed PACKAGE...: prints those dpkg does not list as installed
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(not_installed "${packages[@]}")
mapfile -t missing_slurm < <(not_installed "${slurm_packages[@]}")
if [ ${#missing[@]} -eq 0 ] && [ ${#missing_slurm[@]} -eq 0 ]; then
  echo "install-deps: all $((${#packages[@]} + ${#slurm_packages[@]})) packages already installed"
else
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "install-deps: need root or sudo to install: ${missing[*]} ${missing_slurm[*]}" >&2
    exit 1
  fi

  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  if [ ${#missing_slurm[@]} -gt 0 ]; then
    # A policy-rc.d answering 101 ("action forbidden") keeps the maintainer scripts
    # (invoke-rc.d, deb-systemd-invoke) from starting munge, slurmctld and slurmd; an existing
    # policy is put aside and restored, also when the install fails.
    policy=/usr/sbin/policy-rc.d
    restore_policy() {
      # shellcheck disable=SC2016  # $1 is expanded by the inner sh
      "${as_root[@]}" sh -c 'rm -f "$1" && if [ -e "$1.benchfleet-saved" ]; then mv "$1.benchfleet-saved" "$1"; fi' \
        sh "$policy"
    }
    # shellcheck disable=SC2016  # $1 is expanded by the inner sh
    "${as_root[@]}" sh -c 'if [ -e "$1" ]; then mv "$1" "$1.benchfleet-saved"; fi &&
      printf "#!/bin/sh\n# scripts/install-deps.sh: no service starts while Slurm is installed\nexit 101\n" >"$1" &&
      chmod 0755 "$1"' sh "$policy"
    trap restore_policy EXIT
    echo "install-deps: installing ${missing_slurm[*]} (their services are not started)"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing_slurm[@]}"
    restore_policy
    trap - EXIT
  fi
fi

cd "$(dirname "$0")/.."
# The dashboard's chart library alone, without npm: the tarball of the version package-lock.json
# locks, from the registry ($BENCHFLEET_NPM_REGISTRY, default npm's), refused unless its sha512 is
# the lock's integrity; the build copies its dist/chart.umd.js (self-contained) into the dashboard.
if [ "$chart_js_only" = 1 ]; then
  read -r version integrity < <(/usr/bin/python3 -c '
import json
entry = json.load(open("package-lock.json"))["packages"]["node_modules/chart.js"]
print(entry["version"], entry["integrity"])')
  dest=node_modules/chart.js
  if [ -f "$dest/dist/chart.umd.js" ] && grep -qx "$integrity" "$dest/.benchfleet-integrity" 2>/dev/null; then
    echo "install-deps: chart.js $version is there"
    exit 0
  fi
  registry="${BENCHFLEET_NPM_REGISTRY:-https://registry.npmjs.org}"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  if ! curl -fsS --max-time 120 -o "$tmp/chart.tgz" "${registry%/}/chart.js/-/chart.js-$version.tgz"; then
    echo "install-deps: chart.js $version could not be fetched from $registry; the dashboard will say charts are unavailable" >&2
    exit 0
  fi
  got="$(/usr/bin/python3 -c 'import base64, hashlib, sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tmp/chart.tgz")"
  [ "$got" = "$integrity" ] || { echo "install-deps: chart.js $version from $registry is not the locked one ($got)" >&2; exit 1; }
  mkdir -p "$tmp/x" && tar -xzf "$tmp/chart.tgz" -C "$tmp/x"
  rm -rf "$dest" && mkdir -p node_modules && mv "$tmp/x/package" "$dest"
  echo "$integrity" >"$dest/.benchfleet-integrity"
  echo "install-deps: chart.js $version fetched"
  exit 0
fi

# Node packages (package.json / package-lock.json in the repository root): chart.js, which the
# build copies into the dashboard, and the tests' tools (OpenAPI validator, playwright-core for the
# browser tests, which drive Debian's chromium). Optional: without them the dashboard says "charts
# unavailable" and those tests are skipped.
[ "$with_npm" = 1 ] || exit 0
stamp=node_modules/.benchfleet-lock.sha256
if [ -f "$stamp" ] && [ "$(sha256sum package-lock.json)" = "$(cat "$stamp")" ]; then
  echo "install-deps: node_modules is up to date"
elif node_bin="$(scripts/node-toolchain.sh --fetch)"; then
  echo "install-deps: npm ci (chart.js, OpenAPI validator, playwright-core) with $node_bin/node $("$node_bin/node" --version)"
  if scripts/node-toolchain.sh --run npm ci --no-audit --no-fund --loglevel=error; then
    sha256sum package-lock.json >"$stamp"
  else
    echo "install-deps: npm ci failed; openapi_validate and the browser tests will be skipped" >&2
  fi
else
  echo "install-deps: no Node.js to run npm with; openapi_validate and the browser tests will be skipped"
fi
