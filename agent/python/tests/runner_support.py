"""What the python runner's tests share (test_runner.py, test_stats.py, test_job.py, test_dtypes.py):
where the runner, the exporter and a built worker are, the small catalog model and measurement they
use, running the runner as the agent does (start, finish, run_runner) or in this process, and the
checks every result must pass (assert_job_result). Not a test file itself.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import unittest
from typing import Any, Dict, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PYTHON_DIR = os.path.join(SOURCE_DIR, "agent", "python")
RUNNER = os.path.join(PYTHON_DIR, "benchfleet_runner.py")
EXPORTER = os.path.join(PYTHON_DIR, "benchfleet_export.py")
MODEL = "torchvision/mobilenet_v3_small"  # the fastest catalog model on a small CPU

sys.dont_write_bytecode = True  # no __pycache__ next to the sources
sys.path.insert(0, PYTHON_DIR)

import benchfleet_job as bj  # noqa: E402
import benchfleet_stats as bs  # noqa: E402

HAVE_TORCH = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision", "yaml"))
HAVE_NUMPY = importlib.util.find_spec("numpy") is not None

SMALL_MEASUREMENT = {"warmup": 1, "min_iterations": 5, "max_iterations": 15, "min_duration_s": 0,
                     "max_duration_s": 30, "target_ci_rel_width": 0.05}


# ---- what the C++ codec accepts (common/codecs.cpp decode_value(JobResult)) ---------------------

RESULT_KEYS = {"status", "stats", "samples_ms", "first_call_ms", "stop_reason", "export_s", "load_s", "oom", "error",
               "signal", "memory", "environment", "telemetry", "accuracy"}
ACCURACY_KEYS = {"verdict", "compiled_error", "eager_error", "tolerance", "cosine", "output", "detail"}
STATS_KEYS = {"mean_ms", "median_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "stddev_ms", "cv", "ci_low_ms",
              "ci_high_ms", "iterations"}
STATUSES = set(bs.EXIT_CODES)
# Fingerprint keys of the python runtime that the C++ worker has no counterpart for (plus
# "<builder>_version", e.g. torchvision_version).
PYTHON_ONLY_ENVIRONMENT = {"runtime", "python", "torch_git", "model", "weights", "weights_sha256", "builder",
                           "build_root", "build_root_id"}
# Telemetry of the torch.compile modes (benchfleet_measure.compile_telemetry).
COMPILE_TELEMETRY = {"compile_ms", "graphs", "graph_breaks", "recompiles", "fxgraph_cache_hit",
                     "fxgraph_cache_miss", "fxgraph_cache_bypass", "inductor_cache", "inductor_cache_dir"}


def assert_job_result(test: unittest.TestCase, r: Dict[str, Any]) -> None:
    """The checks common/codecs.cpp makes when it decodes a JobResult (unknown fields included)."""
    test.assertLessEqual(set(r), RESULT_KEYS, r)
    test.assertIn(r["status"], STATUSES)
    test.assertIsInstance(r.get("samples_ms", []), list)
    test.assertTrue(all(isinstance(x, float) and x >= 0 for x in r.get("samples_ms", [])))
    if r["status"] == "ok":
        test.assertIn("stats", r)
        test.assertTrue(r["samples_ms"])
    if "stats" in r:
        s = r["stats"]
        test.assertEqual(set(s), STATS_KEYS)
        test.assertEqual(s["iterations"], len(r["samples_ms"]))
        test.assertTrue(0 <= s["min_ms"] <= s["median_ms"] <= s["max_ms"], s)
        test.assertTrue(s["min_ms"] <= s["mean_ms"] <= s["max_ms"], s)
        test.assertTrue(s["ci_low_ms"] <= s["median_ms"] <= s["ci_high_ms"], s)
        test.assertGreaterEqual(s["stddev_ms"], 0)
    if r["status"] == "oom":
        test.assertIn("oom", r)
    if "oom" in r:
        test.assertLessEqual(set(r["oom"]), {"phase", "bytes_requested"})
        test.assertIn(r["oom"]["phase"], ("load", "compile", "warmup", "measure"))
        test.assertGreaterEqual(r["oom"].get("bytes_requested", 0), 0)
    if "stop_reason" in r:
        test.assertIn(r["stop_reason"], ("fixed_count", "ci_target", "max_iterations", "max_time"))
    if "accuracy" in r:
        a = r["accuracy"]
        test.assertLessEqual(set(a), ACCURACY_KEYS, a)
        test.assertIn(a["verdict"], ("pass", "wrong", "eager_nondeterministic", "unchecked"))
        for key in ("compiled_error", "eager_error", "tolerance"):
            test.assertTrue(isinstance(a[key], float) and a[key] >= 0, a)
    memory = r.get("memory", {})
    test.assertLessEqual(set(memory), {"peak_allocated_bytes", "peak_reserved_bytes", "peak_rss_bytes", "cap",
                                       "cap_bytes", "peak_growth_bytes"})
    test.assertEqual("cap" in memory, "cap_bytes" in memory, memory)  # common/result_checks.cpp's rule
    if "cap" in memory:
        test.assertIn(memory["cap"], ("cgroup-v1", "cgroup-v2", "address-space", "cuda-allocator"))
    test.assertLessEqual(len(r.get("error", "")), 16384)
    for flat in ("environment", "telemetry"):
        test.assertIsInstance(r.get(flat, {}), dict)
        test.assertLessEqual(len(r.get(flat, {})), 256)
        for key, value in r.get(flat, {}).items():
            test.assertTrue(value is None or isinstance(value, (str, int, float, bool)), f"{flat}.{key}: {value!r}")
            test.assertLessEqual(len(value) if isinstance(value, str) else 0, 4096, f"{flat}.{key}")


# ---- processes ---------------------------------------------------------------------------------

class Run:
    """A finished runner or worker process and the one result line it printed."""

    def __init__(self, proc: subprocess.CompletedProcess) -> None:
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        lines = proc.stdout.splitlines()
        self.result: Dict[str, Any] = json.loads(lines[0]) if len(lines) == 1 else {}
        self.one_line = len(lines) == 1 and proc.stdout.endswith("\n")

    def describe(self) -> str:
        return f"exit {self.code}\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr[-3000:]}"


def runner_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(extra or {})}


def start(argv: Sequence[str], job: Optional[Any] = None,
          env: Optional[Dict[str, str]] = None) -> Tuple[subprocess.Popen, Optional[str]]:
    """Starts a process with `job` (a dict, or text) as its stdin and `env` added to ours."""
    text = job if isinstance(job, str) or job is None else json.dumps(job)
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=runner_env(env))
    return proc, text


def finish(started: Tuple[subprocess.Popen, Optional[str]], timeout: float = 300) -> Run:
    proc, text = started
    out, err = proc.communicate(text, timeout=timeout)
    return Run(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))


def run_runner(job: Any, *args: str, env: Optional[Dict[str, str]] = None, timeout: float = 300) -> Run:
    return finish(start([sys.executable, RUNNER, "--job", "-", *args], job, env), timeout)


def run_in_process(job: Dict[str, Any]) -> Dict[str, Any]:
    """The runner's verdict on `job`, from run_job in this process (quicker than a process for jobs
    that end before measuring)."""
    from benchfleet_environment import this_build  # imports torch
    from benchfleet_measure import run_job

    return run_job(bj.parse_job(json.dumps(job)), this_build(), bj.Hooks())


def job_for(mode: str = "eager", **fields: Any) -> Dict[str, Any]:
    return {"model": MODEL, "batch": 1, "mode": mode, "measurement": dict(SMALL_MEASUREMENT), **fields}


def find_worker() -> Optional[str]:
    """A built C++ worker that runs here, or None. $BENCHFLEET_WORKER_BIN, when set, is the only
    candidate (empty: none; inside a torch root the host's worker cannot run), else the build
    trees under the source tree. A worker that does not answer --capabilities (built against
    another system's LibTorch) does not count."""
    if "BENCHFLEET_WORKER_BIN" in os.environ:
        candidates = [os.environ["BENCHFLEET_WORKER_BIN"]]
    else:
        candidates = [os.path.join(SOURCE_DIR, "build", "agent", "worker", "benchfleet-worker")]
        candidates += sorted(glob.glob(os.path.join(SOURCE_DIR, "build*", "**", "agent", "worker",
                                                    "benchfleet-worker"), recursive=True),
                             key=os.path.getmtime, reverse=True)
    for path in candidates:
        if path and os.access(path, os.X_OK):
            try:
                probe = subprocess.run([path, "--capabilities"], capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if probe.returncode == 0:
                return path
    return None


def torch_version() -> Tuple[int, int]:
    """(major, minor) of this python's torch; (0, 0) without torch."""
    if not HAVE_TORCH:
        return (0, 0)
    import torch

    match = re.match(r"([0-9]+)\.([0-9]+)", torch.__version__)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def replay_stopping_rule(samples: Sequence[float], measurement: Dict[str, Any]) -> Tuple[int, Optional[str]]:
    """Where the stopping rule stops on these samples when time does not count (min_duration_s 0,
    max_duration_s far away): (iterations, reason)."""
    rule = bs.StoppingRule(measurement)
    for n in range(1, len(samples) + 1):
        reason = rule.check(samples[:n], 0.0)
        if reason is not None:
            return n, reason
    return len(samples), None
