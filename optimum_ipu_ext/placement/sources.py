"""The model a placement is for: a local folder, a Hub repository, a transformers `PretrainedConfig` or the dict of
a `config.json`; its architecture; and the shapes of its parameters, from its checkpoint's safetensors headers or,
without one (`config.json` alone, a `pytorch_model.bin`), from the formulas of its architecture's row.

A local folder, a config or a dict is placed with neither torch nor transformers; the Hub is reached through
`hub_model`, imported on first use (its client, shared with `IPUConfig.from_pretrained`, imports transformers, which
leaves torch alone).
"""

import os
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

from ..errors import ArchitectureError, InvalidSettingError, ModelFileError, PlacementError, as_json
from ..settings.rules import check_rules
from ..settings.sources import is_local
from .architectures import ARCHITECTURES
from .checkpoint import TensorHeader, parse_config, read_folder
from .costs import block_costs, resolve_shape
from .hardware import GC200, IPU_TYPES, RESERVE, IPUType
from .models.rules import Architecture, ModelConfig
from .parameters import Parameters, from_checkpoint, from_config
from .placement import Measure, Placement, place

CONFIG_FILE = "config.json"


class ModelSource(NamedTuple):
    """A model as the placement reads it: its name, its `config.json` and a function giving its checkpoint's
    tensors (None: it has no safetensors checkpoint), called once the config's layers are known to fit."""

    name: str
    config: Dict[str, Any]
    tensors: Callable[[], Optional[Dict[str, TensorHeader]]]


def _none() -> None:
    return None


def read_model(model: Any, revision: Optional[str] = None, token: Optional[str] = None) -> ModelSource:
    """The config and tensors of `model`: a folder (or its `config.json`), a Hub repository id, a
    `PretrainedConfig` or a dict.

    Raises:
        ModelFileError: naming the file, where `config.json` is missing or not a JSON object, or a header is
            truncated or malformed.
        HubError: where the Hub cannot give the repository's files (see `hub_model`).
    """
    if isinstance(model, Mapping):
        config = dict(model)
        return ModelSource(str(config.get("_name_or_path") or "the model config"), config, _none)
    if hasattr(model, "to_dict") and hasattr(model, "model_type"):  # a transformers PretrainedConfig
        config = model.to_dict()
        return ModelSource(str(getattr(model, "name_or_path", "") or config.get("model_type")), config, _none)
    if not isinstance(model, str):
        raise TypeError("model must be a Hub model id, a folder, a PretrainedConfig or a dict, not "
                        f"{type(model).__name__}")
    if os.path.isfile(model):
        return ModelSource(model, read_config(model), _none)
    if is_local(model):
        if revision is not None:
            raise PlacementError(model, "a local folder has no revisions; --revision applies to Hub repositories")
        return ModelSource(model, read_config(os.path.join(model, CONFIG_FILE)), lambda: read_folder(model))
    from .hub_model import hub_model

    found = hub_model(model, revision=revision, token=token)
    return ModelSource(model, dict(found.config), lambda: found.tensors)


def read_config(path: str) -> Dict[str, Any]:
    """The JSON object of a model's `config.json`."""
    try:
        with open(path, "rb") as reader:
            data = reader.read()
    except FileNotFoundError:
        raise ModelFileError(path, "no such file: a model folder holds its config.json") from None
    except OSError as error:
        raise ModelFileError(path, error.strerror or str(error)) from error
    return parse_config(data, path)


def choices(model_type: Any) -> str:
    """The architectures of `model_type` that have a pipelined version, and how to give one; for a model type with
    none, the model types that have one."""
    own = [name for name, architecture in ARCHITECTURES.items() if model_type in architecture.model_types]
    if own:
        return f"give one of model type {as_json(model_type)}'s with --architecture (architecture=): {', '.join(own)}"
    types = sorted({kind for architecture in ARCHITECTURES.values() for kind in architecture.model_types})
    return (f"model type {as_json(model_type)} has no pipelined architecture; these have: {', '.join(types)} "
            "(ipu-config place --list-architectures)")


def architecture_of(source: ModelSource, name: Optional[str] = None) -> Architecture:
    """The row of the architecture `name`, else of the one the model's `config.json` names.

    Raises:
        ArchitectureError: for an architecture with no pipelined version, a config naming several or none, or one
            of another model type.
    """
    model_type = source.config.get("model_type")
    if name is None:
        named = source.config.get("architectures") or []
        if len(named) != 1:
            listed = f"{len(named)} architectures ({', '.join(named)})" if named else "no architecture"
            raise ArchitectureError(source.name, f"its config.json names {listed}; {choices(model_type)}")
        name = named[0]
    if name not in ARCHITECTURES:
        raise ArchitectureError(source.name, f"{name} has no pipelined version in optimum-graphcore 0.7.1; "
                                f"{choices(model_type)}")
    architecture = ARCHITECTURES[name]
    if model_type not in architecture.model_types:
        raise ArchitectureError(source.name, f"{name} takes a config of model type "
                                f"{as_json(architecture.model_types[0])}, and this one is {as_json(model_type)}")
    return architecture


def parameter_shapes(source: ModelSource):
    """The function `place()` calls for the parameters: from the checkpoint's headers, else from the config."""

    def shapes(architecture: Architecture, config: ModelConfig) -> Parameters:
        tensors = source.tensors()
        if tensors is None:
            return from_config(architecture, config)
        return from_checkpoint(source.name, architecture, config,
                               {name: tensor.shape for name, tensor in tensors.items()})

    return shapes


# (micro_batch_size, sequence_length, decoder_sequence_length), each None where not given
ShapeRequest = Tuple[Optional[int], Optional[int], Optional[int]]


def measure(model: str, request: ShapeRequest, fp32: bool) -> Optional[Measure]:
    """The function `place()` calls for the micro-batch and the costs of each step; None where no part of the
    micro-batch is given (the activations are not counted)."""
    if request == (None, None, None):
        return None
    micro_batch_size, sequence_length, decoder_sequence_length = request

    def measured(architecture: Architecture, config: ModelConfig):
        shape = resolve_shape(model, architecture.name, config, 1 if micro_batch_size is None else micro_batch_size,
                              sequence_length, decoder_sequence_length)
        return shape, block_costs(architecture, config, shape, fp32)

    return measured


def place_model(settings: Dict[str, Any], model: Any, architecture: Optional[str], for_inference: bool, fp32: bool,
                revision: Optional[str], token: Optional[str],
                request: ShapeRequest = (None, None, None), ipu: str = GC200.name,
                reserve: float = RESERVE) -> Placement:
    """`IPUConfig.placement()`: the placement of `model` on the IPUs of a config whose settings are `settings`,
    its activations counted for the micro-batch `request` gives, a step timed on IPUs of type `ipu`, `reserve` of
    each IPU's memory kept for what is not counted.

    Raises:
        InvalidSettingError: for an `ipu` or a `reserve` outside what they allow.
    """
    ipu_type = ipu_type_of(ipu)
    check_reserve(reserve)
    check_rules(settings)
    source = read_model(model, revision, token)
    row = architecture_of(source, architecture)
    return place(source.name, row, source.config, settings, parameter_shapes(source), for_inference, fp32,
                 measure(source.name, request, fp32), ipu_type, reserve)


def ipu_type_of(name: Any) -> IPUType:
    """The IPU generation named `name`."""
    if name not in IPU_TYPES:
        raise InvalidSettingError("ipu", name, "allowed values are " + ", ".join(f'"{name}"' for name in IPU_TYPES))
    return IPU_TYPES[name]


def check_reserve(reserve: Any) -> None:
    if isinstance(reserve, bool) or not isinstance(reserve, (int, float)) or not 0 <= reserve < 1:
        raise InvalidSettingError("reserve", reserve, "allowed values are shares of an IPU's memory, from 0 to less "
                                  "than 1")

