"""`Placement`: where optimum-graphcore 0.7.1 puts a model's blocks, layers and parameters on the IPUs of a config,
and the memory each IPU needs; `place()` works it out from the model's config and its parameters' shapes."""

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import PlacementError
from . import balance
from .architectures import ARCHITECTURES
from .layout import Layout, first_uses, fixed_layer_groups, generation_split, lay_out
from .memory import IPU_MEMORY_BYTES, MemoryModel, memory_model
from .parameters import Parameters, parallelized
from .rules import Architecture, ModelConfig

# `{parameter name: shape}`, or None where the model has no checkpoint to read them from
Shapes = Dict[str, Tuple[int, ...]]


@dataclass(frozen=True)
class IPUPlacement:
    """One IPU of the pipeline: its blocks (named as `poptorch.BeginBlock` is given them; None: a block upstream
    leaves unnamed), the indices of its layers in the layer list, its parameters and their bytes."""

    ipu: int
    blocks: Tuple[Optional[str], ...]
    layers: Tuple[int, ...]
    parameters: int
    on_chip_bytes: int
    streaming_bytes: int

    def to_dict(self) -> Dict[str, Any]:
        return {"ipu": self.ipu, "blocks": list(self.blocks), "layers": list(self.layers),
                "parameters": self.parameters, "on_chip_bytes": self.on_chip_bytes,
                "streaming_bytes": self.streaming_bytes}


@dataclass(frozen=True)
class _Inputs:
    """What a placement was worked out from, to work out others (`balanced()`)."""

    architecture: Architecture
    config: ModelConfig
    settings: Mapping[str, Any]
    for_inference: bool
    parameters: Parameters
    memory: MemoryModel
    frozen: frozenset


@dataclass(frozen=True)
class Placement:
    """Where optimum-graphcore 0.7.1's `parallelize()` puts a model on the IPUs of a config, and the memory each
    IPU needs for its parameters (a lower bound: see `assumptions`). `str()` is a table to read; `to_dict()` and
    `to_json_string()` the same as data."""

    model: str
    architecture: str
    build: str
    layers_per_ipu: Tuple[int, ...]
    ipu_memory_bytes: int
    ipus: Tuple[IPUPlacement, ...]
    assumptions: str
    _inputs: _Inputs = field(repr=False, compare=False)

    @property
    def fits(self) -> bool:
        """Whether every IPU's on-chip bytes are within its memory."""
        return all(ipu.on_chip_bytes <= self.ipu_memory_bytes for ipu in self.ipus)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "model": self.model,
            "architecture": self.architecture,
            "build": self.build,
            "layers_per_ipu": list(self.layers_per_ipu),
            "ipu_memory_bytes": self.ipu_memory_bytes,
            "fits": self.fits,
            "ipus": [ipu.to_dict() for ipu in self.ipus],
        }

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def __str__(self) -> str:
        from .text import render

        return render(self)

    def parameter_ipus(self) -> Dict[str, Tuple[int, ...]]:
        """`{parameter: the IPUs it is on}`, named as `named_parameters()` names it: one IPU, where it is first used;
        in a generation build, where each executor (encoder, decoder) using it first uses it."""
        inputs = self._inputs
        layout = lay_out(self.model, inputs.architecture, inputs.config, inputs.settings, inputs.for_inference,
                         self.layers_per_ipu)
        parameters = inputs.parameters
        return {name: tuple(claim.ipu for claim in claims)
                for name, claims in first_uses(layout, list(parameters.shapes), parameters.aliases).items()}

    def with_layers_per_ipu(self, layers_per_ipu: Sequence[int]) -> "Placement":
        """The placement of the same model and config with another `layers_per_ipu` (of the build's mode)."""
        inputs = self._inputs
        return _placement(self.model, inputs, layers_per_ipu)

    def balanced(self) -> "Placement":
        """The placement with the `layers_per_ipu` (same number of IPUs) that makes the largest on-chip figure
        smallest, ties to the split closest to this one's, among the splits upstream accepts.

        Raises:
            PlacementError: for an architecture whose `parallelize()` places its layers itself (LXMERT).
        """
        inputs = self._inputs
        if fixed_layer_groups(inputs.architecture):
            raise PlacementError(self.model, f"{inputs.architecture.name}'s parallelize() places its layers on IPUs of "
                                 "its own choosing, whatever `layers_per_ipu` says: there is no split to balance")
        if len(self.ipus) == 1:
            return self
        found = balance.chosen([_best_for(self, cut) for cut in _cuts(self)], self.layers_per_ipu)
        return self.with_layers_per_ipu(found[0])


def place(model: str, architecture: Architecture, values: Mapping[str, Any], settings: Mapping[str, Any],
          shapes: Callable[[Architecture, ModelConfig], Parameters], for_inference: bool = False,
          fp32: bool = False) -> Placement:
    """The placement of `architecture`, configured by `values` (its `config.json`), on the IPUs of a config whose
    `settings` are its `vars()`. `shapes(architecture, config)` gives its parameters; it is called only once the
    config's layers are found to fit the model, so a wrong `layers_per_ipu` is reported before any weight header
    is read.

    Raises:
        PlacementError: where optimum-graphcore refuses the config for this model.
    """
    config = architecture.config(values)
    lay_out(model, architecture, config, settings, for_inference)
    parameters = parallelized(model, architecture, shapes(architecture, config), settings)
    frozen = frozenset(name for name in parameters.shapes if _frozen(architecture, config, name))
    inputs = _Inputs(architecture, config, settings, for_inference, parameters,
                     memory_model(dict(settings), for_inference, fp32), frozen)
    return _placement(model, inputs, None)


def _frozen(architecture: Architecture, config: ModelConfig, name: str) -> bool:
    return any((name == path or name.startswith(path + ".")) and config.holds(condition)
               for path, condition in architecture.frozen.items())


def _placement(model: str, inputs: _Inputs, layers_per_ipu: Optional[Sequence[int]]) -> Placement:
    layout = lay_out(model, inputs.architecture, inputs.config, inputs.settings, inputs.for_inference, layers_per_ipu)
    counts = _parameter_counts(model, inputs, layout)
    ipus = []
    for ipu, (trained, frozen) in enumerate(counts):
        on_chip, streaming = inputs.memory.bytes(trained, frozen)
        ipus.append(IPUPlacement(ipu, tuple(layout.blocks[ipu]),
                                 tuple(index for index, on in enumerate(layout.layer_ipus) if on == ipu),
                                 trained + frozen, on_chip, streaming))
    return Placement(model, inputs.architecture.name, inputs.memory.build, tuple(layout.layers_per_ipu),
                     IPU_MEMORY_BYTES, tuple(ipus), inputs.memory.describe(), inputs)


def _parameter_counts(model: str, inputs: _Inputs, layout: Layout) -> List[List[int]]:
    """`[[trained, frozen] parameters]` of each IPU."""
    counts = [[0, 0] for _ in range(layout.ipus)]
    parameters = inputs.parameters
    for name, claims in first_uses(layout, list(parameters.shapes), parameters.aliases).items():
        for claim in claims:
            counts[claim.ipu][name in inputs.frozen] += parameters.elements(name)
    return counts


# --- balancing ---------------------------------------------------------------------------------------------------


def _cuts(placement: Placement) -> List[Optional[int]]:
    """The numbers of IPUs the encoder may take in a generation build (powers of two); [None] for other builds."""
    inputs = placement._inputs
    kwargs = inputs.settings[("inference_" if inputs.for_inference else "") + "parallelize_kwargs"] or {}
    if not generation_split(inputs.architecture, kwargs):
        return [None]
    ipus = len(placement.ipus)
    return [cut for cut in (1 << power for power in range(ipus.bit_length())) if cut < ipus]


def _best_for(placement: Placement, cut: Optional[int]) -> Tuple[List[int], int]:
    """The best split with the encoder on `cut` IPUs (None: no cut), from the placement's costs per layer."""
    inputs = placement._inputs
    ipus = len(placement.ipus)
    layers = len(placement._inputs and _layer_ipus(placement))
    current = list(placement.layers_per_ipu)
    costs = _costs(placement, cut)
    if cut is None:
        return balance.best_split(layers, ipus, costs, current)
    encoder = _encoder_layers(inputs)
    encoder_split, encoder_cost = balance.best_split(encoder, cut, costs, current[:cut])
    decoder_cost = lambda ipu, first, end: costs(ipu + cut, first + encoder, end + encoder)  # noqa: E731
    decoder_split, decoder_largest = balance.best_split(layers - encoder, ipus - cut, decoder_cost, current[cut:],
                                                        first_nonempty=(0,))
    return encoder_split + decoder_split, max(encoder_cost, decoder_largest)


def _layer_ipus(placement: Placement) -> List[int]:
    return [layer for ipu in placement.ipus for layer in ipu.layers]


def _encoder_layers(inputs: _Inputs) -> int:
    from .layout import layer_counts

    return layer_counts(inputs.architecture, inputs.config)[inputs.architecture.generation[0]]


def _costs(placement: Placement, cut: Optional[int]) -> balance.Cost:
    """`cost(ipu, first, end)`: the on-chip bytes of IPU `ipu` holding layers `first` to `end - 1`, from where each
    parameter goes: a fixed IPU, or the IPU of one layer. Read off two placements whose layers move."""
    inputs = placement._inputs
    fixed, per_layer = _decompose(placement, cut)

    def cost(ipu: int, first: int, end: int) -> int:
        trained, frozen = fixed[ipu]
        for layer in range(first, end):
            trained += per_layer[layer][0]
            frozen += per_layer[layer][1]
        return inputs.memory.bytes(trained, frozen)[0]

    return cost


def _decompose(placement: Placement, cut: Optional[int]) -> Tuple[List[List[int]], List[List[int]]]:
    """([trained, frozen] parameters fixed on each IPU, [trained, frozen] parameters following each layer), for
    splits whose encoder takes `cut` IPUs."""
    from .layout import origins

    inputs = placement._inputs
    ipus = len(placement.ipus)
    layers = len(_layer_ipus(placement))
    fixed = [[0, 0] for _ in range(ipus)]
    per_layer = [[0, 0] for _ in range(layers)]
    parameters = inputs.parameters
    for name, sources in origins(placement.model, inputs.architecture, inputs.config, inputs.settings,
                                 inputs.for_inference, cut, list(parameters.shapes), parameters.aliases).items():
        for kind, index in sources:
            target = fixed if kind == "ipu" else per_layer
            target[index][name in inputs.frozen] += parameters.elements(name)
    return fixed, per_layer
