"""torch.compile in the python runner: compiling a job's model and what the compile reports.

    call = compile_model(model, job)          # dynamo reset and its counters cleared first
    inputs = mark_batch_dynamic(inputs)       # Job.dynamic
    telemetry.update(compile_telemetry(dynamo_counters(), first_call_ms, graphs_before_measuring))

Job.dynamic compiles with torch.compile(dynamic=True) and marks dim 0 of every input (the
batch, or batch x rows) dynamic. Dynamo specialises sizes 0 and 1 all the same, so a job at
batch 1 gets a graph for batch 1 only, and its first other batch size compiles again, dynamic or
not; from batch 2 on one dynamic graph serves every batch size. Without dynamic, dynamo's
automatic dynamic shapes compile a static graph first and a dynamic one at the first change.

Needs torch >= 2.0 (torch._dynamo) for everything but inductor_cache_state and compile_telemetry.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Callable, Dict, List

import torch

from benchfleet_job import Job


def dynamo_counters() -> Any:
    from torch._dynamo.utils import counters  # torch >= 2.0 only
    return counters


FXGRAPH_CACHE_COUNTERS = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass")


def inductor_cache_state(hits: int, misses: int, bypasses: int) -> str:
    """What inductor's FX graph cache did for one compile, from its lookups: "warm" (every graph
    came from the cache), "cold" (none did: compiled, and written to the cache), "mixed" (some
    did), "bypass" (graphs compiled without the cache: not cacheable) or "none" (no lookup: the
    cache is off, or nothing reached inductor)."""
    if hits and (misses or bypasses):
        return "mixed"
    if hits:
        return "warm"
    if misses:
        return "cold"
    return "bypass" if bypasses else "none"


def inductor_cache_dir() -> str:
    """The directory inductor caches in: $TORCHINDUCTOR_CACHE_DIR, else torch's default
    (/tmp/torchinductor_<user>, under the temporary directory)."""
    for module in ("torch._inductor.runtime.cache_dir_utils", "torch._inductor.utils"):
        try:
            return str(importlib.import_module(module).cache_dir())
        except (ImportError, AttributeError, OSError):
            continue
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")


def compile_telemetry(counters: Any, first_call_ms: float, graphs_before_measuring: int) -> Dict[str, Any]:
    """The telemetry of a torch.compile run, from torch._dynamo.utils.counters at its end.
    graphs_before_measuring: the graphs compiled by the first call and the shape walk (if any), so
    that recompiles counts those of the job's own warm-up and timed calls only (the walk's are
    its walk_recompiles)."""
    graphs = counters["stats"]["unique_graphs"]
    cache = {name: int(counters["inductor"][name]) for name in FXGRAPH_CACHE_COUNTERS}
    return {"compile_ms": first_call_ms, "graphs": graphs, "recompiles": graphs - graphs_before_measuring,
            "graph_breaks": sum(counters["graph_break"].values()), **cache,
            "inductor_cache": inductor_cache_state(*(cache[name] for name in FXGRAPH_CACHE_COUNTERS)),
            "inductor_cache_dir": inductor_cache_dir()}


def graph_count() -> int:
    """The graphs dynamo has compiled since compile_model."""
    return int(dynamo_counters()["stats"]["unique_graphs"])


def compile_model(model: torch.nn.Module, job: Job) -> Callable[..., Any]:
    """torch.compile(model) in the job's mode (and dynamic=True for Job.dynamic), with dynamo's
    caches and counters reset first, so the counters are this job's."""
    torch._dynamo.reset()
    dynamo_counters().clear()
    return torch.compile(model, mode=job.mode, dynamic=True) if job.dynamic else torch.compile(model, mode=job.mode)


def mark_batch_dynamic(inputs: List[torch.Tensor]) -> List[torch.Tensor]:
    """Job.dynamic: dim 0 of every input (the batch, or batch x rows) marked dynamic for dynamo. A
    batch of 1 is specialised all the same (dynamo's 0/1 specialisation)."""
    for t in inputs:
        torch._dynamo.mark_dynamic(t, 0)
    return inputs
