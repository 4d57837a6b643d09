"""`gpu_validate.py probe` (scripts/gpu-validate.sh's first stage): what the torch build's own python
sees of the machine (versions, the GPU) and whether torch works there. Imports torch only inside
probe_figures, so gpu_validate.py stays standard library only for every other command.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Dict


def probe_figures(device: str, tools: Dict[str, str]) -> Dict[str, Any]:
    """Versions and the GPU as this python (the torch build's) sees them; `ok` and `why` say
    whether torch works there (on cuda: a matrix product on the GPU gives finite values)."""
    import importlib.metadata as metadata

    fig: Dict[str, Any] = {"python": sys.version.split()[0], "python_path": sys.executable, **tools}
    for name in ("transformers", "timm", "torchvision", "triton", "numpy"):
        try:
            fig[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            fig[name] = "absent"
    ok, why = True, ""
    try:
        import torch
        import torch.utils

        fig.update(torch=torch.__version__, torch_cuda=str(torch.version.cuda),
                   torch_git=getattr(torch.version, "git_version", "?"),
                   cmake_prefix_path=getattr(torch.utils, "cmake_prefix_path", ""),
                   cudnn=str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else "absent",
                   cuda_available=torch.cuda.is_available())
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            fig.update(gpu=p.name, gpu_memory_mb=p.total_memory // 2**20, gpu_capability=f"{p.major}.{p.minor}",
                       gpu_count=torch.cuda.device_count())
            a = torch.randn(4096, 4096, device="cuda")
            b = a @ a  # untimed: the first product also creates cuBLAS's handle and workspace
            torch.cuda.synchronize()
            started = time.perf_counter()
            for _ in range(10):
                b = a @ a
            torch.cuda.synchronize()
            fig["matmul_4096_fp32_ms"] = round((time.perf_counter() - started) * 100, 3)
            ok = bool(torch.isfinite(b).all())
            why = "" if ok else "a matrix product on the GPU gave non-finite values"
        elif device == "cuda":
            ok, why = False, f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"
    except Exception as e:  # the probe reports, it does not crash
        ok, why = False, f"{sys.executable} cannot use torch: {type(e).__name__}: {e}"
    fig["ok"], fig["why"] = ok, why
    return fig


def probe_summary(fig: Dict[str, Any]) -> str:
    parts = [f"python {fig.get('python')}", f"torch {fig.get('torch', '-')}", f"CUDA {fig.get('torch_cuda', '-')}",
             f"cuDNN {fig.get('cudnn', '-')}"]
    if fig.get("gpu"):
        parts.append(f"{fig['gpu']} ({fig['gpu_memory_mb']} MiB, sm {fig['gpu_capability']}, "
                     f"4096^2 fp32 matmul {fig.get('matmul_4096_fp32_ms')} ms)")
    parts += [f"{name} {fig.get(name)}" for name in ("transformers", "timm", "torchvision")]
    # The tools' version lines, by their last word ("Cuda compilation tools, release 13.0, V13.0.88").
    parts += [f"{name} {str(fig[name]).split()[-1] if fig[name] else '?'}" for name in ("nvcc", "cmake", "gcc")
              if name in fig]
    return ("" if fig.get("ok") else f"{fig.get('why', '')}; ") + ", ".join(parts)
