#!/usr/bin/env bash
# The project's linters, as CI runs them (the lint_* tests call this):
#   scripts/lint.sh format        clang-format-14 --dry-run over every tracked C++ file (.clang-format)
#   scripts/lint.sh python        flake8 over every tracked Python file (.flake8)
#   scripts/lint.sh js            ESLint (npm, eslint.config.js) over the dashboard's modules and
#                                 the node scripts that test them; exit 77 without node or npm ci
#   scripts/lint.sh tidy [BUILD]  clang-tidy-14 over the programs' sources (.clang-tidy), from
#                                 BUILD's compile_commands.json (default build/default); results of
#                                 unchanged units are remembered (scripts/tidy.py)
#   scripts/lint.sh tidy-changed [BUILD]
#                                 the same over the units the change under test can affect: those
#                                 compiled from a file changed since $BENCHFLEET_TIDY_BASE, else
#                                 since the merge base with the upstream branch when HEAD is ahead
#                                 of it, else since HEAD~20 (the last push's worth of commits on a
#                                 clone of main, as CI's)
#   scripts/lint.sh thread-safety [BUILD]
#                                 clang's -Wthread-safety over the store and the other units that
#                                 use common/thread_safety.h, and the misuse probe refused
#                                 (scripts/thread_safety.py)
#   scripts/lint.sh fix           rewrites the C++ files in the project's format
# Exits 1 on a finding, naming the file.
set -euo pipefail
cd "$(dirname "$0")/.."
cxx_files() { git ls-files '*.cpp' '*.h' | grep -v '^fuzz/corpus/'; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "lint: $1 is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }; }
case "${1:-}" in
  format)
    need clang-format-14
    cxx_files | xargs clang-format-14 --dry-run --Werror
    echo "lint: format clean ($(cxx_files | wc -l) files)"
    ;;
  fix)
    need clang-format-14
    cxx_files | xargs clang-format-14 -i
    ;;
  python)
    need flake8
    git ls-files '*.py' | xargs flake8
    echo "lint: flake8 clean ($(git ls-files '*.py' | wc -l) files)"
    ;;
  js)
    eslint=node_modules/.bin/eslint
    if ! scripts/node-toolchain.sh >/dev/null 2>&1 || [ ! -x "$eslint" ]; then
      echo "lint: no node 20+ or no $eslint (scripts/install-deps.sh runs npm ci): skipped" >&2
      exit 77
    fi
    scripts/node-toolchain.sh --run "$eslint" --max-warnings 0 web/js tests/browser tests/openapi eslint.config.js
    echo "lint: eslint clean ($(git ls-files 'web/js/*.js' 'tests/browser/*.mjs' 'tests/openapi/*.mjs' | wc -l) files)"
    ;;
  tidy)
    need clang-tidy-14
    exec python3 scripts/tidy.py "${2:-build/default}" --jobs "${JOBS:-$(nproc)}"
    ;;
  tidy-changed)
    need clang-tidy-14
    base="${BENCHFLEET_TIDY_BASE:-}"
    if [ -z "$base" ]; then
      upstream="$(git rev-parse --verify --quiet '@{upstream}' 2>/dev/null || true)"
      if [ -n "$upstream" ] && [ "$(git rev-parse HEAD)" != "$upstream" ]; then
        base="$(git merge-base HEAD "$upstream")"
      else
        # A shallow clone holds too few commits to say what the last push changed: deepen it.
        if [ "$(git rev-parse --is-shallow-repository)" = true ] && [ "$(git rev-list --count HEAD)" -le 20 ]; then
          git fetch --quiet --deepen=20 2>/dev/null ||
            echo "lint: a shallow clone that could not be deepened: the change is taken from its $(git rev-list --count HEAD) commit(s)" >&2
        fi
        base="$(git rev-list --max-count=21 HEAD | tail -n 1)"  # HEAD~20, or the first commit
      fi
    fi
    exec python3 scripts/tidy.py "${2:-build/default}" --jobs "${JOBS:-$(nproc)}" --changed-since "$base"
    ;;
  thread-safety)
    need clang++-14
    exec python3 scripts/thread_safety.py "${2:-build/default}" --jobs "${JOBS:-$(nproc)}"
    ;;
  *)
    echo "usage: scripts/lint.sh format|python|js|tidy [BUILD]|tidy-changed [BUILD]|thread-safety [BUILD]|fix" >&2
    exit 2
    ;;
esac
