"""The accuracy rule for compiled results: common/accuracy.h in Python, for the python runner and
the exporter (which records the float64 reference an AOTInductor package is judged against).

    comparisons = [compare(f"output{i}", c, e, r) for i, (c, e, r) in enumerate(zip(compiled, eager, ref))]
    info = judge("float32", on_cuda=False, eager_deterministic=True, outputs=comparisons)

A compiled output passes when its relative L2 error against a float64 run of the same model,
weights and inputs is at most ERROR_MULTIPLIER x eager's own error + error_floor(dtype), and, in
reduced precision (float16, bfloat16, amp), its cosine similarity to the reference is at least
MIN_COSINE. Outputs that are not floating point must equal the reference; NaN or Inf where the
reference has none fails. Two eager runs that differ make the verdict eager_nondeterministic.
tests/data/accuracy_cases.json holds cases the C++ and this module must judge alike.
A cosine is 0 when exactly one side is all zeros (a float16 output that underflowed), so such an
output fails in reduced precision even when eager's own error is as large.

    info = check_compiled(eager, compiled, reference_factory, inputs, dtype, on_cuda, names)

is the python runner's whole check (two eager calls, one compiled, one float64 reference).
perturbed() is the test-only fault of BENCHFLEET_TEST_PERTURB_COMPILED (perturbation_scale).
The judging part is pure Python; compare(), check_compiled and the reference helpers need torch.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

ERROR_MULTIPLIER = 3.0
MIN_COSINE = 0.99
# An output eager itself misses by more than this (in the job's dtype) is not judged: in float16,
# random-init logits of ~1e-9 underflow to zeros. With no other output to judge: unchecked.
MAX_EAGER_ERROR = 0.5
VERDICTS = ("pass", "wrong", "eager_nondeterministic", "unchecked")


def error_floor(dtype: str, on_cuda: bool) -> float:
    """float32 1e-4; float16 1e-2; bfloat16 4e-2; amp as its autocast dtype (float16 on CUDA,
    bfloat16 on the CPU)."""
    if dtype == "float16":
        return 1e-2
    if dtype == "bfloat16":
        return 4e-2
    if dtype == "amp":
        return 1e-2 if on_cuda else 4e-2
    return 1e-4


@dataclass
class OutputComparison:
    name: str
    floating: bool = True
    compiled_error: float = 0.0  # ||compiled - ref|| / ||ref|| (||compiled - ref|| when ||ref|| = 0)
    eager_error: float = 0.0
    cosine: Optional[float] = None
    equal: bool = True  # non-floating outputs: compiled == reference
    compiled_finite: bool = True


def judge(dtype: str, on_cuda: bool, eager_deterministic: bool,
          outputs: Sequence[OutputComparison]) -> Dict[str, Any]:
    """An AccuracyInfo as JSON (common/codecs.cpp field names); the figures are those of the output
    closest to failing (largest compiled_error / tolerance), or of the first failing one."""
    if not eager_deterministic:
        return _info("eager_nondeterministic", detail="two eager runs on the same inputs gave different outputs")
    if not outputs:
        return _info("unchecked", detail="no outputs to compare")
    reduced = dtype != "float32"
    floor = error_floor(dtype, on_cuda)
    verdict = "pass"
    chosen: Optional[Dict[str, Any]] = None
    worst_ratio = -1.0
    degenerate = ""
    judged = False
    for out in outputs:
        if out.floating and not out.eager_error <= MAX_EAGER_ERROR:
            degenerate = degenerate or (
                f"{out.name}: eager in {dtype} is itself {out.eager_error:.4g} off the float64 reference (values the"
                " dtype cannot represent): nothing to judge the compiled output against")
            continue
        judged = True
        tolerance = ERROR_MULTIPLIER * out.eager_error + floor if out.floating else 0.0
        failure = ""
        if not out.floating:
            if not out.equal:
                failure = f"{out.name} differs from the reference (exact match required)"
        elif not out.compiled_finite or not math.isfinite(out.compiled_error):
            failure = f"{out.name} has NaN or Inf where the reference has none"
        elif out.compiled_error > tolerance:
            failure = (f"{out.name} is further from the float64 reference than {ERROR_MULTIPLIER:.1f} x eager's error"
                       f" + {floor:g}")
        elif reduced and out.cosine is not None and out.cosine < MIN_COSINE:
            failure = f"{out.name} has a cosine similarity to the reference below {MIN_COSINE:g}"
        ratio = math.inf if failure else (out.compiled_error / tolerance if tolerance > 0 else 0.0)
        first_failure = bool(failure) and verdict == "pass"
        if first_failure or (verdict == "pass" and ratio > worst_ratio):
            worst_ratio = ratio
            chosen = _info("wrong" if first_failure else "pass",
                           compiled_error=out.compiled_error if math.isfinite(out.compiled_error) else 0.0,
                           eager_error=out.eager_error, tolerance=tolerance, cosine=out.cosine, output=out.name,
                           detail=failure)
            if first_failure:
                verdict = "wrong"
    if not judged:
        return _info("unchecked", detail=degenerate)
    assert chosen is not None
    return chosen


def _info(verdict: str, compiled_error: float = 0.0, eager_error: float = 0.0, tolerance: float = 0.0,
          cosine: Optional[float] = None, output: str = "", detail: str = "") -> Dict[str, Any]:
    info: Dict[str, Any] = {"verdict": verdict, "compiled_error": compiled_error, "eager_error": eager_error,
                            "tolerance": tolerance}
    if cosine is not None:
        info["cosine"] = cosine
    if output:
        info["output"] = output
    if detail:
        info["detail"] = detail
    return info


# ---- with torch ----------------------------------------------------------------------------------

def relative_error(value: Any, reference: Any) -> float:
    """||value - reference|| / ||reference|| in float64 (the absolute norm when ||reference|| is 0)."""
    diff = float((value.detach().double().cpu() - reference.detach().double().cpu()).norm())
    scale = float(reference.detach().double().cpu().norm())
    return diff / scale if scale > 0 else diff


def cosine_similarity(value: Any, reference: Any) -> Optional[float]:
    """The cosine of the angle between the two (flattened, float64); None when both are all zeros
    (or empty): nothing to compare. One all-zero side is 0: no similarity (a float16 output whose
    values all underflowed to 0, say, is not "close" to a reference that has values)."""
    import torch

    a = value.detach().double().cpu().flatten()
    b = reference.detach().double().cpu().flatten()
    a_zero, b_zero = a.numel() == 0 or float(a.norm()) == 0, b.numel() == 0 or float(b.norm()) == 0
    if a_zero or b_zero:
        return None if a_zero and b_zero else 0.0
    return float(torch.nn.functional.cosine_similarity(a, b, dim=0))


def compare(name: str, compiled: Any, eager: Any, reference: Any) -> OutputComparison:
    """One output of the compiled model, of eager in the job's dtype, and of the float64 reference."""
    import torch

    if not (reference.is_floating_point() or reference.is_complex()):
        return OutputComparison(name, floating=False, equal=bool(torch.equal(compiled.cpu(), reference.cpu())))
    ref_finite = torch.isfinite(reference.detach().double().cpu())
    compiled_finite = bool((torch.isfinite(compiled.detach().double().cpu()) | ~ref_finite).all())
    mask = ref_finite
    c = compiled.detach().double().cpu()[mask]
    e = eager.detach().double().cpu()[mask]
    r = reference.detach().double().cpu()[mask]
    compiled_error = relative_error(c, r) if compiled_finite else math.inf
    return OutputComparison(name, floating=True, compiled_error=compiled_error, eager_error=relative_error(e, r),
                            cosine=cosine_similarity(c, r) if compiled_finite else None,
                            compiled_finite=compiled_finite)


def outputs_equal(first: Sequence[Any], second: Sequence[Any]) -> bool:
    """Bitwise equality of two eager runs' flattened outputs (NaNs in the same places count as equal)."""
    import torch

    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            if not bool(torch.equal(torch.isnan(a), torch.isnan(b))):
                return False
            if not bool(torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))):
                return False
        elif not bool(torch.equal(a, b)):
            return False
    return True


def float64_copy(model: Any) -> Any:
    """A float64 copy of `model` (weights and buffers), leaving `model` as it is."""
    return copy.deepcopy(model).double()


def float64_inputs(inputs: Sequence[Any]) -> List[Any]:
    """Floating inputs in float64; integer and boolean inputs (ids, masks) as they are."""
    return [t.double() if t.is_floating_point() else t for t in inputs]


# ---- the runner's check of a compiled model --------------------------------------------------------

def _detached(value: Any) -> List[Any]:
    """The tensors of one call's output, copied off the device (a replayed CUDA graph reuses its
    output memory on the next call)."""
    from benchfleet_models import flatten_tensors

    return [t.detach().to("cpu", copy=True) for t in flatten_tensors(value)]


def _output_names(count: int, names: Sequence[str]) -> List[str]:
    return list(names) if len(names) == count else [f"output{i}" for i in range(count)]


def check_compiled(eager: Callable[..., Any], compiled: Callable[..., Any], reference: Callable[[], Any],
                   inputs: Sequence[Any], dtype: str, on_cuda: bool,
                   output_names: Sequence[str] = ()) -> Dict[str, Any]:
    """The AccuracyInfo of one compiled model on `inputs` (in the job's dtype). eager and compiled
    are the uncompiled and compiled model as the job calls them (amp: under autocast);
    reference() makes the float64 model, called on float64_inputs(inputs). Eager runs twice (equal
    outputs: eager_deterministic), compiled once, the reference once, all under no_grad; outputs are
    named by `output_names` when they are as many, else output0, output1, ... Never raises: a
    failure of the check itself (out of memory, an exception) is verdict unchecked, with the
    reason in detail; so is an eager output with NaN or Inf where the reference has none."""
    import torch

    try:
        with torch.no_grad():
            first = _detached(eager(*inputs))
            second = _detached(eager(*inputs))
            got = _detached(compiled(*inputs))
            model64 = reference()
            expected = _detached(model64(*float64_inputs(inputs)))
            del model64
        names = _output_names(len(expected), output_names)
        for what, outputs in (("compiled", got), ("eager", first)):
            if len(outputs) != len(expected):
                return _info("wrong" if what == "compiled" else "unchecked",
                             detail=f"the {what} model returned {len(outputs)} tensors, the float64 reference "
                                    f"{len(expected)}")
            for name, out, ref in zip(names, outputs, expected):
                if out.shape != ref.shape:
                    return _info("wrong" if what == "compiled" else "unchecked", output=name,
                                 detail=f"{name} of the {what} model has shape {list(out.shape)}, the float64 "
                                        f"reference's {list(ref.shape)}")
        comparisons = [compare(name, c, e, r) for name, c, e, r in zip(names, got, first, expected)]
        broken = next((c.name for c in comparisons if not math.isfinite(c.eager_error)), None)
        if broken is not None:  # no bound to judge against (and no finite number to report)
            return _info("unchecked", output=broken,
                         detail=f"{broken} of the eager model has NaN or Inf where the float64 reference has none")
        return judge(dtype, on_cuda, outputs_equal(first, second), comparisons)
    except Exception as e:  # MemoryError and torch's OutOfMemoryError too: the check, not the job, failed
        message = f"{type(e).__name__}: {e}".split("\nException raised from")[0]
        return _info("unchecked", detail=f"the accuracy check failed: {message}"[:2000])


# ---- the test-only perturbation of compiled outputs ------------------------------------------------

PERTURB_VARIABLE = "BENCHFLEET_TEST_PERTURB_COMPILED"
PERTURB_SEED = 19


def perturbation_scale(environ: Optional[Mapping[str, str]] = None) -> Optional[float]:
    """$BENCHFLEET_TEST_PERTURB_COMPILED (default os.environ) as a relative scale, None when unset or
    empty. For tests only: it makes a compiled model wrong on purpose. Raises ValueError naming the
    variable when it is not a number in (0, 1]."""
    text = (os.environ if environ is None else environ).get(PERTURB_VARIABLE, "")
    if not text:
        return None
    try:
        scale = float(text)
    except ValueError:
        scale = math.nan
    if not (0 < scale <= 1):
        raise ValueError(f"{PERTURB_VARIABLE}={text!r}: must be a number in (0, 1] (a relative scale, e.g. 0.05)")
    return scale


def perturbation_noise(shape: Sequence[int]) -> Any:
    """The fixed noise added to an output of this shape: standard normal, float32, on the CPU, drawn
    from a generator seeded with PERTURB_SEED (the same on every machine and in every process)."""
    import torch

    return torch.randn(list(shape), generator=torch.Generator().manual_seed(PERTURB_SEED), dtype=torch.float32)


def perturb_tensor(t: Any, scale: float, noise: Any) -> Any:
    """t + scale x ||t|| / sqrt(n) x noise (noise: perturbation_noise(t.shape), on t's device): a
    relative L2 error of about `scale`. Plain tensor operations, so an exported graph can hold it."""
    rms = t.float().norm() / math.sqrt(max(t.numel(), 1))
    return (t.float() + scale * rms * noise).to(t.dtype)


def perturbed(fn: Callable[..., Any], scale: float) -> Callable[..., Any]:
    """`fn` with perturb_tensor applied to each floating tensor of its output (a tensor, or a
    list/tuple of them); the noise of each shape is made once."""
    import torch

    noises: Dict[Any, Any] = {}

    def one(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return t
        key = (tuple(t.shape), str(t.device))
        if key not in noises:
            noises[key] = perturbation_noise(t.shape).to(t.device)
        return perturb_tensor(t, scale, noises[key])

    def call(*args: Any) -> Any:
        out = fn(*args)
        return type(out)(one(t) for t in out) if isinstance(out, (list, tuple)) else one(out)

    return call
