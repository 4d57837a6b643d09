#!/usr/bin/env python3
"""benchfleet exporter: turns one model into an artifact the C++ worker loads.

Run with a torch build's own python (the agent picks it per build):

    python3 benchfleet_export.py (--catalog common/catalog/models.yaml --model ID | --model-json FILE
        [--model KEY]) --batch N --format torchscript|torchscript-frozen|aotinductor [--mode MODE] \\
        --device cpu|cuda [--dtype float32|float16|bfloat16] --out DIR [--weights PATH] [--seed 0]

The model is the catalog's entry for --model, or the definition in --model-json (a JSON model
definition, docs/models.md, as a job carries it; --model is then its key, default its id, and
the catalog is not read). By source: a python model is `unsupported` (the libtorch runtime needs
an exported program); an exported one (a torch.export archive) is packaged with AOTInductor as
it is, so aotinductor is its only format (TorchScript formats are `unsupported`). A definition's
`formats` (default per docs/models.md) bound the formats of any other.

Formats (one artifact per model, batch, format, mode and device):
  torchscript         torch.jit.trace under no_grad; nothing else (the worker's `eager` mode)
  torchscript-frozen  trace + torch.jit.freeze (the worker's `torchscript` mode). The loader must
                      call torch.jit.optimize_for_inference (C++: torch::jit::optimize_for_inference)
                      after loading: a module after that pass bakes in build-specific MKL-DNN/cuDNN
                      ops and cannot be saved (torch.jit.load fails: "required keyword attribute
                      'value' is undefined"; known upstream: PyTorch #69608, #81085)
  aotinductor         torch.export.export + torch._inductor.aoti_compile_and_package with the
                      inductor options of torch.compile(mode=MODE) (torch >= 2.6). The modes that
                      replay CUDA graphs (reduce-overhead, max-autotune) are CUDA only, as in the
                      worker: on --device cpu they are `unsupported`.

Writes DIR/model.pt (or DIR/model.pt2) and DIR/metadata.json, and prints that JSON as the only
line on stdout; progress goes to stderr. The artifact's forward takes the metadata's `inputs`
positionally and returns a tensor or a tuple of tensors. Before writing the metadata the
exporter loads the artifact back, runs it on seeded example inputs and compares it with the
eager model (`max_abs_diff`): a TorchScript artifact must match eager within a tolerance; an
AOTInductor package must match it in structure (output count, shapes, NaN pattern) only, since
how far its numbers are off is what the worker's accuracy verdict judges.

--dtype casts the model and its floating inputs (the metadata's `inputs` and `dtype` then say
that dtype, so the worker makes its inputs in it). `amp` (autocast over float32 weights) is the
python runtime's alone: here it is `unsupported`. A dtype the device cannot run (e.g. a kernel
"not implemented for 'Half'") is `unsupported` with torch's message.

For aotinductor the exporter also writes DIR/reference.bin, the float64 reference the worker
judges the package's accuracy against, described by metadata `accuracy_reference`:
{"file": "reference.bin", "eager_deterministic": bool, "inputs": [{name, dtype, shape, offset,
nbytes}], "outputs": [{name, dtype, shape, offset, nbytes, eager_error}]}: raw little-endian,
C-contiguous tensors; the inputs are the exporter's seeded ones in the job's dtype, the outputs
those of a float64 copy of the float32 model on those inputs (float64; a non-floating output in
its own dtype), eager_error is eager's relative L2 error (job dtype) against them, and
eager_deterministic says whether two eager runs agreed bit for bit
(agent/python/benchfleet_accuracy.py has the rule).

Test only: with BENCHFLEET_TEST_PERTURB_COMPILED=SCALE (e.g. 0.05) in the environment an
AOTInductor package computes each floating output plus SCALE x ||out|| / sqrt(numel) x a fixed
seeded noise (the reference stays the model's), so its accuracy verdict must be `wrong`; the
metadata then says `test_perturb_compiled`. Never set it outside tests.

For aotinductor the metadata also says how the compile went: `compile_s` (the AOT compile alone;
`export_s` is torch.export plus that compile), `inductor_cache` with `inductor_cache_counts`
(Inductor's FX graph cache under TORCHINDUCTOR_CACHE_DIR, from torch._dynamo's counters: "warm"
when every lookup hit, "mixed" when some did, "cold" when none did; torch 2.6 never consults it
for an AOT compile, so its counts stay 0 and every export is cold), and on the CPU
`inductor_vec_isa`, the vector ISA Inductor's kernels use ("none": scalar code, e.g. because its
check build cannot find sleef.h). `inductor_configs` are the options the package was compiled with:
the mode's, except that on the CPU max-autotune leaves out Inductor's C++ GEMM template (GEMMs
from ATen only) when there is no vector ISA, or when the compile with it failed
(`inductor_fallback` then says why).

On failure it prints {"status": "error"|"unsupported", "model", "format", "message"} and exits
1 (error) or 4 (unsupported); it never ends in a bare traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import hashlib
import json
import os
import re
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, Iterator, List, NoReturn, Optional, Sequence

from benchfleet_accuracy import PERTURB_VARIABLE
from benchfleet_aoti import (CACHE_COUNTERS, AotiPlan, aoti_plan, aoti_unsupported_reason, inductor_cache_counts,
                             inductor_cache_outcome, run_aotinductor)
from benchfleet_definition import DefinitionError, ExportFailure, ModelSpec, find_model, load_catalog, parse_definition
from benchfleet_export_check import (REFERENCE_FILE, compare, perturbed, test_perturbation,
                                     write_accuracy_reference)
from benchfleet_job import default_catalog, model_id_of
from benchfleet_unsupported_dtype import unsupported_dtype_line

EXIT_OK, EXIT_ERROR, EXIT_UNSUPPORTED = 0, 1, 4
FORMATS = ("torchscript", "torchscript-frozen", "aotinductor")
DTYPES = ("float32", "float16", "bfloat16", "amp")
# The worker mode each TorchScript format serves; aotinductor serves the --mode it was built for.
_WORKER_MODE = {"torchscript": "eager", "torchscript-frozen": "torchscript"}
# Modes whose packages the worker replays as CUDA graphs (as agent/worker/capabilities.cpp says).
_CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


class _UsageError(Exception):
    pass


class _NoTorch(Exception):
    status = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print usage and exit 2
        raise _UsageError(message)


def _parser() -> _Parser:
    p = _Parser(prog="benchfleet_export.py", description="Export a model for the benchfleet worker.")
    p.add_argument("--catalog", default=default_catalog(), help="catalog YAML (default: %(default)s)")
    p.add_argument("--model", help="catalog id, e.g. microsoft/resnet-50; with --model-json the model's key "
                                   "(its id, or id@N for version N; default: its id)")
    p.add_argument("--model-json", help="a model definition (JSON, docs/models.md) to export instead of a catalog "
                                        "model")
    p.add_argument("--batch", required=True, type=int, help="batch size baked into the artifact (> 0)")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--mode", default="default",
                   choices=("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
                   help="torch.compile mode whose inductor options an aotinductor package uses")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="precision the model and its floating inputs are cast to (amp: python runtime only, "
                        "unsupported here)")
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--weights", help="state_dict file, or a Hugging Face checkpoint directory")
    p.add_argument("--seed", type=int, default=0, help="seed for random init and example inputs")
    return p


def _log(message: str) -> None:
    print(f"benchfleet-export: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Keeps stdout for the one JSON line: Python and C++ prints go to stderr meanwhile."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _dtype_unsupported(error: BaseException, dtype: str, device: str) -> Optional[Exception]:
    """The `unsupported` verdict for an error that says a kernel lacks `dtype` on this device."""
    line = unsupported_dtype_line(dtype, str(error))
    if line is None:
        return None
    return ExportFailure("unsupported", f"{dtype} on {device} is not supported by this torch build: {line[:500]}")


def _cast_inputs(inputs: Sequence[Any], dtype: Any) -> List[Any]:
    """Floating inputs in `dtype`; ids and masks as they are."""
    return [t.to(dtype) if t.is_floating_point() else t for t in inputs]


def _export_torchscript(model: Any, inputs: Sequence[Any], path: str, frozen: bool) -> None:
    import torch

    with torch.no_grad():
        module = torch.jit.trace(model, tuple(inputs), check_trace=False)
        if frozen:  # freeze also folds conv/batch-norm and constants (optimize_numerics)
            module = torch.jit.freeze(module.eval())
    torch.jit.save(module, path)


def _run_torchscript(path: str, inputs: Sequence[Any], device: str, frozen: bool) -> Any:
    """Loads the artifact as the worker does (optimising a frozen one after loading) and runs it."""
    import torch

    module = torch.jit.load(path, map_location=device)
    with torch.no_grad():
        if frozen:
            module = torch.jit.optimize_for_inference(module)
        return module(*inputs)


def _export_aotinductor(model: Any, inputs: Sequence[Any], path: str, configs: Dict[str, Any],
                        fallback: Optional[Dict[str, Any]] = None, program: Any = None) -> Dict[str, Any]:
    """Exports (unless given the `program`) and compiles the package; returns what the metadata
    says about the compile: compile_s, the Inductor cache's part, and the configs used. When the
    compile with `configs` fails and there is a `fallback` (configs without what failed), it
    compiles with that instead and says why (`inductor_fallback`)."""
    import torch
    import torch._inductor

    report: Dict[str, Any] = {"inductor_configs": configs}
    before = inductor_cache_counts()
    with torch.no_grad():
        if program is None:
            program = torch.export.export(model, tuple(inputs))
        started = time.monotonic()
        try:
            # A copy: aoti_compile_and_package adds its own keys to the dict it is given.
            torch._inductor.aoti_compile_and_package(program, package_path=path, inductor_configs=dict(configs))
        except Exception as e:  # Inductor's failures have no common type
            if fallback is None:
                raise
            why = _last_lines(e, keep=1).splitlines()[0][:500]
            _log(f"the compile with {configs} failed ({why}); compiling with {fallback}")
            started = time.monotonic()
            torch._inductor.aoti_compile_and_package(program, package_path=path, inductor_configs=dict(fallback))
            report.update(inductor_configs=fallback,
                          inductor_fallback=f"the compile with {configs} failed ({why}); compiled with {fallback}")
        compile_s = time.monotonic() - started
    after = inductor_cache_counts()
    hits, misses, bypasses = (after[k] - before[k] for k in CACHE_COUNTERS)
    report.update({
        "compile_s": round(compile_s, 3),
        "inductor_cache": inductor_cache_outcome(hits, misses, bypasses),
        "inductor_cache_counts": {"hit": hits, "miss": misses, "bypass": bypasses},
    })
    return report


def _describe(tensors: Sequence[Any], names: Sequence[str]) -> List[Dict[str, Any]]:
    return [{"name": n, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
            for n, t in zip(names, tensors)]


def _write_json_atomically(path: str, document: Dict[str, Any]) -> None:
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".metadata.", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o644)  # mkstemp makes it private; the agent and the worker only read it
    os.replace(tmp, path)


def _model_spec(args: argparse.Namespace) -> ModelSpec:
    """The model to export: the definition in --model-json (args.model then defaults to its id and
    must name a version of it), else the catalog's entry for --model."""
    if not args.model_json:
        if not args.model:
            raise _UsageError("one of --model and --model-json is required")
        return find_model(load_catalog(args.catalog), args.model)
    try:
        with open(args.model_json, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        raise ExportFailure("error", f"--model-json {args.model_json}: cannot read a JSON definition: {e}") from None
    try:
        spec = parse_definition(document, "")
    except DefinitionError as e:
        raise ExportFailure("error", f"--model-json {args.model_json}: {e.message}") from None
    args.model = args.model or spec.id
    if model_id_of(args.model) != spec.id:
        raise _UsageError(f"--model {args.model} is not a version of {spec.id} (the id of --model-json): give "
                          f"{spec.id} or {spec.id}@N")
    return spec


def _weights_source(args: argparse.Namespace, spec: ModelSpec) -> str:
    """The metadata's `weights`: --weights, else the definition's file or directory or hub id,
    else "random"."""
    if args.weights:
        return os.path.abspath(args.weights)
    return spec.local_path or spec.path or spec.hub_id or "random"


def export(args: argparse.Namespace) -> Dict[str, Any]:
    """Builds, exports, checks and describes one artifact; returns the metadata."""
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise _NoTorch(f"{sys.executable} cannot import torch ({e}); run the exporter with a torch "
                       "build's own python") from None
    from benchfleet_accuracy import float64_copy
    from benchfleet_models import dtype_of, flatten_tensors, inductor_configs_for_mode, load_model

    if args.batch <= 0:
        raise ExportFailure("error", f"--batch must be a positive integer, got {args.batch}")
    if args.dtype == "amp":
        raise ExportFailure("unsupported", "amp (autocast over float32 weights) runs in the python runtime only: an "
                                           "exported artifact has one fixed dtype (use float16 or bfloat16)")
    perturbation = test_perturbation() if args.format == "aotinductor" else None
    spec = _model_spec(args)
    if spec.source == "python":
        raise ExportFailure("unsupported", "a python model needs an exported program for the libtorch runtime: "
                                           "register its torch.export archive as source exported")
    if spec.source == "exported" and args.format != "aotinductor":
        raise ExportFailure("unsupported", f"{args.model} is an exported program, which the libtorch runtime runs "
                                           f"as an AOTInductor package (format aotinductor), not {args.format}")
    if spec.formats and args.format not in spec.formats:
        raise ExportFailure("unsupported", f"the definition of {args.model} lists its formats as "
                                           f"{', '.join(spec.formats)}, not {args.format}")

    plan = AotiPlan()
    if args.format == "aotinductor":
        reason = aoti_unsupported_reason(torch)
        if reason:
            raise ExportFailure("unsupported", reason)
        if args.mode in _CUDA_GRAPH_MODES and args.device != "cuda":
            instead = "default" if args.mode == "reduce-overhead" else "max-autotune-no-cudagraphs"
            raise ExportFailure("unsupported", f"{args.mode} replays CUDA graphs and needs a CUDA device; on "
                                               f"{args.device} its package would be {instead}'s")
        plan = aoti_plan(inductor_configs_for_mode(args.mode), args.device)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ExportFailure("error", f"--device cuda, but this torch ({torch.__version__}) sees no CUDA device")

    os.makedirs(args.out, exist_ok=True)
    metadata_path = os.path.join(args.out, "metadata.json")
    if os.path.exists(metadata_path):
        os.remove(metadata_path)  # never leave a stale description next to a new artifact
    artifact = "model.pt2" if args.format == "aotinductor" else "model.pt"
    artifact_path = os.path.join(args.out, artifact)

    _log(f"building {args.model} ({spec.source}) on {args.device} in {args.dtype}")
    loaded = load_model(spec, args.batch, device=args.device, seed=args.seed, weights=args.weights, log=_log)
    spec, model = loaded.spec, loaded.module
    # The accuracy reference is the float32 model in float64, whatever the job's dtype.
    reference_model = float64_copy(model) if args.format == "aotinductor" else None
    torch_dtype = dtype_of(args.dtype)
    model = model.to(torch_dtype)
    inputs = _cast_inputs(loaded.inputs(args.batch, args.seed), torch_dtype)
    try:
        with torch.no_grad():
            reference = model(*inputs)
    except Exception as e:
        unsupported = _dtype_unsupported(e, args.dtype, args.device)
        if unsupported is not None:
            raise unsupported from None
        raise
    output_names = list(spec.outputs) or [f"output{i}" for i in range(len(flatten_tensors(reference)))]

    _log(f"exporting {args.format} at batch {args.batch}")
    started = time.monotonic()
    compile_report: Dict[str, Any] = {}
    try:
        if args.format == "aotinductor":
            exported_model = model
            # An exported program is packaged as it is, unless casting or perturbing it changed it.
            program = loaded.program if args.dtype == "float32" else None
            if perturbation is not None:
                _log(f"test only: {PERTURB_VARIABLE}={perturbation}: the package's outputs are perturbed")
                exported_model, program = perturbed(model, flatten_tensors(reference), perturbation), None
            compile_report = _export_aotinductor(exported_model, inputs, artifact_path, plan.configs, plan.fallback,
                                                 program)
        else:
            _export_torchscript(model, inputs, artifact_path, frozen=args.format == "torchscript-frozen")
    except ExportFailure:
        raise
    except Exception as e:  # the reason goes to the user
        unsupported = _dtype_unsupported(e, args.dtype, args.device)
        if unsupported is not None:
            raise unsupported from None
        raise ExportFailure("error", f"{args.format} export of {args.model} failed: {_last_lines(e)}") from None
    export_s = time.monotonic() - started

    _log("checking the artifact against the eager model")
    accuracy_reference: Optional[Dict[str, Any]] = None
    reference_error = ""
    try:
        if args.format == "aotinductor":
            exported = run_aotinductor(artifact_path, inputs)
            # Only the structure: the numbers are the worker's accuracy verdict to judge.
            max_abs_diff = compare(reference, exported, numeric=False)
            _log("writing the float64 accuracy reference")
            try:
                accuracy_reference = write_accuracy_reference(args.out, model, reference_model, inputs,
                                                              flatten_tensors(reference),
                                                              [item.name for item in spec.inputs], output_names)
            except Exception as e:
                if spec.source != "exported":
                    raise
                # Its graph may fix its dtypes: the worker's verdict is then unchecked, saying why.
                if os.path.exists(os.path.join(args.out, REFERENCE_FILE)):
                    os.remove(os.path.join(args.out, REFERENCE_FILE))
                reference_error = f"the exported program does not run in float64: {_last_lines(e, keep=1)}"[:2000]
                _log(f"no accuracy reference: {reference_error}")
        else:
            exported = _run_torchscript(artifact_path, inputs, args.device,
                                        frozen=args.format == "torchscript-frozen")
            max_abs_diff = compare(reference, exported)
    except Exception as e:  # an unchecked artifact is not left behind
        for leftover in (artifact_path, os.path.join(args.out, REFERENCE_FILE)):
            if os.path.exists(leftover):
                os.remove(leftover)
        if isinstance(e, ExportFailure):
            raise
        unsupported = _dtype_unsupported(e, args.dtype, args.device)
        if unsupported is not None:
            raise unsupported from None
        raise ExportFailure("error", f"the exported {args.format} artifact does not run: {_last_lines(e)}") from None
    metadata: Dict[str, Any] = {
        "status": "ok",
        "model": args.model,
        "format": args.format,
        "mode": args.mode if args.format == "aotinductor" else _WORKER_MODE[args.format],
        "batch": args.batch,
        "device": args.device,
        "artifact": artifact,
        "sha256": _sha256(artifact_path),
        "torch_version": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", "unknown"),
        "python": sys.version.split()[0],
        "dtype": args.dtype,
        "inputs": [
            {"name": item.name, "shape": item.concrete_shape(args.batch),
             "dtype": str(t.dtype).replace("torch.", ""),
             **({"range": list(item.range)} if item.range is not None else {})}
            for item, t in zip(spec.inputs, inputs)
        ],
        "outputs": _describe(flatten_tensors(reference), output_names),
        "export_s": round(export_s, 3),
        "parameters": sum(p.numel() for p in model.parameters()),
        "max_abs_diff": max_abs_diff,
        "seed": args.seed,
        "weights": _weights_source(args, spec),
    }
    if args.format == "aotinductor":
        metadata.update(compile_report)
        metadata["accuracy_reference"] = accuracy_reference
        if reference_error:
            metadata["accuracy_reference_error"] = reference_error
        if perturbation is not None:
            metadata["test_perturb_compiled"] = perturbation
        if plan.note:
            metadata["inductor_fallback"] = plan.note
        if args.device == "cpu":
            metadata["inductor_vec_isa"] = plan.vec_isa
            if plan.vec_isa == "none":
                _log("warning: Inductor found no usable vector ISA, so its CPU kernels are scalar code (its check "
                     "kernel failed to build or load: it needs sleef.h (libsleef-dev) and, where libtorch_cpu "
                     "links libsleef dynamically as Debian's does, benchfleet-g++ to link it)")
    if args.format == "torchscript-frozen":
        metadata["optimize_for_inference_on_load"] = True
    _write_json_atomically(metadata_path, metadata)
    return metadata


_ERROR_LINE = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception)\b[^:]*:")


def _last_lines(error: BaseException, keep: int = 3) -> str:
    lines = [line.strip() for line in traceback.format_exception_only(type(error), error) if line.strip()]
    text = " ".join(lines) if lines else type(error).__name__
    tail = [line.strip() for line in traceback.format_tb(error.__traceback__)[-keep:]]
    where = " <- ".join(reversed([t.splitlines()[0] for t in tail if t]))
    message = f"{text} (at {where})" if where else text
    if len(message) <= 2000:
        return message
    # A long message (a TorchScript interpreter traceback, a dispatcher dump) says what went wrong
    # in its last "...Error: ..." line: that comes first, so the cut does not lose it.
    causes = [line.strip() for line in text.splitlines()[1:] if _ERROR_LINE.match(line)]
    if causes:
        message = f"{causes[-1][:800]} (in: {message})"
    return message[:1997] + "..."


def _peek(argv: Sequence[str], flag: str) -> Optional[str]:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        _parser().print_help()
        return EXIT_OK
    model, fmt = _peek(argv, "--model"), _peek(argv, "--format")
    status, message = "error", ""
    try:
        args = _parser().parse_args(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        with _stdout_to_stderr():
            result = export(args)
        print(json.dumps(result), flush=True)
        return EXIT_OK
    except _UsageError as e:
        message = f"usage: {e}"
    except KeyboardInterrupt:
        message = "interrupted"
    except Exception as e:  # never a bare traceback
        status = getattr(e, "status", "error")
        message = getattr(e, "message", None) or _last_lines(e)
        if not hasattr(e, "status"):
            traceback.print_exc(file=sys.stderr)
    print(json.dumps({"status": status, "model": model, "format": fmt, "message": message}), flush=True)
    return EXIT_UNSUPPORTED if status == "unsupported" else EXIT_ERROR


if __name__ == "__main__":
    # A crash in native code (a loaded AOTInductor package, a CUDA library) then leaves the Python
    # stack on stderr, which the caller keeps, instead of only an exit status.
    faulthandler.enable()
    sys.exit(main())
