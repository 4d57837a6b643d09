#!/usr/bin/python3
"""The quick start's order of runs: which part of which matrix runs next, given its builds' roots.

The quick start makes its builds' roots in the background; each build is pending (its root being
made), ready, or none (not wanted, or its root could not be made). Each matrix runs in the order
given, and a matrix's builds that are ready run as soon as they are, without waiting for the
others (a run of their own, with `submit --builds`): the unstable build's cells when its root is
ready, the stable build's when its root follows. A build that is none is left out, said; a matrix
left with no build is skipped. Builds not named on the command line (debian12, or a name the
coordinator's fleet check will judge) count as ready.

The plan lives in a JSON file, so the shell loop of scripts/quickstart.sh keeps no arrays:
  quickstart_plan.py PLAN init MATRIX...          the matrices' builds, in this order
  quickstart_plan.py PLAN next BUILD=STATE...     prints one line:
        run FILE BUILDS PARTIAL   run FILE's BUILDS (comma-separated); PARTIAL 1 when the matrix
                                  has other builds (so submit --builds), else 0; BUILDS is "-"
                                  for a file whose builds could not be read (submit says why)
        wait FILES                a matrix's builds are all pending
        done                      nothing left
      and, before it, a "skip FILE: why" or "drop FILE BUILD: why" line per build left out
  quickstart_plan.py PLAN ran FILE BUILDS RUN_ID  records the run; when it ends a matrix of two
        builds that ran in two runs, prints "compare RUN_A RUN_B BUILD_A BUILD_B" (the matrix's
        order)
"""
import json
import sys

import yaml

WHOLE = "-"  # the builds of a file that could not be read: it is submitted as it is


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


def parse_states(args):
    states = {}
    for arg in args:
        name, sep, state = arg.partition("=")
        if not sep or state not in ("pending", "ready", "none"):
            raise SystemExit(f"quickstart_plan: '{arg}': expected BUILD=pending|ready|none")
        states[name] = state
    return states


def next_part(plan, states):
    """Returns the lines to print; removes what it chose (or dropped) from the plan."""
    lines = []
    waiting = []
    for entry in plan["matrices"]:
        if not entry["left"]:
            continue
        for build in [b for b in entry["left"] if states.get(b) == "none"]:
            entry["left"].remove(build)
            lines.append(f"drop {entry['file']} {build}: its root is not there")
        if not entry["left"]:
            if not entry["ran"]:
                lines.append(f"skip {entry['file']}: no torch build it names has a root here")
            continue
        ready = [b for b in entry["left"] if states.get(b, "ready") == "ready"]
        if not ready:
            waiting.append(entry["file"])
            continue
        entry["left"] = [b for b in entry["left"] if b not in ready]
        lines.append(f"run {entry['file']} {','.join(ready)} {0 if ready == entry['builds'] else 1}")
        return lines
    lines.append(f"wait {' '.join(waiting)}" if waiting else "done")
    return lines


def record_run(plan, file, builds, run_id):
    """Records a run; returns the compare line when it ended a matrix of two builds run apart."""
    for entry in plan["matrices"]:
        if entry["file"] != file:
            continue
        for build in builds.split(","):
            entry["ran"][build] = run_id
        ran = entry["ran"]
        if entry["left"] or len(entry["builds"]) != 2 or len(set(ran.values())) != 2:
            return None
        a, b = entry["builds"]
        return f"compare {ran[a]} {ran[b]} {a} {b}"
    raise SystemExit(f"quickstart_plan: {file} is not in the plan")


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    plan_path, command, args = argv[1], argv[2], argv[3:]
    if command == "init":
        builds = {f: matrix_builds(f) or [WHOLE] for f in args}
        plan = {"matrices": [{"file": f, "builds": builds[f], "left": list(builds[f]), "ran": {}} for f in args]}
        save(plan_path, plan)
    elif command == "next":
        plan = load(plan_path)
        print("\n".join(next_part(plan, parse_states(args))))
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
