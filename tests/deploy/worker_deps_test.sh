#!/usr/bin/env bash
# worker_deps: the worker builds on a host that has a torch build, a compiler and CMake but no
# -dev packages (a lent GPU machine with only pip's torch): scripts/worker-deps.sh unpacks
# nlohmann-json and CLI11 into a folder, and scripts/build-worker.sh --deps builds against it
# inside a bubblewrap sandbox where this machine's nlohmann-json, CLI11 and OpenSSL headers and
# CMake configs are hidden (empty tmpfs over them). Then: the configs and include directories
# came from the folder, the worker links no OpenSSL and answers --capabilities.
#   worker_deps_test.sh PYTHON BUILD_DIR
# The folder is cached in ~/.cache/benchfleet/worker-deps ($BENCHFLEET_WORKER_DEPS), the build in
# BUILD_DIR/worker-deps-test (made afresh each run; ccache serves a warm one). Skipped (77) when
# bubblewrap cannot make a sandbox here, or when Debian's archive cannot be reached and nothing is
# cached, unless BENCHFLEET_REQUIRE_WORKER_DEPS=1 makes those failures.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: worker_deps_test.sh PYTHON BUILD_DIR" >&2; exit 2; }
python="$1"
build_dir="$2"
src="$(cd "$(dirname "$0")/../.." && pwd)"
deps="${BENCHFLEET_WORKER_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet/worker-deps}"
out="$build_dir/worker-deps-test"
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() {
  [ "${BENCHFLEET_REQUIRE_WORKER_DEPS:-}" = 1 ] && fail "$* (BENCHFLEET_REQUIRE_WORKER_DEPS=1)"
  echo "SKIP: $*"
  exit 77
}

command -v bwrap >/dev/null 2>&1 || skip "bwrap not found (Debian package bubblewrap; scripts/install-deps.sh installs it)"
bwrap --dev-bind / / true 2>/dev/null || skip "bwrap cannot make a sandbox here (user namespaces not allowed?)"

echo "== scripts/worker-deps.sh --out $deps"
start=$SECONDS
status=0
"$src/scripts/worker-deps.sh" --out "$deps" || status=$?
[ "$status" = 3 ] && skip "Debian's archive could not be reached and $deps holds no worker dependencies"
[ "$status" = 0 ] || fail "scripts/worker-deps.sh exited with $status"
echo "worker-deps: $((SECONDS - start)) s"
# A second run finds the folder current and leaves it alone, without apt.
again="$("$src/scripts/worker-deps.sh" --out "$deps" 2>&1)" || fail "scripts/worker-deps.sh failed on a current folder"
grep -q '^worker-deps: current' <<<"$again" || fail "a current folder was not recognised: $again"
"$src/scripts/worker-deps.sh" --out "$deps" --check 2>/dev/null || fail "--check says the folder is not current"

# The sandbox hides every copy of the two header-only packages and of OpenSSL that this machine
# has (the ones that exist: bwrap would create missing mount points on the host's /).
hide=()
for path in /usr/include/nlohmann /usr/include/CLI /usr/include/openssl /usr/include/x86_64-linux-gnu/openssl \
            /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 /usr/lib/cmake/nlohmann_json /usr/lib/cmake/CLI11 \
            /usr/lib/x86_64-linux-gnu/cmake/nlohmann_json /usr/lib/x86_64-linux-gnu/cmake/OpenSSL; do
  [ -d "$path" ] && hide+=(--tmpfs "$path")
done
bwrap --dev-bind / / "${hide[@]}" test ! -e /usr/include/nlohmann/json.hpp -a ! -e /usr/include/openssl/evp.h ||
  fail "the sandbox does not hide the system's headers"

echo "== scripts/build-worker.sh --python $python --deps $deps --out $out (in the sandbox)"
rm -rf "$out"
start=$SECONDS
bwrap --dev-bind / / "${hide[@]}" --die-with-parent -- \
  "$src/scripts/build-worker.sh" --python "$python" --deps "$deps" --out "$out" ||
  fail "the worker did not build against $deps with the system's copies hidden (logs: $out/configure.log, $out/build.log)"
echo "build-worker: $((SECONDS - start)) s"

# The packages' configs were the folder's, and so were the include directories they name.
cache="$out/build/CMakeCache.txt"
grep -qxF "nlohmann_json_DIR:PATH=$deps/usr/share/cmake/nlohmann_json" "$cache" || fail "nlohmann_json_DIR: $(grep nlohmann_json_DIR "$cache")"
grep -qxF "CLI11_DIR:PATH=$deps/usr/share/cmake/CLI11" "$cache" || fail "CLI11_DIR: $(grep CLI11_DIR "$cache")"
grep -qF "$deps/usr/include" "$out/build/compile_commands.json" || fail "the compile commands do not use $deps/usr/include"
! grep -qi openssl "$cache" || fail "CMake looked for OpenSSL: $(grep -i openssl "$cache" | head -3)"

worker="$out/bin/benchfleet-worker"
needed="$(readelf -d "$worker" | grep NEEDED || true)"
! grep -qE 'libcrypto|libssl' <<<"$needed" || fail "the worker links OpenSSL: $needed"
caps="$("$worker" --capabilities)" || fail "$worker --capabilities failed"
torch_version="$("$python" -c 'import json, sys; print(json.load(sys.stdin)["torch_version"])' <<<"$caps")" ||
  fail "--capabilities did not answer a JSON object with torch_version: $caps"
echo "worker: $worker (LibTorch $torch_version)"
echo "worker_deps: ok"
