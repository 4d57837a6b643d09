#!/usr/bin/env python3
"""benchfleet runner: the python runtime (torch.compile in a torch build's own python), with the
process interface of benchfleet-worker, so the agent treats both runtimes alike.

    <build python> agent/python/benchfleet_runner.py --job job.json [--out result.json]
    <build python> agent/python/benchfleet_runner.py --capabilities
    <build python> agent/python/benchfleet_runner.py --version

--job FILE|-  the job JSON (benchfleet_job.py: the worker's schema; model required, artifact and
              format not read, inputs optional; optional runtime "python", model_definition,
              catalog, weights; dtype, dynamic, walk_batches). The runner builds the model (the
              job's model_definition, else the catalog's entry) as the exporter does, in the
              job's dtype (amp: under torch.autocast), then measures it as the
              worker does (benchfleet_measure.py): first call, the shape walk (walk_batches),
              warm-up, timed calls under the stopping rule, statistics identical to
              common/stats.cpp (benchfleet_stats.py). Compiled modes then judge the compiled
              model's outputs against a float64 reference: result "accuracy" (verdict pass,
              wrong, eager_nondeterministic or unchecked). A dtype this device or torch build
              cannot run is status unsupported, with torch's reason.
--out FILE    write the result there (temp file beside it, fsync, rename) instead of stdout.
--capabilities  print {"runtime": "python", "torch_version", "torch_git", "python",
              "torch_compile", "cuda_compiled", "cuda_available", "modes": {"cpu": [...],
              "cuda": [...]}, "library_dirs": [...]} (benchfleet_environment.py says which modes
              and why; library_dirs: pip's nvidia/*/lib folders, which the agent puts on the
              worker's library path) and exit 0.

Output: exactly one JSON line, a JobResult as common/codecs.cpp decodes it; progress lines
("progress phase=... iterations=... seconds=...") and everything else printed, by Python or
native code, go to stderr. The exit code mirrors the status: 0 ok, 1 error, 3 oom,
4 unsupported, 5 invalid, 7 crash (2: usage error).

Environment read: TORCHINDUCTOR_CACHE_DIR (inductor's on-disk cache; the agent gives each build
its own, so a compile may come from a previous job's: telemetry.inductor_cache says cold or
warm), BENCHFLEET_BUILD_ROOT and BENCHFLEET_BUILD_ROOT_ID (the build's root filesystem when the
agent runs the runner inside one: fingerprint keys build_root, build_root_id), BENCHFLEET_CATALOG,
and for tests only BENCHFLEET_TEST_PERTURB_COMPILED=SCALE (e.g. 0.05: the compiled model's
floating outputs get that much relative noise, so its accuracy verdict is wrong; never set it
outside tests).

A job with a CPU memory cap runs in a forked child process, so that native code ending the
process under the cap still gets a verdict (benchfleet_native_oom.py).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import traceback
from typing import Any, Dict, NoReturn, Optional, Sequence

from benchfleet_job import COMPILE_MODES, RUNNER_VERSION, Hooks, Job, JobError, failed, parse_job
from benchfleet_memory_cgroup import agent_directory
from benchfleet_stats import exit_code_for

EXIT_USAGE = 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print usage and exit 2 itself
        raise _UsageError(message)


def _parser() -> _Parser:
    p = _Parser(prog="benchfleet_runner.py",
                description="Measures one job with the python runtime and prints one result JSON. "
                            "Exit code: 0 ok, 1 error, 3 oom, 4 unsupported, 5 invalid, 7 crash (2: usage error).")
    p.add_argument("--job", default="-", help="job JSON file, or - for stdin (default: %(default)s)")
    p.add_argument("--out", help="write the result here (atomically, fsynced) instead of stdout")
    p.add_argument("--capabilities", action="store_true", help="print what this build can run (JSON) and exit")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


class ResultOutput:
    """Where the one result line goes: the original stdout, or a file written atomically."""

    def __init__(self, path: Optional[str], stdout_fd: int) -> None:
        self._path = path
        self._stdout_fd = stdout_fd

    def describe(self) -> str:
        return self._path or "stdout"

    def write(self, line: str) -> bool:
        data = (line + "\n").encode()
        try:
            if not self._path:
                _write_all(self._stdout_fd, data)
                return True
            tmp = self._path + ".tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, self._path)
            return True
        except OSError:
            return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_job(path: str) -> Job:
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError):
        raise JobError("", f"cannot read the job file {path}") from None
    return parse_job(text)


def _measure_here(job: Job, hooks: Hooks) -> Dict[str, Any]:
    from benchfleet_environment import this_build  # imports torch
    from benchfleet_measure import run_job

    if job.threads > 0:  # the slot's, as the worker sets it: before anything runs in parallel
        import torch

        torch.set_num_threads(job.threads)

    # torch._dynamo takes seconds to import: only a compile mode needs to know it works.
    return run_job(job, this_build(probe_compile=job.mode in COMPILE_MODES), hooks)


def _result_for(job_path: str) -> Dict[str, Any]:
    try:
        job = _read_job(job_path)
    except JobError as e:
        return failed("error", f"job: {e}")
    # Under its own address-space cap, native code can end the job without a verdict: it runs in
    # a child then. Under the agent's memory cgroup the kernel ends it, and the agent reports that.
    if job.memory_limit_mb and job.device == "cpu" and agent_directory() is None:
        from benchfleet_native_oom import run_capped

        return run_capped(lambda hooks: _measure_here(job, hooks), job.export_s())
    return _measure_here(job, Hooks())


def _capabilities() -> Dict[str, Any]:
    from benchfleet_environment import capabilities_json, this_build

    return capabilities_json(this_build())


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as e:
        print(f"benchfleet_runner.py: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.version:
        print(f"benchfleet-runner {RUNNER_VERSION}")
        return 0
    # From here on only the result goes to the real stdout: whatever Python or native code
    # prints (inductor, oneDNN verbose, warnings) goes to stderr.
    sys.stdout.flush()
    stdout_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    output = ResultOutput(args.out, stdout_fd)
    if args.capabilities:
        return 0 if output.write(json.dumps(_capabilities(), separators=(",", ":"))) else 1
    try:
        result = _result_for(args.job)
    except Exception as e:  # a verdict, never a bare traceback
        traceback.print_exc()
        result = failed("error", f"benchfleet-runner failed: {type(e).__name__}: {e}"[:4000])
    if not output.write(json.dumps(result, separators=(",", ":"), sort_keys=True)):
        print(f"benchfleet-runner: cannot write the result to {output.describe()}", file=sys.stderr)
        return 1
    return exit_code_for(result["status"])


if __name__ == "__main__":
    # A crash in native code (a loaded AOTInductor package, a CUDA library) then leaves the Python
    # stack on stderr, which the caller keeps, instead of only an exit status.
    faulthandler.enable()
    sys.exit(main())
