"""The parameters of an architecture known by its `config.json` alone: the model transformers builds, on PyTorch's
meta device (shapes without storage), so no weight is allocated or initialised. Imports torch and transformers."""

import contextlib
import importlib
from typing import Any, Dict, Iterator, Mapping, Tuple

# the classes optimum-graphcore defines itself, importable only where its package is (with the Poplar SDK)
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


def model_class(name: str) -> Any:
    """The transformers class `name` (or optimum-graphcore's own, for GroupBERT).

    Raises:
        ImportError: where the class cannot be imported here.
    """
    module = next((module for family, module in OWN_CLASSES.items() if name.startswith(family)), "transformers")
    found = getattr(importlib.import_module(module), name, None)
    if found is None:
        raise ImportError(f"{module} has no class {name}")
    return found


def named_shapes(name: str, values: Mapping[str, Any]) -> Dict[str, Tuple[int, ...]]:
    """`{name: shape}` of the `named_parameters()` of the model `name` built from the config `values`.

    Raises:
        ImportError: without torch or transformers, or the class.
    """
    cls = model_class(name)
    config = cls.config_class.from_dict({key: value for key, value in values.items() if key != "architectures"})
    with empty_weights():
        model = cls(config)
    return {parameter_name: tuple(parameter.shape) for parameter_name, parameter in model.named_parameters()}
