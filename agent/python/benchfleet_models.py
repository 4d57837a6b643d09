"""Catalog models for benchfleet's Python side: read the catalog, build a model, make its inputs.

Shared by the exporter (benchfleet_export.py) and the torch.compile runner, both run with a
torch build's own python. Everything here follows the `worker:` section of each catalog entry
(common/catalog/models.yaml):

    catalog = load_catalog(path)                 # {id: ModelSpec}
    spec = find_model(catalog, "microsoft/resnet-50")
    model = build_model(spec, device="cuda", seed=0)          # eval mode, random init
    inputs = make_inputs(spec, batch=4, seed=0, device="cuda")  # positional forward arguments
    out = model(*inputs)                         # a tensor, or a tuple of tensors

Models are built without downloading anything: torchvision constructors with weights=None and
transformers models from a config (random init), optionally loading local weights. A built
transformers model is wrapped so that its forward takes the catalog's inputs positionally and
returns plain tensors, which is what torch.jit.trace, torch.export and the C++ worker need.

Errors a user can act on are raised as ExportFailure(status, message); status is "error" or
"unsupported".
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

# Config keys that transformers 5 dropped from composite configs (backbone_config is the single
# source of truth there); passed only to config classes that still accept them.
_LEGACY_BACKBONE_KEYS = ("use_timm_backbone", "use_pretrained_backbone", "backbone", "backbone_kwargs")

_DTYPES: Dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}

# What each torch.compile mode turns on in inductor (torch._inductor.list_mode_options), for
# builds whose torch lacks that function.
_MODE_OPTIONS: Dict[str, Dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True},
}
COMPILE_MODES: Tuple[str, ...] = tuple(_MODE_OPTIONS)


class ExportFailure(Exception):
    """A failure with a message for the user. status: "error" or "unsupported"."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class InputSpec:
    """One forward argument, per image (see the catalog header for per_image_rows)."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    range: Optional[Tuple[int, int]] = None  # [low, high) for random integer ids
    per_image_rows: int = 0  # > 0: shape[0] rows per image, concatenated over the batch

    def concrete_shape(self, batch: int) -> List[int]:
        if self.per_image_rows > 0:
            return [self.shape[0] * batch, *self.shape[1:]]
        return [batch, *self.shape]

    def is_mask(self) -> bool:
        return self.dtype not in ("float32", "float16", "bfloat16") and self.range is None


@dataclass(frozen=True)
class ModelSpec:
    """A catalog entry as the Python side needs it."""

    id: str
    source: str
    builder: str  # torchvision | transformers
    constructor: str = ""  # torchvision function
    model_class: str = ""  # transformers class
    config_class: str = ""
    config: Optional[Mapping[str, Any]] = None
    inputs: Tuple[InputSpec, ...] = ()
    outputs: Tuple[str, ...] = ()
    formats: Tuple[str, ...] = ()


def _require(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ExportFailure("error", f"catalog: {where}: {what}")


def _parse_input(raw: Any, where: str) -> InputSpec:
    _require(isinstance(raw, dict), where, "must be a mapping with name, shape and dtype")
    name, shape, dtype = raw.get("name"), raw.get("shape"), raw.get("dtype", "float32")
    _require(isinstance(name, str) and bool(name), where, "needs a name")
    _require(isinstance(shape, list) and bool(shape) and all(isinstance(d, int) and d > 0 for d in shape),
             where, "shape must be a list of positive integers")
    _require(dtype in _DTYPES, where, f"dtype must be one of {', '.join(_DTYPES)}")
    value_range = raw.get("range")
    if value_range is not None:
        _require(isinstance(value_range, list) and len(value_range) == 2 and value_range[0] < value_range[1],
                 where, "range must be [low, high) with low < high")
        value_range = (int(value_range[0]), int(value_range[1]))
    rows = int(raw.get("per_image_rows", 0))
    _require(rows == 0 or rows == shape[0], where, "per_image_rows must equal shape[0]")
    return InputSpec(name, tuple(shape), dtype, value_range, rows)


def _parse_model(raw: Mapping[str, Any], index: int) -> ModelSpec:
    where = f"models[{index}]"
    model_id = raw.get("id")
    _require(isinstance(model_id, str) and bool(model_id), where, "needs an id")
    worker = raw.get("worker")
    where = f"{model_id}: worker"
    _require(isinstance(worker, dict), where, "missing (needs builder, inputs, formats)")
    builder = worker.get("builder")
    _require(builder in ("torchvision", "transformers"), where, "builder must be torchvision or transformers")
    inputs = worker.get("inputs")
    _require(isinstance(inputs, list) and bool(inputs), where, "needs a non-empty inputs list")
    spec = ModelSpec(
        id=model_id,
        source=str(raw.get("source", "")),
        builder=builder,
        constructor=str(worker.get("constructor", "")),
        model_class=str(worker.get("model_class", "")),
        config_class=str(worker.get("config_class", "")),
        config=worker.get("config") or {},
        inputs=tuple(_parse_input(x, f"{where}.inputs[{i}]") for i, x in enumerate(inputs)),
        outputs=tuple(str(x) for x in worker.get("outputs", [])),
        formats=tuple(str(x) for x in worker.get("formats", [])),
    )
    if builder == "torchvision":
        _require(bool(spec.constructor), where, "torchvision builder needs constructor")
    else:
        _require(bool(spec.model_class and spec.config_class), where,
                 "transformers builder needs model_class and config_class")
        _require(isinstance(spec.config, dict), where, "config must be a mapping")
        _require(bool(spec.outputs), where, "transformers builder needs outputs")
    return spec


def load_catalog(path: str) -> Dict[str, ModelSpec]:
    """Reads the catalog YAML. Raises ExportFailure when PyYAML is missing or the file is bad."""
    try:
        import yaml  # optional dependency, reported with a clear message
    except ImportError:
        raise ExportFailure(
            "error",
            f"reading the catalog needs PyYAML, which {sys.executable} does not have "
            "(Debian: apt-get install python3-yaml; pip: pip install pyyaml)") from None
    try:
        with open(path, encoding="utf-8") as f:
            document = yaml.safe_load(f)
    except OSError as e:
        raise ExportFailure("error", f"cannot read catalog {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ExportFailure("error", f"catalog {path} is not valid YAML: {e}") from None
    models = document.get("models") if isinstance(document, dict) else None
    _require(isinstance(models, list) and bool(models), path, "needs a non-empty models list")
    catalog: Dict[str, ModelSpec] = {}
    for i, raw in enumerate(models):
        _require(isinstance(raw, dict), f"models[{i}]", "must be a mapping")
        spec = _parse_model(raw, i)
        catalog[spec.id] = spec
    return catalog


def find_model(catalog: Mapping[str, ModelSpec], model_id: str) -> ModelSpec:
    spec = catalog.get(model_id)
    if spec is None:
        raise ExportFailure("error", f"unknown model id '{model_id}': not in the catalog "
                                     f"(known: {', '.join(sorted(catalog))})")
    return spec


def dtype_of(name: str) -> torch.dtype:
    return _DTYPES[name]


def make_inputs(spec: ModelSpec, batch: int, seed: int, device: str = "cpu") -> List[torch.Tensor]:
    """The forward arguments for `batch` images, in catalog order.

    Drawn on the CPU from a generator seeded with `seed`, so the same seed gives byte-identical
    tensors on every machine: floats standard normal, ids uniform in `range`, masks all ones.
    """
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for item in spec.inputs:
        shape = item.concrete_shape(batch)
        dtype = dtype_of(item.dtype)
        if item.range is not None:
            t = torch.randint(item.range[0], item.range[1], shape, generator=generator, dtype=torch.int64).to(dtype)
        elif item.is_mask():
            t = torch.ones(shape, dtype=dtype)
        else:
            t = torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype)
        tensors.append(t.to(device))
    return tensors


def inductor_configs_for_mode(mode: str) -> Dict[str, Any]:
    """The inductor options torch.compile(mode=...) sets, from this torch when it says."""
    if mode not in _MODE_OPTIONS:
        raise ExportFailure("error", f"unknown compile mode '{mode}' (one of {', '.join(COMPILE_MODES)})")
    try:
        from torch._inductor import list_mode_options  # torch >= 2.0
        return dict(list_mode_options(mode))
    except (ImportError, AttributeError):
        return dict(_MODE_OPTIONS[mode])


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
        missing = getattr(e, "name", None) or "transformers"
        # The build cannot run the model at all (as with a mode its torch lacks): unsupported.
        raise ExportFailure(
            "unsupported", f"{model_id} needs the Python package '{missing}', which this torch build's "
                           f"python ({sys.executable}) does not have") from None


def _make_config(transformers: Any, config_cls: Any, params: Mapping[str, Any], log: Any) -> Any:
    kwargs = dict(params)
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


def _load_state_dict(model: torch.nn.Module, path: str, model_id: str) -> None:
    state = torch.load(path, map_location="cpu")
    if isinstance(state, dict):
        for key in ("state_dict", "model"):
            if isinstance(state.get(key), dict):
                state = state[key]
                break
    if not isinstance(state, dict):
        raise ExportFailure("error", f"{path} holds no state_dict for {model_id}")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        first = str(e).strip().splitlines()[0:3]
        raise ExportFailure("error", f"weights {path} do not fit {model_id}: {' '.join(first)}") from None


def _build_torchvision(spec: ModelSpec, weights: Optional[str]) -> torch.nn.Module:
    try:
        import torchvision  # only torchvision models need it
    except ImportError:
        raise ExportFailure("unsupported", f"{spec.id} needs the Python package 'torchvision', which this "
                                           f"torch build's python ({sys.executable}) does not have") from None
    constructor = getattr(torchvision.models, spec.constructor, None)
    if constructor is None:
        raise ExportFailure("error", f"torchvision {torchvision.__version__} has no models.{spec.constructor}")
    try:
        model = constructor(weights=None)
    except TypeError:  # torchvision < 0.13
        model = constructor(pretrained=False)
    if weights:
        _load_state_dict(model, weights, spec.id)
    return model


def _build_transformers(spec: ModelSpec, weights: Optional[str], log: Any) -> torch.nn.Module:
    transformers = _import_transformers(spec.id)
    model_cls = getattr(transformers, spec.model_class, None)
    config_cls = getattr(transformers, spec.config_class, None)
    if model_cls is None or config_cls is None:
        raise ExportFailure("unsupported", f"transformers {transformers.__version__} has no "
                                           f"{spec.model_class if model_cls is None else spec.config_class}")
    if weights and os.path.isdir(weights):
        # transformers 5 loads a checkpoint in the dtype it was saved in (dtype="auto" by default),
        # often bfloat16; every path here starts from float32 (the job's dtype is cast later).
        return model_cls.from_pretrained(weights).float()
    model = model_cls(_make_config(transformers, config_cls, spec.config or {}, log))
    if weights:
        _load_state_dict(model, weights, spec.id)
    return model


def build_model(spec: ModelSpec, device: str = "cpu", seed: int = 0, weights: Optional[str] = None,
                log: Any = None) -> torch.nn.Module:
    """The model in eval mode on `device`, with its forward taking make_inputs() positionally.

    Random init after torch.manual_seed(seed), or `weights`: a state_dict file (.pt/.bin), or for
    transformers models a directory holding a Hugging Face checkpoint.
    """
    log = log or (lambda message: print(message, file=sys.stderr))
    if weights and not os.path.exists(weights):
        raise ExportFailure("error", f"weights {weights} do not exist")
    torch.manual_seed(seed)
    if spec.builder == "torchvision":
        model = _build_torchvision(spec, weights)
    else:
        wrapper = _WRAPPERS.get(len(spec.inputs))
        if wrapper is None:
            raise ExportFailure("error", f"{spec.id}: {len(spec.inputs)} inputs; the wrapper takes 1 to 3")
        model = wrapper(_build_transformers(spec, weights, log), [i.name for i in spec.inputs], spec.outputs)
    return model.eval().to(device)


def flatten_tensors(value: Any) -> List[torch.Tensor]:
    """The tensors in a (possibly nested) output, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten_tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten_tensors(item)]
    return []
