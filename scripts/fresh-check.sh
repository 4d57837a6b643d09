#!/usr/bin/env bash
# Proves the README's two commands on a fresh machine: makes a new Debian 12 root (mmdebstrap,
# the packages of a Debian 12 server install: priority "important" plus git and ca-certificates,
# with the site's certificate authorities, nothing of this project's), clones this repository into
# it, and runs there, with an empty HOME
# (no ccache, no torch roots, no Inductor, tidy or npm caches), first `scripts/quickstart.sh
# --detach` (then `quickstart.sh stop`), then `scripts/test.sh`, as a newcomer would. Prints each
# phase's time and the commands' own splits; the logs stay under DIR.
#   scripts/fresh-check.sh [--dir DIR] [--only quickstart|test] [--keep] [--mirror URL]
# --dir     where the machine's root is made (default /var/tmp/benchfleet-fresh; made anew)
# --only    run one of the two commands (the test command alone still starts from nothing)
# --keep    leave the root in place afterwards (default: removed when everything passed)
# --mirror  the Debian archive (default: the one apt uses here)
# It shares this host's kernel, network and CPU, nothing else: the quick start's and the suite's
# mounts, cgroups and network namespaces are made inside it as on a real machine. Needs root,
# mmdebstrap and unshare. Took 105 minutes on 2 cores when last measured (quick start 22,
# tests 83; CI's fresh-machine tier runs it).
# Exit status: the first failing command's, 0 when both passed.
set -euo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
dir=/var/tmp/benchfleet-fresh
only=""
keep=0
mirror=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --mirror) mirror="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$only" in ""|quickstart|test) ;; *) echo "fresh-check: --only quickstart|test" >&2; exit 2 ;; esac
say() { echo "fresh-check: $*"; }
die() { echo "fresh-check: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, chroot, mounts)"
for tool in mmdebstrap unshare chroot git; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (apt-get install mmdebstrap util-linux git)"
done
if [ -z "$mirror" ]; then
  mirror="$("$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh")"
fi

root="$dir/root"
logs="$dir/logs"
if [ -e "$dir" ]; then
  for m in $(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m" || true; done
  rm -rf --one-file-system "$dir"
fi
mkdir -p "$dir" "$logs"
phase_t0=$SECONDS
phases=()
phase() {  # phase NAME SECONDS
  phases+=("$(printf '%-34s %6d s' "$1" "$2")")
  say "$1: $2 s"
}

# 1. The machine: Debian 12 as a server install leaves it (priority important: apt, systemd,
# iproute2, procps, ...), with git to clone and the archive's certificates; the same apt sources
# as this host, so both reach the same mirror.
say "making a fresh Debian 12 root in $root from $mirror (log: $logs/mmdebstrap.log)"
t=$SECONDS
mmdebstrap --mode=root --variant=important --components=main --include=git,ca-certificates \
  bookworm "$root" "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  >"$logs/mmdebstrap.log" 2>&1 || { tail -n 20 "$logs/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
phase "fresh Debian 12 root" $((SECONDS - t))

# The site's certificate authorities and npm's setting for them, as every machine provisioned
# here has them (a registry behind a TLS proxy is refused without them); nothing else of the host.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
fi
[ -f /etc/npmrc ] && cp /etc/npmrc "$root/etc/npmrc"

# 2. A clone of this repository's HEAD, as a newcomer's git clone gives it.
git clone --quiet --no-hardlinks "$src" "$root/root/benchfleet"
say "cloned $(git -C "$src" rev-parse --short HEAD) into /root/benchfleet"

# run_inside LOG COMMAND: runs COMMAND (bash) in the root, in a mount namespace of its own with
# the root bound on itself (a chroot's / that is no mount point makes bubblewrap fail: "Failed to
# make / slave"), /proc, /sys (cgroups included), /dev and a fresh /run, so what it mounts goes
# with it;
# CI=true and no stdin, as CI runs it.
run_inside() {
  local log="$1" cmd="$2"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  unshare --mount --propagation private --fork -- /bin/bash -c '
    set -e
    r="$1"; shift
    mount --bind "$r" "$r"  # its / a mount point, as a machine'"'"'s is (bubblewrap makes it a slave)
    mount -t proc proc "$r/proc"
    mount --rbind /sys "$r/sys"; mount --make-rslave "$r/sys"
    mount --rbind /dev "$r/dev"; mount --make-rslave "$r/dev"
    mount -t tmpfs tmpfs "$r/run"
    exec chroot "$r" /usr/bin/env -i HOME=/root USER=root LOGNAME=root TERM=dumb CI=true \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      /bin/bash -c "cd /root/benchfleet && $1"
  ' fresh-check "$root" "$cmd" </dev/null >"$log" 2>&1
}

# command_phase NAME LOG SUMMARY FAILURES COMMAND: runs one README command in the root, timed;
# prints the lines of its log matching SUMMARY, and on failure those matching FAILURES (else its
# tail).
status=0
command_phase() {
  local name="$1" log="$2" summary="$3" failures="$4" cmd="$5" t=$SECONDS rc=0
  say "running $name in it (log: $log)"
  run_inside "$log" "$cmd" || rc=$?
  phase "$name" $((SECONDS - t))
  grep -E "$summary" "$log" | sed 's/^/  /' || true
  if [ "$rc" -ne 0 ]; then
    { grep -E "$failures" "$log" || tail -n 30 "$log"; } | sed 's/^/  /' >&2
    say "$name failed (exit $rc)"
    status=$rc
  fi
}
if [ "$only" != test ]; then
  command_phase "scripts/quickstart.sh" "$logs/quickstart.log" '^(Timings|quickstart: (root|the .* root))' '^quickstart: ' \
    'scripts/quickstart.sh --detach; rc=$?; scripts/quickstart.sh stop; exit $rc'
fi
if [ "$only" != quickstart ] && [ "$status" -eq 0 ]; then
  command_phase "scripts/test.sh" "$logs/test.log" '^test: .* [0-9]+ s|tests passed|tests failed' \
    '\*\*\*Failed|\(Failed\)|\(Timeout\)' 'scripts/test.sh'
fi

echo
say "CPU: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1), $(nproc) cores, vector ISA: $(
  grep -qw avx512f /proc/cpuinfo && echo AVX-512 || { grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo none; })"
for p in "${phases[@]}"; do echo "  $p"; done
echo "  $(printf '%-34s %6d s' "in all" $((SECONDS - phase_t0)))"
if [ "$status" -eq 0 ] && [ "$keep" = 0 ]; then
  rm -rf --one-file-system "$dir"
else
  say "the root and logs stay in $dir"
fi
exit "$status"
