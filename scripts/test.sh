#!/usr/bin/env bash
# Runs the whole benchfleet test suite from a fresh checkout:
# installs dependencies, configures, builds and runs every test through CTest.
#   scripts/test.sh            # Release build (preset "default")
#   PRESET=asan scripts/test.sh  # same suite under ASan+UBSan
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${PRESET:-default}"
jobs="${JOBS:-$(nproc)}"

scripts/install-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs" --timeout 300
