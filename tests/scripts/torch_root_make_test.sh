#!/usr/bin/env bash
# ctest torch_root_make: scripts/torch-root.sh makes a Debian 13 root from scratch, as a fresh
# machine's quick start does (about 90 s alone; more beside other tests):
#   1. an unreachable archive is said plainly, and leaves nothing that looks like a root;
#   2. a root made with mmdebstrap: torch and torchvision import, the marker names the root and the
#      vector ISA Inductor gets (never "unknown": the probe itself ran), the downloaded packages
#      are kept for the next make, and no half-made root or cache is left;
#   3. made again, the same root is "current" and untouched.
# The packages come from Debian's archive (the cache of earlier makes, when there is one, seeds
# this test's own cache); without root, mmdebstrap or the archive it is skipped (77).
#   torch_root_make_test.sh SOURCE_DIR SCRATCH
set -uo pipefail
src="$1" scratch="$2"
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
  grep -q '"torch_version": "2\.6' "$marker" || fail "marker without torch 2.6: $(cat "$marker")"
  grep -q '"root_id": "[0-9a-f]\{16\}"' "$marker" || fail "marker without a root id: $(cat "$marker")"
  isa="$(sed -n 's/.*"vec_isa": *"\([^"]*\)".*/\1/p' "$marker")"
  if [ -z "$isa" ] || [ "$isa" = unknown ]; then fail "vector ISA '$isa': the probe did not run in the root"; fi
  if grep -qw avx2 /proc/cpuinfo && [ "$isa" = none ]; then fail "an AVX2 CPU but scalar kernels in the root"; fi
  "$src/scripts/in-root.sh" "$root" -- python3 -c 'import torch, torchvision, setuptools.command.build_ext' ||
    fail "torch, torchvision or setuptools does not import in the root"
  grep -q "root ready in" "$scratch/make.log" || fail "no 'root ready' line: $(tail -n 5 "$scratch/make.log")"
  n="$(find "$scratch/debs/trixie" -name '*.deb' | wc -l)"
  [ "$n" -gt 100 ] || fail "the package cache holds $n packages"
  [ -e "$scratch/debs/trixie.new" ] && fail "a half-written package cache is left"
  [ -e "$root.partial" ] && fail "a half-made root is left"
  ls "$root/var/cache/apt/archives/"*.deb >/dev/null 2>&1 && fail "the root keeps its downloaded packages"
  ls "$root/usr/share/man/man1" >/dev/null 2>&1 && fail "manual pages were installed"

  # 3 ------------------------------------------------------------------------------------------
  before="$(stat -c %Y "$marker")"
  again="$("$script" --suite trixie --root "$root" 2>&1)" || fail "second make: $again"
  grep -q "root is current" <<<"$again" || fail "second make did not find the root current: $again"
  [ "$(stat -c %Y "$marker")" = "$before" ] || fail "second make rewrote the marker"
fi
[ "$failures" -eq 0 ] && echo "torch_root_make: all checks passed"
exit $((failures > 0))
