"""Tests of the job's dtype in the python runner (agent/python/benchfleet_precision.py and its use
in benchfleet_measure.py), and of the shape walk in eager mode, with whatever torch this python
has: Debian 12's torch 1.13 on the host (no float16 convolution on the CPU there), the torch 2.6
root under ctest -R python_agent_torch_root. The compiled modes' dtypes, accuracy and shape walk
are tested in the root (test_runner.py CompileModesTest). Skipped without torch.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import unittest
from typing import Any, Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from runner_support import (RUNNER, SMALL_MEASUREMENT, assert_job_result, finish, job_for,  # noqa: E402
                            run_in_process, start)

HAVE_TORCH = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision", "yaml"))


def half_convolution_failure() -> Optional[str]:
    """torch's own answer: the error a float16 convolution on this CPU raises, or None if it runs."""
    import torch

    try:
        torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4, dtype=torch.float16), torch.ones(1, 1, 3, 3,
                                                                                           dtype=torch.float16))
        return None
    except RuntimeError as e:
        return str(e)


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class PrecisionTest(unittest.TestCase):
    def test_casts_floating_tensors_only(self) -> None:
        import torch
        from benchfleet_precision import cast_inputs, cast_model

        ids, pixels = torch.tensor([1, 2]), torch.ones(2)
        for dtype, want in (("float16", torch.float16), ("bfloat16", torch.bfloat16), ("float32", torch.float32),
                            ("amp", torch.float32)):
            with self.subTest(dtype=dtype):
                model = cast_model(torch.nn.Linear(2, 2), dtype)
                self.assertEqual(model.weight.dtype, want)
                cast = cast_inputs([pixels, ids], dtype)
                self.assertEqual((cast[0].dtype, cast[1].dtype), (want, torch.int64))

    def test_amp_calls_run_under_autocast(self) -> None:
        import torch
        from benchfleet_precision import autocast_dtype, in_precision

        model = torch.nn.Linear(4, 4)
        x = torch.ones(1, 4)
        self.assertEqual(in_precision(model, "amp", "cpu")(x).dtype, torch.bfloat16)
        self.assertEqual(in_precision(model, "float32", "cpu")(x).dtype, torch.float32)
        self.assertIs(in_precision(model, "bfloat16", "cpu"), model)
        self.assertEqual((autocast_dtype("cpu"), autocast_dtype("cuda")), (torch.bfloat16, torch.float16))

    def test_unsupported_dtype_messages(self) -> None:
        from benchfleet_precision import unsupported_dtype_reason

        half = 'RuntimeError: "slow_conv2d_cpu" not implemented for \'Half\''
        self.assertEqual(unsupported_dtype_reason("float16", "cpu", f"BackendCompilerFailed: x\n{half}\nmore"),
                         f"float16 on cpu: this torch build or device cannot run it: {half}")
        self.assertIsNotNone(unsupported_dtype_reason("bfloat16", "cuda", "type bf16 not supported in this "
                                                                          "architecture"))
        self.assertIsNotNone(unsupported_dtype_reason("amp", "cuda", "\"addmm\" not implemented for 'BFloat16'"))
        self.assertIsNone(unsupported_dtype_reason("float32", "cpu", half))  # float32 lacks nothing
        self.assertIsNone(unsupported_dtype_reason("float16", "cpu", "RuntimeError: shape mismatch"))


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class RunnerDtypeTest(unittest.TestCase):
    """Eager runs of the small catalog model in each dtype, and an eager shape walk."""

    def check_ok(self, result: Dict[str, Any]) -> Dict[str, Any]:
        assert_job_result(self, result)
        self.assertEqual(result["status"], "ok", result)
        self.assertNotIn("accuracy", result)  # eager is the reference's own side: nothing to judge
        return result["telemetry"]

    def test_bfloat16_and_amp_run(self) -> None:
        self.check_ok(run_in_process(job_for(dtype="bfloat16")))
        telemetry = self.check_ok(run_in_process(job_for(dtype="amp")))
        self.assertEqual(telemetry["autocast_dtype"], "bfloat16")  # the CPU's autocast dtype

    def test_float16_runs_where_torch_can_else_unsupported(self) -> None:
        import torch

        failure = half_convolution_failure()
        if torch.__version__.startswith("1.13"):  # Debian 12: found so, and relied on by this test
            self.assertIn("not implemented for 'Half'", failure or "")
        run = finish(start([sys.executable, RUNNER, "--job", "-"], job_for(dtype="float16")))
        assert_job_result(self, run.result)
        if failure is None:
            self.assertEqual((run.result["status"], run.code), ("ok", 0), run.describe())
            return
        self.assertEqual((run.result["status"], run.code), ("unsupported", 4), run.describe())
        self.assertTrue(run.result["error"].startswith("float16 on cpu: this torch build or device cannot run it: "),
                        run.result)
        self.assertIn("not implemented for 'Half'", run.result["error"])
        self.assertNotIn("stats", run.result)

    def test_eager_shape_walk(self) -> None:
        job = job_for(batch=2, walk_batches=[1, 3], measurement={**SMALL_MEASUREMENT, "max_iterations": 5})
        t = self.check_ok(run_in_process(job))
        self.assertEqual(t["walk_batches"], "1,3")
        for b in (1, 3):
            self.assertGreater(t[f"walk_b{b}_first_ms"], 0)
            self.assertGreater(t[f"walk_b{b}_median_ms"], 0)
        self.assertFalse({"walk_recompiles", "walk_b1_graphs", "walk_error", "recompiles"} & set(t), t)


if __name__ == "__main__":
    unittest.main()
