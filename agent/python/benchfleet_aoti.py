"""AOTInductor for the exporter (benchfleet_export.py): whether this torch can make a package, how
a package is compiled for a mode and device (AotiPlan: the Inductor configs, the fallback without
the C++ GEMM template on the CPU), what Inductor's FX graph cache did, and loading a package back.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Sequence

from benchfleet_vec_isa import inductor_vec_isa

AOTI_MIN_TORCH = (2, 6)


def torch_version_tuple(version: str) -> tuple:
    parts = []
    for piece in version.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def aoti_unsupported_reason(torch: Any) -> Optional[str]:
    needs = f"AOTInductor needs torch >= 2.6 (this is {torch.__version__})"
    if torch_version_tuple(torch.__version__) < AOTI_MIN_TORCH:
        return needs
    try:
        import torch._inductor  # noqa: F401 (lazily imported submodules)
        import torch.export  # noqa: F401
    except ImportError as e:
        return f"AOTInductor is not usable in this torch ({torch.__version__}): {e}"
    if not hasattr(torch._inductor, "aoti_compile_and_package"):
        return needs
    return None


CACHE_COUNTERS = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass")


def inductor_cache_counts() -> Dict[str, int]:
    """Inductor's FX graph cache lookups so far in this process (torch._dynamo's counters)."""
    from torch._dynamo.utils import counters

    return {name: int(counters["inductor"][name]) for name in CACHE_COUNTERS}


def inductor_cache_outcome(hits: int, misses: int, bypasses: int) -> str:
    """cold: nothing came from the cache (also when it was not consulted); warm: every lookup hit."""
    if hits == 0:
        return "cold"
    return "warm" if misses == 0 and bypasses == 0 else "mixed"


def cpu_gemm_without_template(configs: Dict[str, Any]) -> Dict[str, Any]:
    """max-autotune's GEMM choices on the CPU without Inductor's C++ GEMM template (ATen's only)."""
    return {**configs, "max_autotune_gemm_backends": "ATEN"}


@dataclasses.dataclass
class AotiPlan:
    """How an AOTInductor package is compiled: with `configs`, else (if set) with `fallback`."""

    configs: Dict[str, Any] = dataclasses.field(default_factory=dict)
    fallback: Optional[Dict[str, Any]] = None
    note: str = ""  # why `configs` differ from the mode's, when they do
    vec_isa: str = ""  # on the CPU: the vector ISA of Inductor's kernels, or "none"


def aoti_plan(mode_configs: Dict[str, Any], device: str) -> AotiPlan:
    # An AOTInductor package has no CUDA graphs; the worker captures them itself.
    plan = AotiPlan(configs={k: v for k, v in mode_configs.items() if "cudagraph" not in k})
    if device != "cpu":
        return plan
    plan.vec_isa = inductor_vec_isa()
    # max-autotune on the CPU tries Inductor's C++ GEMM template besides ATen. In torch 2.6 the
    # template fails for some models (mobilenet_v3_small: a LoweringException), and without a
    # vector ISA it is reference code that does not even compile: then it is left out from the
    # start, else only when the compile with it fails.
    if plan.configs.get("max_autotune") and "max_autotune_gemm_backends" not in plan.configs:
        if plan.vec_isa == "none":
            plan.configs = cpu_gemm_without_template(plan.configs)
            plan.note = ("compiled without the C++ GEMM template: with no vector ISA it would be reference code "
                         "(which torch 2.6 does not compile)")
        else:
            plan.fallback = cpu_gemm_without_template(plan.configs)
    return plan


def run_aotinductor(path: str, inputs: Sequence[Any]) -> Any:
    import torch
    import torch._inductor

    compiled = torch._inductor.aoti_load_package(path)
    with torch.no_grad():
        return compiled(*inputs)
