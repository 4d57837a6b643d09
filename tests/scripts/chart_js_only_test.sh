#!/usr/bin/env bash
# ctest chart_js_only: scripts/install-deps.sh --chart-js-only (the quick start's way to the
# dashboard's chart library without Debian's npm) against a registry of the test's own on loopback,
# with a package-lock.json of the test's own beside a copy of the script:
#   1. the locked tarball: unpacked into node_modules/chart.js, its dist/chart.umd.js there;
#   2. run again: found there, not fetched again;
#   3. a tarball whose sha512 is not the lock's integrity: refused (exit 1), nothing replaced;
#   4. a registry without it: said, exit 0 (the dashboard then says charts are unavailable).
#   chart_js_only_test.sh SOURCE_DIR SCRATCH
set -uo pipefail
src="$1" scratch="$2"
# shellcheck source=tests/scripts/registry_support.sh
. "$src/tests/scripts/registry_support.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
rm -rf "$scratch" && mkdir -p "$scratch/tree/scripts" "$scratch/registry/chart.js/-" "$scratch/pkg/package/dist" || exit 1
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$scratch"' EXIT
cp "$src/scripts/install-deps.sh" "$scratch/tree/scripts/"

# The package: a small chart.umd.js in npm's tarball layout (package/...), and the lock naming it.
echo "/* chart.js stand-in */ var Chart = {};" >"$scratch/pkg/package/dist/chart.umd.js"
tar -czf "$scratch/registry/chart.js/-/chart.js-9.9.9.tgz" -C "$scratch/pkg" package
lock() {  # lock INTEGRITY: writes the tree's package-lock.json
  cat >"$scratch/tree/package-lock.json" <<EOF
{"name": "t", "lockfileVersion": 3, "packages": {"": {}, "node_modules/chart.js": {"version": "9.9.9", "integrity": "$1"}}}
EOF
}
good="$(sri "$scratch/registry/chart.js/-/chart.js-9.9.9.tgz")"

start_registry "$scratch/registry"
run() { "$scratch/tree/scripts/install-deps.sh" --chart-js-only --no-browser --no-fuzz --no-slurm --no-lint 2>&1; }
umd="$scratch/tree/node_modules/chart.js/dist/chart.umd.js"

# 1 --------------------------------------------------------------------------------------------
lock "$good"
out="$(run)" || fail "the locked tarball: exit $?: $out"
grep -q "chart.js 9.9.9 fetched" <<<"$out" || fail "not said fetched: $out"
grep -q "chart.js stand-in" "$umd" 2>/dev/null || fail "dist/chart.umd.js is not the tarball's"

# 2 --------------------------------------------------------------------------------------------
out="$(run)" || fail "second run: exit $?: $out"
grep -q "chart.js 9.9.9 is there" <<<"$out" || fail "the second run fetched again: $out"

# 3 --------------------------------------------------------------------------------------------
rm -rf "$scratch/tree/node_modules"
lock "sha512-AAAA$(cut -c12- <<<"$good")"
out="$(run)"
rc=$?
[ "$rc" -eq 1 ] || fail "a tarball other than the locked one: exit $rc, wanted 1: $out"
grep -q "is not the locked one" <<<"$out" || fail "the mismatch is not said: $out"
[ -e "$umd" ] && fail "a refused tarball was unpacked"

# 4 --------------------------------------------------------------------------------------------
lock "$good"
rm "$scratch/registry/chart.js/-/chart.js-9.9.9.tgz"
out="$(run)"
rc=$?
[ "$rc" -eq 0 ] || fail "a registry without the tarball: exit $rc, wanted 0: $out"
grep -q "could not be fetched" <<<"$out" || fail "the missing tarball is not said: $out"

[ "$failures" -eq 0 ] && echo "chart_js_only: all checks passed"
exit $((failures > 0))
