#!/usr/bin/env python3
"""The coordinator's layers, kept: a file may include only its own folder's layer or lower ones.

    rules (pure) < store < report, services < config < api < app (main)

common/ is below all of them. Prints each file that includes a higher layer, with the line and
the include, and exits 1; exits 0 when there is none.

    scripts/check-layers.py [ROOT]     ROOT: the repository (default: this script's parent)
"""
import pathlib
import re
import sys

# The rank of each folder of coordinator/; a file includes only ranks <= its own.
RANKS = {
    "rules": 1,     # pure rules: no I/O, no store
    "store": 2,     # SQLite: the narrow stores over one database
    "report": 3,    # a report's renderers (over the rules' tables)
    "services": 3,  # the periodic tasks over the store
    "config": 4,    # the options of every layer below, parsed
    "api": 5,       # the HTTP handlers
    "app": 6,       # main: wiring only
}
COMMON_RANK = 0
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rank_of(path):
    """The layer of a repository path ('coordinator/store/x.h'), or None when it has none."""
    parts = pathlib.PurePosixPath(path).parts
    if parts and parts[0] == "common":
        return COMMON_RANK
    if len(parts) >= 2 and parts[0] == "coordinator":
        if len(parts) == 2:
            return None  # coordinator/CMakeLists.txt and the like: no sources belong there
        return RANKS.get(parts[1])
    return None


def check(root):
    problems = []
    sources = sorted(p for p in (root / "coordinator").rglob("*") if p.suffix in (".h", ".cpp"))
    for source in sources:
        rel = source.relative_to(root).as_posix()
        own = rank_of(rel)
        if own is None:
            problems.append(f"{rel}: in no layer (put it in one of coordinator/{{{','.join(RANKS)}}}/)")
            continue
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            included = m.group(1)
            theirs = rank_of(included)
            if theirs is not None and theirs > own:
                problems.append(f"{rel}:{number}: includes \"{included}\", a higher layer "
                                f"({pathlib.PurePosixPath(included).parts[1]} above "
                                f"{pathlib.PurePosixPath(rel).parts[1]})")
    return problems, len(sources)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems, count = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} problem(s); the order is "
              + " < ".join(sorted(RANKS, key=RANKS.get)), file=sys.stderr)
        return 1
    print(f"check-layers: clean ({count} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
