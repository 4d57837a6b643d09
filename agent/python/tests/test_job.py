"""Tests of the python runner's job file (agent/python/benchfleet_job.py: validated like the worker's
job) and of its verdict on a native death under the CPU memory cap (benchfleet_native_oom.py).
Need no torch.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import unittest
from typing import Any, Dict, Optional


HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from runner_support import MODEL, SMALL_MEASUREMENT, assert_job_result, bj, bs  # noqa: E402

import benchfleet_native_oom as native  # noqa: E402 (on the path runner_support sets)


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

    def test_model_definition_and_the_models_key(self) -> None:
        definition = {"id": "acme/net", "source": "torchvision", "architecture": "regnet_y_400mf"}
        ok = {"model": "acme/net", "batch": 1, "mode": "eager", "model_definition": definition}
        job = bj.parse_job(json.dumps(ok))
        self.assertEqual((job.model_definition.id, job.model_definition.architecture), ("acme/net", "regnet_y_400mf"))
        self.assertEqual(bj.parse_job(json.dumps({**ok, "model": "acme/net@12"})).model, "acme/net@12")
        self.assertIsNone(bj.parse_job(json.dumps({**ok, "model_definition": None})).model_definition)
        for key in ("acme/other", "acme/net@0", "acme/net@", "acme/net@2b", "acme/net@1@2"):
            with self.subTest(model=key):
                self.assertEqual(self.error_of({**ok, "model": key}),
                                 'model: must be the model_definition\'s id "acme/net" or "acme/net@N" (its version N)')
        self.assertEqual(self.error_of({**ok, "model_definition": 3}),
                         "model_definition: must be an object (a model definition)")
        self.assertTrue(self.error_of({**ok, "model_definition": {**definition, "source": "onnx"}})
                        .startswith("model_definition.source: unknown source 'onnx'"))
        self.assertTrue(self.error_of({**ok, "model_definition": {**definition, "builder": "x"}})
                        .startswith("model_definition.builder: unknown key"))

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

    def test_the_slots_thread_count(self) -> None:
        ok = {"model": MODEL, "batch": 1, "mode": "eager"}
        self.assertEqual(bj.parse_job(json.dumps(ok)).threads, 0, "torch's default without one")
        self.assertEqual(bj.parse_job(json.dumps({**ok, "threads": 4})).threads, 4)
        for bad in (-1, 4097):
            self.assertEqual(self.error_of({**ok, "threads": bad}),
                             "threads: must be between 0 (torch's default) and 4096")
        self.assertEqual(self.error_of({**ok, "threads": "2"}), "threads: must be an integer, got string")

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


if __name__ == "__main__":
    unittest.main()
