#!/usr/bin/env bash
# Creates or updates a Debian root filesystem holding a torch build other than the host's, for an
# agent build entry with `root:` (the build's exporter, runner and worker then run inside it
# through bubblewrap). Everything comes from Debian's archive, through mmdebstrap. Two suites:
#   trixie  Debian 13: torch 2.6, torchvision 0.21, LibTorch 2.6 with AOTInductor's loader
#   sid     Debian unstable: torch 2.14, torchvision 0.27, transformers, safetensors, scipy (the
#           seed models), LibTorch 2.14; refreshed, it is a new build id: the "nightly" of a
#           machine without PyTorch's wheels
# Both carry Sleef's header, without which Inductor's CPU kernels fall back to scalar code.
#   scripts/torch-root.sh [--suite trixie|sid] [--root DIR] [--mirror URL] [--print-build] [--check]
# --suite    which Debian suite (default trixie)
# --root     where the root lives (default ~/.cache/benchfleet/torch-roots/<suite>, for trixie
#            $BENCHFLEET_TORCH_ROOT when set); it is outside the clone so re-runs and CI reuse it.
# --mirror   the Debian archive (default: the one apt uses here, else http://deb.debian.org/debian)
# --check    only say whether the root is present and current (exit 0) or not (exit 1)
# --print-build  print only the agent `builds:` entry (YAML) for an existing root
# Idempotent: a root whose package set matches is left alone; a changed package set is installed
# into it with apt; a missing or half-made root is made anew (built beside, then renamed, so an
# interrupted run never leaves a root that looks finished). Needs root (mmdebstrap, chroot).
# The downloaded packages are kept in ~/.cache/benchfleet/debs/<suite> ($BENCHFLEET_DEB_CACHE for
# another parent), so a root made anew downloads only what changed.
set -euo pipefail

suite=trixie
root=""
mirror=""
mode=make
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite="$2"; shift 2 ;;
    --root) root="$2"; shift 2 ;;
    --mirror) mirror="$2"; shift 2 ;;
    --check) mode=check; shift ;;
    --print-build) mode=print; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "torch-root: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
say() { echo "torch-root: $*"; }
die() { echo "torch-root: $*" >&2; exit 1; }

# torch with its C++ side (AOTInductor's model_package_loader.h), torchvision, the compiler
# Inductor's CPU backend runs (g++, python3-dev for its python-binding kernels, Sleef's header for
# its vector kernels), and what scripts/build-worker.sh needs to compile benchfleet-worker against
# this LibTorch; sid adds what builds the seed models from their configs.
# Debian's torch does its matrix products through whatever provides libblas.so.3, and minbase
# brings netlib's reference BLAS: unoptimised and single-threaded (a 1024^3 sgemm at 1.5 GFLOP/s
# on the development machine; ViT-base took 26 s a call). OpenBLAS's OpenMP flavour takes the
# alternative and shares torch's OpenMP threads instead of starting its own.
# setuptools: torch.utils.cpp_extension imports it, and Inductor's C++ builder imports that (only
# a Recommends of torch's, which apt leaves out).
packages=(
  python3 python3-torch python3-torchvision python3-numpy python3-yaml python3-dev python3-setuptools
  libtorch-dev g++ make cmake ninja-build ccache libsleef-dev libopenblas0-openmp
  nlohmann-json3-dev libcli11-dev libssl-dev
)
case "$suite" in
  trixie) ;;
  # scipy: transformers' MaskFormer and Mask2Former build their loss (scipy's Hungarian matching)
  # with the model, inference or not.
  sid) packages+=(python3-transformers python3-safetensors python3-scipy) ;;
  *) die "--suite $suite: must be trixie or sid" ;;
esac
# Tests of the making itself (torch_root_make) name a small set instead: a root without
# python3-torch is made and marked the same way, with torch_version "none" and no ISA probe.
if [ -n "${BENCHFLEET_ROOT_PACKAGES:-}" ]; then
  read -r -a packages <<<"$BENCHFLEET_ROOT_PACKAGES"
fi
with_torch=0
for p in "${packages[@]}"; do [ "$p" = python3-torch ] && with_torch=1; done
if [ -z "$root" ]; then
  root="${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/torch-roots/$suite"
  [ "$suite" = trixie ] && root="${BENCHFLEET_TORCH_ROOT:-$root}"
fi

marker="$root/etc/benchfleet-root.json"
wanted_hash="$(printf '%s\n' "$suite" "${packages[@]}" | sha256sum | cut -c1-16)"

# The root's identity: a hash of every installed package and version, so two roots with the
# same packages have the same id and any change (an upgrade, a removal) gives a new one.
root_id() {
  chroot "$1" dpkg-query -W -f='${Package}=${Version}\n' | LC_ALL=C sort | sha256sum | cut -c1-16
}

print_build() {
  local torch_version
  torch_version="$(sed -n 's/.*"torch_version": *"\([^"]*\)".*/\1/p' "$marker")"
  cat <<EOF
# agent config, under builds: (torch $torch_version in a Debian $suite root)
- name: torch${torch_version%.*}
  python: /usr/bin/python3
  root: $root
EOF
}

# The vector ISA Inductor's CPU kernels get in the root ("none": scalar code, lower-bound figures),
# asked as the runner and the exporter ask it: with the compiler that links Sleef where torch
# needs that (agent/python/benchfleet_vec_isa.py).
probe_vec_isa() {
  local modules isa
  modules="$(cd "$(dirname "${BASH_SOURCE[0]}")/../agent/python" && pwd)"
  isa="$("$(dirname "${BASH_SOURCE[0]}")/in-root.sh" "$root" --ro-bind "$modules" -- \
    python3 "$modules/benchfleet_vec_isa.py" 2>/dev/null | tail -n 1)" || isa=""
  echo "${isa:-unknown}"
}

current() {
  [ -f "$marker" ] && grep -q "\"packages_hash\": *\"$wanted_hash\"" "$marker"
}

case "$mode" in
  check)
    if current; then say "current: $root"; exit 0; fi
    say "missing or out of date: $root"; exit 1 ;;
  print)
    current || die "no current root at $root (run scripts/torch-root.sh first)"
    print_build; exit 0 ;;
esac

if current; then
  # A root made before its kernels could be vectorised says "none": ask again, it is cheap.
  if [ "$with_torch" = 1 ] && { grep -qE '"vec_isa": *"(none|unknown)"' "$marker" || ! grep -q '"vec_isa"' "$marker"; }; then
    vec_isa="$(probe_vec_isa)"
    sed -i -E "s/\"vec_isa\": *\"[^\"]*\"/\"vec_isa\": \"$vec_isa\"/" "$marker"
  fi
  say "root is current: $root ($(sed -n 's/.*"root_id": *"\([^"]*\)".*/\1/p' "$marker"), vector ISA $(sed -n 's/.*"vec_isa": *"\([^"]*\)".*/\1/p' "$marker"))"
  print_build
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "creating a root needs root (mmdebstrap and chroot); run it as root or with sudo"
for tool in mmdebstrap chroot; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (apt-get install mmdebstrap)"
done

if [ -z "$mirror" ]; then
  mirror="$("$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh")"
fi

# Say clearly when the archive cannot be reached, before apt's own less direct message.
if command -v curl >/dev/null 2>&1; then
  curl -fsS --max-time 30 -o /dev/null "$mirror/dists/$suite/InRelease" ||
    die "cannot reach Debian's archive at $mirror/dists/$suite/ (network or mirror down; --mirror URL picks another)"
fi

parent="$(dirname "$root")"
mkdir -p "$parent"
need_kb=$((4 * 1024 * 1024))
free_kb="$(df -Pk "$parent" | awk 'NR==2 {print $4}')"
[ "$free_kb" -ge "$need_kb" ] ||
  die "not enough disk space under $parent: $((free_kb / 1024)) MiB free, about 4096 MiB needed"

with_proc() {  # runs a command in the root with /proc, /dev and /sys mounted, unmounting after
  local dir="$1"; shift
  mount -t proc proc "$dir/proc"
  mount --rbind /dev "$dir/dev"; mount --make-rslave "$dir/dev"
  mount -t sysfs sysfs "$dir/sys"
  local rc=0
  chroot "$dir" "$@" || rc=$?
  umount "$dir/sys"; umount -R "$dir/dev"; umount "$dir/proc"
  return $rc
}

# mmdebstrap's own lines, thinned to a readable progress: its phases, apt's errors, every 100th
# package set up.
progress_lines() {
  local t0="$1" n=0 line
  while IFS= read -r line; do
    case "$line" in
      "Setting up "*)
        n=$((n + 1)); [ $((n % 100)) -eq 1 ] || continue ;;
      "I: "*|"E: "*|"W: "*|"Err:"*) ;;
      *) continue ;;
    esac
    printf 'torch-root: [%4ds] %s\n' "$((SECONDS - t0))" "$line"
  done
}

started=$SECONDS
if [ -f "$root/etc/debian_version" ] && [ -f "$marker" ]; then
  # A finished root whose package set changed: install the new set into it.
  say "updating $root (package set changed)"
  # Signatures are checked; the Release file's expiry is not: unstable's lasts a week, and a
  # mirror that is a snapshot (or lags) would otherwise refuse every update of a sid root.
  with_proc "$root" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false update -qq ||
    die "apt-get update in the root failed (is $mirror reachable?)"
  with_proc "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" ||
    die "installing the packages in the root failed"
else
  work="$root.partial"
  [ -e "$work" ] && { say "removing a half-made root from an interrupted run: $work"; rm -rf --one-file-system "$work"; }
  [ -e "$root" ] && { say "removing an unfinished root: $root"; rm -rf --one-file-system "$root"; }
  say "creating a Debian $suite root at $root from $mirror (about 2.2 GB; a minute or two)"
  log="$parent/mmdebstrap-$suite.log"
  include="$(IFS=,; echo "${packages[*]}")"
  # The packages stay in a cache outside the root: remaking it (a refreshed unstable root is a new
  # build id) downloads only what changed. The two suites share almost nothing (5 of ~330
  # package versions when measured), so each has its own; it is replaced by the set just
  # installed, so it holds no stale versions.
  debs="${BENCHFLEET_DEB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/debs}/$suite"
  mkdir -p "$debs"
  rm -rf "$debs.new"
  mkdir -p "$debs.new"
  # mmdebstrap, not debootstrap: apt resolves and downloads, and dpkg installs every package in
  # one call, where debootstrap resolves in shell and unpacks batch by batch. From scratch on 2
  # cores the sid root took 88 s this way and about 250 s with debootstrap. Manual pages, message
  # catalogues and documentation are left out (nothing in the root reads them). Signatures are
  # checked; the Release file's expiry is not: unstable's lasts a week, and a mirror that is a
  # snapshot (or lags) would otherwise refuse the suite. A download is retried (the quick start
  # pauses a root's making while it measures, and a mirror may close a connection left idle).
  set +e
  # shellcheck disable=SC2016  # $1 is the root, expanded by the hook's own shell
  mmdebstrap --mode=root --variant=minbase --components=main --include="$include" \
    --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='Acquire::Retries "3"' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
    --setup-hook="sync-in $debs /var/cache/apt/archives" \
    --customize-hook="sync-out /var/cache/apt/archives $debs.new" \
    --skip=download/empty \
    "$suite" "$work" "$mirror" 2>&1 | tee "$log" | progress_lines "$started"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    rm -rf "$debs.new"
    free_kb="$(df -Pk "$parent" | awk 'NR==2 {print $4}')"
    [ "$free_kb" -lt 204800 ] && die "mmdebstrap failed: the disk under $parent is full ($((free_kb / 1024)) MiB left); the log is $log"
    grep -qE 'Failed to fetch|Temporary failure|Could not resolve|Unable to connect' "$log" &&
      die "mmdebstrap failed: Debian's archive at $mirror could not be reached; the log is $log"
    die "mmdebstrap failed (exit $rc); the last lines of $log:
$(tail -n 15 "$log")"
  fi
  rm -rf "$debs"
  mv "$debs.new" "$debs"
  rm -rf "$work/var/cache/apt/archives/"*.deb
  mv "$work" "$root"
fi

if [ "$with_torch" = 1 ]; then
  say "checking torch in the root"
  torch_version="$(with_proc "$root" python3 -c 'import torch, torchvision; print(torch.__version__)')" ||
    die "the root's python cannot import torch and torchvision"
  [ -f "$root/usr/include/torch/csrc/inductor/aoti_package/model_package_loader.h" ] ||
    die "the root's LibTorch has no AOTInductor package loader header"
  vec_isa="$(probe_vec_isa)"
  [ "$vec_isa" = none ] && say "warning: Inductor picks no vector ISA in this root on this CPU: compiled kernels are scalar"
else
  torch_version=none vec_isa=none
fi
id="$(root_id "$root")"
cat >"$marker" <<EOF
{"suite": "$suite", "torch_version": "$torch_version", "root_id": "$id", "packages_hash": "$wanted_hash", "vec_isa": "$vec_isa", "created": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"}
EOF
say "root ready in $((SECONDS - started)) s: $root (torch $torch_version, id $id, vector ISA $vec_isa)"
print_build
