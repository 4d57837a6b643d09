"""Inductor's vector ISA on the CPU, and the compiler that makes it usable on Debian's torch.

    isa = inductor_vec_isa()     # "avx512", "avx2", ... or "none" (scalar kernels), "unknown"

Inductor's CPU kernels are vectorised with ATen's Vectorized<> types, whose transcendental
functions call Sleef. PyPI's libtorch_cpu has Sleef built in; Debian's links libsleef.so.3, and
Inductor links each kernel --as-needed without it, so a vectorised kernel fails to load. Its ISA
probe builds and loads such a kernel, fails, and Inductor falls back to scalar code everywhere.
use_sleef_compiler() points Inductor at benchfleet-g++ (beside this module, or its copy in
Inductor's cache directory), which links -lsleef
into every shared object, wherever this process has a separate libsleef loaded. It must run
before the first compile or ISA query: Inductor caches its pick for the process.
"""

from __future__ import annotations

import os
import tempfile
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


def keyed_wrapper(cache_dir: str) -> str:
    """The wrapper at a path that moves only with Inductor's cache: a copy in `cache_dir` (kept
    current), else the one beside this module. Inductor keys its FX graph cache by its config,
    compiler path included, so the module's own path would make a cache written from one checkout
    or release cold for every other."""
    if not cache_dir:
        return WRAPPER
    copy = os.path.join(cache_dir, "benchfleet-g++")
    try:
        with open(WRAPPER, "rb") as f:
            text = f.read()
        try:
            with open(copy, "rb") as f:
                if f.read() == text and os.access(copy, os.X_OK):
                    return copy
        except OSError:
            pass
        os.makedirs(cache_dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".benchfleet-g++.")
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, copy)  # atomic: jobs sharing the cache see the old copy or the new
        return copy
    except OSError:
        return WRAPPER


def use_sleef_compiler() -> Optional[str]:
    """Selects benchfleet-g++ as Inductor's compiler where torch links Sleef dynamically; returns
    it (also when it was selected already), or None where it is not needed or not there
    (built-in Sleef, no wrapper). The copy it selects lies in $TORCHINDUCTOR_CACHE_DIR when that
    is set (keyed_wrapper)."""
    import torch  # noqa: F401  (loads libtorch_cpu and, on Debian, libsleef)

    try:
        from torch._inductor import config
    except ImportError:
        return None
    current = config.cpp.cxx
    current = current[-1] if isinstance(current, (list, tuple)) else current
    if isinstance(current, str) and os.path.basename(current) == "benchfleet-g++":
        return current
    if not os.access(WRAPPER, os.X_OK) or not separate_sleef_loaded():
        return None
    real = os.environ.get("CXX") or "g++"
    os.environ.setdefault("BENCHFLEET_SLEEF_CXX", real)
    wrapper = keyed_wrapper(os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""))
    config.cpp.cxx = (None, wrapper)
    return wrapper


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
