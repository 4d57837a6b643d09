#!/usr/bin/env bash
# Builds the release archive the Ansible roles install: benchfleet-<version>-linux-<arch>.tar.gz,
# one top-level directory holding what `cmake --install` puts in a prefix (bin/benchfleet-coordinator,
# bin/benchfleet-agent, bin/benchfleet-worker, bin/benchfleet, share/benchfleet/web) plus what the
# binaries need at run time and `cmake --install` does not ship: the model catalog
# (share/benchfleet/catalog/models.yaml), the agent's python modules (share/benchfleet/benchfleet_*.py,
# the exporter among them, which the agent finds at <bin>/../share/benchfleet/), and the worker's
# sources (share/benchfleet/src: the top CMakeLists.txt, cmake/TorchApi.cmake, common/, agent/worker/, with
# share/benchfleet/build-worker.sh and SOURCE_ID, a digest of those sources) from which the agent
# role builds one worker per torch build against that build's LibTorch.
# The build must exist (scripts/test.sh or cmake --build --preset default); nothing is compiled.
#   ansible/build-release.sh [--build-dir DIR] [--out-dir DIR] [--version V]
# Prints the archive's path. Re-running with the same inputs gives a byte-identical archive.
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
if [ -z "$version" ]; then
  version="$(sed -n 's/^project(benchfleet VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
fi
[ -n "$version" ] || { echo "build-release: cannot tell the version (pass --version)" >&2; exit 1; }
for bin in coordinator/benchfleet-coordinator agent/daemon/benchfleet-agent agent/worker/benchfleet-worker cli/benchfleet; do
  [ -x "$build_dir/$bin" ] || { echo "build-release: $build_dir/$bin is missing: build first" >&2; exit 1; }
done

name="benchfleet-$version-linux-$(uname -m)"
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
prefix="$staging/$name"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
install -D -m 0644 "$root/common/catalog/models.yaml" "$prefix/share/benchfleet/catalog/models.yaml"
for module in "$root"/agent/python/benchfleet_*.py; do
  install -D -m 0644 "$module" "$prefix/share/benchfleet/$(basename "$module")"
done
printf '%s\n' "$version" >"$prefix/share/benchfleet/VERSION"
src="$prefix/share/benchfleet/src"
mkdir -p "$src/agent"
install -m 0644 "$root/CMakeLists.txt" "$src/CMakeLists.txt"
install -D -m 0644 "$root/cmake/TorchApi.cmake" "$src/cmake/TorchApi.cmake"  # the worker's LibTorch API probes
cp -R "$root/common" "$src/common"
cp -R "$root/agent/worker" "$src/agent/worker"
install -m 0755 "$root/scripts/build-worker.sh" "$prefix/share/benchfleet/build-worker.sh"
# in-root.sh runs the programs of a build that lives in its own root (the agent and
# build-worker.sh --root find it beside them).
install -m 0755 "$root/scripts/in-root.sh" "$prefix/share/benchfleet/in-root.sh"
# SOURCE_ID names the worker sources, not the release: two releases with the same worker sources
# share the workers built from them.
(cd "$src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16) \
  >"$prefix/share/benchfleet/SOURCE_ID"
for required in bin/benchfleet-coordinator bin/benchfleet-agent bin/benchfleet-worker bin/benchfleet \
                share/benchfleet/web/index.html; do
  [ -e "$prefix/$required" ] || { echo "build-release: cmake --install did not produce $required" >&2; exit 1; }
done

mkdir -p "$out_dir"
archive="$out_dir/$name.tar.gz"
tar --sort=name --mtime='2000-01-01 00:00Z' --owner=0 --group=0 --numeric-owner \
    -C "$staging" -cf - "$name" | gzip -n >"$archive.tmp"
mv "$archive.tmp" "$archive"
echo "$archive"
