#!/usr/bin/env bash
# The coordinator's layers are kept by the build: a file compiled with a layer's include
# directories can include that layer's headers and not those of the layer above it.
#   tests/scripts/layer_includes.sh CXX 'NAME|DIRS|OWN_HEADER|HEADER_ABOVE' ...
# DIRS: the layer library's include directories, ':'-separated. Each case compiles a one-line file
# twice: including OWN_HEADER must compile, including HEADER_ABOVE must fail with "No such file".
set -euo pipefail
cxx="$1"
shift
failures=0
for case in "$@"; do
  IFS='|' read -r name dirs own above <<<"$case"
  flags=(-std=c++20 -fsyntax-only -x c++)
  IFS=':' read -ra ds <<<"$dirs"
  for d in "${ds[@]}"; do [ -n "$d" ] && flags+=("-I$d"); done
  if ! out=$(printf '#include "%s"\n' "$own" | "$cxx" "${flags[@]}" - 2>&1); then
    echo "FAIL $name: its own header $own does not compile:"
    echo "$out" | head -5
    failures=$((failures + 1))
  elif out=$(printf '#include "%s"\n' "$above" | "$cxx" "${flags[@]}" - 2>&1); then
    echo "FAIL $name: $above, a layer above, compiles"
    failures=$((failures + 1))
  elif ! grep -q "No such file" <<<"$out"; then
    echo "FAIL $name: $above fails for another reason than being out of sight:"
    echo "$out" | head -5
    failures=$((failures + 1))
  else
    echo "ok   $name: includes $own; $above is out of sight"
  fi
done
exit $((failures > 0))
