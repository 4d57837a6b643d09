"""The files of the source tree's common/ the python side reads, wherever the modules run.

    path = shipped_file("catalog", "models.yaml")      # the model catalog
    limit = rule("measurement_limits.json")["max_iterations"]

An installed agent has them beside these modules (share/benchfleet/<folder>/, see
cmake/ReleaseLayout.cmake); a source tree has them in common/<folder>/. The rules
(common/rules/*.json) are the ones the C++ programs compile in (common/shared_rules.h), so both
sides keep one copy of each.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Dict


def shipped_file(folder: str, name: str) -> str:
    """<folder>/<name> beside these modules when installed, else the source tree's
    common/<folder>/<name>."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, folder, name)
    source = os.path.normpath(os.path.join(here, "..", "..", "common", folder, name))
    return installed if os.path.exists(installed) else source


@functools.lru_cache(maxsize=None)
def rule(name: str) -> Dict[str, Any]:
    """The parsed rules/<name> (e.g. "unsupported_dtype.json"), read once."""
    with open(shipped_file("rules", name), encoding="utf-8") as f:
        loaded: Dict[str, Any] = json.load(f)
    return loaded
