#!/usr/bin/env python3
"""benchfleet exporter: turns one catalog model into an artifact the C++ worker loads.

Run with a torch build's own python (the agent picks it per build):

    python3 benchfleet_export.py --catalog common/catalog/models.yaml --model ID --batch N \\
        --format torchscript|torchscript-frozen|aotinductor [--mode MODE] --device cpu|cuda \\
        --out DIR [--weights PATH] [--seed 0]

Formats (one artifact per model, batch, format, mode and device):
  torchscript         torch.jit.trace under no_grad; nothing else (the worker's `eager` mode)
  torchscript-frozen  trace + torch.jit.freeze (the worker's `torchscript` mode). The loader must
                      call torch.jit.optimize_for_inference (C++: torch::jit::optimize_for_inference)
                      after loading: a module after that pass bakes in build-specific MKL-DNN/cuDNN
                      ops and cannot be saved (torch.jit.load fails: "required keyword attribute
                      'value' is undefined"; pytorch issues 69608, 81085)
  aotinductor         torch.export.export + torch._inductor.aoti_compile_and_package with the
                      inductor options of torch.compile(mode=MODE) (torch >= 2.6)

Writes DIR/model.pt (or DIR/model.pt2) and DIR/metadata.json, and prints that JSON as the only
line on stdout; progress goes to stderr. The artifact's forward takes the metadata's `inputs`
positionally and returns a tensor or a tuple of tensors. Before writing the metadata the
exporter loads the artifact back, runs it on seeded example inputs and compares it with the
eager model (`max_abs_diff`).

On failure it prints {"status": "error"|"unsupported", "model", "format", "message"} and exits
1 (error) or 4 (unsupported); it never ends in a bare traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, Iterator, List, NoReturn, Optional, Sequence

EXIT_OK, EXIT_ERROR, EXIT_UNSUPPORTED = 0, 1, 4
FORMATS = ("torchscript", "torchscript-frozen", "aotinductor")
# The worker mode each TorchScript format serves; aotinductor serves the --mode it was built for.
_WORKER_MODE = {"torchscript": "eager", "torchscript-frozen": "torchscript"}
# Exported vs eager output: |diff| <= ATOL + RTOL * max|eager| (whole-output scale, so random-init
# outputs near zero do not fail on relative error).
_ATOL, _RTOL = 1e-3, 2e-2
_AOTI_MIN_TORCH = (2, 6)


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


def _default_catalog() -> str:
    env = os.environ.get("BENCHFLEET_CATALOG")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "common", "catalog", "models.yaml"))


def _parser() -> _Parser:
    p = _Parser(prog="benchfleet_export.py", description="Export a catalog model for the benchfleet worker.")
    p.add_argument("--catalog", default=_default_catalog(), help="catalog YAML (default: %(default)s)")
    p.add_argument("--model", required=True, help="catalog id, e.g. microsoft/resnet-50")
    p.add_argument("--batch", required=True, type=int, help="batch size baked into the artifact (> 0)")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--mode", default="default",
                   choices=("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
                   help="torch.compile mode whose inductor options an aotinductor package uses")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
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


def _torch_version_tuple(version: str) -> tuple:
    parts = []
    for piece in version.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _aoti_unsupported_reason(torch: Any) -> Optional[str]:
    needs = f"AOTInductor needs torch >= 2.6 (this is {torch.__version__})"
    if _torch_version_tuple(torch.__version__) < _AOTI_MIN_TORCH:
        return needs
    try:
        import torch._inductor  # noqa: F401, PLC0415 (lazily imported submodules)
        import torch.export  # noqa: F401, PLC0415
    except ImportError as e:
        return f"AOTInductor is not usable in this torch ({torch.__version__}): {e}"
    if not hasattr(torch._inductor, "aoti_compile_and_package"):
        return needs
    return None


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _compare(reference: Any, exported: Any) -> float:
    """max |exported - reference| over all outputs; raises on a structural or numeric mismatch."""
    import torch  # noqa: PLC0415

    from benchfleet_models import ExportFailure, flatten_tensors  # noqa: PLC0415

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
        if diff > _ATOL + _RTOL * scale:
            raise ExportFailure("error", f"output {i}: exported module differs from the eager model "
                                         f"(max |diff| {diff:.3g}, max |eager| {scale:.3g})")
        worst = max(worst, diff)
    return worst


def _export_torchscript(model: Any, inputs: Sequence[Any], path: str, frozen: bool) -> None:
    import torch  # noqa: PLC0415

    with torch.no_grad():
        module = torch.jit.trace(model, tuple(inputs), check_trace=False)
        if frozen:  # freeze also folds conv/batch-norm and constants (optimize_numerics)
            module = torch.jit.freeze(module.eval())
    torch.jit.save(module, path)


def _run_torchscript(path: str, inputs: Sequence[Any], device: str, frozen: bool) -> Any:
    """Loads the artifact as the worker does (optimising a frozen one after loading) and runs it."""
    import torch  # noqa: PLC0415

    module = torch.jit.load(path, map_location=device)
    with torch.no_grad():
        if frozen:
            module = torch.jit.optimize_for_inference(module)
        return module(*inputs)


def _export_aotinductor(model: Any, inputs: Sequence[Any], path: str, configs: Dict[str, Any]) -> None:
    import torch  # noqa: PLC0415
    import torch._inductor  # noqa: PLC0415

    with torch.no_grad():
        program = torch.export.export(model, tuple(inputs))
        torch._inductor.aoti_compile_and_package(program, package_path=path, inductor_configs=configs)


def _run_aotinductor(path: str, inputs: Sequence[Any]) -> Any:
    import torch  # noqa: PLC0415
    import torch._inductor  # noqa: PLC0415

    compiled = torch._inductor.aoti_load_package(path)
    with torch.no_grad():
        return compiled(*inputs)


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


def export(args: argparse.Namespace) -> Dict[str, Any]:
    """Builds, exports, checks and describes one artifact; returns the metadata."""
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError as e:
        raise _NoTorch(f"{sys.executable} cannot import torch ({e}); run the exporter with a torch "
                       "build's own python") from None
    from benchfleet_models import (ExportFailure, build_model, find_model,  # noqa: PLC0415
                                   flatten_tensors, inductor_configs_for_mode, load_catalog, make_inputs)

    if args.batch <= 0:
        raise ExportFailure("error", f"--batch must be a positive integer, got {args.batch}")
    spec = find_model(load_catalog(args.catalog), args.model)
    if spec.formats and args.format not in spec.formats:
        raise ExportFailure("unsupported", f"the catalog lists {args.model} as exportable to "
                                           f"{', '.join(spec.formats)}, not {args.format}")

    configs: Dict[str, Any] = {}
    if args.format == "aotinductor":
        reason = _aoti_unsupported_reason(torch)
        if reason:
            raise ExportFailure("unsupported", reason)
        # An AOTInductor package has no CUDA graphs; the worker captures them itself.
        configs = {k: v for k, v in inductor_configs_for_mode(args.mode).items() if "cudagraph" not in k}
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ExportFailure("error", f"--device cuda, but this torch ({torch.__version__}) sees no CUDA device")

    os.makedirs(args.out, exist_ok=True)
    metadata_path = os.path.join(args.out, "metadata.json")
    if os.path.exists(metadata_path):
        os.remove(metadata_path)  # never leave a stale description next to a new artifact
    artifact = "model.pt2" if args.format == "aotinductor" else "model.pt"
    artifact_path = os.path.join(args.out, artifact)

    _log(f"building {args.model} ({spec.builder}) on {args.device}")
    model = build_model(spec, device=args.device, seed=args.seed, weights=args.weights, log=_log)
    inputs = make_inputs(spec, args.batch, args.seed, device=args.device)
    with torch.no_grad():
        reference = model(*inputs)

    _log(f"exporting {args.format} at batch {args.batch}")
    started = time.monotonic()
    try:
        if args.format == "aotinductor":
            _export_aotinductor(model, inputs, artifact_path, configs)
        else:
            _export_torchscript(model, inputs, artifact_path, frozen=args.format == "torchscript-frozen")
    except ExportFailure:
        raise
    except Exception as e:  # noqa: BLE001 (the reason goes to the user)
        raise ExportFailure("error", f"{args.format} export of {args.model} failed: {_last_lines(e)}") from None
    export_s = time.monotonic() - started

    _log("checking the artifact against the eager model")
    try:
        if args.format == "aotinductor":
            exported = _run_aotinductor(artifact_path, inputs)
        else:
            exported = _run_torchscript(artifact_path, inputs, args.device,
                                        frozen=args.format == "torchscript-frozen")
        max_abs_diff = _compare(reference, exported)
    except Exception as e:  # noqa: BLE001 (an unchecked artifact is not left behind)
        os.remove(artifact_path)
        if isinstance(e, ExportFailure):
            raise
        raise ExportFailure("error", f"the exported {args.format} artifact does not run: {_last_lines(e)}") from None

    output_names = list(spec.outputs) or [f"output{i}" for i in range(len(flatten_tensors(reference)))]
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
        "inputs": [
            {"name": item.name, "shape": item.concrete_shape(args.batch), "dtype": item.dtype,
             **({"range": list(item.range)} if item.range is not None else {})}
            for item in spec.inputs
        ],
        "outputs": _describe(flatten_tensors(reference), output_names),
        "export_s": round(export_s, 3),
        "parameters": sum(p.numel() for p in model.parameters()),
        "max_abs_diff": max_abs_diff,
        "seed": args.seed,
        "weights": "random" if not args.weights else os.path.abspath(args.weights),
    }
    if args.format == "aotinductor":
        metadata["inductor_configs"] = configs
    if args.format == "torchscript-frozen":
        metadata["optimize_for_inference_on_load"] = True
    _write_json_atomically(metadata_path, metadata)
    return metadata


def _last_lines(error: BaseException, keep: int = 3) -> str:
    lines = [line.strip() for line in traceback.format_exception_only(type(error), error) if line.strip()]
    text = " ".join(lines) if lines else type(error).__name__
    tail = [line.strip() for line in traceback.format_tb(error.__traceback__)[-keep:]]
    where = " <- ".join(reversed([t.splitlines()[0] for t in tail if t]))
    message = f"{text} (at {where})" if where else text
    return message if len(message) <= 2000 else message[:1997] + "..."


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
    except Exception as e:  # noqa: BLE001 (never a bare traceback)
        status = getattr(e, "status", "error")
        message = getattr(e, "message", None) or _last_lines(e)
        if not hasattr(e, "status"):
            traceback.print_exc(file=sys.stderr)
    print(json.dumps({"status": status, "model": model, "format": fmt, "message": message}), flush=True)
    return EXIT_UNSUPPORTED if status == "unsupported" else EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
