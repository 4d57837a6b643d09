"""How the exporter (benchfleet_export.py) checks what it made: the exported artifact against the
eager model (compare), the float64 accuracy reference it writes beside an AOTInductor package for
the worker's accuracy verdict (write_accuracy_reference, reference.bin), and the test-only
perturbation of a package's outputs ($BENCHFLEET_TEST_PERTURB_COMPILED; see benchfleet_export.py).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional, Sequence

from benchfleet_accuracy import perturb_tensor, perturbation_noise, perturbation_scale

REFERENCE_FILE = "reference.bin"
# Exported vs eager output: |diff| <= ATOL + RTOL * max|eager| (whole-output scale, so random-init
# outputs near zero do not fail on relative error).
ATOL, RTOL = 1e-3, 2e-2


def compare(reference: Any, exported: Any, numeric: bool = True) -> float:
    """max |exported - reference| over all outputs; raises on a structural mismatch (count, shape,
    NaN pattern), and with `numeric` on a difference beyond the tolerance too."""
    import torch

    from benchfleet_models import ExportFailure, flatten_tensors

    ref, out = flatten_tensors(reference), flatten_tensors(exported)
    if len(ref) != len(out):
        raise ExportFailure("error", f"exported module returns {len(out)} tensors, the model {len(ref)}")
    worst = 0.0
    for i, (a, b) in enumerate(zip(ref, out)):
        if tuple(a.shape) != tuple(b.shape):
            raise ExportFailure("error", f"output {i}: exported shape {tuple(b.shape)} != eager {tuple(a.shape)}")
        a64, b64 = a.detach().double().cpu(), b.detach().double().cpu()
        if bool(torch.isnan(a64).ne(torch.isnan(b64)).any()):
            raise ExportFailure("error", f"output {i}: NaNs differ between exported module and eager model")
        finite = torch.isfinite(a64) & torch.isfinite(b64)
        if a64[finite].numel() == 0:
            continue
        diff = float((a64[finite] - b64[finite]).abs().max())
        scale = float(a64[finite].abs().max())
        if numeric and diff > ATOL + RTOL * scale:
            raise ExportFailure("error", f"output {i}: exported module differs from the eager model "
                                         f"(max |diff| {diff:.3g}, max |eager| {scale:.3g})")
        worst = max(worst, diff)
    return worst


def test_perturbation() -> Optional[float]:
    """The relative scale of BENCHFLEET_TEST_PERTURB_COMPILED, or None when it is not set; read as
    the runner reads it (benchfleet_accuracy.perturbation_scale), a bad value an export error."""
    from benchfleet_models import ExportFailure

    try:
        return perturbation_scale()
    except ValueError as e:
        raise ExportFailure("error", str(e)) from None


def perturbed(model: Any, outputs: Sequence[Any], scale: float) -> Any:
    """`model` whose floating outputs are perturbed as the runner perturbs a compiled model's
    (benchfleet_accuracy.perturb_tensor, the same fixed noise), the noise held in buffers so that
    the exported package computes it (test only: an AOTInductor package that computes wrong
    numbers)."""
    import torch

    from benchfleet_models import flatten_tensors

    class Perturbed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.floating = [t.is_floating_point() for t in outputs]
            for i, t in enumerate(outputs):
                noise = perturbation_noise(t.shape) if self.floating[i] else torch.zeros(0)
                self.register_buffer(f"noise{i}", noise.to(t.device))

        def forward(self, *inputs: Any) -> Any:
            result = [perturb_tensor(out, scale, getattr(self, f"noise{i}")) if self.floating[i] else out
                      for i, out in enumerate(flatten_tensors(self.model(*inputs)))]
            return result[0] if len(result) == 1 else tuple(result)

    return Perturbed().eval()


def tensor_bytes(tensor: Any) -> bytes:
    """The raw little-endian, C-contiguous bytes of a tensor (on the CPU)."""
    import ctypes

    t = tensor.detach().cpu().contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()) if t.numel() else b""


def write_accuracy_reference(out_dir: str, model: Any, reference_model: Any, inputs: Sequence[Any],
                             eager: Sequence[Any], input_names: Sequence[str],
                             output_names: Sequence[str]) -> Dict[str, Any]:
    """Writes reference.bin (the inputs, then the float64 reference outputs) and returns its
    description (metadata `accuracy_reference`). `eager`: the model's outputs on `inputs`."""
    import math

    import torch

    from benchfleet_accuracy import compare, float64_inputs, outputs_equal
    from benchfleet_models import flatten_tensors

    if sys.byteorder != "little":
        raise RuntimeError("reference.bin is little-endian; this host is not")
    with torch.no_grad():
        again = flatten_tensors(model(*inputs))
        reference = flatten_tensors(reference_model(*float64_inputs(inputs)))
    if len(reference) != len(eager):
        raise RuntimeError(f"the float64 model returns {len(reference)} tensors, the model {len(eager)}")
    described: Dict[str, Any] = {"file": REFERENCE_FILE, "eager_deterministic": outputs_equal(list(eager), again),
                                 "inputs": [], "outputs": []}
    offset = 0
    path = os.path.join(out_dir, REFERENCE_FILE)
    with open(path, "wb") as f:
        def put(tensor: Any, name: str) -> Dict[str, Any]:
            nonlocal offset
            data = tensor_bytes(tensor)
            f.write(data)
            entry = {"name": name, "dtype": str(tensor.dtype).replace("torch.", ""), "shape": list(tensor.shape),
                     "offset": offset, "nbytes": len(data)}
            offset += len(data)
            return entry

        for name, tensor in zip(input_names, inputs):
            described["inputs"].append(put(tensor, name))
        for name, ref, out in zip(output_names, reference, eager):
            if tuple(ref.shape) != tuple(out.shape):
                raise RuntimeError(f"{name}: the float64 model's shape {tuple(ref.shape)} != {tuple(out.shape)}")
            entry = put(ref, name)
            error = compare(name, out, out, ref).eager_error if ref.is_floating_point() else 0.0
            # null: eager itself has NaN or Inf where the reference has none (nothing to judge against)
            entry["eager_error"] = error if math.isfinite(error) else None
            described["outputs"].append(entry)
    os.chmod(path, 0o644)
    return described
