#!/usr/bin/env bash
# Unpacks the worker's header-only build dependencies (nlohmann-json3-dev, libcli11-dev: headers
# and CMake package configs) from Debian's archive into a folder, for building benchfleet-worker
# on a host that has a torch build, a compiler and CMake but none of Debian's -dev packages and
# no network (a lent GPU machine with pip's torch): the folder travels there, and
# `scripts/build-worker.sh --deps DIR` builds against it.
#   scripts/worker-deps.sh [--out DIR] [--refresh] [--check]
# --out      the folder (default: .carry/worker-deps in this repository; .carry/ is git-ignored)
# --refresh  download again even if DIR is current (picks up the archive's newer versions)
# --check    only say whether DIR is current (exit 0) or not (exit 1)
# The packages are fetched with `apt-get download` through this machine's apt sources and lists
# (the suite apt already uses; nothing is installed, no root needed) and unpacked with dpkg -x:
# DIR/usr/include/{nlohmann,CLI}, DIR/usr/share/cmake/{nlohmann_json,CLI11} (their configs find
# the headers relative to themselves), DIR/usr/share/doc/*/copyright; DIR/MANIFEST lists
# package=version. Idempotent: a DIR whose MANIFEST names these packages and whose files are there
# is left alone at once, without apt. Unpacked beside DIR and renamed when complete, so an
# interrupted run never leaves a DIR that looks current. Prints DIR.
# Exit status: 0 done, 1 an error (named), 2 usage, 3 Debian's archive could not be reached.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
packages=(nlohmann-json3-dev libcli11-dev)
out="$here/../.carry/worker-deps"
refresh=0
check=0
usage="usage: worker-deps.sh [--out DIR] [--refresh] [--check]"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; out="$2"; shift 2 ;;
    --refresh) refresh=1; shift ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
die() { echo "worker-deps: $*" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

# Current: the MANIFEST names exactly these packages and what the build needs is there.
wanted_names="$(printf '%s\n' "${packages[@]}" | LC_ALL=C sort)"
current() {
  [ -f "$out/MANIFEST" ] &&
    [ "$(sed 's/=.*//' "$out/MANIFEST" | LC_ALL=C sort)" = "$wanted_names" ] &&
    [ -f "$out/usr/include/nlohmann/json.hpp" ] && [ -f "$out/usr/include/CLI/CLI.hpp" ] &&
    [ -f "$out/usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake" ] &&
    [ -f "$out/usr/share/cmake/CLI11/CLI11Config.cmake" ]
}
if [ "$check" = 1 ]; then
  if current; then echo "worker-deps: current: $out ($(tr '\n' ' ' <"$out/MANIFEST"| sed 's/ $//'))" >&2; exit 0; fi
  echo "worker-deps: missing or incomplete: $out" >&2; exit 1
fi
if [ "$refresh" = 0 ] && current; then
  echo "worker-deps: current: $(tr '\n' ' ' <"$out/MANIFEST" | sed 's/ $//')" >&2
  echo "$out"
  exit 0
fi

for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: this script needs Debian's apt (run it on a Debian machine and copy $out)"
done
work="$(mktemp -d)"
staging=""
trap 'rm -rf "$work" ${staging:+"$staging"}' EXIT
mkdir -p "$work/debs"
# apt-get download writes into the current directory; as root it also needs the _apt sandbox
# off (the temporary directory is not the _apt user's).
apt_opts=()
[ "$(id -u)" = 0 ] && apt_opts=(-o APT::Sandbox::User=root)
echo "worker-deps: downloading ${packages[*]} with apt-get" >&2
if ! (cd "$work/debs" && apt-get "${apt_opts[@]}" download "${packages[@]}") >"$work/apt.log" 2>&1; then
  cat "$work/apt.log" >&2
  if grep -qE "Unable to locate package|has no installation candidate|Can't select candidate|Can't find a source to download" "$work/apt.log"; then
    die "apt does not know ${packages[*]}: its package lists are missing or out of date (run apt-get update as root, then this again)"
  fi
  if grep -qE "Failed to fetch|Could not resolve|Temporary failure resolving|Could not connect|Unable to connect|Connection failed|Network is unreachable" "$work/apt.log"; then
    echo "worker-deps: Debian's archive could not be reached (see apt's messages above); $out is unchanged" >&2
    exit 3
  fi
  die "apt-get download ${packages[*]} failed (see apt's messages above)"
fi

parent="$(dirname "$out")"
staging="$(mktemp -d "$parent/.worker-deps.XXXXXX")"
: >"$staging/MANIFEST"
for package in "${packages[@]}"; do
  debs=("$work/debs/${package}"_*.deb)
  deb="${debs[0]}"
  [ -f "$deb" ] || die "apt-get download left no .deb for $package"
  dpkg-deb -x "$deb" "$staging" || die "dpkg-deb -x $deb failed"
  echo "$package=$(dpkg-deb --field "$deb" Version)" >>"$staging/MANIFEST"
done
rm -rf "$staging"/usr/share/doc/*/examples  # nlohmann-json's 1.7 MB of examples
chmod 755 "$staging"
rm -rf "$out"
mv "$staging" "$out"
staging=""
current || die "the packages unpacked into $out lack the headers or CMake configs expected"
echo "worker-deps: unpacked $(tr '\n' ' ' <"$out/MANIFEST" | sed 's/ $//') into $out" >&2
echo "$out"
