"""The model a placement is for: a local folder, a Hub repository, a transformers `PretrainedConfig` or the dict of
a `config.json`, read as its `config.json` and a way to its checkpoint's safetensors headers.

A local folder, a config or a dict is read with neither torch nor transformers; the Hub is reached through
`hub_model`, imported on first use (its client, shared with `IPUConfig.from_pretrained`, imports transformers, which
leaves torch alone).
"""

import os
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional

from ...errors import ModelFileError, PlacementError
from ...settings.sources import is_local
from .checkpoint import TensorHeader, parse_config, read_folder

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
