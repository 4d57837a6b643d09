#!/usr/bin/env python3
"""Runs clang-tidy (.clang-tidy) over the programs' translation units in a build's
compile_commands.json, in parallel, and remembers clean results: a unit is checked again only
when its command, the configuration or one of its files inside the repository changed (paths are
taken relative to the repository, so another clone of the same sources shares the results) (Ninja's
record of the build's dependencies lists them; a unit not built yet is always checked).
Cache: $BENCHFLEET_CACHE or ~/.cache/benchfleet, folder clang-tidy. Exit status 1 when any unit
has a finding (printed), 2 on bad usage.

--changed-since REV checks only the units a change since REV can affect: those compiled from a
file that differs between REV and the working tree (committed, staged, unstaged or untracked),
by Ninja's record of each unit's files; a unit not built yet counts when its own source changed.
Every unit costs 10-30 s of a core (its headers parsed, about 80 checks matched over them), so a
whole pass is minutes on a small machine with no results remembered; the change's units are what
a change needs checked, and the whole pass is run apart (ctest -L tidy_full).

  scripts/tidy.py BUILD_DIR [--jobs N] [--clang-tidy PROGRAM] [--changed-since REV] [PATH_PREFIX...]
"""
import argparse
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys

from compile_units import program_units

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PREFIXES = ("coordinator/", "common/", "agent/", "cli/", "slurm/")
# Units clang cannot parse, with the reason.
EXCLUDED = {
    "agent/worker/memory.cpp": "LibTorch 1.13's ATen/core/ivalue_inl.h does not compile under clang-14 here",
}


def ninja_deps(build_dir):
    """Object file -> the files it was compiled from, as Ninja recorded them (.ninja_deps);
    {} when the build is not Ninja's."""
    r = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], capture_output=True, text=True)
    deps, current = {}, None
    for line in r.stdout.splitlines() if r.returncode == 0 else []:
        if line and not line[0].isspace():
            current = line.split(":", 1)[0]
            deps[current] = []
        elif line.strip() and current is not None:
            deps[current].append(line.strip())
    return deps


def depfile_paths(entry, deps):
    """Files inside the repository the unit was compiled from; None when not known."""
    m = re.search(r"-o\s+(\S+)", entry.get("command", ""))
    if not m or m.group(1) not in deps:
        return None
    inside = sorted({os.path.realpath(p if os.path.isabs(p) else os.path.join(entry["directory"], p))
                     for p in deps[m.group(1)]})
    return [p for p in inside if p.startswith(ROOT + os.sep) and "/build/" not in p[len(ROOT):]]


def changed_files(rev):
    """Paths (relative to the repository) that differ between REV and the working tree, untracked
    files included; None when REV is not a commit here."""
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    if git("rev-parse", "--verify", "--quiet", rev + "^{commit}").returncode != 0:
        return None
    diff = git("diff", "--name-only", rev, "--")
    untracked = git("ls-files", "--others", "--exclude-standard")
    return {line for line in (diff.stdout + untracked.stdout).splitlines() if line}


def affected(rel, entry, deps, changed):
    """Whether a change to `changed` can alter what clang-tidy says of the unit `rel`."""
    if rel in changed:
        return True
    files = depfile_paths(entry, deps)
    return files is not None and any(os.path.relpath(p, ROOT) in changed for p in files)


def unit_key(entry, config, deps):
    """The unit's command and files, with the repository's own path left out, so a clean result
    from one clone counts for another clone elsewhere (CI's fresh clone)."""
    h = hashlib.sha256()
    h.update(config)
    h.update(entry.get("command", " ".join(entry.get("arguments", []))).replace(ROOT, "@ROOT@").encode())
    files = depfile_paths(entry, deps)
    if files is None:
        return None  # not built yet: always check
    for path in files:
        h.update(os.path.relpath(path, ROOT).encode())
        try:
            h.update(open(path, "rb").read())
        except OSError:
            return None
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("prefixes", nargs="*", default=list(DEFAULT_PREFIXES))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clang-tidy", default="clang-tidy-14")
    parser.add_argument("--changed-since", metavar="REV",
                        help="check only the units a change since this commit can affect")
    args = parser.parse_args()

    units = program_units(args.build_dir, args.prefixes, "tidy")
    if units is None:
        return 2
    entries = {rel: e for rel, e in units.items() if rel not in EXCLUDED}
    config = open(os.path.join(ROOT, ".clang-tidy"), "rb").read()
    version = subprocess.run([args.clang_tidy, "--version"], capture_output=True, text=True).stdout
    config += version.encode()
    cache = os.path.join(os.environ.get("BENCHFLEET_CACHE", os.path.expanduser("~/.cache/benchfleet")), "clang-tidy")
    os.makedirs(cache, exist_ok=True)

    deps = ninja_deps(args.build_dir)
    scope = ""
    if args.changed_since:
        changed = changed_files(args.changed_since)
        if changed is None:
            print(f"tidy: --changed-since {args.changed_since}: not a commit of this repository", file=sys.stderr)
            return 2
        # A changed configuration changes every unit's verdict.
        if ".clang-tidy" not in changed:
            entries = {rel: e for rel, e in entries.items() if affected(rel, e, deps, changed)}
        scope = f" affected by the {len(changed)} file(s) changed since {args.changed_since}"
    todo = []
    for rel, e in sorted(entries.items()):
        key = unit_key(e, config, deps)
        if key and os.path.exists(os.path.join(cache, key)):
            continue
        todo.append((rel, key))

    def check(item):
        rel, key = item
        r = subprocess.run([args.clang_tidy, "-p", args.build_dir, "--quiet", os.path.join(ROOT, rel)],
                           capture_output=True, text=True)
        findings = [line for line in (r.stdout + r.stderr).splitlines()
                    if re.search(r"(warning|error):", line) or line.startswith(" ")]
        clean = r.returncode == 0 and not any(re.search(r"(warning|error):", f) for f in findings)
        if clean and key:
            open(os.path.join(cache, key), "w").close()
        return rel, clean, r.stdout + r.stderr

    failed = 0
    print(f"tidy: {len(entries)} units{scope}, {len(entries) - len(todo)} unchanged since a clean check, "
          f"{len(todo)} to check", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for rel, clean, output in pool.map(check, todo):
            if not clean:
                failed += 1
                print(f"== {rel}\n{output}", flush=True)
    print(f"tidy: {failed} unit(s) with findings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
