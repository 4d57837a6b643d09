#!/usr/bin/env bash
# Fetches a CUDA LibTorch's headers for the worker's CUDA compile check (agent/worker/CMakeLists.txt,
# ctest worker_cuda_compile): Debian 13's libtorch-cuda-dev (contrib; LibTorch 2.6 with ATen/cuda,
# c10/cuda and AOTInductor's loader), downloaded with apt-get from the archive apt uses here and
# unpacked with dpkg -x. No dependency is installed and nothing runs: compiling needs only the
# headers, beside the CUDA toolkit's own (/usr/local/cuda/include).
#   scripts/cuda-headers.sh [--dir DIR] [--mirror URL] [--check]
# --dir     where to unpack (default $BENCHFLEET_CUDA_HEADERS, else
#           ~/.cache/benchfleet/torch-cuda-headers/trixie): outside the clone, so re-runs and CI reuse it
# --mirror  the Debian archive (default: the one apt uses here, else http://deb.debian.org/debian)
# --check   only say whether DIR holds the headers (exit 0) or not (exit 1)
# Prints the include directory (DIR/usr/include), the value of cmake's BENCHFLEET_CUDA_TORCH_HEADERS.
# Idempotent: a DIR that holds the unpacked package (DIR/MANIFEST) is left alone without any
# download; delete DIR to fetch the archive's current version. Needs no root.
set -euo pipefail

suite=trixie
package=libtorch-cuda-dev
dir="${BENCHFLEET_CUDA_HEADERS:-${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/torch-cuda-headers/$suite}"
mirror=""
check=0
usage="usage: cuda-headers.sh [--dir DIR] [--mirror URL] [--check]"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; dir="$2"; shift 2 ;;
    --mirror) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; mirror="$2"; shift 2 ;;
    --check) check=1; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
die() { echo "cuda-headers: $*" >&2; exit 1; }

include="$dir/usr/include"
complete() { [ -f "$dir/MANIFEST" ] && [ -f "$include/ATen/cuda/CUDAContext.h" ] && [ -f "$include/torch/csrc/api/include/torch/torch.h" ]; }
if complete; then
  echo "cuda-headers: $(cat "$dir/MANIFEST") in $dir" >&2
  echo "$include"
  exit 0
fi
[ "$check" = 0 ] || { echo "cuda-headers: no CUDA LibTorch headers in $dir" >&2; exit 1; }

for tool in apt-get dpkg; do command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (this script needs Debian's apt)"; done
if [ -z "$mirror" ]; then
  mirror="$("$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh")"
fi

# A private apt state: only the trixie contrib index, so the host's apt lists stay untouched.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/download"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "$keyring is missing (apt-get install debian-archive-keyring)"
echo "deb [signed-by=$keyring] $mirror $suite contrib" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Dir::State::Status=/dev/null
          -o APT::Sandbox::User=root -o Debug::NoLocking=1)
echo "cuda-headers: fetching $package from $mirror ($suite contrib)" >&2
apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; die "apt-get update failed: Debian's archive at $mirror could not be read (--mirror URL picks another)"; }
(cd "$work/download" && apt-get "${apt_opts[@]}" download "$package" >>"$work/apt.log" 2>&1) ||
  { cat "$work/apt.log" >&2; die "apt-get download $package failed"; }
deb="$(ls "$work/download"/*.deb 2>/dev/null | head -n1)"
[ -n "$deb" ] || die "apt-get download $package left no .deb"
version="$(dpkg-deb --field "$deb" Version)"

# Unpacked beside DIR and renamed when complete: an interrupted run never leaves a DIR that looks done.
parent="$(dirname "$dir")"
mkdir -p "$parent"
staging="$(mktemp -d "$parent/.cuda-headers.XXXXXX")"
dpkg -x "$deb" "$staging" || { rm -rf "$staging"; die "dpkg -x $deb failed"; }
echo "$package=$version" >"$staging/MANIFEST"
rm -rf "$dir"
mv "$staging" "$dir"
chmod 755 "$dir"
complete || die "$package $version does not hold the headers expected (ATen/cuda/CUDAContext.h, torch/torch.h)"
echo "cuda-headers: $package=$version unpacked in $dir" >&2
echo "$include"
