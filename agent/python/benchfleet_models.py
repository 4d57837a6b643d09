"""Models for benchfleet's Python side: a definition (docs/models.md) built into a model and its
inputs, for the exporter (benchfleet_export.py), the torch.compile runner and the seed smoke
test, all run with a torch build's own python.

    spec = find_model(load_catalog(path), "microsoft/resnet-50")   # or parse_definition(obj, where)
    loaded = load_model(spec, batch=4, device="cuda", seed=0)      # eval mode, on the device
    inputs = loaded.inputs(4, seed=0)            # positional forward arguments, seeded
    out = loaded.module(*inputs)                 # a tensor, or a tuple of tensors
    loaded.spec.inputs, loaded.spec.outputs      # as built: derived where the definition has none

Sources: huggingface (benchfleet_huggingface.py), torchvision and timm (here), python and
exported (benchfleet_model_code.py). Nothing is downloaded except what a huggingface hub_id
names. A python model's inputs come from its factory, every other's from the (possibly derived)
input list, drawn from a generator seeded with the job's seed.

Errors a user can act on are raised as ExportFailure(status, message); status is "error" or
"unsupported". The names callers need from the definition and tensor modules are importable
from here.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from benchfleet_definition import (DefinitionError, ExportFailure, InputSpec, ModelSpec, find_model,  # noqa: F401
                                   load_catalog, parse_definition)
from benchfleet_huggingface import build_huggingface
from benchfleet_model_code import call_factory, load_exported, load_factory
from benchfleet_tensors import dtype_of, flatten_tensors, load_weights, make_inputs, missing_package  # noqa: F401

# What each torch.compile mode turns on in inductor (torch._inductor.list_mode_options), for
# builds whose torch lacks that function.
_MODE_OPTIONS: Dict[str, Dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True},
}
COMPILE_MODES: Tuple[str, ...] = tuple(_MODE_OPTIONS)
# Per image, what a torchvision classifier takes when the definition lists no inputs.
_IMAGE_INPUT = InputSpec("pixel_values", (3, 224, 224), "float32")


def inductor_configs_for_mode(mode: str) -> Dict[str, Any]:
    """The inductor options torch.compile(mode=...) sets, from this torch when it says."""
    if mode not in _MODE_OPTIONS:
        raise ExportFailure("error", f"unknown compile mode '{mode}' (one of {', '.join(COMPILE_MODES)})")
    try:
        from torch._inductor import list_mode_options  # torch >= 2.0
        return dict(list_mode_options(mode))
    except (ImportError, AttributeError):
        return dict(_MODE_OPTIONS[mode])


@dataclass
class LoadedModel:
    """A built model and how to make its inputs at any batch."""

    spec: ModelSpec  # as built: inputs (not for python) and outputs filled in where derived
    module: torch.nn.Module  # eval mode, on `device`; its forward takes the inputs positionally
    device: str
    program: Any = None  # exported: the loaded ExportedProgram, which the exporter packages as it is
    # python: the factory's inputs at (batch, seed)
    factory_inputs: Optional[Callable[[int, int], List[torch.Tensor]]] = None

    def inputs(self, batch: int, seed: int) -> List[torch.Tensor]:
        """The forward arguments for `batch` images on the model's device, the same for the same
        seed: a python model's from its factory, any other's from spec.inputs (make_inputs)."""
        if self.factory_inputs is not None:
            return self.factory_inputs(batch, seed)
        return make_inputs(self.spec, batch, seed, device=self.device)

    def input_names(self, count: int) -> List[str]:
        """The names of `count` inputs: spec.inputs' names, or input0, input1, ... (a factory's)."""
        names = [item.name for item in self.spec.inputs]
        return names if len(names) == count else [f"input{i}" for i in range(count)]


def _torchvision(spec: ModelSpec, weights: str, allow_pickle: bool) -> torch.nn.Module:
    try:
        import torchvision  # only torchvision models need it
    except ImportError:
        raise missing_package(spec.id, "torchvision") from None
    models = torchvision.models
    known = models.list_models() if hasattr(models, "list_models") else None
    if known is not None and spec.architecture not in known:
        near = difflib.get_close_matches(spec.architecture, known, n=3)
        raise ExportFailure("error", f"{spec.id}: architecture: '{spec.architecture}' is not in torchvision "
                                     f"{torchvision.__version__}'s models.list_models()"
                                     + (f" (did you mean {', '.join(near)}?)" if near else ""))
    if hasattr(models, "get_model"):
        model = models.get_model(spec.architecture, weights=None)
    else:  # torchvision < 0.14: the builder function itself
        builder = getattr(models, spec.architecture, None)
        if not callable(builder):
            raise ExportFailure("error", f"{spec.id}: architecture: torchvision {torchvision.__version__} has no "
                                         f"models.{spec.architecture}")
        model = builder(weights=None)
    if weights:
        load_weights(model, weights, spec.id, allow_pickle)
    return model


def _timm(spec: ModelSpec, weights: str, allow_pickle: bool) -> Tuple[torch.nn.Module, ModelSpec]:
    try:
        timm = importlib.import_module("timm")
    except ImportError:
        raise missing_package(spec.id, "timm") from None
    try:
        model = timm.create_model(spec.architecture, pretrained=False)
    except RuntimeError as e:  # "Unknown model (...)"
        raise ExportFailure("error", f"{spec.id}: architecture: timm {timm.__version__} cannot build "
                                     f"'{spec.architecture}': {e}") from None
    if weights:
        load_weights(model, weights, spec.id, allow_pickle)
    if not spec.inputs:
        cfg = getattr(model, "pretrained_cfg", None) or getattr(model, "default_cfg", None) or {}
        size = cfg.get("input_size")
        if not (isinstance(size, (tuple, list)) and len(size) == 3):
            raise ExportFailure("error", f"{spec.id}: inputs: not in the definition, and timm's pretrained_cfg of "
                                         f"{spec.architecture} has no input_size: list them")
        spec = dataclasses.replace(spec, inputs=(InputSpec("pixel_values", tuple(int(d) for d in size), "float32"),))
    return model, spec


def _python(spec: ModelSpec, batch: int, seed: int, device: str) -> LoadedModel:
    """The factory's model, and its inputs: those it made with the model for (batch, seed), or,
    at another batch or seed, those of another call (its model dropped)."""
    factory = load_factory(spec)
    model, first = call_factory(spec, factory, batch, device)

    def inputs_at(at_batch: int, at_seed: int) -> List[torch.Tensor]:
        if (at_batch, at_seed) == (batch, seed):
            return [t.to(device) for t in first]
        torch.manual_seed(at_seed)
        return [t.to(device) for t in call_factory(spec, factory, at_batch, device)[1]]

    return LoadedModel(spec, model, device, factory_inputs=inputs_at)


def load_model(spec: ModelSpec, batch: int, device: str = "cpu", seed: int = 0, weights: Optional[str] = None,
               log: Optional[Callable[[str], None]] = None) -> LoadedModel:
    """The model of `spec` in eval mode on `device`, ready for inputs at `batch` (a python
    factory builds for it; an exported program must take it).

    Random init after torch.manual_seed(seed), or the definition's weights (its path, or the
    agent's local copy of its artifact). `weights`, the exporter's --weights or a job's `weights`
    named by whoever runs it on this host, replaces them: a state_dict file, or for huggingface a
    checkpoint directory; a python or exported model has its weights in its code or program."""
    log = log or (lambda message: print(message, file=sys.stderr))
    if weights and not os.path.exists(weights):
        raise ExportFailure("error", f"weights {weights} do not exist")
    if weights and spec.source in ("python", "exported"):
        raise ExportFailure("error", f"weights: a {spec.source} model takes none (its weights are in its "
                                     f"{'factory' if spec.source == 'python' else 'program'})")
    torch.manual_seed(seed)
    if spec.source == "exported":
        # Its mode was fixed when it was exported (newer torch refuses eval() on it).
        program, inputs = load_exported(spec, batch)
        return LoadedModel(dataclasses.replace(spec, inputs=inputs), program.module().to(device), device,
                           program=program)
    if spec.source == "python":
        loaded = _python(spec, batch, seed, device)
        loaded.module = loaded.module.eval().to(device)
        return loaded
    if spec.source == "huggingface":
        model, spec = build_huggingface(spec, weights, log)
    elif spec.source == "torchvision":
        model = _torchvision(spec, weights or spec.located, spec.allow_pickle or bool(weights))
        spec = spec if spec.inputs else dataclasses.replace(spec, inputs=(_IMAGE_INPUT,))
    else:
        model, spec = _timm(spec, weights or spec.located, spec.allow_pickle or bool(weights))
    return LoadedModel(spec, model.eval().to(device), device)
