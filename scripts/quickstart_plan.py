#!/usr/bin/python3
"""The quick start's order of runs: which part of which matrix runs next, given its roots.

A matrix names torch builds; `stable` lives in the Debian 13 root and `unstable` in the Debian
unstable root, which the quick start makes in the background (each is pending, ready, or none:
not wanted, or it could not be made). Each matrix runs in the order given, and a matrix's builds
whose roots are ready run as soon as they are, without waiting for the others: the unstable
build's cells when the unstable root is ready, the stable build's when its root follows (a run of
their own, with `submit --builds`). A build whose root is none is left out, said; a matrix left
with no build is skipped. Builds of no root (debian12, or a name the coordinator's fleet check will
judge) count as ready.

The plan lives in a JSON file, so the shell loop of scripts/quickstart.sh keeps no arrays:
  quickstart_plan.py PLAN init MATRIX...          the matrices' builds, in this order
  quickstart_plan.py PLAN next ROOT=STATE...      prints one line:
        run FILE BUILDS PARTIAL   run FILE's BUILDS (comma-separated); PARTIAL 1 when the matrix
                                  has other builds (so submit --builds), else 0
        wait FILES                a matrix's builds are all pending
        done                      nothing left
      and, before it, a "skip FILE: why" or "drop FILE BUILD: why" line per build left out
      (ROOT is trixie or sid; a root not given counts as none)
  quickstart_plan.py PLAN ran FILE BUILDS RUN_ID  records the run; when it ends a matrix that ran
        in parts whose builds are stable and unstable, prints "compare STABLE_RUN UNSTABLE_RUN"
"""
import json
import sys

import yaml

ROOT_OF_BUILD = {"stable": "trixie", "unstable": "sid"}


def matrix_builds(path):
    """The matrix's torch builds, in its order; [] when the file cannot be read (submit says why)."""
    try:
        with open(path, encoding="utf-8") as f:
            builds = (yaml.safe_load(f) or {}).get("torch_builds") or []
    except (OSError, yaml.YAMLError, AttributeError):
        return []
    return [str(b) for b in builds] if isinstance(builds, list) else []


def load(plan_path):
    with open(plan_path, encoding="utf-8") as f:
        return json.load(f)


def save(plan_path, plan):
    with open(plan_path, "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=1)


def parse_roots(args):
    roots = {}
    for arg in args:
        name, sep, state = arg.partition("=")
        if not sep or state not in ("pending", "ready", "none"):
            raise SystemExit(f"quickstart_plan: '{arg}': expected ROOT=pending|ready|none")
        roots[name] = state
    return roots


def state_of(build, roots):
    root = ROOT_OF_BUILD.get(build)
    return "ready" if root is None else roots.get(root, "none")


def next_part(plan, roots):
    """Returns the lines to print; removes what it chose (or dropped) from the plan."""
    lines = []
    waiting = []
    for entry in plan["matrices"]:
        if entry["done"]:
            continue
        for build in [b for b in entry["left"] if state_of(b, roots) == "none"]:
            entry["left"].remove(build)
            lines.append(f"drop {entry['file']} {build}: its root is not there")
        if not entry["left"] and not entry["ran"]:
            entry["done"] = True
            if entry["builds"]:
                lines.append(f"skip {entry['file']}: no torch build it names has a root here")
                continue
            # No builds read from the file: submit it whole and let the coordinator say why.
            lines.append(f"run {entry['file']} - 0")
            return lines
        if not entry["left"]:
            entry["done"] = True
            continue
        ready = [b for b in entry["left"] if state_of(b, roots) == "ready"]
        if not ready:
            waiting.append(entry["file"])
            continue
        partial = 0 if ready == entry["builds"] else 1
        entry["left"] = [b for b in entry["left"] if b not in ready]
        entry["done"] = not entry["left"]
        lines.append(f"run {entry['file']} {','.join(ready)} {partial}")
        return lines
    lines.append(f"wait {' '.join(waiting)}" if waiting else "done")
    return lines


def record_run(plan, file, builds, run_id):
    """Records a run; returns the compare line when it ended a matrix whose stable and unstable parts
    ran apart."""
    for entry in plan["matrices"]:
        if entry["file"] != file:
            continue
        for build in builds.split(","):
            entry["ran"][build] = run_id
        if entry["left"] or not entry["done"]:
            return None
        runs = entry["ran"]
        if {"stable", "unstable"} <= set(runs) and runs["stable"] != runs["unstable"]:
            return f"compare {runs['stable']} {runs['unstable']}"
        return None
    raise SystemExit(f"quickstart_plan: {file} is not in the plan")


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    plan_path, command, args = argv[1], argv[2], argv[3:]
    if command == "init":
        plan = {"matrices": [{"file": f, "builds": matrix_builds(f), "left": matrix_builds(f),
                              "ran": {}, "done": False} for f in args]}
        save(plan_path, plan)
    elif command == "next":
        plan = load(plan_path)
        print("\n".join(next_part(plan, parse_roots(args))))
        save(plan_path, plan)
    elif command == "ran" and len(args) == 3:
        plan = load(plan_path)
        line = record_run(plan, args[0], args[1], int(args[2]))
        save(plan_path, plan)
        if line:
            print(line)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
