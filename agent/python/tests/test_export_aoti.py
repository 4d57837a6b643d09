"""Tests of the exporter's AOTInductor packages (agent/python/benchfleet_export.py with
benchfleet_aoti.py and benchfleet_export_check.py): the package, its metadata and float64 accuracy
reference, the CPU GEMM template's fallback, the test-only perturbation, and what the Inductor
cache did. The package tests need torch >= 2.6 and skip, saying so, on older ones (see
test_export.py for running them in the torch 2.6 root).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import unittest
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from test_export import CATALOG, EXPORTER, HAVE_TORCH, HAVE_YAML, run_exporter, torch_version  # noqa: E402


@unittest.skipUnless(HAVE_TORCH and HAVE_YAML, "needs torch and PyYAML")
class ExportAotInductorTest(unittest.TestCase):
    """AOTInductor packages really compiled on the CPU (torch >= 2.6), as the worker loads them."""

    @classmethod
    def setUpClass(cls) -> None:
        if torch_version() < (2, 6):
            import torch

            raise unittest.SkipTest(f"AOTInductor packages need torch >= 2.6; this python has {torch.__version__} "
                                    "(run these tests with the torch 2.6 root's python3)")

    def export(self, out: str, model: str, mode: str, cache_dir: str) -> Dict[str, Any]:
        code, meta, err = run_exporter("--catalog", CATALOG, "--model", model, "--batch", "2",
                                       "--format", "aotinductor", "--mode", mode, "--device", "cpu", "--out", out,
                                       env={"TORCHINDUCTOR_CACHE_DIR": cache_dir}, timeout=900)
        self.assertEqual(code, 0, err)
        self.assertEqual(meta["status"], "ok", meta)
        with open(os.path.join(out, "metadata.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f), meta)
        return meta

    def check_package(self, out: str, meta: Dict[str, Any], model: str, mode: str) -> None:
        import torch
        import torch._inductor

        self.assertEqual((meta["model"], meta["format"], meta["mode"], meta["batch"], meta["device"]),
                         (model, "aotinductor", mode, 2, "cpu"))
        self.assertEqual(meta["artifact"], "model.pt2")
        artifact = os.path.join(out, "model.pt2")
        with open(artifact, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), meta["sha256"])
        self.assertEqual(meta["inputs"], [{"name": "pixel_values", "shape": [2, 3, 224, 224], "dtype": "float32"}])
        self.assertEqual(meta["outputs"], [{"name": "logits", "shape": [2, 1000], "dtype": "float32"}])
        self.assertLess(meta["max_abs_diff"], 1e-2)
        # The compile: its own time within export_s, and what Inductor's cache did for it.
        self.assertGreater(meta["compile_s"], 0)
        self.assertLessEqual(meta["compile_s"], meta["export_s"])
        self.assertIn(meta["inductor_cache"], ("cold", "warm", "mixed"))
        counts = meta["inductor_cache_counts"]
        self.assertEqual(set(counts), {"hit", "miss", "bypass"})
        self.assertTrue(all(isinstance(n, int) and n >= 0 for n in counts.values()), counts)
        self.assertEqual(meta["inductor_cache"] == "cold", counts["hit"] == 0, meta)
        self.assertIsInstance(meta["inductor_vec_isa"], str)
        self.check_reference(out, meta, model)
        # The package is what the C++ loader reads: it runs at the recorded shapes.
        compiled = torch._inductor.aoti_load_package(artifact)
        with torch.no_grad():
            result = compiled(torch.randn(2, 3, 224, 224))
        self.assertEqual(list(result.shape), [2, 1000])
        self.assertTrue(bool(torch.isfinite(result).all()))

    def read_reference(self, out: str, meta: Dict[str, Any]) -> Tuple[List[Any], List[Any]]:
        """reference.bin's inputs and outputs, checked against its description."""
        import torch

        ref = meta["accuracy_reference"]
        self.assertEqual(ref["file"], "reference.bin")
        with open(os.path.join(out, "reference.bin"), "rb") as f:
            data = f.read()
        entries = ref["inputs"] + ref["outputs"]
        self.assertEqual(sum(e["nbytes"] for e in entries), len(data))
        tensors = []
        for e in entries:
            dtype = getattr(torch, e["dtype"])
            self.assertEqual(e["nbytes"], torch.empty(e["shape"], dtype=dtype).numel() * dtype.itemsize, e)
            chunk = bytearray(data[e["offset"]:e["offset"] + e["nbytes"]])
            tensors.append(torch.frombuffer(chunk, dtype=dtype).reshape(e["shape"]))
        return tensors[:len(ref["inputs"])], tensors[len(ref["inputs"]):]

    def check_reference(self, out: str, meta: Dict[str, Any], model: str) -> None:
        """reference.bin holds the exporter's seeded inputs and the float64 model's outputs on them."""
        import torch

        sys.dont_write_bytecode = True
        sys.path.insert(0, os.path.dirname(EXPORTER))
        import benchfleet_models as bm

        ref = meta["accuracy_reference"]
        self.assertIs(ref["eager_deterministic"], True)
        self.assertEqual([(e["name"], e["dtype"], e["shape"]) for e in ref["inputs"]],
                         [(i["name"], i["dtype"], i["shape"]) for i in meta["inputs"]])
        self.assertEqual([(e["name"], e["dtype"], e["shape"]) for e in ref["outputs"]],
                         [(o["name"], "float64", o["shape"]) for o in meta["outputs"]])
        inputs, outputs = self.read_reference(out, meta)
        spec = bm.find_model(bm.load_catalog(CATALOG), model)
        expected_inputs = bm.make_inputs(spec, meta["batch"], meta["seed"])
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(inputs, expected_inputs)))
        float64_model = bm.load_model(spec, meta["batch"], seed=meta["seed"]).module.double()
        with torch.no_grad():
            expected = bm.flatten_tensors(float64_model(*[t.double() for t in expected_inputs]))
        for e, got, want in zip(ref["outputs"], outputs, expected):
            self.assertTrue(torch.allclose(got, want, rtol=1e-9, atol=0), e["name"])
            self.assertTrue(0 < e["eager_error"] < 1e-4, e)  # float32 eager is close to float64

    def test_resnet18_default(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out, cache = os.path.join(tmp, "art"), os.path.join(tmp, "inductor-cache")
            meta = self.export(out, "torchvision/resnet18", "default", cache)
            self.check_package(out, meta, "torchvision/resnet18", "default")
            # torch.compile(mode="default") sets no inductor options, and the ones recorded are
            # those asked for, not what aoti_compile_and_package adds to the dict it is given.
            self.assertEqual(meta["inductor_configs"], {})
            # The compile worked in the Inductor cache directory it was given (the agent's per-build one).
            self.assertTrue(os.listdir(cache))

    # ResNet-18, not MobileNetV3-Small, in the compiles below: the rules checked are the mode's and
    # the perturbation's, not the model's, and ResNet-18's `default` compiles cold in under half the
    # time (17 s against 39 s on 2 cores); the module went from 125 s to 114 s alone.
    def test_resnet18_max_autotune_no_cudagraphs(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "art")
            meta = self.export(out, "torchvision/resnet18", "max-autotune-no-cudagraphs",
                               os.path.join(tmp, "inductor-cache"))
            self.check_package(out, meta, "torchvision/resnet18", "max-autotune-no-cudagraphs")
            self.assertTrue(meta["inductor_configs"].get("max_autotune"), meta["inductor_configs"])
            self.assertFalse([k for k in meta["inductor_configs"] if "cudagraph" in k or k.startswith("aot_inductor")],
                             meta["inductor_configs"])

    def test_cuda_graph_modes_are_unsupported_on_the_cpu(self) -> None:
        for mode in ("max-autotune", "reduce-overhead"):
            with self.subTest(mode=mode), tempfile.TemporaryDirectory() as out:
                code, meta, _ = run_exporter("--catalog", CATALOG, "--model", "torchvision/resnet18", "--batch", "1",
                                             "--format", "aotinductor", "--mode", mode, "--device", "cpu",
                                             "--out", out)
                self.assertEqual((code, meta["status"]), (4, "unsupported"), meta)
                self.assertIn("CUDA graphs", meta["message"])
                self.assertEqual(os.listdir(out), [])  # refused before building anything

    def test_the_test_perturbation_is_baked_into_the_package_and_not_the_reference(self) -> None:
        import torch
        import torch._inductor

        sys.path.insert(0, os.path.dirname(EXPORTER))
        from benchfleet_accuracy import relative_error

        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "art")
            code, meta, err = run_exporter("--catalog", CATALOG, "--model", "torchvision/resnet18",
                                           "--batch", "2", "--format", "aotinductor", "--device", "cpu", "--out", out,
                                           env={"TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "cache"),
                                                "BENCHFLEET_TEST_PERTURB_COMPILED": "0.05"}, timeout=900)
            # A package 5% off eager is no export failure: the worker's accuracy verdict judges it.
            self.assertEqual(code, 0, err)
            self.assertEqual(meta["test_perturb_compiled"], 0.05)
            self.check_reference(out, meta, "torchvision/resnet18")
            inputs, outputs = self.read_reference(out, meta)
            compiled = torch._inductor.aoti_load_package(os.path.join(out, "model.pt2"))
            with torch.no_grad():
                result = compiled(*inputs)
            result = result[0] if isinstance(result, (list, tuple)) else result
            error = relative_error(result, outputs[0])
            self.assertTrue(0.03 < error < 0.08, error)  # 0.05 x ||noise|| / sqrt(numel), noise ~ N(0, 1)


class InductorCacheOutcomeTest(unittest.TestCase):
    """How the exporter names the Inductor cache's part in a compile (no torch needed)."""

    def test_outcome_of_the_counts(self) -> None:
        sys.dont_write_bytecode = True  # no __pycache__ next to the sources
        sys.path.insert(0, os.path.dirname(EXPORTER))
        from benchfleet_aoti import inductor_cache_outcome

        self.assertEqual(inductor_cache_outcome(0, 0, 0), "cold")  # not consulted (torch 2.6 AOT compiles)
        self.assertEqual(inductor_cache_outcome(0, 3, 0), "cold")
        self.assertEqual(inductor_cache_outcome(0, 0, 2), "cold")
        self.assertEqual(inductor_cache_outcome(4, 0, 0), "warm")
        self.assertEqual(inductor_cache_outcome(4, 1, 0), "mixed")
        self.assertEqual(inductor_cache_outcome(4, 0, 1), "mixed")


if __name__ == "__main__":
    unittest.main()
