#!/usr/bin/env bash
# Builds the release archive the Ansible roles install: benchfleet-<version>-linux-<arch>.tar.gz,
# one top-level directory holding what `cmake --install` lays out in a prefix: bin/ (the
# coordinator, the agent, the worker, the CLI) and share/benchfleet/ (the dashboard, the model
# catalog, the agent's python modules, the worker's sources with build-worker.sh and SOURCE_ID,
# VERSION; see cmake/ReleaseLayout.cmake). This script only installs into a staging prefix and
# packs it.
# The build must exist (scripts/test.sh or cmake --build --preset default); nothing is compiled.
#   ansible/build-release.sh [--build-dir DIR] [--out-dir DIR] [--version V]
# --version names the release (the archive, share/benchfleet/VERSION) instead of the build's
# project version. Prints the archive's path. Re-running with the same inputs gives a
# byte-identical archive.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
build_dir="$root/build/default"
out_dir="$root/build/release"
version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --out-dir) out_dir="$2"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    *) echo "usage: ansible/build-release.sh [--build-dir DIR] [--out-dir DIR] [--version V]" >&2; exit 2 ;;
  esac
done
[ -f "$build_dir/cmake_install.cmake" ] ||
  { echo "build-release: $build_dir is not a configured build: build first" >&2; exit 1; }

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
BENCHFLEET_RELEASE_VERSION="$version" cmake --install "$build_dir" --prefix "$staging/prefix" >/dev/null
# cmake --install copies what was built: a build without LibTorch has no worker.
for required in bin/benchfleet-coordinator bin/benchfleet-agent bin/benchfleet-worker bin/benchfleet \
                share/benchfleet/web/index.html share/benchfleet/VERSION share/benchfleet/SOURCE_ID; do
  [ -e "$staging/prefix/$required" ] ||
    { echo "build-release: cmake --install did not produce $required: build first" >&2; exit 1; }
done

version="$(cat "$staging/prefix/share/benchfleet/VERSION")"
name="benchfleet-$version-linux-$(uname -m)"
mv "$staging/prefix" "$staging/$name"
mkdir -p "$out_dir"
archive="$out_dir/$name.tar.gz"
tar --sort=name --mtime='2000-01-01 00:00Z' --owner=0 --group=0 --numeric-owner \
    -C "$staging" -cf - "$name" | gzip -n >"$archive.tmp"
mv "$archive.tmp" "$archive"
echo "$archive"
