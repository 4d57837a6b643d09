"""Inductor's vector ISA on the CPU, and the compiler that makes it usable on Debian's torch.

    isa = inductor_vec_isa()     # "avx512", "avx2", ... or "none" (scalar kernels), "unknown"

Inductor's CPU kernels are vectorised with ATen's Vectorized<> types, whose transcendental
functions call Sleef. PyPI's libtorch_cpu has Sleef built in; Debian's links libsleef.so.3, and
Inductor links each kernel --as-needed without it, so a vectorised kernel fails to load. Its ISA
probe builds and loads such a kernel, fails, and Inductor falls back to scalar code everywhere.
use_sleef_compiler() points Inductor at benchfleet-g++ (beside this module), which links -lsleef
into every shared object, wherever this process has a separate libsleef loaded. It must run
before the first compile or ISA query: Inductor caches its pick for the process.
"""

from __future__ import annotations

import os
from typing import Optional

WRAPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "benchfleet-g++")


def separate_sleef_loaded(maps_path: str = "/proc/self/maps") -> bool:
    """Whether torch (already imported) runs with a libsleef of its own (Debian) rather than the
    copy built into libtorch_cpu (PyPI)."""
    try:
        with open(maps_path, encoding="utf-8", errors="replace") as f:
            return any("/libsleef.so" in line for line in f)
    except OSError:
        return False


def use_sleef_compiler() -> Optional[str]:
    """Selects benchfleet-g++ as Inductor's compiler where torch links Sleef dynamically; returns
    it (also when it was selected already), or None where it is not needed or not there
    (built-in Sleef, no wrapper)."""
    import torch  # noqa: F401  (loads libtorch_cpu and, on Debian, libsleef)

    try:
        from torch._inductor import config
    except ImportError:
        return None
    current = config.cpp.cxx
    if isinstance(current, (list, tuple)) and WRAPPER in current or current == WRAPPER:
        return WRAPPER
    if not os.access(WRAPPER, os.X_OK) or not separate_sleef_loaded():
        return None
    real = os.environ.get("CXX") or "g++"
    os.environ.setdefault("BENCHFLEET_SLEEF_CXX", real)
    config.cpp.cxx = (None, WRAPPER)
    return WRAPPER


def inductor_vec_isa() -> str:
    """The vector ISA Inductor's CPU kernels are built for, or "none" (scalar code); "unknown"
    where this torch cannot say (before 2.5)."""
    try:
        use_sleef_compiler()
        from torch._inductor import cpu_vec_isa  # torch >= 2.5

        isa = cpu_vec_isa.pick_vec_isa()
    except (ImportError, AttributeError):
        return "unknown"
    return str(isa) if isa else "none"


if __name__ == "__main__":
    print(inductor_vec_isa())
