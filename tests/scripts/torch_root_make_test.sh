#!/usr/bin/env bash
# ctest torch_root_make: scripts/torch-root.sh makes a root from scratch, as a fresh machine's
# quick start does, on a small package set (python3 and PyYAML: the making is the same for any
# set, and the full one is 2.2 GB of unpacking that scripts/test.sh has just done, or found done,
# for the suite's own roots):
#   1. an unreachable archive is said plainly, and leaves nothing that looks like a root;
#   2. a root made with mmdebstrap: its python runs, the marker names the root and its package set,
#      the downloaded packages are kept for the next make, and no half-made root or cache, no
#      downloaded package and no manual page is left in it;
#   3. made again, the same root is "current" and untouched;
#   4. a changed package set is installed into the existing root (apt), with a new root id;
#   5. the suite's real trixie root (the one scripts/test.sh made or reused, when there is one):
#      torch 2.6 imports, and its marker names a vector ISA the probe found (never "unknown").
# The packages come from Debian's archive (the cache of earlier makes, when there is one, seeds
# this test's own cache); without root, mmdebstrap or the archive it is skipped (77).
#   torch_root_make_test.sh SOURCE_DIR SCRATCH [SUITE_ROOT]
set -uo pipefail
src="$1" scratch="$2" suite_root="${3:-}"
script="$src/scripts/torch-root.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "making a root needs root"
command -v mmdebstrap >/dev/null 2>&1 || skip "mmdebstrap is missing (scripts/install-deps.sh installs it)"
rm -rf --one-file-system "$scratch" && mkdir -p "$scratch/debs" || exit 1
trap 'rm -rf --one-file-system "$scratch"' EXIT
export BENCHFLEET_DEB_CACHE="$scratch/debs"
seed="${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/debs/trixie"
[ -d "$seed" ] && cp -al "$seed" "$scratch/debs/trixie" 2>/dev/null
export BENCHFLEET_ROOT_PACKAGES="python3 python3-yaml"
marker_field() { sed -n "s/.*\"$1\": *\"\\([^\"]*\\)\".*/\\1/p" "$2"; }

# 1 --------------------------------------------------------------------------------------------
out="$("$script" --suite trixie --root "$scratch/unreachable" --mirror http://127.0.0.1:9/debian 2>&1)"
rc=$?
[ "$rc" -eq 1 ] || fail "unreachable archive: exit $rc, wanted 1: $out"
grep -q "cannot reach Debian's archive at http://127.0.0.1:9/debian" <<<"$out" || fail "unreachable archive not said: $out"
[ -e "$scratch/unreachable/etc/benchfleet-root.json" ] && fail "unreachable archive left a marker"

# 2 --------------------------------------------------------------------------------------------
root="$scratch/trixie"
"$script" --suite trixie --root "$root" >"$scratch/make.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  grep -q "could not be reached\|cannot reach" "$scratch/make.log" && skip "Debian's archive is not reachable: $(tail -n 1 "$scratch/make.log")"
  fail "make: exit $rc: $(tail -n 15 "$scratch/make.log")"
else
  marker="$root/etc/benchfleet-root.json"
  [ "$(marker_field suite "$marker")" = trixie ] || fail "marker without the suite: $(cat "$marker")"
  [ "$(marker_field torch_version "$marker")" = none ] || fail "a root without torch is not marked so: $(cat "$marker")"
  first_id="$(marker_field root_id "$marker")"
  grep -q '^[0-9a-f]\{16\}$' <<<"$first_id" || fail "marker without a root id: $(cat "$marker")"
  "$src/scripts/in-root.sh" "$root" -- python3 -c 'import yaml' || fail "python3 with PyYAML does not run in the root"
  grep -q "root ready in" "$scratch/make.log" || fail "no 'root ready' line: $(tail -n 5 "$scratch/make.log")"
  n="$(find "$scratch/debs/trixie" -name '*.deb' | wc -l)"
  [ "$n" -gt 50 ] || fail "the package cache holds $n packages"
  [ -e "$scratch/debs/trixie.new" ] && fail "a half-written package cache is left"
  [ -e "$root.partial" ] && fail "a half-made root is left"
  ls "$root/var/cache/apt/archives/"*.deb >/dev/null 2>&1 && fail "the root keeps its downloaded packages"
  ls "$root/usr/share/man/man1" >/dev/null 2>&1 && fail "manual pages were installed"

  # 3 ------------------------------------------------------------------------------------------
  before="$(stat -c %Y "$marker")"
  again="$("$script" --suite trixie --root "$root" 2>&1)" || fail "second make: $again"
  grep -q "root is current" <<<"$again" || fail "second make did not find the root current: $again"
  [ "$(stat -c %Y "$marker")" = "$before" ] || fail "second make rewrote the marker"

  # 4 ------------------------------------------------------------------------------------------
  updated="$(BENCHFLEET_ROOT_PACKAGES="python3 python3-yaml python3-six" "$script" --suite trixie --root "$root" 2>&1)" ||
    fail "a changed package set: $updated"
  grep -q "updating $root (package set changed)" <<<"$updated" || fail "a changed package set was not installed into the root: $updated"
  "$src/scripts/in-root.sh" "$root" -- python3 -c 'import six' || fail "the added package is not in the root"
  [ "$(marker_field root_id "$marker")" != "$first_id" ] || fail "the root id did not change with its packages"
fi

# 5 --------------------------------------------------------------------------------------------
if [ -n "$suite_root" ] && [ -f "$suite_root/etc/benchfleet-root.json" ]; then
  real="$suite_root/etc/benchfleet-root.json"
  grep -q '"torch_version": "2\.6' "$real" || fail "the suite's root marker without torch 2.6: $(cat "$real")"
  isa="$(marker_field vec_isa "$real")"
  if [ -z "$isa" ] || [ "$isa" = unknown ]; then fail "vector ISA '$isa': the probe did not run in the root"; fi
  if grep -qw avx2 /proc/cpuinfo && [ "$isa" = none ]; then fail "an AVX2 CPU but scalar kernels in the root"; fi
  unset BENCHFLEET_ROOT_PACKAGES
  "$src/scripts/in-root.sh" "$suite_root" -- python3 -c 'import torch, torchvision, setuptools.command.build_ext' ||
    fail "torch, torchvision or setuptools does not import in the suite's root"
else
  echo "the suite's trixie root is not there: its marker is not checked"
fi
[ "$failures" -eq 0 ] && echo "torch_root_make: all checks passed"
exit $((failures > 0))
