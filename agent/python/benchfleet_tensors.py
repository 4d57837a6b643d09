"""The tensors every model source shares: dtypes by name, seeded inputs, outputs flattened, and
weights read from a file under the pickle rule of docs/models.md. Used by benchfleet_models.py
and its per-source builders (benchfleet_huggingface.py, benchfleet_model_code.py); callers take
these names from benchfleet_models.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any, Dict, List, Mapping, Optional

import torch

from benchfleet_definition import ExportFailure, ModelSpec

_DTYPES: Dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}
# Weights files whose format is Python's pickle, which can run code when loaded.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


def dtype_of(name: str) -> torch.dtype:
    return _DTYPES[name]


def dtype_name(dtype: torch.dtype) -> Optional[str]:
    """The definition's name of a tensor dtype (float32, int64, ...); None for one it has none for."""
    return next((name for name, d in _DTYPES.items() if d == dtype), None)


def make_inputs(spec: ModelSpec, batch: int, seed: int, device: str = "cpu") -> List[torch.Tensor]:
    """The forward arguments for `batch` images, in the order of spec.inputs.

    Drawn on the CPU from a generator seeded with `seed`, so the same seed gives byte-identical
    tensors on every machine: floats standard normal, ids uniform in `range`, masks all ones.
    """
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for item in spec.inputs:
        shape = item.concrete_shape(batch)
        dtype = dtype_of(item.dtype)
        if item.range is not None:
            t = torch.randint(item.range[0], item.range[1], shape, generator=generator, dtype=torch.int64).to(dtype)
        elif item.is_mask():
            t = torch.ones(shape, dtype=dtype)
        else:
            t = torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype)
        tensors.append(t.to(device))
    return tensors


def flatten_tensors(value: Any) -> List[torch.Tensor]:
    """The tensors in a (possibly nested) output, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten_tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten_tensors(item)]
    return []


def missing_package(model_id: str, package: str) -> ExportFailure:
    """The verdict on a model whose builder needs a package this python lacks: the build cannot
    run it at all (as with a mode its torch lacks), so it is unsupported, not an error."""
    return ExportFailure("unsupported", f"{model_id} needs the Python package '{package}', which this torch build's "
                                        f"python ({sys.executable}) does not have")


def read_state_dict(path: str, model_id: str, allow_pickle: bool) -> Mapping[str, torch.Tensor]:
    """The state_dict in a weights file: .safetensors read as such (no code runs); anything else
    is taken for a pickle, read only with `allow_pickle` (docs/models.md: pickled weights are code),
    with torch.load(weights_only=True) where this torch has it. A {"state_dict": ...} or
    {"model": ...} checkpoint gives its inner mapping."""
    if not os.path.isfile(path):
        raise ExportFailure("error", f"{model_id}: weights {path} do not exist or are not a file")
    if path.endswith(".safetensors"):
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise missing_package(model_id, "safetensors") from None
        return load_file(path, device="cpu")
    if not allow_pickle:
        raise ExportFailure("error", f"{model_id}: weights {path} are not .safetensors, so they are a pickle, which "
                                     "can run code when loaded: refused unless the definition says allow_pickle: "
                                     "true (or convert them to .safetensors)")
    kwargs: Dict[str, Any] = {"map_location": "cpu"}
    if "weights_only" in inspect.signature(torch.load).parameters:
        kwargs["weights_only"] = True
    try:
        state = torch.load(path, **kwargs)
    except Exception as e:  # a pickle error, or one weights_only refuses
        raise ExportFailure("error", f"{model_id}: cannot read weights {path}: "
                                     f"{type(e).__name__}: {str(e).strip().splitlines()[0][:500]}") from None
    if isinstance(state, dict):
        for key in ("state_dict", "model"):
            if isinstance(state.get(key), dict):
                state = state[key]
                break
    if not isinstance(state, dict):
        raise ExportFailure("error", f"{path} holds no state_dict for {model_id}")
    return state


def load_weights(model: torch.nn.Module, path: str, model_id: str, allow_pickle: bool) -> None:
    """Loads the weights file `path` (read_state_dict) into `model`; every key must fit."""
    state = read_state_dict(path, model_id, allow_pickle)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        first = str(e).strip().splitlines()[0:3]
        raise ExportFailure("error", f"weights {path} do not fit {model_id}: {' '.join(first)}") from None
