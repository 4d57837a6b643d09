#!/usr/bin/env python3
"""Python side of the worker benchmarks (bench/worker_overhead.cpp, bench/cpp_vs_python.cpp).

    torch_timing.py export-trivial --out DIR
        DIR/model.pt: torch.jit.script of a module returning x + 1 for x of shape [1, 8], and
        DIR/metadata.json with its `inputs` in the exporter's format.

    torch_timing.py time --runner jit|module --model ID --batch N --iterations N --warmup W \\
                         --threads T --out FILE [--artifact model.pt] [--catalog YAML] [--seed 0]
        jit:    torch.jit.load(artifact) with the graph executor's optimisation off
                (torch._C._set_graph_executor_optimize(False), what torch.jit.optimized_execution(False)
                sets), the worker's `eager` mode.
        module: the catalog's nn.Module built as the exporter builds it (same seed, so the same
                weights as the artifact), run eagerly: the seeds' method.
        Both: torch.set_num_threads(T), under torch.no_grad(); one untimed-in-samples first call,
        W untimed warm-up calls, then N calls each timed with time.perf_counter. Writes a JSON
        document with samples_ms, first_call_ms, load_s and the thread count torch reports.

Run it with the torch build's own python (e.g. /usr/bin/python3). Exits non-zero on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List


def _source_dir() -> str:
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _write_json(path: str, document: Dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f)
        f.write("\n")


def export_trivial(args: argparse.Namespace) -> None:
    import torch

    class AddOne(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    os.makedirs(args.out, exist_ok=True)
    module = torch.jit.script(AddOne().eval())
    path = os.path.join(args.out, "model.pt")
    torch.jit.save(module, path)
    check = torch.jit.load(path)(torch.zeros(1, 8))
    if not bool((check == 1).all()):
        raise RuntimeError("the trivial module does not compute x + 1")
    _write_json(os.path.join(args.out, "metadata.json"), {
        "model": "bench/add-one", "format": "torchscript", "batch": 1, "artifact": "model.pt",
        "torch_version": torch.__version__,
        "inputs": [{"name": "x", "shape": [1, 8], "dtype": "float32"}],
    })


def time_runner(args: argparse.Namespace) -> None:
    import torch

    sys.path.insert(0, os.path.join(_source_dir(), "agent", "python"))
    from benchfleet_models import find_model, load_catalog, load_model, make_inputs

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    spec = find_model(load_catalog(args.catalog), args.model)
    inputs = make_inputs(spec, args.batch, args.seed)

    started = time.perf_counter()
    if args.runner == "jit":
        if not args.artifact:
            raise RuntimeError("--runner jit needs --artifact")
        # The worker's eager mode: setGraphExecutorOptimize(false) in C++, the same global flag.
        torch._C._set_graph_executor_optimize(False)
        model = torch.jit.load(args.artifact, map_location="cpu")
    else:
        model = load_model(spec, args.batch, seed=args.seed, log=lambda m: print(m, file=sys.stderr)).module
    model.eval()
    load_s = time.perf_counter() - started

    samples: List[float] = []
    with torch.no_grad():
        first = time.perf_counter()
        model(*inputs)
        first_call_ms = (time.perf_counter() - first) * 1000
        for _ in range(args.warmup):
            model(*inputs)
        loop_start = time.perf_counter()
        for _ in range(args.iterations):
            t0 = time.perf_counter()
            model(*inputs)
            samples.append((time.perf_counter() - t0) * 1000)
        loop_ms = (time.perf_counter() - loop_start) * 1000

    _write_json(args.out, {
        "runner": args.runner,
        "model": args.model,
        "batch": args.batch,
        "threads": torch.get_num_threads(),
        "graph_executor_optimize": bool(torch._C._get_graph_executor_optimize()),
        "torch_version": torch.__version__,
        "load_s": load_s,
        "first_call_ms": first_call_ms,
        "loop_ms": loop_ms,
        "samples_ms": samples,
    })


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export-trivial", help="write a trivial TorchScript module (x + 1 on [1, 8])")
    ex.add_argument("--out", required=True, help="output directory")
    tm = sub.add_parser("time", help="time a TorchScript artifact or the catalog nn.Module from Python")
    tm.add_argument("--runner", required=True, choices=("jit", "module"))
    tm.add_argument("--model", required=True, help="catalog id, e.g. torchvision/resnet18")
    tm.add_argument("--batch", required=True, type=int)
    tm.add_argument("--artifact", help="TorchScript model.pt (runner jit)")
    tm.add_argument("--catalog", default=os.path.join(_source_dir(), "common", "catalog", "models.yaml"))
    tm.add_argument("--iterations", type=int, default=50)
    tm.add_argument("--warmup", type=int, default=10)
    tm.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    tm.add_argument("--seed", type=int, default=0)
    tm.add_argument("--out", required=True, help="result JSON file")
    args = parser.parse_args()
    if args.command == "export-trivial":
        export_trivial(args)
    else:
        if args.iterations <= 0 or args.warmup < 0 or args.batch <= 0:
            parser.error("--iterations and --batch must be > 0, --warmup >= 0")
        time_runner(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
