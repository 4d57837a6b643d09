"""The job's precision (Job.dtype) in the python runner.

    model = cast_model(model, job.dtype)            # float16 / bfloat16: weights and buffers cast
    inputs = cast_inputs(inputs, job.dtype)         # floating inputs cast; ids and masks as they are
    call = in_precision(model, job.dtype, device)   # amp: each call under torch.autocast

float32 leaves everything as it is. amp keeps float32 weights and runs every call (first call,
shape walk, warm-up, timed calls, the accuracy check's eager and compiled calls) under
torch.autocast: float16 on CUDA, bfloat16 on the CPU (the CPU's autocast is bfloat16 only in
older torch builds). A device or build that cannot run a dtype says so in an error such as
"slow_conv2d_cpu" not implemented for 'Half' (Debian 12's torch 1.13 on the CPU); that makes the
job unsupported, with the reason (unsupported_dtype_reason), whichever phase it happened in.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, ContextManager, List, Optional, Sequence

import torch

from benchfleet_unsupported_dtype import unsupported_dtype_line

_CAST = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def autocast_dtype(device: str) -> torch.dtype:
    """What amp computes in: float16 on CUDA, bfloat16 on the CPU."""
    return torch.float16 if device == "cuda" else torch.bfloat16


def cast_model(model: torch.nn.Module, dtype: str) -> torch.nn.Module:
    """The model in `dtype` (in place) for float16 and bfloat16; as it is for float32 and amp."""
    return model.to(_CAST[dtype]) if dtype in _CAST else model


def cast_inputs(inputs: Sequence[torch.Tensor], dtype: str) -> List[torch.Tensor]:
    """Floating inputs in `dtype` for float16 and bfloat16; integer and boolean ones as they are."""
    if dtype not in _CAST:
        return list(inputs)
    return [t.to(_CAST[dtype]) if t.is_floating_point() else t for t in inputs]


def precision_context(dtype: str, device: str) -> ContextManager[Any]:
    """torch.autocast for amp; a context that does nothing otherwise."""
    if dtype == "amp":
        return torch.autocast(device_type=device, dtype=autocast_dtype(device))
    return contextlib.nullcontext()


def in_precision(fn: Callable[..., Any], dtype: str, device: str) -> Callable[..., Any]:
    """`fn`, each call under precision_context (only amp needs one)."""
    if dtype != "amp":
        return fn

    def call(*args: Any) -> Any:
        with precision_context(dtype, device):
            return fn(*args)

    return call


def unsupported_dtype_reason(dtype: str, device: str, message: str) -> Optional[str]:
    """Why the job is unsupported when `message` (a failure's) says this build or device cannot run
    `dtype` (benchfleet_unsupported_dtype); None otherwise, and always for float32."""
    line = unsupported_dtype_line(dtype, message)
    if line is None:
        return None
    return f"{dtype} on {device}: this torch build or device cannot run it: {line}"[:4000]
