#!/usr/bin/env bash
# Prints the Debian archive apt uses on this host (the first .../debian URI of its sources, deb822
# or one-line), else http://deb.debian.org/debian. The scripts that fetch from the archive
# themselves (torch-root.sh, cuda-headers.sh, fresh-check.sh) take their default from it, so they
# reach the same mirror as apt-get.
set -euo pipefail
mirror="$(grep -rhoE '^URIs: *https?://[^ ]+/debian/?$|^deb +https?://[^ ]+/debian/? ' \
            /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
          sed -E 's/^URIs: *//; s/^deb +//; s/ +$//' | head -n1 || true)"
echo "${mirror:-http://deb.debian.org/debian}"
