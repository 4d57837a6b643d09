"""The job's end of its memory cgroup (agent/daemon/memory_cgroup.h, common/rules/memory_cgroup.json):
where the agent could make the job a memory cgroup, it names a directory in the job's environment,
and the job asks there for its cap once started and for its lifting before the accuracy check,
and keeps its current phase there (the phase of an out-of-memory kill, which the agent reports).
The worker's counterpart is agent/worker/memory.cpp.
"""

from __future__ import annotations

import os
import time
from typing import Optional

from benchfleet_rules import rule

_PROTOCOL = rule("memory_cgroup.json")
_POLL_S = 0.005


def agent_directory() -> Optional[str]:
    """The directory the agent named, or None: no cgroup, the job caps its own address space."""
    return os.environ.get(_PROTOCOL["environment"]) or None


def _write_whole(path: str, text: str) -> None:
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="ascii") as f:
        f.write(text + "\n")
    os.rename(temporary, path)  # the agent never reads half a request


def ask_agent(request: str) -> str:
    """Sends "cap" or "lift" and returns the agent's answer ("capped <kind> <bytes>", "lifted",
    "failed <why>"), or "" when none came within the protocol's timeout.
    REQUIRES: agent_directory() is not None."""
    directory = agent_directory()
    assert directory is not None
    answer_path = os.path.join(directory, _PROTOCOL["answer_file"])
    try:
        os.unlink(answer_path)  # the answer to an earlier request
    except FileNotFoundError:
        pass
    _write_whole(os.path.join(directory, _PROTOCOL["request_file"]), request)
    deadline = time.monotonic() + float(_PROTOCOL["answer_timeout_s"])
    while time.monotonic() < deadline:
        try:
            with open(answer_path, encoding="ascii", errors="replace") as f:
                answer = f.read().strip()
        except FileNotFoundError:
            answer = ""
        if answer:
            return answer
        time.sleep(_POLL_S)
    return ""


def note_phase(name: str) -> None:
    """Keeps the current phase where the agent reads it after a kill; nothing without a cgroup."""
    directory = agent_directory()
    if directory is not None:
        try:
            _write_whole(os.path.join(directory, _PROTOCOL["phase_file"]), name)
        except OSError:  # the phase of a kill is a detail; the job goes on
            pass
