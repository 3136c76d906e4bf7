"""The oracle of the parameter formulas: the model transformers builds, on PyTorch's meta device (shapes without
storage, so a full-size model costs nothing), and its `named_parameters()`.

GroupBERT's classes are optimum-graphcore's own: they import only on the IPU-host stack, with poptorch stood in.
"""

import contextlib
import importlib
from typing import Any, Dict, Iterator, Mapping, Tuple
from unittest import mock

from .doubles import installed

# the classes optimum-graphcore defines itself, importable only where its package is stood in
OWN_CLASSES = {"GroupBert": "optimum.graphcore.models.groupbert"}


@contextlib.contextmanager
def empty_weights() -> Iterator[None]:
    """Every parameter a module registers is moved to the meta device as it is registered (a tied one, already
    there, is kept as it is, so the tie holds)."""
    from torch import nn

    register = nn.Module.register_parameter

    def register_on_meta(module: nn.Module, name: str, parameter: Any) -> None:
        register(module, name, parameter)
        if parameter is not None and parameter.device.type != "meta":
            module._parameters[name] = type(parameter)(parameter.to("meta"), requires_grad=parameter.requires_grad)

    nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        nn.Module.register_parameter = register


def skipped_initialisation(cls: Any) -> Any:
    """GroupBERT's base model draws its initial weights on the CPU, whatever the device: a minute for a full-size one.
    It draws none here (the others initialise on the meta device, at no cost)."""
    base = getattr(importlib.import_module(cls.__module__), "GroupBertModel", None)
    if base is None:
        return contextlib.nullcontext()
    return mock.patch.object(base, "_init_weights", lambda self, module: None)


def model_class(name: str) -> Any:
    """The transformers class `name` (or optimum-graphcore's own, for GroupBERT); None where it cannot be imported
    here."""
    own = next((module for family, module in OWN_CLASSES.items() if name.startswith(family)), None)
    if own is None:
        return getattr(importlib.import_module("transformers"), name, None)
    try:
        with installed():
            return getattr(importlib.import_module(own), name)
    except ImportError:
        return None


def model_config(name: str, values: Mapping[str, Any]) -> Any:
    """The config of the class `name` built from `values`, as `from_pretrained` builds it from a config.json."""
    cls = model_class(name)
    return cls.config_class.from_dict({key: value for key, value in values.items() if key != "architectures"})


def named_shapes(name: str, values: Mapping[str, Any]) -> Dict[str, Tuple[int, ...]]:
    """`{name: shape}` of the `named_parameters()` of the model `name` built from the config `values`."""
    cls = model_class(name)
    with empty_weights(), skipped_initialisation(cls):
        model = cls(model_config(name, values))
    return {parameter_name: tuple(parameter.shape) for parameter_name, parameter in model.named_parameters()}


def built_on_the_meta_device(source: Any) -> Any:
    """`parameter_shapes(source)` as the placement had it before the formulas: the parameters of the model
    transformers builds on the meta device (the benchmark's baseline, benchmarks/placement.py)."""
    from optimum_ipu_ext.placement.estimate.parameters import Parameters, loaded_names

    def shapes(architecture: Any, config: Any) -> Parameters:
        named = named_shapes(architecture.name, source.config)
        ties = architecture.tied(config)
        renamed = loaded_names(architecture, list(named))
        aliases: Dict[str, Any] = {}
        for alias, target in ties.items():
            aliases.setdefault(target, []).append(alias)
        return Parameters({ties.get(renamed[name], renamed[name]): shape for name, shape in named.items()}, aliases)

    return shapes
