"""Hugging Face transformers models (source huggingface, docs/models.md): built from a definition's
`config` with random weights (the catalog's form), or loaded from a checkpoint: a local directory
(the definition's path or artifact) or a hub id.

    module, spec = build_huggingface(spec, weights=None, log=print)

The model is wrapped so that its forward takes the inputs positionally and returns the named
outputs as plain tensors, which is what torch.jit.trace, torch.export and the C++ worker need.
A checkpoint's inputs, when the definition lists none, come from its preprocessor_config.json;
its outputs, when it lists none, are [logits] where the model returns logits, else its first
tensor: the returned spec has both filled in.

Loading never runs the checkpoint's code: trust_remote_code stays off, and pickle-based weights
(pytorch_model.bin) are refused unless the definition allows them (allow_pickle). The hub is
reached as transformers reaches it (HF_HUB_OFFLINE=1 keeps it to the local cache).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple

import torch

from benchfleet_definition import ExportFailure, InputSpec, ModelSpec
from benchfleet_tensors import PICKLE_SUFFIXES, load_weights, make_inputs, missing_package

# Config keys that transformers 5 dropped from composite configs (backbone_config is the single
# source of truth there); passed only to config classes that still accept them.
_LEGACY_BACKBONE_KEYS = ("use_timm_backbone", "use_pretrained_backbone", "backbone", "backbone_kwargs")


class _PickOutputs(torch.nn.Module):
    """Calls a transformers model with keyword inputs; returns the named outputs as tensors."""

    def __init__(self, model: torch.nn.Module, input_names: Sequence[str], output_names: Sequence[str]) -> None:
        super().__init__()
        self.model = model
        self.input_names = list(input_names)
        self.output_names = list(output_names)

    def _run(self, tensors: Sequence[torch.Tensor]) -> Any:
        result = self.model(**dict(zip(self.input_names, tensors)))
        picked = []
        for name in self.output_names:
            value = getattr(result, name, None)
            if not isinstance(value, torch.Tensor):
                raise ExportFailure("error", f"{type(self.model).__name__} returned no tensor '{name}'")
            picked.append(value)
        return picked[0] if len(picked) == 1 else tuple(picked)


# One class per arity: torch.jit.trace and torch.export see plain positional parameters.
class _Wrap1(_PickOutputs):
    def forward(self, a: torch.Tensor) -> Any:
        return self._run((a,))


class _Wrap2(_PickOutputs):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> Any:
        return self._run((a, b))


class _Wrap3(_PickOutputs):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> Any:
        return self._run((a, b, c))


_WRAPPERS = {1: _Wrap1, 2: _Wrap2, 3: _Wrap3}


def _import_transformers(model_id: str) -> Any:
    try:
        return importlib.import_module("transformers")
    except ImportError as e:
        raise missing_package(model_id, getattr(e, "name", None) or "transformers") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:500] if text else ''}"


def _make_config(transformers: Any, spec: ModelSpec, log: Callable[[str], None]) -> Any:
    """The config of a `config` definition: config_class, or the class of config.model_type."""
    kwargs = dict(spec.config or {})
    if spec.config_class:
        config_cls = getattr(transformers, spec.config_class, None)
        if config_cls is None:
            raise ExportFailure("unsupported", f"transformers {transformers.__version__} has no {spec.config_class}")
    else:
        model_type = kwargs.pop("model_type", None)
        if not isinstance(model_type, str):
            raise ExportFailure("error", f"{spec.id}: config_class: absent, and config has no model_type to find "
                                         "the config class by")
        try:
            config_cls = type(transformers.AutoConfig.for_model(model_type))
        except ValueError as e:
            raise ExportFailure("unsupported", f"{spec.id}: transformers {transformers.__version__} does not know "
                                               f"model_type '{model_type}' ({_first_line(e)})") from None
    for key, value in list(kwargs.items()):
        if isinstance(value, dict) and "model_type" in value:
            nested = dict(value)
            kwargs[key] = transformers.AutoConfig.for_model(nested.pop("model_type"), **nested)
    accepted = inspect.signature(config_cls.__init__).parameters
    if "backbone_config" in kwargs and "backbone" in accepted and "backbone" not in kwargs:
        kwargs["backbone"] = None  # the config class' default names a timm model
    for key in _LEGACY_BACKBONE_KEYS:
        if key in kwargs and key not in accepted:
            log(f"{config_cls.__name__} has no '{key}' in this transformers; not passed")
            del kwargs[key]
    return config_cls(**kwargs)


def _refuse_pickle_only(spec: ModelSpec, directory: str) -> None:
    """A checkpoint directory whose weights are all pickles is refused before transformers sees it
    (with use_safetensors it would fail too, but saying only that model.safetensors is missing)."""
    names = os.listdir(directory)
    if any(name.endswith(".safetensors") for name in names):
        return
    pickled = sorted(name for name in names if name.endswith(PICKLE_SUFFIXES))
    if pickled:
        raise ExportFailure("error", f"{spec.id}: the checkpoint {directory} has only pickle-based weights "
                                     f"({', '.join(pickled)}), which can run code when loaded: refused unless the "
                                     "definition says allow_pickle: true (or save it with safetensors)")


def _checkpoint_json(checkpoint: str, name: str) -> Optional[Mapping[str, Any]]:
    """The checkpoint's JSON file `name` (a directory's, or a hub id's as transformers fetches or
    caches it); None when it has none."""
    if os.path.isdir(checkpoint):
        path = os.path.join(checkpoint, name)
        if not os.path.isfile(path):
            return None
    else:
        try:
            from transformers.utils import cached_file

            path = cached_file(checkpoint, name, _raise_exceptions_for_missing_entries=False)
        except Exception:  # offline without it in the cache, no such repository: nothing to derive from
            return None
        if path is None:
            return None
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        raise ExportFailure("error", f"cannot read {name} of {checkpoint}: {_first_line(e)}") from None
    return document if isinstance(document, dict) else None


def _square(size: Any) -> Optional[Tuple[int, int]]:
    """(height, width) of an image processor's size: {height, width}, {shortest_edge} (a square)
    or a number."""
    if isinstance(size, int) and not isinstance(size, bool):
        return (size, size)
    if isinstance(size, dict):
        if isinstance(size.get("height"), int) and isinstance(size.get("width"), int):
            return (size["height"], size["width"])
        if isinstance(size.get("shortest_edge"), int):
            return (size["shortest_edge"], size["shortest_edge"])
    return None


def _derived_inputs(spec: ModelSpec, checkpoint: str, config: Any) -> Tuple[InputSpec, ...]:
    """pixel_values as the checkpoint's image processor makes them: its crop_size (when it crops)
    else its size, with config.json's num_channels (default 3)."""
    if not checkpoint:
        raise ExportFailure("error", f"{spec.id}: inputs: required with config (no preprocessor_config.json to "
                                     "derive them from)")
    processor = _checkpoint_json(checkpoint, "preprocessor_config.json")
    if processor is None:
        raise ExportFailure("error", f"{spec.id}: inputs: not in the definition, and {checkpoint} has no "
                                     "preprocessor_config.json to derive them from: list them")
    crops = processor.get("do_center_crop", True) is not False and processor.get("crop_size") is not None
    size = processor.get("crop_size") if crops else processor.get("size")
    height_width = _square(size)
    if height_width is None:
        raise ExportFailure("error", f"{spec.id}: inputs: the {'crop_size' if crops else 'size'} {size!r} of "
                                     f"{checkpoint}'s preprocessor_config.json gives no height and width: list them")
    channels = getattr(config, "num_channels", None)
    channels = channels if isinstance(channels, int) and channels > 0 else 3
    return (InputSpec("pixel_values", (channels, *height_width), "float32"),)


def _probe_outputs(spec: ModelSpec, model: torch.nn.Module) -> Tuple[str, ...]:
    """[logits] when the model's output has a logits tensor, else the name of its first tensor:
    one call at batch 1 on the seeded inputs, before the model is wrapped."""
    example = make_inputs(spec, 1, seed=0)
    with torch.no_grad():
        result = model(**{item.name: t for item, t in zip(spec.inputs, example)})
    if isinstance(getattr(result, "logits", None), torch.Tensor):
        return ("logits",)
    items = result.items() if isinstance(result, Mapping) else ()
    first = next((name for name, value in items if isinstance(value, torch.Tensor)), None)
    if first is None:
        raise ExportFailure("error", f"{spec.id}: outputs: {type(model).__name__} returned no named tensor "
                                     f"({type(result).__name__}); list the outputs in the definition")
    return (first,)


def _from_pretrained(transformers: Any, spec: ModelSpec, checkpoint: str, allow_pickle: bool) -> torch.nn.Module:
    """The checkpoint's model in float32, as its architecture (default: config.json's first)."""
    what = f"hub_id {checkpoint}" if checkpoint == spec.hub_id else f"the checkpoint {checkpoint}"
    architecture = spec.architecture
    if not architecture:
        try:
            config = transformers.AutoConfig.from_pretrained(checkpoint, trust_remote_code=False)
        except Exception as e:  # OSError (not found, offline), ValueError (unknown model_type)
            raise ExportFailure("error", f"{spec.id}: cannot load the config.json of {what}: "
                                         f"{_first_line(e)}") from None
        names = getattr(config, "architectures", None) or []
        if not names:
            raise ExportFailure("error", f"{spec.id}: architecture: absent, and the config.json of {what} names no "
                                         "architectures")
        architecture = names[0]
    model_cls = getattr(transformers, architecture, None)
    if model_cls is None:
        raise ExportFailure("unsupported", f"transformers {transformers.__version__} has no {architecture}")
    if os.path.isdir(checkpoint) and not allow_pickle:
        _refuse_pickle_only(spec, checkpoint)
    try:
        # None: safetensors where the checkpoint has them, else its pickles.
        model = model_cls.from_pretrained(checkpoint, trust_remote_code=False,
                                          use_safetensors=None if allow_pickle else True)
    except MemoryError:
        raise
    except Exception as e:
        raise ExportFailure("error", f"{spec.id}: cannot load {what} as {architecture}: {_first_line(e)}") from None
    # transformers 5 loads a checkpoint in the dtype it was saved in (dtype="auto" by default),
    # often bfloat16; every path here starts from float32 (the job's dtype is cast later).
    return model.float()


def build_huggingface(spec: ModelSpec, weights: Optional[str], log: Callable[[str], None]
                      ) -> Tuple[torch.nn.Module, ModelSpec]:
    """The wrapped model (random init after the caller seeded torch, or a checkpoint's weights)
    and `spec` with its inputs and outputs filled in.

    `weights` (the exporter's --weights, a job's `weights`) replaces the definition's own: a
    checkpoint directory, or a state_dict file for a `config` definition's model. The caller
    names it on this host, so its pickles load as the definition's would with allow_pickle."""
    transformers = _import_transformers(spec.id)
    if weights and os.path.isdir(weights):
        checkpoint, weights_file = weights, ""
    else:
        checkpoint = "" if spec.config is not None else spec.located or spec.hub_id
        weights_file = weights or ""
    if checkpoint:
        model = _from_pretrained(transformers, spec, checkpoint, spec.allow_pickle or bool(weights))
    else:
        model_cls = getattr(transformers, spec.architecture, None)
        if model_cls is None:
            raise ExportFailure("unsupported", f"transformers {transformers.__version__} has no {spec.architecture}")
        model = model_cls(_make_config(transformers, spec, log))
    if weights_file:
        load_weights(model, weights_file, spec.id, allow_pickle=True)
    if not spec.inputs:
        spec = dataclasses.replace(spec, inputs=_derived_inputs(spec, checkpoint, getattr(model, "config", None)))
    wrapper = _WRAPPERS.get(len(spec.inputs))
    if wrapper is None:
        raise ExportFailure("error", f"{spec.id}: {len(spec.inputs)} inputs; the wrapper takes 1 to 3")
    model.eval()
    spec = dataclasses.replace(spec, outputs=spec.outputs or _probe_outputs(spec, model))
    return wrapper(model, [i.name for i in spec.inputs], spec.outputs), spec
