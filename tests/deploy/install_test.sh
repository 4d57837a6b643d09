#!/usr/bin/env bash
# deploy_install: `cmake --install` of this build lays out a complete release, and the installed
# programs use it, not the build machine's trees.
#  1. Install into a scratch prefix (outside the build tree) with BENCHFLEET_RELEASE_VERSION set:
#     bin/ has every program this build made; share/benchfleet/ has the dashboard, the catalog,
#     every agent/python/benchfleet_*.py and beside them rules/ (common/rules/*.json), in-root.sh and
#     build-worker.sh (executable), VERSION, the worker's sources in src/ (the top CMakeLists.txt,
#     cmake/TorchApi.cmake and cmake/EmbedFiles*.cmake, common/,
#     agent/worker/, equal to the source tree's), and SOURCE_ID equal to the digest releases have
#     always carried (find | sort | sha256sum, below), which the agent role keys built workers on.
#  2. Install again without the variable over a stale file in src/: VERSION is the project's,
#     the stale file is gone and SOURCE_ID unchanged.
#  3. The installed coordinator, started with no catalog or web_root set, logs the prefix's
#     catalog and web root and serves the dashboard; with those removed from the prefix it names
#     the prefix's paths (fails without a catalog, warns without a web root) instead of falling
#     back to the source or build tree.
#  4. ansible/build-release.sh twice with the same version: byte-identical archives holding one
#     top-level directory benchfleet-<version>-linux-<arch>.
#   install_test.sh BUILD_DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: install_test.sh BUILD_DIR" >&2; exit 2; }
build_dir="$(cd "$1" && pwd)"
root="$(cd "$(dirname "$0")/../.." && pwd)"
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 not found"; exit 77; }
scratch="$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-install.XXXXXX")"
coordinator_pid=""
cleanup() {
  if [ -n "$coordinator_pid" ]; then kill -TERM "$coordinator_pid" 2>/dev/null || true; wait "$coordinator_pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
fail() { echo "deploy_install: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
case "$scratch/" in "$build_dir"/*) fail "the scratch prefix $scratch lies inside the build tree" ;; esac

prefix="$scratch/prefix"
share="$prefix/share/benchfleet"
source_id() {  # the SOURCE_ID formula of the releases made before cmake --install computed it
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

step "cmake --install $build_dir --prefix $prefix (BENCHFLEET_RELEASE_VERSION=7.7.7-installtest)"
BENCHFLEET_RELEASE_VERSION=7.7.7-installtest cmake --install "$build_dir" --prefix "$prefix" >"$scratch/install1.log" ||
  { cat "$scratch/install1.log"; fail "cmake --install failed"; }
for program in coordinator/benchfleet-coordinator agent/daemon/benchfleet-agent agent/worker/benchfleet-worker cli/benchfleet; do
  if [ -x "$build_dir/$program" ]; then
    [ -x "$prefix/bin/$(basename "$program")" ] || fail "bin/$(basename "$program") is not installed"
  elif [ "$(basename "$program")" != benchfleet-worker ]; then
    fail "$build_dir/$program is missing: build first"
  else
    echo "note: this build has no worker (no LibTorch), so neither has the prefix"
  fi
done
[ -f "$share/web/index.html" ] || fail "the dashboard (share/benchfleet/web/index.html) is not installed"
cmp -s "$root/common/catalog/models.yaml" "$share/catalog/models.yaml" || fail "share/benchfleet/catalog/models.yaml differs or is missing"
modules=0
for module in "$root"/agent/python/benchfleet_*.py; do
  cmp -s "$module" "$share/$(basename "$module")" || fail "share/benchfleet/$(basename "$module") differs or is missing"
  modules=$((modules + 1))
done
[ "$modules" -gt 0 ] && [ -f "$share/benchfleet_export.py" ] || fail "the agent's exporter is not installed"
diff -r "$root/common/rules" "$share/rules" >/dev/null || fail "share/benchfleet/rules differs from common/rules/"
for script in in-root.sh build-worker.sh; do
  [ -x "$share/$script" ] && cmp -s "$root/scripts/$script" "$share/$script" || fail "share/benchfleet/$script differs or is not executable"
done
[ "$(cat "$share/VERSION")" = 7.7.7-installtest ] || fail "VERSION is '$(cat "$share/VERSION")', not 7.7.7-installtest"
cmp -s "$root/CMakeLists.txt" "$share/src/CMakeLists.txt" || fail "src/CMakeLists.txt differs or is missing"
for file in TorchApi.cmake EmbedFiles.cmake EmbedFilesScript.cmake; do
  cmp -s "$root/cmake/$file" "$share/src/cmake/$file" || fail "src/cmake/$file differs or is missing"
done
diff -r "$root/common" "$share/src/common" >/dev/null || fail "src/common differs from the source tree's common/"
diff -r "$root/agent/worker" "$share/src/agent/worker" >/dev/null || fail "src/agent/worker differs from agent/worker/"
[ "$(ls "$share/src")" = "$(printf 'CMakeLists.txt\nagent\ncmake\ncommon')" ] || fail "src/ holds more than the worker's sources: $(ls "$share/src")"
id="$(source_id "$share/src")"
[ "$(cat "$share/SOURCE_ID")" = "$id" ] || fail "SOURCE_ID is '$(cat "$share/SOURCE_ID")', the sources' digest is $id"
echo "layout complete: $modules python modules, SOURCE_ID $id"

step "install again over a stale source file, without BENCHFLEET_RELEASE_VERSION"
touch "$share/src/common/stale-file.cpp"
env -u BENCHFLEET_RELEASE_VERSION cmake --install "$build_dir" --prefix "$prefix" >"$scratch/install2.log" ||
  { cat "$scratch/install2.log"; fail "the second cmake --install failed"; }
project_version="$(sed -n 's/^project(benchfleet VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
[ "$(cat "$share/VERSION")" = "$project_version" ] || fail "VERSION is '$(cat "$share/VERSION")', not the project's $project_version"
[ ! -e "$share/src/common/stale-file.cpp" ] || fail "a stale file in src/ survived the install"
[ "$(cat "$share/SOURCE_ID")" = "$id" ] || fail "SOURCE_ID changed to $(cat "$share/SOURCE_ID") on a second install"

# start_coordinator NAME: the installed coordinator with the defaults for catalog and web_root, in
# $scratch/NAME (cwd, db, port file, log). Returns once it listens (0) or exits (its status).
start_coordinator() {
  local dir="$scratch/$1"
  mkdir -p "$dir"
  (cd "$dir" && exec env -u BENCHFLEET_CONFIG -u BENCHFLEET_CATALOG -u BENCHFLEET_WEB_ROOT "$prefix/bin/benchfleet-coordinator" \
     --listen 127.0.0.1:0 --db "$dir/db" --port-file "$dir/port" >"$dir/log" 2>&1) &
  coordinator_pid=$!
  for _ in $(seq 1 100); do
    [ -s "$dir/port" ] && return 0
    if ! kill -0 "$coordinator_pid" 2>/dev/null; then
      local rc=0
      wait "$coordinator_pid" || rc=$?
      coordinator_pid=""
      return "$rc"
    fi
    sleep 0.1
  done
  cat "$dir/log"
  fail "the installed coordinator did not start listening in 10 s"
}
stop_coordinator() {
  kill -TERM "$coordinator_pid"
  wait "$coordinator_pid" || true
  coordinator_pid=""
}

step "the installed coordinator uses the prefix's catalog and web root"
start_coordinator run1 || { cat "$scratch/run1/log"; fail "the installed coordinator did not start"; }
grep -F "catalog=$share/catalog/models.yaml " "$scratch/run1/log" >/dev/null ||
  { cat "$scratch/run1/log"; fail "the coordinator did not load the installed catalog"; }
grep -F "/ from $share/web" "$scratch/run1/log" >/dev/null ||
  { cat "$scratch/run1/log"; fail "the coordinator does not serve the installed web root"; }
python3 - "$(cat "$scratch/run1/port")" <<'PY' || fail "GET / did not answer the installed dashboard"
import sys, urllib.request
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/", timeout=10).read().decode()
assert "<html" in body.lower(), body[:200]
PY
stop_coordinator
grep -E "catalog=|from " "$scratch/run1/log" | sed 's/^/  /'

step "without them in the prefix it names the prefix's paths (no fallback to $root)"
mv "$share/web" "$share/web.away"
start_coordinator run2 || { cat "$scratch/run2/log"; fail "the coordinator did not start without a web root"; }
stop_coordinator
grep -F "web_root $share/web is not a directory" "$scratch/run2/log" >/dev/null ||
  { cat "$scratch/run2/log"; fail "without share/benchfleet/web the coordinator did not name it"; }
mv "$share/catalog/models.yaml" "$share/catalog/models.yaml.away"
rc=0
start_coordinator run3 || rc=$?
[ "$rc" -ne 0 ] || { stop_coordinator; cat "$scratch/run3/log"; fail "the coordinator started without the installed catalog"; }
grep -F "$share/catalog/models.yaml" "$scratch/run3/log" >/dev/null ||
  { cat "$scratch/run3/log"; fail "without the installed catalog the coordinator did not name its path"; }
if grep -F -e "$root/common/catalog" -e "$build_dir/web" "$scratch/run2/log" "$scratch/run3/log"; then
  fail "the installed coordinator reached for the source or build tree"
fi
sed 's/^/  /' "$scratch/run3/log" | tail -n 1

step "ansible/build-release.sh twice: byte-identical archives"
if [ -x "$build_dir/agent/worker/benchfleet-worker" ]; then
  a="$("$root/ansible/build-release.sh" --build-dir "$build_dir" --out-dir "$scratch/release-a" --version 7.7.7-installtest)"
  b="$("$root/ansible/build-release.sh" --build-dir "$build_dir" --out-dir "$scratch/release-b" --version 7.7.7-installtest)"
  name="benchfleet-7.7.7-installtest-linux-$(uname -m)"
  [ "$(basename "$a")" = "$name.tar.gz" ] || fail "the archive is named $(basename "$a"), not $name.tar.gz"
  cmp "$a" "$b" || fail "two archives of the same build differ"
  [ "$(tar -tzf "$a" | cut -d/ -f1 | sort -u)" = "$name" ] || fail "the archive does not hold one top-level $name/"
  tar -xzf "$a" -C "$scratch"
  [ "$(cat "$scratch/$name/share/benchfleet/VERSION")" = 7.7.7-installtest ] || fail "the archive's VERSION is wrong"
  [ "$(cat "$scratch/$name/share/benchfleet/SOURCE_ID")" = "$id" ] || fail "the archive's SOURCE_ID is wrong"
  echo "$name.tar.gz: $(stat -c %s "$a") bytes, twice the same"
else
  echo "note: no worker in this build, build-release.sh refuses it; not run"
fi
echo "deploy_install: ok"
