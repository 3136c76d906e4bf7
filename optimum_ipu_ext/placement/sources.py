"""The model a placement is for: a local folder, a Hub repository, a transformers `PretrainedConfig` or the dict of
a `config.json`; its architecture; and the shapes of its parameters, from its checkpoint's safetensors headers or,
without a checkpoint, from the architecture transformers builds on the meta device.

A local folder is read with neither torch nor transformers; the Hub is reached through `hub_model`, imported on
first use.
"""

import os
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

from ..core import check_rules, looks_like_path
from ..errors import ArchitectureError, ModelFileError, PlacementError, as_json
from .architectures import ARCHITECTURES
from .checkpoint import TensorHeader, parse_config, read_folder
from .costs import block_costs, resolve_shape
from .parameters import Parameters, from_checkpoint, from_model
from .placement import Measure, Placement, place
from .rules import Architecture, ModelConfig

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
        raise TypeError(f"model must be a Hub model id, a folder, a PretrainedConfig or a dict, not {type(model).__name__}")
    if os.path.isfile(model):
        return ModelSource(model, read_config(model), _none)
    if os.path.exists(model) or looks_like_path(model):
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


def supported() -> str:
    return ", ".join(ARCHITECTURES)


def architecture_of(source: ModelSource, name: Optional[str] = None) -> Architecture:
    """The row of the architecture `name`, else of the one the model's `config.json` names.

    Raises:
        ArchitectureError: for an architecture with no pipelined version, a config naming several or none, or one
            of another model type.
    """
    if name is None:
        named = source.config.get("architectures") or []
        if len(named) != 1:
            listed = ", ".join(named) if named else "none"
            raise ArchitectureError(source.name, f"its config.json names {len(named)} architectures ({listed}); "
                                    f"give the one to place (architecture=, --architecture): one of {supported()}")
        name = named[0]
    if name not in ARCHITECTURES:
        raise ArchitectureError(source.name, f"{name} has no pipelined version in optimum-graphcore 0.7.1; give one "
                                f"of {supported()} (architecture=, --architecture)")
    architecture = ARCHITECTURES[name]
    model_type = source.config.get("model_type")
    if model_type not in architecture.model_types:
        raise ArchitectureError(source.name, f"{name} takes a config of model type "
                                f"{as_json(architecture.model_types[0])}, and this one is {as_json(model_type)}")
    return architecture


def parameter_shapes(source: ModelSource):
    """The function `place()` calls for the parameters: from the checkpoint's headers, else built on the meta
    device where torch and transformers are installed."""

    def shapes(architecture: Architecture, config: ModelConfig) -> Parameters:
        tensors = source.tensors()
        if tensors is not None:
            return from_checkpoint(source.name, architecture, config,
                                   {name: tensor.shape for name, tensor in tensors.items()})
        try:
            from .meta import named_shapes

            named = named_shapes(architecture.name, source.config)
        except ImportError as error:
            raise PlacementError(
                source.name, f"its sizes need the checkpoint: it has no safetensors checkpoint, and {architecture.name} "
                f"cannot be built here to count its parameters ({error})") from error
        return from_model(architecture, config, named)

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
                request: ShapeRequest = (None, None, None)) -> Placement:
    """`IPUConfig.placement()`: the placement of `model` on the IPUs of a config whose settings are `settings`,
    its activations counted for the micro-batch `request` gives."""
    check_rules(settings)
    source = read_model(model, revision, token)
    row = architecture_of(source, architecture)
    return place(source.name, row, source.config, settings, parameter_shapes(source), for_inference, fp32,
                 measure(source.name, request, fp32))

