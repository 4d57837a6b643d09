#!/usr/bin/env bash
# Builds benchfleet-worker alone against the LibTorch of one torch build (a python that imports
# torch), so each build an agent advertises runs jobs with a worker matching its torch and CUDA.
#   scripts/build-worker.sh --python PY --out DIR [--src DIR] [--jobs N]
# --src is the source tree (default: this repository, or the release's share/benchfleet/src when
# run from a release). The worker is installed as DIR/bin/benchfleet-worker with an RPATH to
# torch's libraries; the build tree is DIR/build (kept, so a rebuild is incremental). Needs cmake,
# ninja or make, a C++20 compiler, nlohmann-json, CLI11 and OpenSSL headers (Debian:
# nlohmann-json3-dev libcli11-dev libssl-dev). Prints the worker's path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/.."
[ -d "$here/src" ] && src="$here/src"  # inside a release: share/benchfleet/{build-worker.sh,src}
python=""
out=""
jobs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --src) src="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    *) echo "usage: build-worker.sh --python PY --out DIR [--src DIR] [--jobs N]" >&2; exit 2 ;;
  esac
done
[ -n "$python" ] && [ -n "$out" ] || { echo "build-worker: --python and --out are required" >&2; exit 2; }
[ -f "$src/agent/worker/CMakeLists.txt" ] || { echo "build-worker: $src is not a benchfleet source tree" >&2; exit 1; }

# torch.utils.cmake_prefix_path is where pip's torch keeps TorchConfig.cmake; Debian's python3-torch
# names a directory that does not exist and its TorchConfig.cmake is on CMake's default path.
prefix_path="$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')" ||
  { echo "build-worker: $python cannot import torch" >&2; exit 1; }
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
mkdir -p "$out"
out="$(cd "$out" && pwd)"
src="$(cd "$src" && pwd)"
# Paths below the sources' and the output's common directory are hashed relative to the build
# directory, so ccache hits when the same sources are built under another install directory.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$("$python" -c 'import os, sys; print(os.path.commonpath(sys.argv[1:]))' "$src" "$out")}"
cmake -S "$src" -B "$out/build" "${generator[@]}" \
  -DBENCHFLEET_WORKER_ONLY=ON -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix_path" -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON >"$out/configure.log" 2>&1 ||
  { cat "$out/configure.log" >&2; echo "build-worker: configuring failed" >&2; exit 1; }
cmake --build "$out/build" ${jobs:+--parallel "$jobs"} >"$out/build.log" 2>&1 ||
  { tail -n 60 "$out/build.log" >&2; echo "build-worker: the build failed" >&2; exit 1; }
cmake --install "$out/build" --prefix "$out" >/dev/null
"$out/bin/benchfleet-worker" --capabilities >/dev/null ||
  { echo "build-worker: the built worker does not run" >&2; exit 1; }
echo "$out/bin/benchfleet-worker"
