#!/usr/bin/env bash
# Runs a command inside a torch build's root filesystem (scripts/torch-root.sh makes one). The agent
# runs a rooted build's exporter, runner and worker through this script, and so do the worker build
# and the tests: one definition of what a job sees.
#   scripts/in-root.sh ROOT [--bind DIR]... [--ro-bind DIR]... [--dev-bind PATH]... [--chdir DIR]
#                      [--setenv NAME VALUE]... -- COMMAND [ARG]...
# The command sees, through bubblewrap:
#   - the root's files read-only at / (nothing a job does changes the root, so its identity holds);
#   - a fresh /proc, a minimal /dev, the host's /sys read-only, a private /tmp and /run (tmpfs),
#     HOME=/tmp, PATH of the root, no LD_LIBRARY_PATH/LD_PRELOAD/PYTHONPATH/PYTHONHOME from outside;
#   - each --bind (read-write) and --ro-bind host directory at the same path, even where that path
#     does not exist in the root (e.g. /var/lib/benchfleet-agent): the root is assembled on a tmpfs
#     from its top-level entries, descending only where a bound path needs a directory the root lacks;
#   - each --dev-bind host device (a GPU host would pass /dev/nvidia0, /dev/nvidiactl, ...).
# It stays in the caller's process group (a kill of the group reaches it) and dies with its
# caller. bubblewrap reports a command killed by signal N as exit status 128+N.
set -euo pipefail
usage() {
  echo "usage: in-root.sh ROOT [--bind DIR]... [--ro-bind DIR]... [--dev-bind PATH]... [--chdir DIR] [--setenv NAME VALUE]... -- COMMAND [ARG]..." >&2
  exit 2
}
[ $# -ge 1 ] || usage
root="${1%/}"; shift
[ -d "$root/usr/bin" ] && [ -e "$root/usr/bin/env" ] || { echo "in-root: $root is not a root filesystem (no usr/bin/env)" >&2; exit 1; }
command -v bwrap >/dev/null 2>&1 || { echo "in-root: bubblewrap is missing (apt-get install bubblewrap)" >&2; exit 1; }

host_mounts=()   # bwrap arguments for the host paths, applied after the root is assembled
bound=()         # the host paths, to know where the root's tree must be split
chdir=/
envs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bind|--ro-bind)
      [ $# -ge 2 ] || usage
      mkdir -p "$2"
      path="$(cd "$2" && pwd -P)"
      host_mounts+=("$1" "$path" "$path"); bound+=("$path"); shift 2 ;;
    --dev-bind)
      [ $# -ge 2 ] || usage
      host_mounts+=(--dev-bind "$2" "$2"); bound+=("$2"); shift 2 ;;
    --chdir) [ $# -ge 2 ] || usage; chdir="$2"; shift 2 ;;
    --setenv) [ $# -ge 3 ] || usage; envs+=(--setenv "$2" "$3"); shift 3 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -ge 1 ] || usage

# True when a bound host path lies strictly below $1 (so $1 must be a directory of its own on the
# tmpfs, with the root's entries bound one by one, rather than one read-only bind).
contains_bound() {
  local dir="$1" p
  for p in "${bound[@]}"; do
    case "$p" in "$dir"/*) return 0 ;; esac
  done
  return 1
}
# True when $1 is itself a bound host path (the host's directory replaces the root's).
is_bound() {
  local p
  for p in "${bound[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}

args=(--tmpfs / --dev /dev --proc /proc --ro-bind /sys /sys --tmpfs /tmp --tmpfs /run)
# Mirrors $root$1 at $1 (a directory already present in the new root).
mirror_dir() {
  local dir="$1" entry name dest
  for entry in "$root$dir"/* "$root$dir"/.[!.]*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    name="${entry##*/}"
    dest="${dir%/}/$name"
    case "$dest" in /proc|/dev|/sys|/tmp|/run) continue ;; esac
    is_bound "$dest" && continue
    if [ -L "$entry" ]; then
      args+=(--symlink "$(readlink "$entry")" "$dest")
    elif [ -d "$entry" ] && contains_bound "$dest"; then
      args+=(--dir "$dest")
      mirror_dir "$dest"
    else
      args+=(--ro-bind "$entry" "$dest")
    fi
  done
}
mirror_dir ""

exec bwrap "${args[@]}" "${host_mounts[@]}" --die-with-parent \
  --setenv HOME /tmp --setenv PATH /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --unsetenv LD_LIBRARY_PATH --unsetenv LD_PRELOAD --unsetenv PYTHONPATH --unsetenv PYTHONHOME \
  "${envs[@]}" --chdir "$chdir" -- "$@"
