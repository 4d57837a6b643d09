"""Out of memory in the python runner, as the worker's agent/worker/oom.cpp and memory.cpp: whether
a failure is an out-of-memory (and the failed job's result: classify), the memory cap (CPU:
RLIMIT_AS beyond what the process has when the job starts; CUDA: the caching allocator's
fraction), oneDNN's failure at that cap, and the peaks a result reports.
"""

from __future__ import annotations

import math
import re
import resource
import sys
import traceback
from typing import Any, Dict, Optional

import torch

from benchfleet_job import Hooks, JobError, failed
from benchfleet_memory_cgroup import agent_directory, ask_agent
from benchfleet_definition import ExportFailure
from benchfleet_native_oom import proc_status_bytes
from benchfleet_rules import rule

_GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE: ops with more elements run on the intra-op threads
MAX_ERROR_CHARS = 4000


# ---- out of memory (agent/worker/oom.cpp) ------------------------------------------------------

_OOM_NEEDLES = tuple(rule("oom_messages.json")["needles"])  # the worker's too (common/rules/)
_REQUESTED = re.compile(r"tried to allocate ([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?) *(KiB|MiB|GiB|TiB|bytes|B)?",
                        re.IGNORECASE)
_UNIT_BYTES = {"kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4, "bytes": 1, "b": 1}


def is_oom_message(message: str) -> bool:
    return any(needle in message for needle in _OOM_NEEDLES)


def oom_bytes_requested(message: str) -> Optional[int]:
    """"you tried to allocate 123 bytes" (CPU) or "Tried to allocate 2.50 GiB" (CUDA)."""
    match = _REQUESTED.search(message)
    if match is None or match.group(2) is None:
        return None
    return int(math.floor(float(match.group(1)) * _UNIT_BYTES[match.group(2).lower()] + 0.5))


def oom_line(message: str) -> str:
    """The line reporting the failed allocation, or the whole message."""
    return next((line for line in message.splitlines() if is_oom_message(line)), message)


def describe_error(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    cut = text.find("\nException raised from")  # the rest is a C++ backtrace
    return text if cut < 0 else text[:cut]


def is_oom_failure(message: str, allocator_counted_oom: bool) -> bool:
    """agent/worker/oom.h is_oom_failure: the message says out-of-memory, or the CUDA caching
    allocator counted a new one while the job ran (its num_ooms grew), whatever the message, since
    a runtime may report it as a generic failure."""
    return allocator_counted_oom or is_oom_message(message)


def cuda_oom_count() -> int:
    """How many allocations the CUDA caching allocator of device 0 has refused so far (its
    num_ooms); 0 before CUDA is initialised (memory_stats does not initialise it) or without it."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return 0
    return int(torch.cuda.memory_stats(0).get("num_ooms", 0))


def classify(error: BaseException, phase: str, device: str, allocator_counted_oom: bool = False) -> Dict[str, Any]:
    """A failed job's result: oom (with phase and bytes) when the failure is one, else error.
    allocator_counted_oom: the CUDA caching allocator's num_ooms grew during the job."""
    if isinstance(error, ExportFailure):
        return failed(error.status, error.message)
    if isinstance(error, MemoryError):
        text = f"MemoryError: {error}" if str(error) else "MemoryError: Python could not allocate memory"
    else:
        text = describe_error(error)
    says_oom = isinstance(error, MemoryError) or is_oom_message(text)
    if not says_oom:  # where it failed: an error, or an oom only the allocator's counter saw
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    if not says_oom and not is_oom_failure(text, allocator_counted_oom):
        return failed("error", text[:MAX_ERROR_CHARS])
    message = oom_line(text) if says_oom else f"out of memory (counted by the CUDA caching allocator): {text}"
    result = failed("oom", message[:MAX_ERROR_CHARS])
    bytes_requested = oom_bytes_requested(text)
    result["oom"] = {"phase": phase}
    if bytes_requested is not None:
        result["oom"]["bytes_requested"] = bytes_requested
    result["memory"] = peak_memory(device)
    return result


# ---- memory caps and peaks (agent/worker/memory.cpp) -------------------------------------------

def virtual_size_bytes() -> int:
    """VmSize of this process; 0 if unknown."""
    return proc_status_bytes("VmSize")


# The cap this process runs under, as its result's memory names it (cap, cap_bytes): process
# state, like the limit itself; one job per process.
_applied_cap: Dict[str, Any] = {}


def apply_memory_limit(device: str, limit_mb: int, hooks: Hooks) -> None:
    """cuda: the caching allocator's per-process memory fraction = limit / device total.
    cpu: the job may grow by at most the limit beyond what it is now (torch imported, its
    intra-op threads and BLAS started; the model not yet built): in RAM, held by the memory cgroup
    the agent made for the job where it could (benchfleet_memory_cgroup); else in address space,
    via RLIMIT_AS."""
    limit = limit_mb * 1024 * 1024
    _applied_cap.clear()
    if device == "cuda":
        total = torch.cuda.get_device_properties(0).total_memory
        if limit < total:  # a cap above the card is no cap
            torch.cuda.set_per_process_memory_fraction(limit / total, 0)
            _applied_cap.update({"cap": "cuda-allocator", "cap_bytes": limit})
        return
    if torch.get_num_threads() > 1:  # libgomp's thread stacks are torch's, not the model's
        torch.ones(2 * _GRAIN_SIZE)
    # And so is the work buffer OpenBLAS maps (128 MiB) at its first product beyond its small-matrix
    # path, which it keeps: under the cap it would retry that allocation forever, a hang, not an OOM.
    torch.mm(torch.ones(512, 512), torch.ones(512, 512))
    if agent_directory() is not None:
        answer = ask_agent("cap")
        words = answer.split()
        if len(words) == 3 and words[0] == "capped":
            _applied_cap.update({"cap": words[1], "cap_bytes": int(words[2])})
            return
        print(f"memory cgroup: {answer or 'the agent did not answer'}; capping the address space instead",
              file=sys.stderr, flush=True)
    base = virtual_size_bytes()
    if base <= 0:
        raise JobError("", "cannot read VmSize from /proc/self/status to apply the memory limit")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = base + limit if hard == resource.RLIM_INFINITY else min(base + limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    _applied_cap.update({"cap": "address-space", "cap_bytes": limit})
    hooks.memory_cap(soft)


# oneDNN (through ideep) reports any failure to create a primitive as this, a failed allocation of
# its scratchpad or JIT buffer included: under the CPU cap, and near it, that is an out-of-memory.
_ONEDNN_PRIMITIVE_FAILED = "could not create a primitive"
# How close the address-space peak must have come to the cap (the failed request is not in it):
# agent/worker/native_oom.h's margin.
AT_CAP_MARGIN = 64 << 20


def vm_peak_bytes() -> int:
    """VmPeak of this process; 0 if unknown."""
    return proc_status_bytes("VmPeak")


def onednn_failed_at_cap(message: str) -> bool:
    """Whether a failure with `message` is oneDNN's failed primitive with this process's address
    space at (within AT_CAP_MARGIN of) its RLIMIT_AS cap. Call it before the cap is lifted."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if _ONEDNN_PRIMITIVE_FAILED not in message or soft == resource.RLIM_INFINITY:
        return False
    return vm_peak_bytes() + AT_CAP_MARGIN >= soft


def lift_memory_limit(device: str = "cpu") -> None:
    """The cap off again, for what follows the measurement (the float64 model of the accuracy
    check is twice the job's, at least): cpu, RLIMIT_AS back to its hard limit, or the agent's
    cgroup without a limit; cuda, the caching allocator may use the whole device."""
    if device == "cuda":
        torch.cuda.set_per_process_memory_fraction(1.0, 0)
        return
    if _applied_cap.get("cap", "").startswith("cgroup") and not _applied_cap.get("lifted"):
        answer = ask_agent("lift")
        _applied_cap["lifted"] = answer == "lifted"
        if not _applied_cap["lifted"]:
            print(f"memory cgroup: lifting the cap: {answer or 'the agent did not answer'}",
                  file=sys.stderr, flush=True)
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def peak_memory(device: str) -> Dict[str, Any]:
    """Peak RSS, and on CUDA the caching allocator's peaks (allocated, reserved) of device 0; and
    the cap applied, if any (the agent adds the peak a cgroup saw)."""
    out: Dict[str, Any] = {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    out.update({k: v for k, v in _applied_cap.items() if k in ("cap", "cap_bytes")})
    if device == "cuda" and torch.cuda.is_initialized():
        out["peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated(0))
        out["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(0))
    return out
