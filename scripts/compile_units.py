"""The translation units of a build (its compile_commands.json) that the source checks read:
shared by scripts/tidy.py and scripts/thread_safety.py."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def program_units(build_dir, prefixes, tool):
    """{path relative to the repository: compile command entry} of the .cpp units under
    `prefixes`; None (said on stderr, naming `tool`) when the build has no compile_commands.json."""
    db = os.path.join(build_dir, "compile_commands.json")
    if not os.path.exists(db):
        print(f"{tool}: {db} is missing: configure the build first", file=sys.stderr)
        return None
    units = {}
    for e in json.load(open(db)):
        rel = os.path.relpath(os.path.realpath(e["file"]), ROOT)
        if rel.startswith(tuple(prefixes)) and rel.endswith(".cpp"):
            units[rel] = e
    return units
