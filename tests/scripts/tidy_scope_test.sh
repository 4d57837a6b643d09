#!/usr/bin/env bash
# ctest tidy_scope: scripts/tidy.py --changed-since checks the units a change can affect and no
# others, with the real clang-tidy-14 on a small repository of its own (a copy of tidy.py, the
# module it reads the build with and .clang-tidy, three units built by Ninja, one of them through
# a shared header):
#   1. nothing changed since HEAD: no unit is checked;
#   2. the shared header changed (uncommitted): the two units that include it are checked, the
#      third is not, and a finding in the header fails the run naming a unit;
#   3. a new untracked unit counts as changed;
#   4. .clang-tidy changed: every unit is checked;
#   5. a base that is not a commit is a usage error (2).
#   tidy_scope_test.sh SOURCE_DIR SCRATCH
set -uo pipefail
src="$1" scratch="$2"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
command -v clang-tidy-14 >/dev/null 2>&1 || { echo "skipped: clang-tidy-14 is missing"; exit 77; }
rm -rf "$scratch" && mkdir -p "$scratch/repo/scripts" "$scratch/repo/common" || exit 1
trap 'rm -rf "$scratch"' EXIT
repo="$scratch/repo"
cp "$src/scripts/tidy.py" "$src/scripts/compile_units.py" "$repo/scripts/" && cp "$src/.clang-tidy" "$repo/" || exit 1
cat >"$repo/common/shared.h" <<'EOF'
#pragma once
inline int twice(int x) { return 2 * x; }
EOF
printf '#include "common/shared.h"\nint a() { return twice(1); }\n' >"$repo/common/a.cpp"
printf '#include "common/shared.h"\nint b() { return twice(2); }\n' >"$repo/common/b.cpp"
printf 'int c() { return 3; }\n' >"$repo/common/c.cpp"
cat >"$repo/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(scope CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
add_library(scope STATIC common/a.cpp common/b.cpp common/c.cpp)
target_include_directories(scope PRIVATE ${CMAKE_SOURCE_DIR})
EOF
(
  cd "$repo" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base &&
    cmake -S . -B build -G Ninja -DCMAKE_CXX_COMPILER=g++ >/dev/null && cmake --build build >/dev/null
) || { echo "FAIL: the scratch repository did not build" >&2; exit 1; }
echo build >"$repo/.gitignore"
git -C "$repo" add .gitignore && git -C "$repo" -c user.name=t -c user.email=t@t commit -qm ignore
export BENCHFLEET_CACHE="$scratch/cache"  # nothing remembered: what is checked is what was chosen

tidy() { python3 "$repo/scripts/tidy.py" "$repo/build" --jobs 2 --changed-since HEAD "$@" 2>&1; }
checked() { sed -n 's/^tidy: \([0-9]*\) units.*, \([0-9]*\) to check$/\2/p' <<<"$1"; }

# 1 --------------------------------------------------------------------------------------------
out="$(tidy)" || fail "no change: exit $?: $out"
[ "$(checked "$out")" = 0 ] || fail "no change, yet units were checked: $out"

# 2 --------------------------------------------------------------------------------------------
printf '#pragma once\ninline int twice(int x) { return x + x; }\n' >"$repo/common/shared.h"
out="$(tidy)" || fail "header change: exit $?: $out"
[ "$(checked "$out")" = 2 ] || fail "the header's change did not check its two units alone: $out"
# A finding in the header (bugprone-integer-division), seen through a unit that includes it.
printf '#pragma once\ninline double twice(int x) { return 2 * (x / 3); }\n' >"$repo/common/shared.h"
out="$(tidy)"
rc=$?
[ "$rc" -eq 1 ] || fail "a finding in the changed header: exit $rc, wanted 1: $out"
grep -q "bugprone-integer-division" <<<"$out" || fail "the finding is not printed: $out"
grep -q "^== common/[ab].cpp" <<<"$out" || fail "the unit with the finding is not named: $out"
git -C "$repo" checkout -q -- common/shared.h

# 3 --------------------------------------------------------------------------------------------
printf 'int d() { return 4; }\n' >"$repo/common/d.cpp"
echo 'target_sources(scope PRIVATE common/d.cpp)' >>"$repo/CMakeLists.txt"
cmake --build "$repo/build" >/dev/null 2>&1 || fail "the new unit did not build"
out="$(tidy)" || fail "new unit: exit $?: $out"
grep -q "to check$" <<<"$out" && [ "$(checked "$out")" = 1 ] || fail "the untracked unit alone was not checked: $out"
git -C "$repo" checkout -q -- CMakeLists.txt && rm -f "$repo/common/d.cpp"
cmake --build "$repo/build" >/dev/null 2>&1

# 4 --------------------------------------------------------------------------------------------
echo "# changed" >>"$repo/.clang-tidy"
out="$(tidy)" || fail "configuration change: exit $?: $out"
[ "$(checked "$out")" = 3 ] || fail "a changed .clang-tidy did not check every unit: $out"
git -C "$repo" checkout -q -- .clang-tidy

# 5 --------------------------------------------------------------------------------------------
out="$(python3 "$repo/scripts/tidy.py" "$repo/build" --changed-since no-such-commit 2>&1)"
rc=$?
[ "$rc" -eq 2 ] || fail "an unknown base: exit $rc, wanted 2: $out"
grep -q "not a commit" <<<"$out" || fail "an unknown base is not said: $out"

[ "$failures" -eq 0 ] && echo "tidy_scope: all checks passed"
exit $((failures > 0))
