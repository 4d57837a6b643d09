"""Tests of the python runtime's runner (agent/python/benchfleet_runner.py) and its modules.

Run with the system python that has Debian's torch:  /usr/bin/python3 -m unittest discover -s
agent/python/tests -v (BENCHFLEET_SOURCE_DIR names the source tree). The statistics and job tests
need neither torch nor numpy; the runner tests need torch, torchvision and PyYAML and skip
without them. The runner is run as a subprocess, the way the agent runs it, and judged by its
exit code, its one stdout line and what that line decodes to.

Where a built C++ worker is found ($BENCHFLEET_WORKER_BIN when set, an empty value meaning none;
else build*/agent/worker/benchfleet-worker under the source tree) and runs here, the same job goes
to both and their results are compared; the known answers below were computed with
common/stats.cpp and common/measurement.cpp.

The torch.compile modes run for real only with torch >= 2.6 (CompileModesTest): ctest's
python_agent_torch_root runs these files inside the Debian 13 root (scripts/in-root.sh) for that;
with Debian 12's torch 1.13 they skip and the compiled modes are checked to be unsupported.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any, Dict, List, Optional, Sequence, Tuple
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PYTHON_DIR = os.path.join(SOURCE_DIR, "agent", "python")
RUNNER = os.path.join(PYTHON_DIR, "benchfleet_runner.py")
EXPORTER = os.path.join(PYTHON_DIR, "benchfleet_export.py")
MODEL = "torchvision/mobilenet_v3_small"  # the fastest catalog model on a small CPU

sys.dont_write_bytecode = True  # no __pycache__ next to the sources
sys.path.insert(0, PYTHON_DIR)

import benchfleet_job as bj  # noqa: E402
import benchfleet_native_oom as native  # noqa: E402
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
    test.assertLessEqual(set(r.get("memory", {})), {"peak_allocated_bytes", "peak_reserved_bytes", "peak_rss_bytes"})
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


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(extra or {})}


def start(argv: Sequence[str], job: Optional[Any] = None,
          env: Optional[Dict[str, str]] = None) -> Tuple[subprocess.Popen, Optional[str]]:
    """Starts a process with `job` (a dict, or text) as its stdin and `env` added to ours."""
    text = job if isinstance(job, str) or job is None else json.dumps(job)
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(env))
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


# ---- statistics (no torch) ---------------------------------------------------------------------

def _without_numpy() -> Any:
    return mock.patch.object(bs, "_numpy", lambda: None)


class Mt19937Test(unittest.TestCase):
    def test_known_answers(self) -> None:
        g = bs.Mt19937_64()
        for _ in range(9999):
            g()
        self.assertEqual(g(), 9981545732273789042)  # the C++ standard's check for mt19937_64
        self.assertEqual(bs.Mt19937_64(42)(), 13930160852258120406)  # std::mt19937_64(42)()

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy")
    def test_vectorised_draws_continue_the_same_stream(self) -> None:
        self.assertEqual(int(bs.Mt19937_64().draw(10000)[-1]), 9981545732273789042)
        one, other = bs.Mt19937_64(7), bs.Mt19937_64(7)
        expected = [one() for _ in range(4000)]
        got: List[int] = []
        for count in (5, 400, 0, 1, 311, 312, 313, 700, 624):
            got += [int(x) for x in other.draw(count)]
            got.append(other())
        self.assertEqual(got, expected[:len(got)])


class StatsTest(unittest.TestCase):
    # tests/unit/stats_test.cpp's samples
    UNSORTED = [3.5, 1.25, 9.75, 4.5, 2.0, 6.0, 7.0]

    def test_by_hand(self) -> None:
        self.assertEqual(bs.mean([2, 4, 4, 4, 5, 5, 7, 9]), 5.0)
        self.assertAlmostEqual(bs.sample_stddev([2, 4, 4, 4, 5, 5, 7, 9]), 2.138089935299395, places=12)
        one_to_ten = [float(x) for x in range(1, 11)]
        self.assertAlmostEqual(bs.percentile_sorted(one_to_ten, 0.9), 9.1, places=12)
        self.assertAlmostEqual(bs.percentile_sorted(one_to_ten, 0.99), 9.91, places=12)
        self.assertEqual(bs.percentile_sorted(one_to_ten, -0.5), 1.0)
        self.assertEqual(bs.percentile_sorted(one_to_ten, 1.5), 10.0)
        self.assertEqual(bs.median(self.UNSORTED), 4.5)
        self.assertEqual(bs.median([10, 1]), 5.5)
        self.assertEqual(bs.sample_stddev([3.0]), 0.0)
        s = bs.compute_statistics(self.UNSORTED)
        self.assertEqual((s["iterations"], s["min_ms"], s["max_ms"], s["median_ms"]), (7, 1.25, 9.75, 4.5))
        self.assertAlmostEqual(s["mean_ms"], 4.857142857142857, places=12)
        self.assertAlmostEqual(s["p90_ms"], 8.1, places=12)
        self.assertAlmostEqual(s["p99_ms"], 9.585, places=12)
        self.assertAlmostEqual(s["stddev_ms"], 2.9715916850834576, places=12)
        self.assertEqual(bs.bootstrap_median_ci(self.UNSORTED), (2.0, 7.0))  # common/stats.cpp's answer

    def test_degenerate_cases(self) -> None:
        self.assertEqual(bs.bootstrap_median_ci([2.5] * 30), (2.5, 2.5))
        self.assertEqual(bs.bootstrap_median_ci([4.0]), (4.0, 4.0))
        self.assertEqual(bs.bootstrap_median_ci(self.UNSORTED, 0.95, 0), (4.5, 4.5))
        self.assertTrue(all(x != x for x in bs.bootstrap_median_ci([])))
        self.assertEqual(bs.compute_statistics([])["iterations"], 0)
        one = bs.compute_statistics([3.0])
        self.assertEqual((one["stddev_ms"], one["ci_low_ms"], one["ci_high_ms"]), (0.0, 3.0, 3.0))
        self.assertEqual(bs.compute_statistics([0.0, 0.0])["cv"], 0.0)

    def check_known_answers(self) -> None:
        """Values printed by common/stats.cpp (%.17g) for these samples and seeds."""
        g = bs.Mt19937_64(11)
        samples = [1.0 + (g() % 100000) / 7919.0 for _ in range(301)]
        self.assertEqual(bs.compute_statistics(samples), {
            "mean_ms": 7.2002916573496067, "median_ms": 6.9621164288420259, "p90_ms": 12.460032832428336,
            "p99_ms": 13.511933324914763, "min_ms": 1.0147745927516101, "max_ms": 13.581007702992801,
            "stddev_ms": 3.6942184514889105, "cv": 0.51306511281637923, "ci_low_ms": 6.2944816264679888,
            "ci_high_ms": 7.4131834827629755, "iterations": 301})
        self.assertEqual(bs.bootstrap_median_ci(samples[:300], 0.9, 1000, 123456789),
                         (6.4047670160373782, 7.3226891021593614))
        w = [10.0 + 0.37 * ((i * 7919) % 13) + 0.001 * i for i in range(40)]
        self.assertEqual(bs.bootstrap_median_ci(w, 0.9, 400, 40), (11.5015, 12.795))
        self.assertEqual(bs.compute_statistics(self.UNSORTED), bs.compute_statistics(self.UNSORTED[::-1]))

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy")
    def test_known_answers_with_numpy(self) -> None:
        self.check_known_answers()

    def test_known_answers_in_plain_python(self) -> None:
        with _without_numpy():
            self.check_known_answers()

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy")
    def test_a_300_sample_bootstrap_is_quick(self) -> None:
        g = bs.Mt19937_64(3)
        samples = [5 + (g() % 1000) / 100 for _ in range(300)]
        bs.compute_statistics(samples[:3])  # numpy imported
        started = time.perf_counter()
        bs.compute_statistics(samples)  # 2000 resamples of 300
        self.assertLess(time.perf_counter() - started, 0.5)


class StoppingRuleTest(unittest.TestCase):
    @staticmethod
    def stop(measurement: Dict[str, Any], seconds_per_sample: float = 0.0) -> Tuple[int, str, Optional[float]]:
        rule = bs.StoppingRule(measurement)
        g, samples = bs.Mt19937_64(7), []
        while True:
            samples.append(5.0 + (g() % 1000) / 1000.0)
            reason = rule.check(samples, seconds_per_sample * len(samples))
            if reason is not None:
                return len(samples), reason, rule.last_relative_width

    def test_known_answers_from_common_measurement(self) -> None:
        base = {"min_iterations": 10, "max_iterations": 500, "min_duration_s": 0}
        self.assertEqual(self.stop({**base, "target_ci_rel_width": 0.03}), (100, "ci_target", 0.02993226656968808))
        self.assertEqual(self.stop({**base, "target_ci_rel_width": 0.05}), (60, "ci_target", 0.034922424679776305))
        self.assertEqual(self.stop({**base, "target_ci_rel_width": 0.01})[:2], (500, "max_iterations"))

    def test_fixed_count_duration_and_time_cap(self) -> None:
        fixed = {"min_iterations": 300, "max_iterations": 300}
        self.assertEqual(self.stop(fixed)[:2], (300, "fixed_count"))
        # 0.5 s minimum at 10 ms per sample: no CI check before 50 samples.
        self.assertGreaterEqual(self.stop({"min_iterations": 5, "target_ci_rel_width": 0.5}, 0.01)[0], 50)
        capped = {"min_iterations": 5, "max_duration_s": 1.0, "target_ci_rel_width": 0.001}
        self.assertEqual(self.stop(capped, 0.01)[:2], (100, "max_time"))

    def test_exit_codes_as_the_worker(self) -> None:
        self.assertEqual(bs.EXIT_CODES, {"ok": 0, "error": 1, "oom": 3, "unsupported": 4, "invalid": 5,
                                         "timeout": 6, "crash": 7, "oom_implied": 8})


# ---- the job JSON (no torch) ---------------------------------------------------------------------

class JobTest(unittest.TestCase):
    def error_of(self, document: Any) -> str:
        text = document if isinstance(document, str) else json.dumps(document)
        with self.assertRaises(bj.JobError) as caught:
            bj.parse_job(text)
        return str(caught.exception)

    def test_the_workers_job_with_defaults(self) -> None:
        job = bj.parse_job(json.dumps({"model": MODEL, "batch": 4, "mode": "default"}))
        self.assertEqual((job.model, job.batch, job.mode, job.device, job.runtime),
                         (MODEL, 4, "default", "cpu", "python"))
        self.assertEqual(job.measurement, bs.MEASUREMENT_DEFAULTS)
        self.assertIsNone(job.memory_limit_mb)
        self.assertIsNone(job.inputs)
        full = bj.parse_job(json.dumps({
            "model": MODEL, "artifact": "/x/model.pt", "format": "torchscript", "batch": 1, "mode": "eager",
            "device": "cpu", "inputs": [{"name": "pixel_values", "shape": [1, 3, 224, 224], "dtype": "float32"}],
            "measurement": SMALL_MEASUREMENT, "memory_limit_mb": None, "seed": 3,
            "artifact_metadata": {"export_s": 1.5}, "runtime": "python", "catalog": "/c.yaml", "weights": None}))
        self.assertEqual((full.seed, full.export_s(), full.catalog), (3, 1.5, "/c.yaml"))
        # What a C++ WorkerJob for the python runtime writes when it has no artifact.
        bare = bj.parse_job(json.dumps({"model": MODEL, "artifact": "", "format": "", "batch": 1, "mode": "eager",
                                        "inputs": [], "artifact_metadata": {}, "runtime": "python"}))
        self.assertIsNone(bare.inputs)

    def test_errors_name_the_field(self) -> None:
        ok = {"model": MODEL, "batch": 1, "mode": "eager"}
        self.assertEqual(self.error_of({**ok, "batch": 0}), "batch: must be > 0")
        self.assertEqual(self.error_of({**ok, "batch": 1.0}), "batch: must be an integer, got number")
        self.assertEqual(self.error_of({**ok, "batch": True}), "batch: must be an integer, got boolean")
        self.assertEqual(self.error_of({"batch": 1, "mode": "eager"}), "model: is required")
        self.assertEqual(self.error_of({**ok, "warmup_iterations": 3}), "warmup_iterations: is not a known field")
        self.assertEqual(self.error_of({**ok, "mode": "fast"}), 'mode: unknown value "fast" (allowed: eager, '
                         'torchscript, default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs)')
        self.assertEqual(self.error_of({**ok, "device": "tpu"}), "device: must be cpu or cuda")
        self.assertEqual(self.error_of({**ok, "measurement": {"min_iterations": 10, "max_iterations": 5}}),
                         "measurement.max_iterations: must be between min_iterations and 1000000")
        self.assertEqual(self.error_of({**ok, "inputs": [{"name": "x", "shape": [1, 0]}]}),
                         "inputs[0].shape[1]: must be > 0")
        self.assertEqual(self.error_of({**ok, "memory_limit_mb": 0}),
                         "memory_limit_mb: must be null or between 1 and 16777216 (16 TiB)")
        self.assertIn("runtime: is libtorch", self.error_of({**ok, "runtime": "libtorch"}))
        self.assertTrue(self.error_of("not { json").startswith("malformed JSON"))
        self.assertTrue(self.error_of('{"batch": NaN}').startswith("malformed JSON"))
        self.assertEqual(self.error_of("[" * 40 + "]" * 40), "JSON nesting is deeper than 32 levels")

    def test_dtype_dynamic_and_walk_batches(self) -> None:
        ok = {"model": MODEL, "batch": 2, "mode": "default"}
        plain = bj.parse_job(json.dumps(ok))
        self.assertEqual((plain.dtype, plain.dynamic, plain.walk_batches), ("float32", False, []))
        for dtype in ("float32", "float16", "bfloat16", "amp"):
            self.assertEqual(bj.parse_job(json.dumps({**ok, "dtype": dtype})).dtype, dtype)
        # What a C++ WorkerJob writes for a walking, dynamic python job.
        walking = bj.parse_job(json.dumps({**ok, "dtype": "bfloat16", "dynamic": True, "walk_batches": [1, 2, 16]}))
        self.assertEqual((walking.dtype, walking.dynamic, walking.walk_batches), ("bfloat16", True, [1, 2, 16]))
        self.assertEqual(bj.parse_job(json.dumps({**ok, "walk_batches": list(range(1, 65))})).walk_batches,
                         list(range(1, 65)))

    def test_dtype_dynamic_and_walk_batches_errors_as_the_worker(self) -> None:
        ok = {"model": MODEL, "batch": 1, "mode": "eager"}
        self.assertEqual(self.error_of({**ok, "dtype": "int8"}),
                         'dtype: unknown value "int8" (allowed: float32, float16, bfloat16, amp)')
        self.assertEqual(self.error_of({**ok, "dtype": None}), "dtype: must be a string, got null")
        self.assertEqual(self.error_of({**ok, "dynamic": 1}), "dynamic: must be a boolean, got number")
        self.assertEqual(self.error_of({**ok, "walk_batches": 4}), "walk_batches: must be an array")
        self.assertEqual(self.error_of({**ok, "walk_batches": [1, "2"]}),
                         "walk_batches[1]: must be an integer, got string")
        self.assertEqual(self.error_of({**ok, "walk_batches": [1, 1 << 31]}), "walk_batches[1]: is out of range")
        for bad, index in (([0], 0), ([1, 4, 2], 2), ([2, 2], 1), ([65537], 0), ([-1], 0)):
            self.assertEqual(self.error_of({**ok, "walk_batches": bad}),
                             f"walk_batches[{index}]: must be between 1 and 65536 and ascending", bad)
        self.assertEqual(self.error_of({**ok, "walk_batches": list(range(1, 66))}),
                         "walk_batches: must list at most 64 batch sizes")


# ---- native deaths under the CPU cap (no torch) ---------------------------------------------------

class NativeOomVerdictTest(unittest.TestCase):
    def report(self, vm_peak: int, cap: Optional[int]) -> Any:
        r = native._Report()
        r.phase, r.environment, r.cap_bytes, r.vm_peak = "compile", {"host": "h"}, cap, vm_peak
        return r

    def test_a_death_at_the_cap_is_an_oom_in_its_phase(self) -> None:
        cap = 800 << 20
        for wait_status in (signal.SIGSEGV, 1 << 8):  # killed by SIGSEGV; exit(1) from libgomp
            verdict = native._verdict(self.report(cap - (2 << 20), cap), wait_status, 0.5)
            assert_job_result(self, verdict)
            self.assertEqual((verdict["status"], verdict["oom"], verdict["export_s"]),
                             ("oom", {"phase": "compile"}, 0.5))
            self.assertIn("memory cap", verdict["error"])
            self.assertEqual(verdict["environment"], {"host": "h"})

    def test_a_death_far_from_the_cap_is_not(self) -> None:
        cap = 4 << 30
        crash = native._verdict(self.report(600 << 20, cap), signal.SIGSEGV, None)
        self.assertEqual((crash["status"], crash["signal"]), ("crash", signal.SIGSEGV))
        self.assertIn("SIGSEGV", crash["error"])
        exited = native._verdict(self.report(600 << 20, cap), 1 << 8, None)
        self.assertEqual(exited["status"], "error")
        killed = native._verdict(self.report(cap, cap), signal.SIGKILL, None)  # not native code: the OOM killer, a user
        self.assertEqual(killed["status"], "crash")
        no_cap_yet = native._verdict(self.report(600 << 20, None), signal.SIGSEGV, None)
        self.assertEqual(no_cap_yet["status"], "crash")
        for verdict in (crash, exited, killed, no_cap_yet):
            assert_job_result(self, verdict)


def _own_vm_peak() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmPeak:"))


def _die_natively(hooks: bj.Hooks, cap_above_peak: int, how: str) -> Dict[str, Any]:
    """A child that reports a cap `cap_above_peak` bytes above its peak address space, then dies
    in phase warmup as native code would: SIGSEGV or exit(1)."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file from the SIGSEGV
    hooks.environment({"host": "test"})
    hooks.memory_cap(_own_vm_peak() + cap_above_peak)
    hooks.phase("warmup")
    time.sleep(0.1)  # the parent samples the peak every 20 ms
    if how == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    os._exit(1)


class RunCappedTest(unittest.TestCase):
    """benchfleet_native_oom.run_capped with stand-ins for the measurement (no torch)."""

    def test_the_childs_result_comes_back(self) -> None:
        def measure(hooks: bj.Hooks) -> Dict[str, Any]:
            hooks.phase("measure")
            return {**bj.failed("unsupported", "just a test"), "environment": {"pid": os.getpid()}}

        result = native.run_capped(measure)
        self.assertEqual(result["status"], "unsupported")
        self.assertNotEqual(result["environment"]["pid"], os.getpid())

    def test_an_exception_in_the_child_is_an_error(self) -> None:
        def measure(hooks: bj.Hooks) -> Dict[str, Any]:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # the child's traceback is not the test's output
            raise ValueError("broken")

        result = native.run_capped(measure, export_s=2.0)
        self.assertEqual(result["status"], "error")
        self.assertIn("ValueError: broken", result["error"])

    def test_native_deaths_at_and_far_from_the_cap(self) -> None:
        cases = (((1 << 20), "segv", "oom"), ((1 << 20), "exit", "oom"), ((4 << 30), "segv", "crash"),
                 ((4 << 30), "exit", "error"))
        for above_peak, how, status in cases:
            with self.subTest(above_peak=above_peak, how=how):
                result = native.run_capped(lambda hooks: _die_natively(hooks, above_peak, how), export_s=2.0)
                assert_job_result(self, result)
                self.assertEqual(result["status"], status, result)
                self.assertEqual((result["environment"], result["export_s"]), ({"host": "test"}, 2.0))
                self.assertIn("phase warmup", result["error"])
                if status == "oom":
                    self.assertEqual(result["oom"], {"phase": "warmup"})


# ---- the runner process (torch) ---------------------------------------------------------------------

class RunnerProcessTest(unittest.TestCase):
    """Things that need no torch in the runner process: usage, version, bad jobs."""

    def test_bad_jobs_are_errors_naming_the_field(self) -> None:
        for job, needle in ((job_for(batch=0), "job: batch: must be > 0"),
                            (job_for(warmup_iterations=3), "job: warmup_iterations: is not a known field"),
                            ("this is not { json", "job: malformed JSON")):
            run = run_runner(job)
            self.assertTrue(run.one_line, run.describe())
            assert_job_result(self, run.result)
            self.assertEqual((run.result["status"], run.code), ("error", 1), run.describe())
            self.assertTrue(run.result["error"].startswith(needle), run.result)

    def test_out_file_holds_what_stdout_would_have(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            to_file = run_runner(job_for(batch=0), "--out", out)
            to_stdout = run_runner(job_for(batch=0))
            self.assertEqual((to_file.code, to_file.stdout), (1, ""), to_file.describe())
            with open(out, encoding="utf-8") as f:
                self.assertEqual(f.read(), to_stdout.stdout)
            self.assertFalse(os.path.exists(out + ".tmp"))

    def test_usage_and_version(self) -> None:
        bad = subprocess.run([sys.executable, RUNNER, "--bogus"], capture_output=True, text=True, env=_env())
        self.assertEqual((bad.returncode, bad.stdout), (2, ""))
        version = subprocess.run([sys.executable, RUNNER, "--version"], capture_output=True, text=True, env=_env())
        self.assertEqual(version.stdout, f"benchfleet-runner {bj.RUNNER_VERSION}\n")

    def test_version_is_the_projects(self) -> None:
        with open(os.path.join(SOURCE_DIR, "CMakeLists.txt"), encoding="utf-8") as f:
            project = re.search(r"project\(benchfleet VERSION ([0-9.]+)", f.read())
        self.assertIsNotNone(project)
        self.assertEqual(bj.RUNNER_VERSION, project.group(1))


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class RunnerMeasureTest(unittest.TestCase):
    """An eager run of a small torchvision model, on the job the agent hands the C++ worker (the
    exporter's artifact and metadata), and the same job through the worker when one is built."""

    worker: Optional[str] = None
    job: Dict[str, Any] = {}
    python_run: Run
    worker_run: Optional[Run] = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        exported = subprocess.run([sys.executable, EXPORTER, "--model", MODEL, "--batch", "1", "--format",
                                   "torchscript", "--out", cls.tmp.name], capture_output=True, text=True, env=_env(),
                                  timeout=300)
        if exported.returncode != 0:
            raise AssertionError(f"export failed: {exported.stdout}\n{exported.stderr}")
        metadata = json.loads(exported.stdout)
        cls.job = {"model": MODEL, "artifact": os.path.join(cls.tmp.name, "model.pt"), "format": "torchscript",
                   "batch": 1, "mode": "eager", "device": "cpu", "inputs": metadata["inputs"],
                   "measurement": dict(SMALL_MEASUREMENT), "memory_limit_mb": None, "seed": 0,
                   "artifact_metadata": metadata}
        cls.worker = find_worker()
        python = start([sys.executable, RUNNER, "--job", "-"], cls.job)
        worker = start([cls.worker, "--job", "-"], cls.job) if cls.worker else None
        cls.python_run = finish(python)
        cls.worker_run = finish(worker) if worker else None

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def check_consistent(self, run: Run) -> None:
        self.assertTrue(run.one_line, run.describe())
        r = run.result
        assert_job_result(self, r)
        self.assertEqual((r["status"], run.code), ("ok", 0), run.describe())
        samples = r["samples_ms"]
        self.assertTrue(5 <= len(samples) <= 15, samples)
        # Recomputed from the JSON, the statistics agree exactly (JSON round-trips doubles).
        self.assertEqual(r["stats"], bs.compute_statistics(samples))
        self.assertEqual(replay_stopping_rule(samples, self.job["measurement"]), (len(samples), r["stop_reason"]))
        self.assertGreater(r["first_call_ms"], 0)
        self.assertGreater(r["load_s"], 0)
        self.assertEqual(r["export_s"], self.job["artifact_metadata"]["export_s"])
        self.assertGreater(r["memory"]["peak_rss_bytes"], 0)
        self.assertGreaterEqual(r["telemetry"]["host_wall_ms"], sum(samples) * 0.999)
        env = r["environment"]
        self.assertEqual((env["device"], env["cpu_threads"] > 0), ("cpu", True))
        self.assertEqual(env["exporter_sha256"], self.job["artifact_metadata"]["sha256"])

    def test_python_result_is_consistent(self) -> None:
        self.check_consistent(self.python_run)
        import torch
        import torchvision

        env = self.python_run.result["environment"]
        self.assertEqual((env["runtime"], env["torch_version"], env["model"]), ("python", torch.__version__, MODEL))
        self.assertEqual((env["builder"], env["torchvision_version"]), ("torchvision", torchvision.__version__))
        self.assertEqual((env["worker_version"], env["weights"]), (bj.RUNNER_VERSION, "random"))
        self.assertIn("progress phase=warmup", self.python_run.stderr)

    def test_same_fields_as_the_worker(self) -> None:
        if self.worker_run is None:
            self.skipTest("BENCHFLEET_WORKER_BIN is empty: no worker runs with this torch here"
                          if os.environ.get("BENCHFLEET_WORKER_BIN", None) == ""
                          else "no built benchfleet-worker that runs here (set BENCHFLEET_WORKER_BIN, or build it "
                               "under build/)")
        self.check_consistent(self.worker_run)  # and so the Python statistics equal the C++ ones
        python, worker = self.python_run.result, self.worker_run.result
        self.assertEqual(set(python), set(worker))
        self.assertEqual(set(python["stats"]), set(worker["stats"]))
        self.assertEqual(set(python["memory"]), set(worker["memory"]))
        self.assertEqual(set(python["telemetry"]), set(worker["telemetry"]))
        # The runner loads no artifact, so it has no hash or format of one; what it has besides
        # the worker's keys is listed (PYTHON_ONLY_ENVIRONMENT).
        python_only = PYTHON_ONLY_ENVIRONMENT | {f"{python['environment']['builder']}_version"}
        self.assertLessEqual(set(worker["environment"]) - {"artifact_sha256", "format"}, set(python["environment"]))
        self.assertLessEqual(set(python["environment"]) - set(worker["environment"]), python_only)


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class RunnerVerdictTest(unittest.TestCase):
    def test_capabilities(self) -> None:
        import torch

        run = finish(start([sys.executable, RUNNER, "--capabilities"]))
        self.assertEqual(run.code, 0, run.describe())
        caps = run.result
        self.assertEqual(caps["runtime"], "python")
        self.assertEqual(caps["torch_version"], torch.__version__)
        self.assertEqual(caps["cuda_compiled"], torch.version.cuda is not None)
        self.assertEqual(caps["torch_git"], str(getattr(torch.version, "git_version", "unknown")))
        if not hasattr(torch, "compile"):
            self.assertFalse(caps["torch_compile"])
        if torch_version() >= (2, 6):
            self.assertTrue(caps["torch_compile"], caps)
        cpu = caps["modes"]["cpu"]
        self.assertEqual(cpu[0], "eager")
        self.assertNotIn("torchscript", cpu)
        self.assertNotIn("reduce-overhead", cpu)  # CUDA graphs
        self.assertNotIn("max-autotune", cpu)  # CUDA graphs too
        expected_cpu = ["eager", "default", "max-autotune-no-cudagraphs"] if caps["torch_compile"] else ["eager"]
        self.assertEqual(cpu, expected_cpu)
        if not caps["cuda_available"]:
            self.assertEqual(caps["modes"]["cuda"], [])

    def test_modes_this_build_cannot_run_are_unsupported(self) -> None:
        import torch

        modes = ["torchscript"]
        if not hasattr(torch, "compile"):
            modes += ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
        # The last one as the agent runs it, for the exit code; the others in this process.
        results = {mode: run_in_process(job_for(mode)) for mode in modes[:-1]}
        run = run_runner(job_for(modes[-1]))
        self.assertEqual(run.code, 4, run.describe())
        results[modes[-1]] = run.result
        for mode, result in results.items():
            with self.subTest(mode=mode):
                assert_job_result(self, result)
                self.assertEqual(result["status"], "unsupported", result)
                self.assertNotIn("stats", result)
                self.assertEqual(result["environment"]["torch_version"], torch.__version__)
                if mode != "torchscript":
                    self.assertIn("torch.compile", result["error"])
                    self.assertIn(torch.__version__, result["error"])

    def test_cuda_without_cuda_is_unsupported(self) -> None:
        import torch

        if torch.cuda.is_available():
            self.skipTest("this torch sees a CUDA device")
        result = run_in_process(job_for(device="cuda"))
        self.assertEqual(result["status"], "unsupported", result)
        self.assertIn("CUDA", result["error"])

    def test_a_memory_limit_too_small_is_an_oom_with_its_phase(self) -> None:
        # 1 MB: not even the model fits (phase load); 16 MB: the weights fit, the first call's
        # activations not. Either fails in torch's allocator or, at the cap, in native code
        # that ends the process (oneDNN, libgomp): both must be an oom verdict, never a crash.
        runs = [start([sys.executable, RUNNER, "--job", "-"], job_for(memory_limit_mb=mb)) for mb in (1, 16)]
        for started in runs:
            run = finish(started)
            assert_job_result(self, run.result)
            self.assertEqual((run.result["status"], run.code), ("oom", 3), run.describe())
            self.assertIn(run.result["oom"]["phase"], ("load", "compile"))
            self.assertNotIn("stats", run.result)
            self.assertEqual(run.result["environment"]["model"], MODEL)  # taken before the cap
            if "tried to allocate" in run.result["error"]:
                self.assertGreater(run.result["oom"]["bytes_requested"], 0)

    def test_a_limit_the_model_fits_in_measures(self) -> None:
        run = run_runner(job_for(memory_limit_mb=512, measurement={**SMALL_MEASUREMENT, "max_iterations": 5}))
        assert_job_result(self, run.result)
        self.assertEqual((run.result["status"], run.code), ("ok", 0), run.describe())
        self.assertEqual(run.result["stats"], bs.compute_statistics(run.result["samples_ms"]))

    def test_inputs_other_than_the_catalogs_are_refused(self) -> None:
        result = run_in_process(job_for(inputs=[{"name": "pixel_values", "shape": [1, 3, 32, 32]}]))
        self.assertEqual(result["status"], "error", result)
        self.assertTrue(result["error"].startswith("job: inputs: differ from the catalog's inputs"), result)


# ---- torch.compile: which modes, the fingerprint, the compile telemetry -----------------------------

@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class CompileRulesTest(unittest.TestCase):
    """What decides and records a compile, on made-up builds and counters (any torch)."""

    @staticmethod
    def caps(**fields: Any) -> Any:
        from benchfleet_environment import Capabilities  # imports torch

        base = {"torch_version": "2.6.0", "torch_git": "Unknown", "cuda_compiled": True, "cuda_available": True,
                "torch_compile": True, "compile_missing": ""}
        return Capabilities(**{**base, **fields})

    def test_cuda_graph_modes_need_cuda(self) -> None:
        from benchfleet_environment import runnable_modes, unsupported_reason

        caps = self.caps()
        self.assertEqual(runnable_modes(caps, "cpu"), ["eager", "default", "max-autotune-no-cudagraphs"])
        self.assertEqual(runnable_modes(caps, "cuda"), ["eager", "default", "reduce-overhead", "max-autotune",
                                                        "max-autotune-no-cudagraphs"])
        for mode, instead in (("reduce-overhead", "default"), ("max-autotune", "max-autotune-no-cudagraphs")):
            reason = unsupported_reason(bj.Job(model=MODEL, batch=1, mode=mode, device="cpu"), caps)
            self.assertIn("CUDA graphs", reason)
            self.assertIn(instead, reason)

    def test_no_cpu_compiler_no_cpu_compile(self) -> None:
        from benchfleet_environment import runnable_modes, unsupported_reason

        caps = self.caps(cpu_compiler_missing="no C++ compiler")
        self.assertEqual(runnable_modes(caps, "cpu"), ["eager"])
        self.assertIn("max-autotune-no-cudagraphs", runnable_modes(caps, "cuda"))
        reason = unsupported_reason(bj.Job(model=MODEL, batch=1, mode="default", device="cpu"), caps)
        self.assertEqual(reason, "default runs torch.compile: no C++ compiler")

    def test_fingerprint_records_the_build_root(self) -> None:
        import torch
        from benchfleet_environment import fingerprint, this_build

        job = bj.Job(model=MODEL, batch=1, mode="eager")
        caps = this_build(probe_compile=False)
        rooted = fingerprint(job, caps, {"BENCHFLEET_BUILD_ROOT": "/roots/trixie", "BENCHFLEET_BUILD_ROOT_ID": "2af2"})
        self.assertEqual((rooted["build_root"], rooted["build_root_id"]), ("/roots/trixie", "2af2"))
        self.assertEqual((rooted["torch_version"], rooted["torch_git"]),
                         (torch.__version__, str(getattr(torch.version, "git_version", "unknown"))))
        on_host = fingerprint(job, caps, {"BENCHFLEET_BUILD_ROOT_ID": ""})
        self.assertFalse({"build_root", "build_root_id"} & set(on_host), on_host)

    def test_inductor_cache_state(self) -> None:
        from benchfleet_measure import inductor_cache_state

        cases = {(0, 1, 0): "cold", (0, 3, 1): "cold", (2, 0, 0): "warm", (1, 1, 0): "mixed", (1, 0, 1): "mixed",
                 (0, 0, 2): "bypass", (0, 0, 0): "none"}
        for (hits, misses, bypasses), state in cases.items():
            self.assertEqual(inductor_cache_state(hits, misses, bypasses), state, (hits, misses, bypasses))

    def test_compile_telemetry_from_counters(self) -> None:
        import collections
        from benchfleet_measure import compile_telemetry

        counters: Any = collections.defaultdict(collections.Counter)
        counters["stats"]["unique_graphs"] = 3
        counters["graph_break"].update({"a": 1, "b": 1})
        counters["inductor"].update({"fxgraph_cache_hit": 2, "fxgraph_cache_miss": 1})
        with tempfile.TemporaryDirectory() as cache, mock.patch.dict(os.environ, {"TORCHINDUCTOR_CACHE_DIR": cache}):
            t = compile_telemetry(counters, 1234.5, 2)
            self.assertEqual(set(t), COMPILE_TELEMETRY)
            self.assertEqual({k: t[k] for k in COMPILE_TELEMETRY - {"inductor_cache_dir"}},
                             {"compile_ms": 1234.5, "graphs": 3, "recompiles": 1, "graph_breaks": 2,
                              "fxgraph_cache_hit": 2, "fxgraph_cache_miss": 1, "fxgraph_cache_bypass": 0,
                              "inductor_cache": "mixed"})
            if torch_version() >= (2, 0):  # torch 1.13 has no inductor: the variable is all there is
                self.assertEqual(t["inductor_cache_dir"], cache)


@unittest.skipUnless(torch_version() >= (2, 6), "torch.compile runs for real with torch >= 2.6 (Debian 13's root: "
                     "ctest -R python_agent_torch_root); this python has "
                     + (f"torch {'.'.join(map(str, torch_version()))}" if HAVE_TORCH else "no torch"))
class CompileModesTest(unittest.TestCase):
    """torch.compile on the CPU for real: a small model compiled cold into an empty Inductor cache,
    again from that cache (warm), and with max-autotune-no-cudagraphs; the CUDA-graph modes
    unsupported; the accuracy verdicts (pass; wrong when the compiled outputs are perturbed on
    purpose); the shape walk, static and dynamic; float16. Runners as the agent runs them, one at
    a time (2 cores compile slowly), all sharing one Inductor cache (the later ones compile less)."""

    cache: tempfile.TemporaryDirectory
    runs: Dict[str, Run] = {}
    ROOT_ENV = {"BENCHFLEET_BUILD_ROOT": "/roots/test-root", "BENCHFLEET_BUILD_ROOT_ID": "0123456789abcdef"}
    WALK = [1, 2, 4]
    # One compile of mobilenet_v3_small takes 20-40 s on an idle 2-core CPU, minutes on a busy
    # one; a walking run compiles up to three graphs.
    TIMEOUT_S = 900

    @classmethod
    def setUpClass(cls) -> None:
        cls.cache = tempfile.TemporaryDirectory()
        env = {"TORCHINDUCTOR_CACHE_DIR": cls.cache.name, **cls.ROOT_ENV}
        cls.runs = {}
        for name, mode in (("cold", "default"), ("warm", "default"), ("autotune", "max-autotune-no-cudagraphs")):
            cls.runs[name] = run_runner(job_for(mode), env=env, timeout=cls.TIMEOUT_S)
        cls.runs["perturbed"] = run_runner(job_for("default"), env={**env, "BENCHFLEET_TEST_PERTURB_COMPILED": "0.05"},
                                           timeout=cls.TIMEOUT_S)
        for name, dynamic in (("walk_static", False), ("walk_dynamic", True)):
            cls.runs[name] = run_runner(job_for("default", batch=2, dynamic=dynamic, walk_batches=cls.WALK), env=env,
                                        timeout=cls.TIMEOUT_S)
        cls.runs["float16"] = run_runner(job_for("default", dtype="float16"), env=env, timeout=cls.TIMEOUT_S)

    def check_compiled(self, name: str) -> Dict[str, Any]:
        run = self.runs[name]
        self.assertTrue(run.one_line, run.describe())
        r = run.result
        assert_job_result(self, r)
        self.assertEqual((r["status"], run.code), ("ok", 0), run.describe())
        self.assertEqual(r["stats"], bs.compute_statistics(r["samples_ms"]))
        t = r["telemetry"]
        self.assertLessEqual(COMPILE_TELEMETRY, set(t), t)
        self.assertEqual(t["compile_ms"], r["first_call_ms"])
        self.assertGreater(t["compile_ms"], 0)
        if "walk_batches" not in t:
            self.assertEqual((t["graphs"], t["graph_breaks"], t["recompiles"]), (1, 0, 0), t)  # one graph, no breaks
        self.assertEqual(t["inductor_cache_dir"], self.cache.name)
        env = r["environment"]
        self.assertEqual((env["build_root"], env["build_root_id"]),
                         (self.ROOT_ENV["BENCHFLEET_BUILD_ROOT"], self.ROOT_ENV["BENCHFLEET_BUILD_ROOT_ID"]))
        self.assertTrue(env["torch_version"].startswith("2.") and env["torch_git"], env)
        return t

    def test_accuracy_pass(self) -> None:
        # mobilenet_v3_small's compiled logits are about 1e-6 off the float64 reference, as eager's
        # (9.2e-7); the bound is 3 x eager's error + 1e-4.
        for name in ("cold", "warm", "autotune"):
            with self.subTest(run=name):
                a = self.runs[name].result["accuracy"]
                self.assertEqual((a["verdict"], a["output"]), ("pass", "logits"), a)
                self.assertLess(a["compiled_error"], 1e-5, a)
                self.assertLess(a["eager_error"], 1e-5, a)
                self.assertAlmostEqual(a["tolerance"], 3 * a["eager_error"] + 1e-4)

    def test_perturbed_compiled_outputs_are_wrong(self) -> None:
        t = self.check_compiled("perturbed")
        self.assertEqual(t["inductor_cache"], "warm", t)  # the same graph: the perturbation is outside it
        a = self.runs["perturbed"].result["accuracy"]
        self.assertEqual((a["verdict"], a["output"]), ("wrong", "logits"), a)
        self.assertAlmostEqual(a["compiled_error"], 0.05, delta=0.01)
        self.assertGreater(a["compiled_error"], a["tolerance"])
        self.assertIn("further from the float64 reference", a["detail"])

    def test_shape_walk_static_and_dynamic(self) -> None:
        walks = {name: self.check_compiled(name) for name in ("walk_static", "walk_dynamic")}
        for name, t in walks.items():
            with self.subTest(run=name):
                self.assertEqual((t["walk_batches"], t["dynamic"]), ("1,2,4", name == "walk_dynamic"), t)
                for b in self.WALK:
                    self.assertGreater(t[f"walk_b{b}_first_ms"], 0)
                    self.assertGreater(t[f"walk_b{b}_median_ms"], 0)
                self.assertNotIn("walk_error", t)
                # The graphs after each batch size: the walk's recompiles, none while measuring.
                self.assertEqual(t["walk_recompiles"], t["walk_b4_graphs"] - 1, t)
                self.assertEqual((t["recompiles"], t["graphs"]), (0, t["walk_b4_graphs"]), t)
                self.assertEqual(self.runs[name].result["accuracy"]["verdict"], "pass")
        static, dynamic = walks["walk_static"], walks["walk_dynamic"]
        # Static: a graph for batch 2, one for batch 1 (sizes 1 are specialised), and at batch 4 a
        # dynamic one (automatic dynamic shapes). dynamic=True: batch 2's graph serves batch 4.
        self.assertEqual([static[f"walk_b{b}_graphs"] for b in self.WALK], [2, 2, 3], static)
        self.assertEqual([dynamic[f"walk_b{b}_graphs"] for b in self.WALK], [2, 2, 2], dynamic)
        self.assertLess(dynamic["walk_recompiles"], static["walk_recompiles"])

    def test_float16_runs_on_this_cpu_and_its_underflowed_logits_are_unchecked(self) -> None:
        # torch 2.6 has float16 CPU kernels (Debian 12's 1.13 has no Half convolution: test_dtypes).
        # mobilenet_v3_small's random-init logits are about 1e-9, below float16's smallest value:
        # eager and compiled both return zeros. Eager itself is 100% off the reference, so there is
        # nothing to judge the compiled output against: unchecked, saying so.
        self.check_compiled("float16")
        a = self.runs["float16"].result["accuracy"]
        self.assertEqual(a["verdict"], "unchecked", a)
        self.assertIn("eager in float16 is itself", a["detail"])

    def test_default_cold_then_warm(self) -> None:
        cold, warm = self.check_compiled("cold"), self.check_compiled("warm")
        self.assertEqual((cold["inductor_cache"], cold["fxgraph_cache_hit"]), ("cold", 0), cold)
        self.assertGreaterEqual(cold["fxgraph_cache_miss"], 1, cold)
        self.assertEqual((warm["inductor_cache"], warm["fxgraph_cache_miss"]), ("warm", 0), warm)
        self.assertGreaterEqual(warm["fxgraph_cache_hit"], 1, warm)
        self.assertLess(warm["compile_ms"], cold["compile_ms"])

    def test_max_autotune_no_cudagraphs(self) -> None:
        t = self.check_compiled("autotune")
        # Other inductor settings, another FX graph: not served by default's cache entry.
        self.assertEqual(t["inductor_cache"], "cold", t)

    def test_cuda_graph_modes_are_unsupported_on_the_cpu(self) -> None:
        results = {"reduce-overhead": run_in_process(job_for("reduce-overhead"))}
        run = run_runner(job_for("max-autotune"))  # as the agent runs it, for the exit code
        self.assertEqual(run.code, 4, run.describe())
        results["max-autotune"] = run.result
        for mode, result in results.items():
            with self.subTest(mode=mode):
                assert_job_result(self, result)
                self.assertEqual(result["status"], "unsupported", result)
                self.assertIn("CUDA graphs", result["error"])
                self.assertNotIn("stats", result)


if __name__ == "__main__":
    unittest.main()
