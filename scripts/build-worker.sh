#!/usr/bin/env bash
# Builds benchfleet-worker alone against the LibTorch of one torch build (a python that imports
# torch), so each build an agent advertises runs jobs with a worker matching its torch and CUDA.
#   scripts/build-worker.sh --python PY --out DIR [--deps DEPS] [--src DIR] [--jobs N]
#   scripts/build-worker.sh --root ROOT [--python PY] --out DIR [--deps DEPS] [--src DIR] [--jobs N]
# --src is the source tree (default: this repository, or the release's share/benchfleet/src when
# run from a release). The worker is installed as DIR/bin/benchfleet-worker with an RPATH to
# torch's libraries; the build tree is DIR/build (kept, so a rebuild is incremental). Needs cmake,
# ninja or make, a C++20 compiler and the header-only nlohmann-json and CLI11 (Debian:
# nlohmann-json3-dev libcli11-dev); ccache is used where CMake finds it.
# --deps: nlohmann-json and CLI11 come from DEPS, a folder scripts/worker-deps.sh unpacked from
# Debian's packages (default there: .carry/worker-deps), instead of the system: DEPS/usr goes first
# on CMAKE_PREFIX_PATH and nlohmann_json_DIR / CLI11_DIR name its CMake configs
# (DEPS/usr/share/cmake/...), whose targets point at DEPS/usr/include; the compile commands are
# checked for it. So a host with only pip's torch, a compiler, CMake and that folder builds the
# worker (no -dev packages, no network).
# CUDA: a CUDA build of LibTorch 2.x enables CMake's CUDA language and looks for the toolkit when
# found (find_package(Torch)), so it needs nvcc. When nvcc is not on PATH and
# /usr/local/cuda/bin/nvcc exists (a toolkit installed but not on PATH), CUDACXX is set to it and
# /usr/local/cuda/bin is put first on PATH for the configure and build; an explicit CUDACXX wins.
# --root: the torch build lives in its own root filesystem (scripts/torch-root.sh): the whole
# configure/build/install/--capabilities check runs inside it through in-root.sh (beside this
# script), with its compiler, CMake and LibTorch; --python then defaults to the root's
# /usr/bin/python3. Inside, the sources (and DEPS, when outside them) are bound read-only, DIR
# read-write, and the ccache directory ($CCACHE_DIR, default $HOME/.cache/ccache, created if
# missing) read-write, so a rebuild (also from a fresh clone elsewhere) hits the cache. Run the
# worker the same way: in-root.sh ROOT ... -- DIR/bin/benchfleet-worker.
# The worker is compiled with -Wall -Wextra -Wpedantic; warnings are counted on stderr (the build
# log is DIR/build.log). Prints the worker's path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/.."
[ -d "$here/src" ] && src="$here/src"  # inside a release: share/benchfleet/{build-worker.sh,src}
usage="usage: build-worker.sh [--root ROOT] --python PY --out DIR [--deps DEPS] [--src DIR] [--jobs N]
  --python PY  a python that imports the torch build (defaults to /usr/bin/python3 with --root)
  --deps DEPS  nlohmann-json and CLI11 from DEPS (scripts/worker-deps.sh) instead of the system
  CUDA (a CUDA LibTorch needs nvcc): CUDACXX if set, else nvcc on PATH, else
  /usr/local/cuda/bin/nvcc, then exported as CUDACXX with /usr/local/cuda/bin first on PATH"
python=""
out=""
jobs=""
root=""
deps=""
while [ $# -gt 0 ]; do
  case "$1" in -h|--help) echo "$usage"; exit 0 ;; esac
  [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --src) src="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --root) root="$2"; shift 2 ;;
    --deps) deps="$2"; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$root" ] && [ -z "$python" ] && python=/usr/bin/python3
[ -n "$python" ] && [ -n "$out" ] || { echo "build-worker: --python (or --root) and --out are required" >&2; exit 2; }
[ -f "$src/agent/worker/CMakeLists.txt" ] || { echo "build-worker: $src is not a benchfleet source tree" >&2; exit 1; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
src="$(cd "$src" && pwd)"
if [ -n "$deps" ]; then
  [ -d "$deps" ] || { echo "build-worker: --deps $deps does not exist (scripts/worker-deps.sh --out $deps makes it)" >&2; exit 1; }
  deps="$(cd "$deps" && pwd)"
  for config in nlohmann_json/nlohmann_jsonConfig.cmake CLI11/CLI11Config.cmake; do
    [ -f "$deps/usr/share/cmake/$config" ] ||
      { echo "build-worker: --deps $deps has no usr/share/cmake/$config (not a folder from scripts/worker-deps.sh)" >&2; exit 1; }
  done
fi

if [ -n "$root" ]; then
  in_root="$here/in-root.sh"
  [ -x "$in_root" ] || { echo "build-worker: $in_root is missing (it comes with this script)" >&2; exit 1; }
  ccache_dir="${CCACHE_DIR:-$HOME/.cache/ccache}"
  mkdir -p "$ccache_dir"
  ccache_dir="$(cd "$ccache_dir" && pwd)"
  binds=(--ro-bind "$src")
  case "$here/" in "$src"/*) ;; *) binds+=(--ro-bind "$here") ;; esac  # a release keeps it beside src/
  if [ -n "$deps" ]; then
    case "$deps/" in "$src"/*) ;; *) binds+=(--ro-bind "$deps") ;; esac
  fi
  # Bound after the sources: DIR may lie inside the source tree (build/...), and stays writable.
  binds+=(--bind "$out" --bind "$ccache_dir")
  exec "$in_root" "$root" "${binds[@]}" --setenv CCACHE_DIR "$ccache_dir" \
    ${CCACHE_BASEDIR:+--setenv CCACHE_BASEDIR "$CCACHE_BASEDIR"} -- \
    bash "$here/build-worker.sh" --python "$python" --out "$out" --src "$src" ${jobs:+--jobs "$jobs"} \
    ${deps:+--deps "$deps"}
fi

# torch.utils.cmake_prefix_path is where pip's torch keeps TorchConfig.cmake; Debian's python3-torch
# names a directory that does not exist and its TorchConfig.cmake is on CMake's default path.
torch_info="$("$python" -c 'import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.version.cuda or "")')" ||
  { echo "build-worker: $python cannot import torch" >&2; exit 1; }
prefix_path="$(sed -n 1p <<<"$torch_info")"
torch_cuda="$(sed -n 2p <<<"$torch_info")"

# A CUDA LibTorch's CMake config enables the CUDA language: CMake takes nvcc from CUDACXX or PATH.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
  export PATH="/usr/local/cuda/bin:$PATH"
  echo "build-worker: nvcc is not on PATH; using $CUDACXX (CUDACXX, PATH)" >&2
fi
if [ -n "$torch_cuda" ] && [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "build-worker: torch is a CUDA $torch_cuda build but no nvcc was found (PATH, CUDACXX, /usr/local/cuda/bin): configuring will likely fail; set CUDACXX to the toolkit's nvcc" >&2
fi

# nlohmann-json and CLI11 from DEPS, else wherever CMake finds them; a build tree configured
# before with other DEPS (or none) forgets the old configs' paths.
dep_args=(-Unlohmann_json_DIR -UCLI11_DIR)
if [ -n "$deps" ]; then
  prefix_path="$deps/usr;$prefix_path"
  dep_args=(-Dnlohmann_json_DIR:PATH="$deps/usr/share/cmake/nlohmann_json"
            -DCLI11_DIR:PATH="$deps/usr/share/cmake/CLI11")
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# Paths below the sources' and the output's common directory are hashed relative to the build
# directory, so ccache hits when the same sources are built under another install directory.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$("$python" -c 'import os, sys; print(os.path.commonpath(sys.argv[1:]))' "$src" "$out")}"
cmake -S "$src" -B "$out/build" "${generator[@]}" \
  -DBENCHFLEET_WORKER_ONLY=ON -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Wpedantic" "${dep_args[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix_path" -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON >"$out/configure.log" 2>&1 ||
  { cat "$out/configure.log" >&2; echo "build-worker: configuring failed" >&2; exit 1; }
if [ -n "$deps" ] && ! grep -qF -- "$deps/usr/include" "$out/build/compile_commands.json"; then
  echo "build-worker: the compile commands do not use $deps/usr/include (see $out/build/CMakeCache.txt)" >&2
  exit 1
fi
cmake --build "$out/build" ${jobs:+--parallel "$jobs"} >"$out/build.log" 2>&1 ||
  { tail -n 60 "$out/build.log" >&2; echo "build-worker: the build failed" >&2; exit 1; }
warnings="$(grep -c 'warning:' "$out/build.log" || true)"
[ "$warnings" = 0 ] || echo "build-worker: $warnings compiler warnings (see $out/build.log)" >&2
cmake --install "$out/build" --prefix "$out" >/dev/null
"$out/bin/benchfleet-worker" --capabilities >/dev/null ||
  { echo "build-worker: the built worker does not run" >&2; exit 1; }
echo "$out/bin/benchfleet-worker"
