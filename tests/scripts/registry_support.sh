# Sourced by the script tests that fetch from an npm registry (chart_js_only_test.sh,
# node_toolchain_test.sh): a registry of the test's own, served on loopback, and npm's integrity
# string of a file. Not a test itself.

# start_registry DIR: serves DIR over HTTP on an ephemeral 127.0.0.1 port; sets $server (its pid,
# for the caller's EXIT trap) and exports BENCHFLEET_NPM_REGISTRY. The port goes through DIR.port.
start_registry() {
  rm -f "$1.port"
  /usr/bin/python3 -c '
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.HTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2], "w") as f:
    f.write(str(server.server_port))
server.serve_forever()
' "$1" "$1.port" 2>/dev/null &
  server=$!
  for _ in $(seq 50); do [ -s "$1.port" ] && break; sleep 0.1; done
  export BENCHFLEET_NPM_REGISTRY="http://127.0.0.1:$(cat "$1.port")"
}

# sri FILE: the file's sha512 as npm's package-lock.json writes an integrity.
sri() {
  /usr/bin/python3 -c 'import base64, hashlib, sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$1"
}
