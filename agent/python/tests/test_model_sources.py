"""Tests of model definitions beyond the catalog (docs/models.md; agent/python/benchfleet_definition.py,
benchfleet_models.py and its sources): each source built for real, with real torch and files made
in the test's temporary directory (a checkpoint saved with save_pretrained, a factory's .py file, a
torch.export archive), nothing downloaded; then the runner with a job's model_definition and the
exporter with --model-json.

What a build lacks is skipped, saying so: transformers (the host's torch 1.13, the torch 2.6 root),
torch.export (torch < 2.1), AOTInductor (torch < 2.6), safetensors. The timm test runs where timm is
missing, since that is what it checks.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import textwrap
import unittest
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from runner_support import HAVE_TORCH, SMALL_MEASUREMENT, assert_job_result, run_runner, torch_version  # noqa: E402
from test_export import run_exporter  # noqa: E402

import benchfleet_definition as bd  # noqa: E402 (on the path runner_support sets)

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
HAVE_SAFETENSORS = importlib.util.find_spec("safetensors") is not None
HAVE_TIMM = importlib.util.find_spec("timm") is not None
HAVE_EXPORT = torch_version() >= (2, 1)  # torch.export.save / load

FACTORY = textwrap.dedent('''
    import torch


    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x, scale):
            return self.fc(x) * scale


    def make(batch, dtype, device):
        return Tiny().to(device, dtype), (torch.randn(batch, 4, dtype=dtype, device=device),
                                          torch.ones(batch, 1, dtype=dtype, device=device))


    def broken(batch, dtype, device):
        raise ValueError(f"no model of batch {batch}")


    def wrong(batch, dtype, device):
        return {"model": Tiny()}
''')


def write_factory(directory: str) -> str:
    path = os.path.join(directory, "acme_factory.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(FACTORY)
    return path


def export_convnet(path: str, dynamic: bool) -> None:
    """A small conv net exported at batch 2 (its batch dimension dynamic or static) and saved."""
    import torch

    class ConvNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.fc = torch.nn.Linear(4, 5)

        def forward(self, x: Any) -> Any:
            return self.fc(self.conv(x).relu().mean(dim=(2, 3)))

    torch.manual_seed(0)
    shapes = ({0: torch.export.Dim("batch", min=1, max=64)},) if dynamic else None
    program = torch.export.export(ConvNet().eval(), (torch.randn(2, 3, 16, 16),), dynamic_shapes=shapes)
    torch.export.save(program, path)


def failure_of(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """The ExportFailure fn raises."""
    try:
        fn(*args, **kwargs)
    except bd.ExportFailure as e:
        return e
    raise AssertionError(f"{fn.__name__} raised nothing")


class DefinitionTest(unittest.TestCase):
    """The definition's rules (no torch)."""

    def test_defaults(self) -> None:
        spec = bd.parse_definition({"id": "acme/cls/net", "source": "torchvision", "architecture": "resnet18"}, "m")
        self.assertEqual((spec.task, spec.name, spec.formats, spec.allow_pickle),
                         ("Image Classification", "net", bd.FORMATS, False))
        spec = bd.parse_definition({"id": "acme/x", "source": "exported", "path": "/srv/x.pt2"}, "m")
        self.assertEqual((spec.task, spec.formats, spec.located), ("Model", ("aotinductor",), "/srv/x.pt2"))
        spec = bd.parse_definition({"id": "acme/f", "source": "python", "factory": "acme.models:make"}, "m")
        self.assertEqual((spec.formats, spec.builder), ((), "torch"))
        digest = "sha256:" + "ab" * 32
        spec = bd.parse_definition({"id": "acme/v", "source": "huggingface", "artifact": digest,
                                    "local_path": "/cache/models/ab"}, "m")
        self.assertEqual((spec.located, spec.builder), ("/cache/models/ab", "transformers"))
        unfetched = bd.parse_definition({"id": "acme/v", "source": "huggingface", "artifact": digest}, "m")
        self.assertIn(f"artifact {digest} has no local copy", failure_of(lambda: unfetched.located).message)

    def test_errors_name_the_field(self) -> None:
        ok = {"id": "acme/net", "source": "torchvision", "architecture": "resnet18"}
        cases = [
            ({**ok, "source": "onnx"}, "model_definition.source: unknown source 'onnx'"),
            ({**ok, "weights": "/x.pt"}, "model_definition.weights: unknown key"),
            ({**ok, "factory": "a.b:c"}, "model_definition.factory: a torchvision model takes no 'factory'"),
            ({"source": "torchvision"}, "model_definition.id: is required"),
            ({**ok, "id": "acme/../x"}, "model_definition.id: must not hold"),
            ({**ok, "id": "acme/x@2"}, "model_definition.id: may hold only"),
            ({**ok, "architecture": "res\u202enet"}, "model_definition.architecture: must not contain control"),
            ({**ok, "path": "weights.pt"}, "model_definition.path: must be absolute"),
            ({**ok, "artifact": "sha256:12"}, "model_definition.artifact: must be \"sha256:\""),
            ({**ok, "inputs": [{"name": "x", "shape": [3, 0]}]}, "model_definition.inputs[0].shape: must be"),
            ({**ok, "inputs": [{"name": "x", "shape": [3], "mean": 0}]}, "model_definition.inputs[0].mean: unknown"),
            ({**ok, "formats": ["onnx"]}, "model_definition.formats: unknown format 'onnx'"),
            ({**ok, "allow_pickle": "yes"}, "model_definition.allow_pickle: must be true or false"),
            ({"id": "a", "source": "torchvision"}, "model_definition.architecture: is required"),
            ({"id": "a", "source": "huggingface", "hub_id": "a/b", "config": {}},
             "model_definition.source: a huggingface model needs exactly one of"),
            ({"id": "a", "source": "huggingface", "config": {}}, "model_definition.architecture: is required"),
            ({"id": "a", "source": "python", "factory": "acme.models"}, "model_definition.factory: must be"),
            ({"id": "a", "source": "exported"}, "model_definition.source: an exported model needs path or artifact"),
            ([], "model_definition: must be an object"),
        ]
        for definition, expected in cases:
            with self.subTest(expected=expected):
                error = failure_of(bd.parse_definition, definition, "model_definition")
                self.assertIsInstance(error, bd.DefinitionError)
                self.assertEqual(error.status, "error")
                self.assertTrue(error.message.startswith(expected), error.message)


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class ModelSourcesTest(unittest.TestCase):
    """Each source built for real in this process."""

    @classmethod
    def setUpClass(cls) -> None:
        import benchfleet_models

        cls.bm = benchfleet_models
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def load(self, definition: Dict[str, Any], batch: int = 2) -> Any:
        return self.bm.load_model(bd.parse_definition(definition, "m"), batch, log=lambda _: None)

    def run_model(self, loaded: Any, batch: int) -> Any:
        import torch

        with torch.no_grad():
            return loaded.module(*loaded.inputs(batch, seed=0))

    # ---- huggingface ----

    def vit_checkpoint(self, name: str, safetensors: bool) -> str:
        import torch
        import transformers

        directory = os.path.join(self.tmp.name, name)
        config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=37, image_size=48, patch_size=16, num_channels=3,
                                        num_labels=7)
        model = transformers.ViTForImageClassification(config)
        if safetensors:
            model.save_pretrained(directory)
        else:  # as an older transformers saved it
            config.architectures = [type(model).__name__]
            config.save_pretrained(directory)
            torch.save(model.state_dict(), os.path.join(directory, "pytorch_model.bin"))
        with open(os.path.join(directory, "preprocessor_config.json"), "w", encoding="utf-8") as f:
            json.dump({"do_center_crop": True, "crop_size": {"height": 48, "width": 48},
                       "size": {"shortest_edge": 56}}, f)
        return directory

    @unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed in this build")
    def test_a_checkpoint_directory_derives_its_inputs_and_outputs(self) -> None:
        import torch

        directory = self.vit_checkpoint("vit", safetensors=True)
        digest = "sha256:" + "0" * 64
        for where in ({"path": directory}, {"artifact": digest, "local_path": directory}):
            with self.subTest(where=sorted(where)):
                loaded = self.load({"id": "acme/tiny-vit", "source": "huggingface", **where}, batch=3)
                self.assertEqual(loaded.spec.inputs, (bd.InputSpec("pixel_values", (3, 48, 48), "float32"),))
                self.assertEqual(loaded.spec.outputs, ("logits",))
                self.assertEqual({p.dtype for p in loaded.module.parameters()}, {torch.float32})
                out = self.run_model(loaded, 3)
                self.assertEqual(list(out.shape), [3, 7])

    @unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed in this build")
    def test_a_pickle_only_checkpoint_needs_allow_pickle(self) -> None:
        directory = self.vit_checkpoint("vit-bin", safetensors=False)
        definition = {"id": "acme/tiny-vit", "source": "huggingface", "path": directory}
        error = failure_of(self.load, definition)
        self.assertEqual(error.status, "error")
        self.assertIn("pytorch_model.bin", error.message)
        self.assertIn("allow_pickle: true", error.message)
        loaded = self.load({**definition, "allow_pickle": True})
        self.assertEqual(list(self.run_model(loaded, 2).shape), [2, 7])

    # ---- torchvision ----

    def test_torchvision_any_builder_by_name(self) -> None:
        loaded = self.load({"id": "acme/regnet", "source": "torchvision", "architecture": "regnet_y_400mf"}, batch=1)
        self.assertEqual(loaded.spec.inputs, (bd.InputSpec("pixel_values", (3, 224, 224), "float32"),))
        self.assertEqual(list(self.run_model(loaded, 1).shape), [1, 1000])

    def test_an_unknown_torchvision_name_is_an_error(self) -> None:
        error = failure_of(self.load, {"id": "acme/x", "source": "torchvision", "architecture": "regnet_y_400"})
        self.assertEqual(error.status, "error")
        self.assertIn("'regnet_y_400' is not in torchvision", error.message)
        self.assertIn("list_models()", error.message)

    def test_torchvision_weights_file_pickled_only_with_allow_pickle(self) -> None:
        import torch
        import torchvision

        reference = torchvision.models.squeezenet1_1()
        path = os.path.join(self.tmp.name, "squeezenet.pth")
        torch.save(reference.state_dict(), path)
        definition = {"id": "acme/sq", "source": "torchvision", "architecture": "squeezenet1_1", "path": path}
        self.assertIn("allow_pickle: true", failure_of(self.load, definition).message)
        loaded = self.load({**definition, "allow_pickle": True})
        self.assertTrue(torch.equal(loaded.module.features[0].weight, reference.features[0].weight))
        if HAVE_SAFETENSORS:
            from safetensors.torch import save_file

            safe = os.path.join(self.tmp.name, "squeezenet.safetensors")
            save_file(reference.state_dict(), safe)
            loaded = self.load({**definition, "path": safe})
            self.assertTrue(torch.equal(loaded.module.features[0].weight, reference.features[0].weight))

    # ---- timm ----

    @unittest.skipIf(HAVE_TIMM, "timm is installed in this build")
    def test_timm_without_timm_is_unsupported(self) -> None:
        error = failure_of(self.load, {"id": "acme/t", "source": "timm", "architecture": "resnet18"})
        self.assertEqual(error.status, "unsupported")
        self.assertIn("needs the Python package 'timm'", error.message)

    # ---- python ----

    def factory_definition(self, function: str) -> Dict[str, Any]:
        return {"id": "acme/tiny", "source": "python", "factory": f"acme_factory:{function}",
                "path": write_factory(self.tmp.name)}

    def test_a_python_factory_makes_the_model_and_its_inputs(self) -> None:
        import torch

        loaded = self.load(self.factory_definition("make"), batch=3)
        first = loaded.inputs(3, seed=0)
        self.assertEqual([list(t.shape) for t in first], [[3, 4], [3, 1]])
        self.assertEqual(list(self.run_model(loaded, 3).shape), [3, 3])
        self.assertEqual([list(t.shape) for t in loaded.inputs(5, seed=0)], [[5, 4], [5, 1]])
        self.assertTrue(torch.equal(loaded.inputs(5, seed=1)[0], loaded.inputs(5, seed=1)[0]))
        self.assertEqual(loaded.input_names(2), ["input0", "input1"])
        again = self.load(self.factory_definition("make"), batch=3)  # the same file: its module again
        self.assertTrue(torch.equal(again.module.fc.weight, loaded.module.fc.weight))

    def test_a_factory_that_raises_is_an_error_naming_the_exception(self) -> None:
        error = failure_of(self.load, self.factory_definition("broken"))
        self.assertEqual((error.status, error.message),
                         ("error", "factory acme_factory:broken raised ValueError: no model of batch 2"))

    def test_a_factory_returning_something_else_is_an_error_saying_what(self) -> None:
        error = failure_of(self.load, self.factory_definition("wrong"))
        self.assertEqual(error.status, "error")
        self.assertIn("factory acme_factory:wrong returned a dict", error.message)
        missing = failure_of(self.load, self.factory_definition("absent"))
        self.assertIn("acme_factory has no function absent", missing.message)

    # ---- exported ----

    @unittest.skipUnless(HAVE_EXPORT, "torch.export needs torch >= 2.1")
    def test_an_exported_program_takes_its_inputs_from_its_signature(self) -> None:
        path = os.path.join(self.tmp.name, "convnet.pt2")
        export_convnet(path, dynamic=True)
        loaded = self.load({"id": "acme/convnet", "source": "exported", "path": path}, batch=3)
        self.assertEqual(loaded.spec.inputs, (bd.InputSpec("x", (3, 16, 16), "float32"),))
        self.assertIsNotNone(loaded.program)
        self.assertEqual(list(self.run_model(loaded, 3).shape), [3, 5])
        self.assertEqual(list(loaded.module.double()(*[t.double() for t in loaded.inputs(3, 0)]).shape), [3, 5])

    @unittest.skipUnless(HAVE_EXPORT, "torch.export needs torch >= 2.1")
    def test_a_static_batch_is_unsupported_at_another(self) -> None:
        path = os.path.join(self.tmp.name, "convnet-static.pt2")
        export_convnet(path, dynamic=False)
        definition = {"id": "acme/convnet", "source": "exported", "path": path}
        self.assertEqual(list(self.run_model(self.load(definition, batch=2), 2).shape), [2, 5])
        error = failure_of(self.load, definition, batch=4)
        self.assertEqual(error.status, "unsupported")
        self.assertIn("exported at batch 2", error.message)


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class RunnerWithDefinitionTest(unittest.TestCase):
    """The runner builds a job's model_definition (no catalog entry) and reports the job's key."""

    def test_eager_run_of_a_python_factory(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = write_factory(tmp)
            definition = {"id": "acme/tiny", "source": "python", "factory": "acme_factory:make", "path": path}
            job = {"model": "acme/tiny@2", "model_definition": definition, "batch": 2, "mode": "eager",
                   "measurement": dict(SMALL_MEASUREMENT), "catalog": os.path.join(tmp, "no-catalog.yaml")}
            run = run_runner(job)
            self.assertTrue(run.one_line, run.describe())
            assert_job_result(self, run.result)
            self.assertEqual((run.result["status"], run.code), ("ok", 0), run.describe())
            env = run.result["environment"]
            self.assertEqual((env["model"], env["builder"], env["weights"]), ("acme/tiny@2", "torch", path))
            mismatch = run_runner({**job, "model": "acme/other"})
            self.assertEqual((mismatch.result["status"], mismatch.code), ("error", 1), mismatch.describe())
            self.assertIn("job: model: must be the model_definition's id \"acme/tiny\"", mismatch.result["error"])


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and PyYAML")
class ExporterWithDefinitionTest(unittest.TestCase):
    def write_json(self, directory: str, definition: Dict[str, Any]) -> str:
        path = os.path.join(directory, "model.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(definition, f)
        return path

    def test_a_python_model_is_unsupported(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            definition = {"id": "acme/tiny", "source": "python", "factory": "acme_factory:make",
                          "path": write_factory(tmp)}
            code, meta, _ = run_exporter("--model-json", self.write_json(tmp, definition), "--batch", "1",
                                         "--format", "aotinductor", "--out", os.path.join(tmp, "out"))
            self.assertEqual((code, meta["status"]), (4, "unsupported"), meta)
            self.assertIn("a python model needs an exported program for the libtorch runtime", meta["message"])

    @unittest.skipUnless(torch_version() >= (2, 6), "AOTInductor packages need torch >= 2.6")
    def test_an_exported_program_is_packaged_with_aotinductor(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            program = os.path.join(tmp, "convnet.pt2")
            export_convnet(program, dynamic=True)
            model_json = self.write_json(tmp, {"id": "acme/convnet", "source": "exported", "path": program})
            code, meta, _ = run_exporter("--model-json", model_json, "--batch", "1", "--format", "torchscript",
                                         "--out", os.path.join(tmp, "ts"))
            self.assertEqual((code, meta["status"]), (4, "unsupported"), meta)
            self.assertIn("format aotinductor", meta["message"])
            out = os.path.join(tmp, "aoti")
            code, meta, err = run_exporter("--model-json", model_json, "--model", "acme/convnet@2", "--batch", "3",
                                           "--format", "aotinductor", "--out", out,
                                           env={"TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor")},
                                           timeout=900)
            self.assertEqual((code, meta["status"]), (0, "ok"), err[-3000:])
            self.assertEqual((meta["model"], meta["artifact"], meta["batch"], meta["weights"]),
                             ("acme/convnet@2", "model.pt2", 3, program))
            self.assertEqual(meta["inputs"], [{"name": "x", "shape": [3, 3, 16, 16], "dtype": "float32"}])
            self.assertEqual(meta["outputs"], [{"name": "output0", "shape": [3, 5], "dtype": "float32"}])
            self.assertEqual([i["name"] for i in meta["accuracy_reference"]["inputs"]], ["x"])
            self.assertEqual(sorted(os.listdir(out)), ["metadata.json", "model.pt2", "reference.bin"])


if __name__ == "__main__":
    unittest.main()
