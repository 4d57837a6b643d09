"""Model definitions (docs/models.md) as the Python side reads them: the shipped catalog's entries,
and the definition the coordinator puts into each job (`model_definition`).

    spec = parse_definition(json.loads(text), "model_definition")   # a ModelSpec
    catalog = load_catalog(path)                 # {id: ModelSpec}, the same parser per entry
    spec = find_model(catalog, "microsoft/resnet-50")

The rules are those of common/model_definition.cpp (the coordinator checks a definition when it
is registered, the C++ catalog reader every shipped entry), with the same field names and
messages, so a definition that reaches a job is already valid: checking it again here is what
keeps a hand-written job or catalog from failing later in a less clear way. One key is the
agent's: `local_path`, the absolute file or directory on this host that the definition's
`artifact` (fetched and checked against its digest by the agent) or `path` stands for. This
module never resolves a digest itself.

Pure Python: no torch (the runner's job codec, benchfleet_job.py, parses definitions with it).
Errors are DefinitionError, an ExportFailure("error", "<field>: <why>") naming the field.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

SOURCES: Tuple[str, ...] = ("huggingface", "torchvision", "timm", "python", "exported")
FORMATS: Tuple[str, ...] = ("torchscript", "torchscript-frozen", "aotinductor")
TENSOR_DTYPES: Tuple[str, ...] = ("float32", "float16", "bfloat16", "int64", "int32", "bool")
MAX_INPUTS = 3  # the exported forward takes them positionally (benchfleet_models' wrappers)
MAX_ID_BYTES = 128

_COMMON_KEYS = ("id", "source", "task", "name", "inputs", "formats", "allow_pickle", "local_path")
# The keys each source takes beyond the common ones.
_SOURCE_KEYS: Dict[str, Tuple[str, ...]] = {
    "huggingface": ("architecture", "hub_id", "config", "config_class", "path", "artifact", "outputs"),
    "torchvision": ("architecture", "path", "artifact", "outputs"),
    "timm": ("architecture", "path", "artifact", "outputs"),
    "python": ("factory", "path", "artifact"),
    "exported": ("path", "artifact"),
}
_ALL_KEYS = ("id", "source", "task", "name", "architecture", "hub_id", "config", "config_class", "path", "artifact",
             "factory", "inputs", "outputs", "formats", "allow_pickle", "local_path")
_INPUT_KEYS = ("name", "shape", "dtype", "range", "per_image_rows")
# The library each source builds its models with (reported in the runner's fingerprint).
_BUILDERS = {"huggingface": "transformers", "torchvision": "torchvision", "timm": "timm", "python": "torch",
             "exported": "torch"}
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_FACTORY = re.compile(rf"{_IDENTIFIER}(\.{_IDENTIFIER})*:{_IDENTIFIER}")
# Code points that draw nothing although Unicode does not class them as controls or format
# characters (common/display_text.cpp lists the same): they could pass for a space or hide text.
_INVISIBLE = {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0, *range(0x180B, 0x1810),
              *range(0xFE00, 0xFE10)}


class ExportFailure(Exception):
    """A failure with a message for the user. status: "error" or "unsupported"."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class DefinitionError(ExportFailure):
    """An invalid definition: `field` (e.g. "model_definition.inputs[0].shape") and why."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__("error", f"{field}: {detail}")
        self.field = field
        self.detail = detail


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
    """A model definition with its defaults filled in (docs/models.md has every key).

    inputs and outputs are what the definition says; where it leaves them to the model (a
    checkpoint's preprocessor, an exported program's signature, a factory), the model builder
    (benchfleet_models.load_model) fills them in on the spec it returns."""

    id: str
    source: str
    task: str = ""
    name: str = ""
    architecture: str = ""
    hub_id: str = ""
    config: Optional[Mapping[str, Any]] = None  # huggingface: random weights from these
    config_class: str = ""
    path: str = ""
    artifact: str = ""
    local_path: str = ""
    factory: str = ""
    inputs: Tuple[InputSpec, ...] = ()
    outputs: Tuple[str, ...] = ()
    formats: Tuple[str, ...] = ()
    allow_pickle: bool = False

    @property
    def located(self) -> str:
        """The local file or directory the definition's path or artifact stands for ("" when it
        names none). An artifact the agent did not fetch (no local_path) is an error."""
        if self.local_path:
            return self.local_path
        if self.artifact:
            raise ExportFailure("error", f"{self.id}: artifact {self.artifact} has no local copy here (the agent "
                                         "fetches it and passes it as the definition's local_path)")
        return self.path

    @property
    def builder(self) -> str:
        """The Python package that builds this model."""
        return _BUILDERS[self.source]


def default_formats(source: str) -> Tuple[str, ...]:
    """The libtorch runtime's formats of a definition that lists none."""
    if source == "python":
        return ()  # the libtorch runtime needs an exported program
    if source == "exported":
        return ("aotinductor",)
    return FORMATS


def display_problem(text: str, max_bytes: int) -> Optional[str]:
    """Why `text` breaks the display-text rule of names (common/display_text.h): empty, blank,
    too long, or holding a control, invisible or bidirectional character."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size == 0 or size > max_bytes:
        return f"must be 1 to {max_bytes} bytes long"
    for i, c in enumerate(text):
        if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") or ord(c) in _INVISIBLE \
                or 0xE0000 <= ord(c) <= 0xE0FFF:
            return f"must not contain control, invisible or bidirectional characters (U+{ord(c):04X} at character {i})"
    if not text.strip():
        return "must not be blank"
    return None


def _id_problem(model_id: str) -> Optional[str]:
    if not model_id[0].isascii() or not model_id[0].isalnum():
        return "must start with a letter or a digit"
    if not re.fullmatch(r"[A-Za-z0-9._/-]+", model_id):
        return "may hold only letters, digits and . _ - / (an id names a model in URLs, files and series)"
    if ".." in model_id or "//" in model_id or model_id.endswith("/"):
        return "must not hold \"..\" or \"//\" or end with '/'"
    return None


class _Definition:
    """Reads one definition's members, each error naming `<where>.<key>`."""

    def __init__(self, raw: Mapping[str, Any], where: str) -> None:
        self.raw = raw
        self.where = where

    def field(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, detail: str) -> DefinitionError:
        return DefinitionError(self.field(key), detail)

    def text(self, key: str, max_bytes: int = 256, default: str = "") -> str:
        if key not in self.raw:
            return default
        value = self.raw[key]
        if not isinstance(value, str):
            raise self.fail(key, "must be a string")
        why = display_problem(value, max_bytes)
        if why:
            raise self.fail(key, why)
        return value

    def names(self, key: str, allowed: Tuple[str, ...] = ()) -> Optional[Tuple[str, ...]]:
        if key not in self.raw:
            return None
        value = self.raw[key]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(key, "must be a list of strings")
        for item in value:
            why = display_problem(item, 128)
            if why:
                raise self.fail(key, why)
            if allowed and item not in allowed:
                raise self.fail(key, f"unknown format '{item}' ({', '.join(allowed)})")
        return tuple(value)

    def absolute_path(self, key: str) -> str:
        value = self.text(key, 4096)
        if not value.startswith("/"):
            raise self.fail(key, "must be absolute (a path on the agents)")
        if ".." in value.split("/"):
            raise self.fail(key, "must not hold \"..\"")
        return value


def _parse_input(raw: Any, field: str) -> InputSpec:
    if not isinstance(raw, dict):
        raise DefinitionError(field, "must be an object {name, shape, dtype}")
    for key in raw:
        if key not in _INPUT_KEYS:
            raise DefinitionError(f"{field}.{key}", f"unknown key (allowed: {', '.join(_INPUT_KEYS)})")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise DefinitionError(f"{field}.name", "must be a non-empty string")
    why = display_problem(name, 128)
    if why:
        raise DefinitionError(f"{field}.name", why)
    shape = raw.get("shape")
    if not (isinstance(shape, list) and 0 < len(shape) <= 8
            and all(isinstance(d, int) and not isinstance(d, bool) and 0 < d <= 1 << 20 for d in shape)):
        raise DefinitionError(f"{field}.shape", "must be 1 to 8 positive integers (per image, without the batch)")
    dtype = raw.get("dtype", "float32")
    if dtype not in TENSOR_DTYPES:
        raise DefinitionError(f"{field}.dtype", f"must be one of {', '.join(TENSOR_DTYPES)}")
    value_range = raw.get("range")
    if value_range is not None:
        if not (isinstance(value_range, list) and len(value_range) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value_range)
                and value_range[0] < value_range[1]):
            raise DefinitionError(f"{field}.range", "must be [low, high) with low < high")
        value_range = (value_range[0], value_range[1])
    rows = raw.get("per_image_rows", 0)
    if "per_image_rows" in raw and (isinstance(rows, bool) or rows != shape[0]):
        raise DefinitionError(f"{field}.per_image_rows", "must equal shape[0]")
    return InputSpec(name, tuple(shape), dtype, value_range, rows)


def parse_definition(obj: Any, where: str) -> ModelSpec:
    """The ModelSpec `obj` (a decoded JSON or YAML mapping) defines, defaults filled in.

    `where` prefixes every error's field ("model_definition" -> "model_definition.source").
    Raises DefinitionError for an unknown key, a key the source does not take, a missing or
    malformed member, or a source's required keys missing (docs/models.md)."""
    if not isinstance(obj, dict):
        raise DefinitionError(where, "must be an object (a model definition)")
    d = _Definition(obj, where)
    for key in obj:
        if key not in _ALL_KEYS:
            raise d.fail(key, f"unknown key (docs/models.md lists them: {', '.join(_ALL_KEYS[:-1])}; "
                              "and local_path, which the agent adds)")
    for key in ("id", "source"):
        if key not in obj:
            raise d.fail(key, "is required")
    model_id = d.text("id", MAX_ID_BYTES)
    why = _id_problem(model_id)
    if why:
        raise d.fail("id", why)
    source = d.text("source")
    if source not in SOURCES:
        raise d.fail("source", f"unknown source '{source}' (huggingface, torchvision, timm, python or exported)")
    for key in obj:
        if key not in _COMMON_KEYS and key not in _SOURCE_KEYS[source]:
            raise d.fail(key, f"a {source} model takes no '{key}'")

    path = d.absolute_path("path") if "path" in obj else ""
    artifact = obj.get("artifact", "")
    if "artifact" in obj and not (isinstance(artifact, str) and _DIGEST.fullmatch(artifact)):
        raise d.fail("artifact", "must be \"sha256:\" and 64 lower-case hex digits (POST /api/v1/artifacts answers it)")
    if path and artifact:
        raise d.fail("artifact", "give either path or artifact, not both")
    config = obj.get("config")
    if "config" in obj and not isinstance(config, dict):
        raise d.fail("config", "must be an object (the hyperparameters of a config.json)")
    allow_pickle = obj.get("allow_pickle", False)
    if not isinstance(allow_pickle, bool):
        raise d.fail("allow_pickle", "must be true or false")
    inputs = obj.get("inputs")
    if "inputs" in obj:
        if not isinstance(inputs, list) or not inputs:
            raise d.fail("inputs", "must be a non-empty list of {name, shape, dtype}")
        if len(inputs) > MAX_INPUTS:
            raise d.fail("inputs", f"at most {MAX_INPUTS} inputs (the exported forward takes them positionally)")
    formats = d.names("formats", FORMATS)
    spec = ModelSpec(
        id=model_id,
        source=source,
        task=d.text("task", default="Image Classification" if source in ("torchvision", "timm") else "Model"),
        name=d.text("name", default=model_id.rsplit("/", 1)[-1]),
        architecture=d.text("architecture"),
        hub_id=d.text("hub_id"),
        config=config,
        config_class=d.text("config_class"),
        path=path,
        artifact=artifact,
        local_path=d.absolute_path("local_path") if "local_path" in obj else "",
        factory=d.text("factory"),
        inputs=tuple(_parse_input(x, d.field(f"inputs[{i}]")) for i, x in enumerate(inputs or [])),
        outputs=d.names("outputs") or (),
        formats=default_formats(source) if formats is None else formats,
        allow_pickle=allow_pickle,
    )

    located = bool(path or artifact)
    if source == "huggingface":
        if [bool(spec.hub_id), located, config is not None].count(True) != 1:
            raise d.fail("source", "a huggingface model needs exactly one of hub_id, path, artifact and config")
        if config is not None and not spec.architecture:
            raise d.fail("architecture", "is required with config (the transformers model class)")
        if spec.config_class and config is None:
            raise d.fail("config_class", "goes with config only (a checkpoint's config.json names its class)")
    elif source in ("torchvision", "timm") and not spec.architecture:
        raise d.fail("architecture", "is required (a builder of torchvision.models.list_models())"
                                     if source == "torchvision" else "is required (a name of timm.list_models())")
    elif source == "python" and not _FACTORY.fullmatch(spec.factory):
        raise d.fail("factory", "is required (\"package.module:function\", Python identifiers)" if not spec.factory
                                else "must be \"package.module:function\" (Python identifiers)")
    elif source == "exported" and not located:
        raise d.fail("source", "an exported model needs path or artifact (a torch.export .pt2 archive)")
    return spec


def load_catalog(path: str) -> Dict[str, ModelSpec]:
    """Reads the catalog YAML, each entry a definition. Raises ExportFailure when PyYAML is
    missing or the file is bad, naming the entry and field (e.g. "models.yaml: models[3].source")."""
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
    if not isinstance(models, list) or not models:
        raise ExportFailure("error", f"catalog {path}: needs a non-empty models list")
    catalog: Dict[str, ModelSpec] = {}
    for i, raw in enumerate(models):
        try:
            spec = parse_definition(raw, f"models[{i}]")
        except DefinitionError as e:
            raise ExportFailure("error", f"catalog {path}: {e.message}") from None
        if spec.id in catalog:
            raise ExportFailure("error", f"catalog {path}: models[{i}].id: '{spec.id}' is listed twice")
        catalog[spec.id] = spec
    return catalog


def find_model(catalog: Mapping[str, ModelSpec], model_id: str) -> ModelSpec:
    spec = catalog.get(model_id)
    if spec is None:
        raise ExportFailure("error", f"unknown model id '{model_id}': not in the catalog "
                                     f"(known: {', '.join(sorted(catalog))})")
    return spec
