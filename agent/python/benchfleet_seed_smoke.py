#!/usr/bin/env python3
"""Smoke test of catalog models in one torch build's python: build, forward, trace, export.

    python3 agent/python/benchfleet_seed_smoke.py --device cuda --out seeds.json \\
        [--catalog PATH] [--models ID,ID...] [--jobs N] [--model-timeout S] [--deadline-s S]
        [--min-model-s S]

Without --models it takes the catalog's first 12 entries, the seeds' models. Each model runs in
a child process of its own (this script with --one ID), at most --jobs at a time, killed after
--model-timeout seconds or at --deadline-s (everything ends by then: a model starts only while
--min-model-s remain, the others are `skipped`). A child reports each step as one JSON line when
it ends, so a child killed mid-way keeps the steps it finished. A SIGTERM ends the children and
still writes the report.

Steps, as the exporter does them (benchfleet_models.py builds a catalog model from its config
with random weights, no download):
  build    load_model(spec, batch 1, device, seed 0)
  forward  the model on its inputs at batch 1 (seed 0), under no_grad
  trace    torch.jit.trace(check_trace=False) and one call of the traced module (catalog format
           torchscript)
  export   torch.export.export and one call of the exported program's module (catalog format
           aotinductor; AOTInductor compiles that program, which this smoke test does not do)
Each step is ok, unsupported (the build lacks what it needs: torch.export, a Python package such
as transformers, a format the catalog does not list), error (with the reason) or skipped (an
earlier step did not pass). A model's status is error if any step is, else unsupported if any
step is, else ok. `max_abs_diff` compares a traced/exported output with the eager one (recorded,
not judged: random weights).

Writes --out (JSON: torch/transformers versions, device, per model its steps, counts per step)
and prints one line per model on stderr. Exit code 0 when no model is `error`, 1 otherwise,
2 on a usage error.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, List, Optional, Sequence, Tuple

from benchfleet_job import default_catalog

STEPS = ("build", "forward", "trace", "export")
SEED_COUNT = 12  # the catalog's first entries are the seeds' models (see its header)
_HERE = os.path.dirname(os.path.abspath(__file__))


def _short(error: BaseException, limit: int = 600) -> str:
    lines = [line.strip() for line in traceback.format_exception_only(type(error), error) if line.strip()]
    text = " ".join(lines) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _emit(step: str, status: str, seconds: float, reason: str = "", **extra: Any) -> None:
    line = {"step": step, "status": status, "seconds": round(seconds, 3), "reason": reason, **extra}
    print(json.dumps(line), flush=True)


def _missing_package(spec: Any) -> Optional[str]:
    """The Python package a model's builder needs and this python lacks, if any."""
    return None if importlib.util.find_spec(spec.builder) else spec.builder


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def _max_abs_diff(reference: Any, other: Any) -> Tuple[Optional[float], str]:
    """(max |other - reference|, "") or (None, why the outputs do not match in structure)."""
    from benchfleet_models import flatten_tensors

    ref, out = flatten_tensors(reference), flatten_tensors(other)
    if len(ref) != len(out):
        return None, f"returns {len(out)} tensors, the eager model {len(ref)}"
    worst = 0.0
    for i, (a, b) in enumerate(zip(ref, out)):
        if tuple(a.shape) != tuple(b.shape):
            return None, f"output {i} has shape {tuple(b.shape)}, the eager model's {tuple(a.shape)}"
        if a.numel():
            worst = max(worst, float((a.detach().double() - b.detach().double()).abs().max()))
    return worst, ""


def run_one(catalog_path: str, model_id: str, device: str, threads: int) -> int:
    """The child: runs the steps for one model, printing one JSON line per step."""
    sys.path.insert(0, _HERE)
    started = time.monotonic()
    try:
        import torch
    except ImportError as e:
        _emit("build", "error", 0.0, f"{sys.executable} cannot import torch: {e}")
        return 1
    from benchfleet_models import ExportFailure, find_model, load_catalog, load_model

    if threads > 0:
        torch.set_num_threads(threads)
    try:
        spec = find_model(load_catalog(catalog_path), model_id)
    except ExportFailure as e:
        _emit("build", "error", time.monotonic() - started, e.message)
        return 1
    missing = _missing_package(spec)
    if missing:
        _emit("build", "unsupported", time.monotonic() - started,
              f"needs the Python package '{missing}', which {sys.executable} does not have")
        return 0
    if device == "cuda" and not torch.cuda.is_available():
        _emit("build", "error", 0.0, f"torch {torch.__version__} sees no CUDA device")
        return 1

    def log(message: str) -> None:
        print(f"seed-smoke {model_id}: {message}", file=sys.stderr, flush=True)

    t = time.monotonic()
    try:
        loaded = load_model(spec, 1, device=device, seed=0, log=log)
        model = loaded.module
        _sync(device)
    except ExportFailure as e:
        _emit("build", e.status, time.monotonic() - t, e.message)
        return 0 if e.status == "unsupported" else 1
    except Exception as e:  # the reason goes into the report
        _emit("build", "error", time.monotonic() - t, _short(e))
        return 1
    parameters = sum(p.numel() for p in model.parameters())
    _emit("build", "ok", time.monotonic() - t, parameters=parameters)

    inputs = loaded.inputs(1, seed=0)
    t = time.monotonic()
    try:
        with torch.no_grad():
            reference = model(*inputs)
        _sync(device)
    except Exception as e:
        _emit("forward", "error", time.monotonic() - t, _short(e))
        return 1
    from benchfleet_models import flatten_tensors
    _emit("forward", "ok", time.monotonic() - t,
          outputs=[list(x.shape) for x in flatten_tensors(reference)])

    failed = False
    for step, fmt in (("trace", "torchscript"), ("export", "aotinductor")):
        t = time.monotonic()
        if spec.formats and fmt not in spec.formats:
            _emit(step, "unsupported", 0.0, f"the catalog lists no {fmt} format for {model_id}")
            continue
        if step == "export" and not hasattr(getattr(torch, "export", None), "export"):
            _emit(step, "unsupported", 0.0, f"torch {torch.__version__} has no torch.export.export")
            continue
        try:
            with torch.no_grad():
                if step == "trace":
                    module = torch.jit.trace(model, tuple(inputs), check_trace=False)
                else:
                    module = torch.export.export(model, tuple(inputs)).module()
                out = module(*inputs)
            _sync(device)
        except Exception as e:
            _emit(step, "error", time.monotonic() - t, _short(e))
            failed = True
            continue
        diff, mismatch = _max_abs_diff(reference, out)
        if mismatch:
            _emit(step, "error", time.monotonic() - t, f"the {step}d module {mismatch}")
            failed = True
        else:
            _emit(step, "ok", time.monotonic() - t, max_abs_diff=diff)
    return 1 if failed else 0


def _model_status(steps: Dict[str, Dict[str, Any]]) -> str:
    statuses = [s["status"] for s in steps.values()]
    if "error" in statuses:
        return "error"
    if "unsupported" in statuses:
        return "unsupported"
    return "ok" if statuses and all(s == "ok" for s in statuses) else "error"


def _finish(model_id: str, lines: str, rc: Optional[int], seconds: float, killed_why: str) -> Dict[str, Any]:
    """A model's record from its child's output lines (rc None: killed, for `killed_why`); a step
    it never reached is skipped."""
    steps: Dict[str, Dict[str, Any]] = {}
    for line in lines.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("step") in STEPS:
            steps[item.pop("step")] = item
    pending = [s for s in STEPS if s not in steps]
    blocked = next((s for s in STEPS if s in steps and steps[s]["status"] != "ok" and s in ("build", "forward")), None)
    for index, step in enumerate(pending):
        if blocked:
            steps[step] = {"status": "skipped", "seconds": 0.0, "reason": f"{blocked} did not pass"}
        elif rc is None and index == 0:
            steps[step] = {"status": "error", "seconds": 0.0, "reason": killed_why}
        elif rc is None:
            steps[step] = {"status": "skipped", "seconds": 0.0, "reason": f"not reached ({killed_why})"}
        elif index == 0:
            why = f"killed by signal {-rc}" if rc < 0 else f"exited {rc}"
            steps[step] = {"status": "error", "seconds": 0.0, "reason": f"the child {why} during this step"}
        else:
            steps[step] = {"status": "skipped", "seconds": 0.0, "reason": "an earlier step ended the child"}
    ordered = {s: steps[s] for s in STEPS}
    return {"model": model_id, "status": _model_status(ordered), "seconds": round(seconds, 3), "steps": ordered}


def _versions() -> Dict[str, str]:
    import importlib.metadata as metadata

    out = {"python": sys.version.split()[0]}
    for name in ("torch", "transformers", "torchvision", "timm"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    try:
        import torch
        out["torch"] = torch.__version__  # Debian's torch has no dist-info of that name
    except ImportError:
        pass
    return out


def run_all(args: argparse.Namespace) -> int:
    sys.path.insert(0, _HERE)
    from benchfleet_models import ExportFailure, load_catalog

    try:
        catalog = load_catalog(args.catalog)
    except ExportFailure as e:
        print(f"seed-smoke: {e.message}", file=sys.stderr)
        return 2
    models = [m for m in args.models.split(",") if m] if args.models else list(catalog)[:SEED_COUNT]
    unknown = [m for m in models if m not in catalog]
    if unknown:
        print(f"seed-smoke: not in the catalog: {', '.join(unknown)}", file=sys.stderr)
        return 2
    jobs = max(1, args.jobs)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    deadline = time.monotonic() + args.deadline_s if args.deadline_s > 0 else float("inf")
    queue = list(models)
    running: List[Tuple[str, subprocess.Popen, Any, Any, float, float]] = []
    records: Dict[str, Dict[str, Any]] = {}
    scratch = tempfile.mkdtemp(prefix="seed-smoke.")

    def stop(signum: int, _frame: Any) -> None:  # children run in sessions of their own: end them too
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)

    def start(model_id: str) -> None:
        timeout_s = min(args.model_timeout, deadline - time.monotonic())
        out = tempfile.TemporaryFile(mode="w+", dir=scratch)
        err = tempfile.TemporaryFile(mode="w+", dir=scratch)
        cmd = [sys.executable, os.path.abspath(__file__), "--one", model_id, "--device", args.device,
               "--catalog", args.catalog, "--threads", str(threads)]
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        running.append((model_id, proc, out, err, time.monotonic(), timeout_s))
        print(f"seed-smoke: {model_id}: started (at most {timeout_s:.0f} s)", file=sys.stderr, flush=True)

    def reap(entry: Tuple[str, subprocess.Popen, Any, Any, float, float], killed_why: str = "") -> None:
        model_id, proc, out, err, began, timeout_s = entry
        if killed_why:
            try:
                os.killpg(proc.pid, 9)  # the child and whatever it started (compile workers)
            except ProcessLookupError:
                pass
        rc = proc.wait()
        out.seek(0)
        err.seek(0)
        record = _finish(model_id, out.read(), None if killed_why else rc, time.monotonic() - began, killed_why)
        records[model_id] = record
        detail = "; ".join(f"{s} {v['status']}" + (f" ({v['reason'][:160]})" if v.get("reason") else "")
                           for s, v in record["steps"].items())
        tail = err.read().strip().splitlines()[-15:]
        if record["status"] == "error" and tail:
            print("\n".join(f"  | {line}" for line in tail), file=sys.stderr)
        print(f"seed-smoke: {model_id}: {record['status']} in {record['seconds']:.1f} s: {detail}",
              file=sys.stderr, flush=True)
        out.close()
        err.close()

    def not_started(why: str) -> None:
        for model_id in queue:
            records[model_id] = {"model": model_id, "status": "skipped", "seconds": 0.0, "reason": why,
                                 "steps": {s: {"status": "skipped", "seconds": 0.0, "reason": why} for s in STEPS}}
        queue.clear()

    stopped = False
    try:
        while queue or running:
            while queue and len(running) < jobs:
                if deadline - time.monotonic() < args.min_model_s:
                    not_started("not started: the time for the seed smoke test ran out")
                    break
                start(queue.pop(0))
            time.sleep(0.2)
            for entry in list(running):
                _, proc, _, _, began, timeout_s = entry
                timed_out = proc.poll() is None and time.monotonic() - began > timeout_s
                if proc.poll() is not None or timed_out:
                    running.remove(entry)
                    reap(entry, f"timed out after {timeout_s:.0f} s" if timed_out else "")
    except SystemExit:  # SIGTERM: the report still says what was done
        stopped = True
        not_started("not started: the smoke test was stopped")
    finally:
        for entry in running:
            reap(entry, "stopped with the smoke test")
        running.clear()
        try:
            os.rmdir(scratch)
        except OSError:
            pass

    ordered = [records[m] for m in models]
    counts: Dict[str, Dict[str, int]] = {}
    for step in STEPS + ("model",):
        tally: Dict[str, int] = {}
        for record in ordered:
            status = record["status"] if step == "model" else record["steps"][step]["status"]
            tally[status] = tally.get(status, 0) + 1
        counts[step] = tally
    document = {"device": args.device, "versions": _versions(), "catalog": os.path.abspath(args.catalog),
                "models": ordered, "counts": counts}
    directory = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(directory, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2)
        f.write("\n")
    return 1 if stopped or counts["model"].get("error") else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="benchfleet_seed_smoke.py", description=__doc__.split("\n")[0])
    p.add_argument("--catalog", default=default_catalog())
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--models", default="", help="comma-separated catalog ids (default: the first 12, the seeds')")
    p.add_argument("--jobs", type=int, default=1, help="models at a time (default: %(default)s)")
    p.add_argument("--model-timeout", type=float, default=180.0, help="seconds per model (default: %(default)s)")
    p.add_argument("--deadline-s", type=float, default=0.0,
                   help="every model ends within this many seconds (0: no limit)")
    p.add_argument("--min-model-s", type=float, default=20.0,
                   help="start a model only while this many seconds are left (default: %(default)s)")
    p.add_argument("--out", help="the JSON report (required unless --one)")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return run_one(args.catalog, args.one, args.device, args.threads)
    if not args.out:
        p.error("--out is required")
    return run_all(args)


if __name__ == "__main__":
    # A crash in native code (a loaded AOTInductor package, a CUDA library) then leaves the Python
    # stack on stderr, which the caller keeps, instead of only an exit status.
    faulthandler.enable()
    sys.exit(main())
