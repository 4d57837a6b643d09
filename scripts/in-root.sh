#!/usr/bin/env bash
# Runs a command inside a torch build's root filesystem (scripts/torch-root.sh makes one) the way
# the agent runs that build's exporter, runner and worker: bubblewrap with the root read-only at
# /, a fresh /proc and /dev, a private /tmp, HOME=/tmp, and the given host directories visible at
# the same paths. The process stays in the caller's process group, so a kill of the group reaches
# it. bubblewrap reports a command killed by signal N as exit 128+N.
#   scripts/in-root.sh ROOT [--bind DIR]... [--ro-bind DIR]... [--chdir DIR] -- COMMAND [ARG]...
set -euo pipefail
usage() { echo "usage: in-root.sh ROOT [--bind DIR]... [--ro-bind DIR]... [--chdir DIR] -- COMMAND [ARG]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
root="$1"; shift
[ -x "$root/usr/bin/env" ] || { echo "in-root: $root is not a root filesystem" >&2; exit 1; }
command -v bwrap >/dev/null 2>&1 || { echo "in-root: bubblewrap is missing (apt-get install bubblewrap)" >&2; exit 1; }
args=(--ro-bind "$root" / --dev /dev --proc /proc --tmpfs /tmp --setenv HOME /tmp
      --unsetenv LD_LIBRARY_PATH --unsetenv LD_PRELOAD --unsetenv PYTHONPATH --unsetenv PYTHONHOME
      --setenv PATH /usr/local/bin:/usr/bin:/bin)
chdir=/
while [ $# -gt 0 ]; do
  case "$1" in
    --bind) mkdir -p "$2"; args+=(--bind "$2" "$2"); shift 2 ;;
    --ro-bind) args+=(--ro-bind "$2" "$2"); shift 2 ;;
    --chdir) chdir="$2"; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -ge 1 ] || usage
exec bwrap "${args[@]}" --chdir "$chdir" -- "$@"
