"""Tests of the benchfleet exporter (agent/python/benchfleet_export.py) and the model catalog.

Run with the system python that has Debian's torch:  /usr/bin/python3 -m unittest discover -s
agent/python/tests -v. Tests that need torch (or PyYAML) skip when it is missing; the AOTInductor
tests (test_export_aoti.py, which shares this file's helpers) need torch >= 2.6 and skip, saying
so, on older ones (Debian 12's 1.13): run them with the torch 2.6 root's python, e.g.
    scripts/in-root.sh ROOT --ro-bind "$PWD" --chdir "$PWD" -- python3 -m unittest discover -s agent/python/tests -v
The exporter is run as a subprocess, the way the agent runs it, and judged by its exit code, its
one stdout line and the files it writes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import Any, Dict, List, Optional, Tuple
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
EXPORTER = os.path.join(SOURCE_DIR, "agent", "python", "benchfleet_export.py")
CATALOG = os.path.join(SOURCE_DIR, "common", "catalog", "models.yaml")

HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_YAML = importlib.util.find_spec("yaml") is not None
HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None

SEED_MODELS = [
    "google/vit-base-patch16-224", "nvidia/segformer-b0-finetuned-ade-512-512", "google/owlvit-base-patch32",
    "microsoft/beit-base-patch16-224-pt22k-ft22k", "facebook/detr-resnet-50", "facebook/convnext-large-224",
    "microsoft/resnet-50", "facebook/mask2former-swin-tiny-coco-panoptic", "facebook/maskformer-swin-base-ade",
    "google/deeplabv3_mobilenet_v2_1.0_513", "facebook/detr-resnet-101", "microsoft/conditional-detr-resnet-50",
]
# Per-image input shapes the seeds' image processors give a 640x480 image.
EXPECTED_INPUTS: Dict[str, List[Tuple[str, List[int], str]]] = {
    "google/vit-base-patch16-224": [("pixel_values", [3, 224, 224], "float32")],
    "nvidia/segformer-b0-finetuned-ade-512-512": [("pixel_values", [3, 512, 512], "float32")],
    "google/owlvit-base-patch32": [("pixel_values", [3, 768, 768], "float32"), ("input_ids", [2, 16], "int64"),
                                   ("attention_mask", [2, 16], "int64")],
    "microsoft/beit-base-patch16-224-pt22k-ft22k": [("pixel_values", [3, 224, 224], "float32")],
    "facebook/detr-resnet-50": [("pixel_values", [3, 800, 1066], "float32"), ("pixel_mask", [800, 1066], "int64")],
    "facebook/convnext-large-224": [("pixel_values", [3, 224, 224], "float32")],
    "microsoft/resnet-50": [("pixel_values", [3, 224, 224], "float32")],
    "google/deeplabv3_mobilenet_v2_1.0_513": [("pixel_values", [3, 513, 513], "float32")],
    "facebook/detr-resnet-101": [("pixel_values", [3, 800, 1066], "float32"), ("pixel_mask", [800, 1066], "int64")],
    "microsoft/conditional-detr-resnet-50": [("pixel_values", [3, 800, 1066], "float32"),
                                             ("pixel_mask", [800, 1066], "int64")],
    "torchvision/resnet18": [("pixel_values", [3, 224, 224], "float32")],
}

# A stand-in for the transformers package: just enough API (AutoConfig.for_model, a config with a
# nested backbone config, a model returning a ModelOutput-like object) to exercise the exporter's
# transformers path where the real library is not installed.
FAKE_TRANSFORMERS = textwrap.dedent('''
    import torch
    __version__ = "0.0-fake"

    class TinyBackboneConfig:
        def __init__(self, channels=4, **kwargs):
            self.channels = channels

    class AutoConfig:
        @staticmethod
        def for_model(model_type, **kwargs):
            assert model_type == "tiny-backbone", model_type
            return TinyBackboneConfig(**kwargs)

    class TinyDetectorConfig:
        def __init__(self, backbone_config=None, num_labels=3, backbone="timm-default"):
            assert isinstance(backbone_config, TinyBackboneConfig), "nested config not converted"
            assert backbone is None, "backbone must be reset when backbone_config is given"
            self.backbone_config, self.num_labels = backbone_config, num_labels

    class _Output:
        def __init__(self, logits, pred_boxes):
            self.logits, self.pred_boxes = logits, pred_boxes

    class TinyDetector(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            c = config.backbone_config.channels
            self.conv = torch.nn.Conv2d(3, c, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(c)
            self.embed = torch.nn.Embedding(100, c)
            self.head = torch.nn.Linear(c, config.num_labels)
            self.boxes = torch.nn.Linear(c, 4)

        def forward(self, pixel_values=None, input_ids=None, attention_mask=None):
            image = self.bn(self.conv(pixel_values)).relu().mean(dim=(2, 3))
            text = (self.embed(input_ids) * attention_mask.unsqueeze(-1)).mean(dim=1)
            rows = text.shape[0] // image.shape[0]
            joint = image.repeat_interleave(rows, dim=0) + text
            return _Output(self.head(joint), self.boxes(joint).sigmoid())

        @classmethod
        def from_pretrained(cls, path, trust_remote_code=None, use_safetensors=None):
            assert trust_remote_code is False, "a checkpoint's code must never run"
            # As transformers 5 (dtype="auto" by default): the checkpoint's own dtype, here bfloat16.
            config = TinyDetectorConfig(backbone_config=TinyBackboneConfig(), backbone=None)
            return cls(config).to(torch.bfloat16).eval()
''')

FAKE_CATALOG = textwrap.dedent('''
    models:
      - id: test/tiny-detector
        source: huggingface
        task: Object Detection
        name: Tiny
        architecture: TinyDetector
        config_class: TinyDetectorConfig
        config:
          use_timm_backbone: false
          backbone_config: {model_type: tiny-backbone, channels: 6}
          num_labels: 5
        inputs:
          - {name: pixel_values, shape: [3, 32, 32], dtype: float32}
          - {name: input_ids, shape: [2, 7], dtype: int64, range: [0, 100], per_image_rows: 2}
          - {name: attention_mask, shape: [2, 7], dtype: int64, per_image_rows: 2}
        outputs: [logits, pred_boxes]
        formats: [torchscript, torchscript-frozen]
''')


def torch_version() -> Tuple[int, int]:
    """(major, minor) of this python's torch, or (0, 0) without one."""
    if not HAVE_TORCH:
        return (0, 0)
    import torch

    return tuple(int("".join(c for c in part if c.isdigit()) or 0)  # type: ignore[return-value]
                 for part in torch.__version__.split("+")[0].split(".")[:2])


def run_exporter(*args: str, env: Optional[Dict[str, str]] = None,
                 timeout: int = 300) -> Tuple[int, Dict[str, Any], str]:
    """Runs the exporter; returns (exit code, the parsed stdout line, stderr)."""
    proc = subprocess.run([sys.executable, EXPORTER, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    lines = proc.stdout.splitlines()
    if len(lines) != 1:
        raise AssertionError(f"expected one stdout line, got {lines!r}\nstderr:\n{proc.stderr}")
    return proc.returncode, json.loads(lines[0]), proc.stderr


@unittest.skipUnless(HAVE_TORCH and HAVE_YAML, "needs torch and PyYAML")
class ExportTorchvisionTest(unittest.TestCase):
    def export_and_check(self, model: str, fmt: str) -> None:
        import torch

        with tempfile.TemporaryDirectory() as out:
            code, meta, err = run_exporter("--catalog", CATALOG, "--model", model, "--batch", "2",
                                           "--format", fmt, "--device", "cpu", "--out", out)
            if code == 1 and fmt == "torchscript-frozen" and "AutogradOther" in meta.get("message", ""):
                # Debian's torch 2.6 (built with Vulkan) cannot run max_pool2d on the MKLDNN tensors
                # optimize_for_inference makes: a dispatcher assert, which the exporter reports.
                self.skipTest(f"this torch ({torch.__version__}) cannot run {model} after optimize_for_inference: "
                              f"{meta['message'][:300]}")
            self.assertEqual(code, 0, f"{meta}\n{err}")
            self.assertEqual(meta["status"], "ok")
            with open(os.path.join(out, "metadata.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f), meta)
            for key in ("model", "format", "mode", "batch", "device", "artifact", "sha256", "torch_version",
                        "torch_git", "python", "inputs", "outputs", "export_s", "parameters", "max_abs_diff"):
                self.assertIn(key, meta)
            self.assertEqual((meta["model"], meta["format"], meta["batch"], meta["device"]), (model, fmt, 2, "cpu"))
            self.assertEqual(meta["mode"], {"torchscript": "eager", "torchscript-frozen": "torchscript"}[fmt])
            self.assertEqual(meta["inputs"], [{"name": "pixel_values", "shape": [2, 3, 224, 224], "dtype": "float32"}])
            self.assertEqual(meta["outputs"], [{"name": "logits", "shape": [2, 1000], "dtype": "float32"}])
            self.assertGreater(meta["parameters"], 1_000_000)
            self.assertLess(meta["max_abs_diff"], 1e-3)
            artifact = os.path.join(out, meta["artifact"])
            with open(artifact, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), meta["sha256"])
            module = torch.jit.load(artifact)
            if fmt == "torchscript-frozen":
                module = torch.jit.optimize_for_inference(module)  # what the worker does after loading
            with torch.no_grad():
                result = module(*[torch.randn(i["shape"]) for i in meta["inputs"]])
            self.assertEqual(list(result.shape), [2, 1000])

    def test_resnet18_torchscript(self) -> None:
        self.export_and_check("torchvision/resnet18", "torchscript")

    def test_resnet18_torchscript_frozen(self) -> None:
        self.export_and_check("torchvision/resnet18", "torchscript-frozen")

    def test_mobilenet_v3_small_torchscript(self) -> None:
        self.export_and_check("torchvision/mobilenet_v3_small", "torchscript")

    def test_mobilenet_v3_small_torchscript_frozen(self) -> None:
        self.export_and_check("torchvision/mobilenet_v3_small", "torchscript-frozen")

    def test_weights_file_is_loaded_and_a_wrong_one_refused(self) -> None:
        import torch
        import torchvision

        with tempfile.TemporaryDirectory() as out:
            good, bad = os.path.join(out, "resnet18.pt"), os.path.join(out, "squeezenet.pt")
            torch.save(torchvision.models.resnet18().state_dict(), good)
            torch.save(torchvision.models.squeezenet1_1().state_dict(), bad)
            code, meta, err = run_exporter("--model", "torchvision/resnet18", "--batch", "1",
                                           "--format", "torchscript", "--out", os.path.join(out, "a"),
                                           "--weights", good)
            self.assertEqual(code, 0, err)
            self.assertEqual(meta["weights"], os.path.abspath(good))
            code, meta, _ = run_exporter("--model", "torchvision/resnet18", "--batch", "1",
                                         "--format", "torchscript", "--out", os.path.join(out, "b"), "--weights", bad)
            self.assertEqual((code, meta["status"]), (1, "error"))
            self.assertIn("do not fit torchvision/resnet18", meta["message"])

    def test_same_seed_same_inputs(self) -> None:
        sys.dont_write_bytecode = True  # no __pycache__ next to the sources
        sys.path.insert(0, os.path.dirname(EXPORTER))
        import benchfleet_models as bm

        spec = bm.find_model(bm.load_catalog(CATALOG), "google/owlvit-base-patch32")
        first, again = bm.make_inputs(spec, 3, seed=7), bm.make_inputs(spec, 3, seed=7)
        self.assertEqual([t.numpy().tobytes() for t in first], [t.numpy().tobytes() for t in again])
        self.assertEqual([list(t.shape) for t in first], [[3, 3, 768, 768], [6, 16], [6, 16]])
        self.assertTrue(bool((first[2] == 1).all()))
        self.assertTrue(0 <= int(first[1].min()) and int(first[1].max()) < 49408)

    def test_dtype_casts_the_model_and_its_floating_inputs(self) -> None:
        with tempfile.TemporaryDirectory() as out:  # bfloat16 runs on the CPU in torch 1.13 and 2.6
            code, meta, err = run_exporter("--model", "torchvision/mobilenet_v3_small", "--batch", "1",
                                           "--format", "torchscript", "--dtype", "bfloat16", "--out", out)
            self.assertEqual(code, 0, err)
            self.assertEqual(meta["dtype"], "bfloat16")
            self.assertEqual(meta["inputs"], [{"name": "pixel_values", "shape": [1, 3, 224, 224], "dtype": "bfloat16"}])
            self.assertEqual(meta["outputs"], [{"name": "logits", "shape": [1, 1000], "dtype": "bfloat16"}])
            self.assertNotIn("accuracy_reference", meta)  # AOTInductor packages only
            self.assertEqual(sorted(os.listdir(out)), ["metadata.json", "model.pt"])
        with tempfile.TemporaryDirectory() as out:
            code, meta, err = run_exporter("--model", "torchvision/mobilenet_v3_small", "--batch", "1",
                                           "--format", "torchscript", "--out", out)
            self.assertEqual((code, meta["dtype"], meta["inputs"][0]["dtype"]), (0, "float32", "float32"), err)

    def test_a_dtype_a_kernel_lacks_is_unsupported(self) -> None:
        # torch 1.13's CPU convolution has no float16 kernel ("slow_conv2d_cpu" not implemented for
        # 'Half'); torch 2.x has one.
        with tempfile.TemporaryDirectory() as out:
            code, meta, err = run_exporter("--model", "torchvision/mobilenet_v3_small", "--batch", "1",
                                           "--format", "torchscript", "--dtype", "float16", "--out", out)
            if torch_version() >= (2, 0):
                self.assertEqual((code, meta["status"], meta["inputs"][0]["dtype"]), (0, "ok", "float16"), err)
                return
            self.assertEqual((code, meta["status"]), (4, "unsupported"), meta)
            self.assertIn("float16 on cpu is not supported by this torch build", meta["message"])
            self.assertIn("not implemented for 'Half'", meta["message"])
            self.assertEqual(os.listdir(out), [])


@unittest.skipUnless(HAVE_TORCH and HAVE_YAML, "needs torch and PyYAML")
class ExportTransformersPathTest(unittest.TestCase):
    """The transformers builder, driven through a fake transformers package."""

    def test_fake_detector_exports_with_three_positional_inputs(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "pkgs", "transformers"))
            with open(os.path.join(tmp, "pkgs", "transformers", "__init__.py"), "w", encoding="utf-8") as f:
                f.write(FAKE_TRANSFORMERS)
            catalog = os.path.join(tmp, "catalog.yaml")
            with open(catalog, "w", encoding="utf-8") as f:
                f.write(FAKE_CATALOG)
            env = {"PYTHONPATH": os.path.join(tmp, "pkgs")}
            for fmt in ("torchscript", "torchscript-frozen"):
                code, meta, err = run_exporter("--catalog", catalog, "--model", "test/tiny-detector", "--batch", "3",
                                               "--format", fmt, "--out", os.path.join(tmp, fmt), env=env)
                self.assertEqual(code, 0, err)
                self.assertEqual(meta["inputs"], [
                    {"name": "pixel_values", "shape": [3, 3, 32, 32], "dtype": "float32"},
                    {"name": "input_ids", "shape": [6, 7], "dtype": "int64", "range": [0, 100]},
                    {"name": "attention_mask", "shape": [6, 7], "dtype": "int64"},
                ])
                self.assertEqual(meta["outputs"], [{"name": "logits", "shape": [6, 5], "dtype": "float32"},
                                                   {"name": "pred_boxes", "shape": [6, 4], "dtype": "float32"}])
            # Only floating inputs take the job's dtype: ids and masks stay integers.
            code, meta, err = run_exporter("--catalog", catalog, "--model", "test/tiny-detector", "--batch", "1",
                                           "--format", "torchscript", "--dtype", "bfloat16",
                                           "--out", os.path.join(tmp, "bf16"), env=env)
            self.assertEqual(code, 0, err)
            self.assertEqual([i["dtype"] for i in meta["inputs"]], ["bfloat16", "int64", "int64"])
            code, meta, _ = run_exporter("--catalog", catalog, "--model", "test/tiny-detector", "--batch", "1",
                                         "--format", "aotinductor", "--out", os.path.join(tmp, "aoti"), env=env)
            self.assertEqual((code, meta["status"]), (4, "unsupported"))
            self.assertIn("torchscript, torchscript-frozen", meta["message"])

    def test_a_checkpoint_directory_is_built_in_float32(self) -> None:
        # transformers 5 loads a checkpoint in the dtype it was saved in; a float32 job (and the
        # float16 / bfloat16 casts, and the float64 reference) must start from float32 weights.
        import types

        import torch

        sys.path.insert(0, os.path.dirname(EXPORTER))
        import benchfleet_models

        fake = types.ModuleType("transformers")
        exec(FAKE_TRANSFORMERS, fake.__dict__)
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(sys.modules, {"transformers": fake}):
            catalog = os.path.join(tmp, "catalog.yaml")
            with open(catalog, "w", encoding="utf-8") as f:
                f.write(FAKE_CATALOG)
            spec = benchfleet_models.find_model(benchfleet_models.load_catalog(catalog), "test/tiny-detector")
            model = benchfleet_models.load_model(spec, 1, weights=tmp, log=lambda _: None).module
        self.assertEqual({p.dtype for p in model.parameters()}, {torch.float32})


@unittest.skipUnless(HAVE_TORCH and HAVE_YAML, "needs torch and PyYAML")
class ExportFailureTest(unittest.TestCase):
    def expect_failure(self, code_wanted: int, status: str, *args: str) -> Dict[str, Any]:
        with tempfile.TemporaryDirectory() as out:
            code, meta, _ = run_exporter("--catalog", CATALOG, "--out", out, *args)
            self.assertEqual(code, code_wanted, meta)
            self.assertEqual(meta["status"], status)
            self.assertEqual(set(meta), {"status", "model", "format", "message"})
            self.assertFalse(os.path.exists(os.path.join(out, "metadata.json")))
            return meta

    def test_aotinductor_needs_a_new_torch(self) -> None:
        import torch

        if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 6):
            self.skipTest(f"torch {torch.__version__} has AOTInductor")
        meta = self.expect_failure(4, "unsupported", "--model", "torchvision/resnet18", "--batch", "1",
                                   "--format", "aotinductor", "--mode", "max-autotune")
        self.assertIn("AOTInductor needs torch >= 2.6", meta["message"])
        self.assertIn(torch.__version__, meta["message"])

    @unittest.skipIf(HAVE_TRANSFORMERS, "transformers is installed here")
    def test_transformers_model_without_transformers(self) -> None:
        meta = self.expect_failure(4, "unsupported", "--model", "google/vit-base-patch16-224", "--batch", "1",
                                   "--format", "torchscript")
        self.assertEqual(meta["model"], "google/vit-base-patch16-224")
        self.assertIn("google/vit-base-patch16-224", meta["message"])
        self.assertIn("'transformers'", meta["message"])

    def test_unknown_model(self) -> None:
        meta = self.expect_failure(1, "error", "--model", "acme/no-such-model", "--batch", "1",
                                   "--format", "torchscript")
        self.assertIn("acme/no-such-model", meta["message"])

    def test_bad_batch(self) -> None:
        meta = self.expect_failure(1, "error", "--model", "torchvision/resnet18", "--batch", "0",
                                   "--format", "torchscript")
        self.assertIn("--batch", meta["message"])
        meta = self.expect_failure(1, "error", "--model", "torchvision/resnet18", "--batch", "two",
                                   "--format", "torchscript")
        self.assertIn("--batch", meta["message"])

    def test_amp_is_the_python_runtimes_alone(self) -> None:
        meta = self.expect_failure(4, "unsupported", "--model", "torchvision/resnet18", "--batch", "1",
                                   "--format", "torchscript", "--dtype", "amp")
        self.assertIn("python runtime only", meta["message"])

    def test_a_bad_test_perturbation_is_an_error_naming_the_variable(self) -> None:
        with tempfile.TemporaryDirectory() as out:
            code, meta, _ = run_exporter("--model", "torchvision/resnet18", "--batch", "1", "--format", "aotinductor",
                                         "--out", out, env={"BENCHFLEET_TEST_PERTURB_COMPILED": "lots"})
            self.assertEqual((code, meta["status"]), (1, "error"), meta)
            self.assertIn("BENCHFLEET_TEST_PERTURB_COMPILED='lots': must be a number in (0, 1]", meta["message"])

    def test_unknown_format(self) -> None:
        meta = self.expect_failure(1, "error", "--model", "torchvision/resnet18", "--batch", "1", "--format", "onnx")
        self.assertIn("onnx", meta["message"])


@unittest.skipUnless(HAVE_YAML, "needs PyYAML")
class CatalogTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        import yaml

        with open(CATALOG, encoding="utf-8") as f:
            cls.models = {m["id"]: m for m in yaml.safe_load(f)["models"]}

    def test_every_model_is_a_definition_listing_its_inputs(self) -> None:
        sys.path.insert(0, os.path.dirname(EXPORTER))
        import benchfleet_definition as bd

        self.assertEqual(len(self.models), 15)
        for model_id, model in self.models.items():
            with self.subTest(model=model_id):
                spec = bd.parse_definition(model, model_id)
                self.assertIn(spec.source, ("torchvision", "huggingface"))
                self.assertTrue(spec.architecture)
                self.assertTrue(model.get("inputs"))
                for item in model["inputs"]:
                    self.assertTrue({"name", "shape", "dtype"} <= set(item), item)
                self.assertEqual(spec.formats, ("torchscript", "torchscript-frozen", "aotinductor"))

    def test_seed_models_use_transformers_configs(self) -> None:
        self.assertEqual(list(self.models)[:12], SEED_MODELS)
        for model_id in SEED_MODELS:
            with self.subTest(model=model_id):
                model = self.models[model_id]
                self.assertEqual(model["source"], "huggingface")
                self.assertTrue(model["architecture"].endswith(("ForImageClassification", "ForSemanticSegmentation",
                                                                "ForObjectDetection", "ForUniversalSegmentation",
                                                                "ForInstanceSegmentation")), model["architecture"])
                self.assertTrue(model["config_class"].endswith("Config"))
                self.assertIsInstance(model["config"], dict)
                self.assertTrue(model["config"])
                self.assertTrue(model["outputs"])

    def test_input_shapes_match_the_image_processors(self) -> None:
        for model_id, expected in EXPECTED_INPUTS.items():
            with self.subTest(model=model_id):
                got = [(i["name"], i["shape"], i["dtype"]) for i in self.models[model_id]["inputs"]]
                self.assertEqual(got, expected)
        owlvit = self.models["google/owlvit-base-patch32"]["inputs"]
        self.assertEqual(owlvit[1]["range"], [0, 49408])
        self.assertEqual([i.get("per_image_rows") for i in owlvit], [None, 2, 2])

    def test_checkpoint_hyperparameters(self) -> None:
        config = {m: self.models[m]["config"] for m in SEED_MODELS}
        self.assertEqual(config["microsoft/beit-base-patch16-224-pt22k-ft22k"]["num_labels"], 21841)
        self.assertTrue(config["microsoft/beit-base-patch16-224-pt22k-ft22k"]["use_relative_position_bias"])
        self.assertEqual(config["facebook/convnext-large-224"]["depths"], [3, 3, 27, 3])
        self.assertEqual(config["facebook/convnext-large-224"]["hidden_sizes"], [192, 384, 768, 1536])
        self.assertEqual(config["microsoft/resnet-50"]["depths"], [3, 4, 6, 3])
        self.assertEqual(config["microsoft/resnet-50"]["layer_type"], "bottleneck")
        for detr, depths in (("facebook/detr-resnet-50", [3, 4, 6, 3]), ("facebook/detr-resnet-101", [3, 4, 23, 3]),
                             ("microsoft/conditional-detr-resnet-50", [3, 4, 6, 3])):
            self.assertFalse(config[detr]["use_timm_backbone"])
            self.assertFalse(config[detr]["use_pretrained_backbone"])
            self.assertEqual(config[detr]["backbone_config"]["model_type"], "resnet")
            self.assertEqual(config[detr]["backbone_config"]["depths"], depths)
        for swin, embed in (("facebook/mask2former-swin-tiny-coco-panoptic", 96),
                            ("facebook/maskformer-swin-base-ade", 128)):
            self.assertEqual(config[swin]["backbone_config"]["model_type"], "swin")
            self.assertEqual(config[swin]["backbone_config"]["embed_dim"], embed)


if __name__ == "__main__":
    unittest.main()
