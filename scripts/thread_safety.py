#!/usr/bin/env python3
"""Clang's thread-safety analysis over the store's units and the others that use its annotations
(common/thread_safety.h):
each compiled with clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety and the unit's own
flags from the build's compile_commands.json. Then the misuse probe
(tests/thread_safety/misuse_probe.cpp), which must fail with each error its `// expect:` lines
name, so a check that silently checks nothing fails too. The default build is g++, which ignores
the annotations: this is where they are enforced. Exit status 1 on a finding, 2 on bad usage.

  scripts/thread_safety.py BUILD_DIR [--jobs N] [--clang PROGRAM]
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import subprocess
import sys

from compile_units import program_units

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = "tests/thread_safety/misuse_probe.cpp"
ANNOTATED = re.compile(r'BF_(REQUIRES|GUARDED_BY|EXCLUDES|ACQUIRE|RELEASE)\b|#include "common/thread_safety\.h"'
                       r'|#include "coordinator/store/store_core\.h"')
FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety", "-Wno-unknown-warning-option"]


def clang_command(entry, clang, source):
    """The unit's command with clang in place of the compiler, no output file, `source` compiled."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c"):
            skip = a == "-o"
            continue
        if os.path.realpath(os.path.join(entry["directory"], a)) == os.path.realpath(entry["file"]):
            continue
        out.append(a)
    return out + FLAGS + [source]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clang", default="clang++-14")
    args = parser.parse_args()
    units = program_units(args.build_dir, ("coordinator/", "common/"), "thread-safety")
    if units is None:
        return 2
    units = {rel: e for rel, e in units.items()
             if rel.startswith("coordinator/store/")
             or ANNOTATED.search(open(os.path.join(ROOT, rel), encoding="utf-8").read())}
    if "coordinator/store/store_core.cpp" not in units:
        print("thread-safety: coordinator/store/store_core.cpp is not in the build's units", file=sys.stderr)
        return 2

    def check(rel):
        r = subprocess.run(clang_command(units[rel], args.clang, os.path.join(ROOT, rel)),
                           cwd=units[rel]["directory"], capture_output=True, text=True)
        return rel, r.returncode, r.stdout + r.stderr

    failed = 0
    print(f"thread-safety: {len(units)} units with annotations", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for rel, rc, output in pool.map(check, sorted(units)):
            if rc != 0:
                failed += 1
                print(f"== {rel}\n{output}", flush=True)

    # The probe: every misuse it shows must be an error.
    probe = os.path.join(ROOT, PROBE)
    expected = re.findall(r"^// expect: (.+)$", open(probe, encoding="utf-8").read(), re.M)
    r = subprocess.run(clang_command(units["coordinator/store/store_core.cpp"], args.clang, probe),
                       cwd=units["coordinator/store/store_core.cpp"]["directory"], capture_output=True, text=True)
    errors = [line for line in r.stderr.splitlines() if "error:" in line]
    for want in sorted(set(expected)):
        have = sum(want in e for e in errors)
        need = expected.count(want)
        if have < need:
            failed += 1
            print(f"== {PROBE}: expected {need} error(s) '{want}', clang gave {have}:\n{r.stderr}", flush=True)
    if r.returncode == 0:
        failed += 1
        print(f"== {PROBE} compiled: the analysis checked nothing", flush=True)
    print(f"thread-safety: {failed} finding(s)" + ("" if failed else f"; the probe's {len(errors)} misuses refused"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
