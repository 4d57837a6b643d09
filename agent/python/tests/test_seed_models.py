"""The seeds' models in a torch build with transformers (the unstable root: Debian unstable's torch
2.14 and transformers 5.12): three of the twelve — ViT-base (classification), SegFormer-b0
(segmentation), DETR-ResNet-50 (detection, two outputs) — built from their catalog configs with
random weights, nothing downloaded, each measured eager and compiled (torch.compile `default`) at
batch 1 by the runner's run_job, as a job of the python runtime is. Each compiled run must pass its
accuracy check against float64 eager. Skipped where transformers is missing (the host's torch
1.13, the torch 2.6 root) or torch.compile is (torch < 2.0).

The compiles (about 1-3 minutes each cold on two cores) share the kept Inductor cache
(BENCHFLEET_TEST_SHARED_INDUCTOR_CACHE) when there is one: what is checked is the same warm or
cold.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import unittest
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from runner_support import job_for, run_in_process, torch_version  # noqa: E402

SLICE = ("google/vit-base-patch16-224", "nvidia/segformer-b0-finetuned-ade-512-512", "facebook/detr-resnet-50")
# DETR at batch 1 (an 800x1066 image) takes seconds a call on two busy cores: three timed calls
# each, which is what the checks need (a sample count, positive samples, an accuracy verdict);
# the figures themselves are the seed study's (docs/results/seed-study-cpu.md).
MEASUREMENT = {"warmup": 1, "min_iterations": 3, "max_iterations": 3, "min_duration_s": 0, "max_duration_s": 60}


@unittest.skipIf(importlib.util.find_spec("transformers") is None, "transformers is not installed in this build")
@unittest.skipIf(torch_version() < (2, 0), "torch.compile needs torch >= 2.0")
class SeedModelsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        shared = os.environ.get("BENCHFLEET_TEST_SHARED_INDUCTOR_CACHE")
        if shared:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(shared, "seed-models")

    def run_model(self, model: str, mode: str) -> Dict[str, Any]:
        r = run_in_process(job_for(mode, model=model, measurement=dict(MEASUREMENT)))
        self.assertEqual(r["status"], "ok", f"{model} {mode}: {r.get('error')}")
        self.assertGreaterEqual(len(r["samples_ms"]), 3)
        self.assertTrue(all(s > 0 for s in r["samples_ms"]), r["samples_ms"])
        self.assertIn("transformers_version", r["environment"], r["environment"])
        return r

    def test_each_model_runs_eager_and_compiled_and_its_compiled_outputs_pass(self) -> None:
        for model in SLICE:
            with self.subTest(model=model):
                eager = self.run_model(model, "eager")
                self.assertNotIn("accuracy", eager)
                compiled = self.run_model(model, "default")
                accuracy = compiled["accuracy"]
                self.assertEqual(accuracy["verdict"], "pass", f"{model}: {accuracy}")
                self.assertLessEqual(accuracy["compiled_error"], accuracy["tolerance"], accuracy)
                self.assertGreater(compiled["telemetry"]["compile_ms"], 0)
                self.assertNotIn(compiled["environment"]["inductor_vec_isa"], ("", "unknown"))


if __name__ == "__main__":
    unittest.main()
