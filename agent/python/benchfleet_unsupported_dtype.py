"""Whether a failure means "this dtype cannot run here" (docs/design.md §11).

    line = unsupported_dtype_line(job.dtype, message)   # the line that says so, or None

The rule (which dtypes are judged, the patterns, how long a line is read) lives in
common/rules/unsupported_dtype.json, which the C++ worker embeds at build time
(common/unsupported_dtype.h) and these modules read from beside themselves when installed
(share/benchfleet/rules/), so both runtimes judge a message alike. tests/data/
unsupported_dtype_cases.json holds the messages both sides are tested on.
"""

from __future__ import annotations

import functools
import re
from typing import List, Optional, Pattern, Tuple

from benchfleet_rules import rule

_BLANKS = " \t\r\f\v"  # what the C++ side strips from the line it reports


@functools.lru_cache(maxsize=None)
def _compiled() -> Tuple[Tuple[str, ...], int, List[Pattern[str]]]:
    r = rule("unsupported_dtype.json")
    patterns = [re.compile(p, re.IGNORECASE) for p in r["patterns"]]
    return tuple(r["dtypes"]), int(r["max_line_chars"]), patterns


def unsupported_dtype_line(dtype: str, message: str) -> Optional[str]:
    """The first line of `message` (split at "\\n", each cut to the rule's max_line_chars) that says
    this build or device lacks `dtype`, stripped; None when none does, and always for a dtype the
    rule does not judge (float32)."""
    dtypes, max_chars, patterns = _compiled()
    if dtype not in dtypes:
        return None
    for line in message.split("\n"):
        line = line[:max_chars]
        if any(p.search(line) for p in patterns):
            return line.strip(_BLANKS)
    return None
