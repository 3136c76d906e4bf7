"""`place()`: the placement of a model on the IPUs of a config, worked out from the architecture's row, the model's
config and its parameters' shapes; and `Planner`, which works out the placements of other splits (`--balance`)."""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import PlacementError
from . import balance
from .layout import (
    Layout,
    first_uses,
    fixed_layer_groups,
    generation_split,
    lay_out,
    layer_counts,
    layer_paths,
    origins,
)
from .memory import IPU_MEMORY_BYTES, MemoryModel, memory_model
from .parameters import Parameters, parallelized
from .report import IPUPlacement, Placement
from .rules import Architecture, ModelConfig


def place(model: str, architecture: Architecture, values: Mapping[str, Any], settings: Mapping[str, Any],
          shapes: Callable[[Architecture, ModelConfig], Parameters], for_inference: bool, fp32: bool) -> Placement:
    """The placement of `architecture`, configured by `values` (its `config.json`), on the IPUs of a config whose
    `settings` are its `vars()`. `shapes(architecture, config)` gives its parameters; it is called only once the
    config's layers are found to fit the model, so a wrong `layers_per_ipu` is reported before any weight header
    is read.

    Raises:
        PlacementError: where optimum-graphcore refuses the config for this model.
    """
    config = architecture.config(values, model)
    lay_out(model, architecture, config, settings, for_inference)
    parameters = parallelized(model, architecture, shapes(architecture, config), settings, for_inference)
    _check_layers(model, architecture, config, parameters)
    frozen = frozenset(name for name in parameters.shapes if _frozen(architecture, config, name))
    planner = Planner(model, architecture, config, settings, for_inference, parameters,
                      memory_model(dict(settings), for_inference, fp32), frozen)
    return planner.placement(None)


def _check_layers(model: str, architecture: Architecture, config: ModelConfig, parameters: Parameters) -> None:
    """Every layer the config has holds parameters: a checkpoint without one is not this config's."""
    names = [alias for name in parameters.shapes for alias in (name, *parameters.aliases.get(name, ()))]
    paths = layer_paths(architecture, config)
    for path in paths:
        if not any(name.startswith(path + ".") or name == path for name in names):
            raise PlacementError(model, f"its checkpoint holds no parameter of `{path}`, one of the {len(paths)} "
                                 "layers its config.json gives it: the checkpoint is not this config's")


def _frozen(architecture: Architecture, config: ModelConfig, name: str) -> bool:
    return any((name == path or name.startswith(path + ".")) and config.holds(condition)
               for path, condition in architecture.frozen.items())


@dataclass(frozen=True)
class Planner:
    """What a placement is worked out from, to work out those of other splits."""

    model: str
    architecture: Architecture
    config: ModelConfig
    settings: Mapping[str, Any]
    for_inference: bool
    parameters: Parameters
    memory: MemoryModel
    frozen: frozenset

    def layout(self, layers_per_ipu: Optional[Sequence[int]]) -> Layout:
        return lay_out(self.model, self.architecture, self.config, self.settings, self.for_inference, layers_per_ipu)

    def placement(self, layers_per_ipu: Optional[Sequence[int]]) -> Placement:
        """The placement with `layers_per_ipu` (None: the config's)."""
        layout = self.layout(layers_per_ipu)
        counts = [[0, 0] for _ in range(layout.ipus)]  # [trained, frozen] parameters of each IPU
        for name, claims in self._first_uses(layout).items():
            for claim in claims:
                counts[claim.ipu][name in self.frozen] += self.parameters.elements(name)
        ipus = []
        for ipu, (trained, frozen) in enumerate(counts):
            on_chip, streaming = self.memory.bytes(trained, frozen)
            layers = tuple(index for index, on in enumerate(layout.layer_ipus) if on == ipu)
            ipus.append(IPUPlacement(ipu, tuple(layout.blocks[ipu]), layers, trained + frozen, on_chip, streaming))
        return Placement(self.model, self.architecture.name, self.memory.build, tuple(layout.layers_per_ipu),
                         IPU_MEMORY_BYTES, tuple(ipus), self.memory.describe(), self)

    def parameter_ipus(self, layers_per_ipu: Sequence[int]) -> Dict[str, Tuple[int, ...]]:
        return {name: tuple(claim.ipu for claim in claims)
                for name, claims in self._first_uses(self.layout(layers_per_ipu)).items()}

    def _first_uses(self, layout: Layout):
        return first_uses(layout, list(self.parameters.shapes), self.parameters.aliases)

    # --- balancing -----------------------------------------------------------------------------------------------

    def balanced(self, current: Placement) -> Placement:
        if fixed_layer_groups(self.architecture):
            raise PlacementError(self.model, f"{self.architecture.name}'s parallelize() places its layers on IPUs of "
                                 "its own choosing, whatever `layers_per_ipu` says: there is no split to balance")
        if len(current.ipus) == 1:
            return current
        found = balance.chosen([self._best_for(current, cut) for cut in self._cuts(len(current.ipus))],
                               current.layers_per_ipu)
        return self.placement(found[0])

    def _cuts(self, ipus: int) -> List[Optional[int]]:
        """The numbers of IPUs the encoder may take in a generation build (powers of two); [None] for others."""
        kwargs = self.settings[("inference_" if self.for_inference else "") + "parallelize_kwargs"] or {}
        if not generation_split(self.architecture, kwargs):
            return [None]
        return [cut for cut in (1 << power for power in range(ipus.bit_length())) if cut < ipus]

    def _best_for(self, current: Placement, cut: Optional[int]) -> Tuple[List[int], int]:
        """The best split with the encoder on `cut` IPUs (None: no encoder-decoder cut)."""
        ipus = len(current.ipus)
        counts = layer_counts(self.architecture, self.config)
        layers = sum(counts.values())
        split = list(current.layers_per_ipu)
        cost = self._cost(cut)
        if cut is None:
            return balance.best_split(layers, ipus, cost, split)
        encoder = counts[self.architecture.generation[0]]
        encoder_split, encoder_largest = balance.best_split(encoder, cut, cost, split[:cut])

        def decoder_cost(ipu: int, first: int, end: int) -> int:
            return cost(ipu + cut, first + encoder, end + encoder)

        # the decoder's first `cut` IPUs take a layer between them: else the cut would fall after them
        decoder_split, decoder_largest = balance.best_split(layers - encoder, ipus - cut, decoder_cost, split[cut:],
                                                            some_layer_within=cut)
        return encoder_split + decoder_split, max(encoder_largest, decoder_largest)

    def _cost(self, cut: Optional[int]) -> balance.Cost:
        """`cost(ipu, first, end)`: the on-chip bytes of IPU `ipu` holding layers `first` to `end - 1`, where each
        parameter goes to a fixed IPU or to the IPU of one layer."""
        ipus = self.settings[("inference_" if self.for_inference else "") + "ipus_per_replica"]
        layers = sum(layer_counts(self.architecture, self.config).values())
        fixed = [[0, 0] for _ in range(ipus)]  # [trained, frozen] parameters
        following = [[0, 0] for _ in range(layers + 1)]  # of each layer, as prefix sums
        names = list(self.parameters.shapes)
        for name, sources in origins(self.model, self.architecture, self.config, self.settings, self.for_inference,
                                     cut, names, self.parameters.aliases).items():
            for kind, index in sources:
                target = fixed[index] if kind == "ipu" else following[index + 1]
                target[name in self.frozen] += self.parameters.elements(name)
        for layer in range(layers):
            following[layer + 1] = [following[layer][0] + following[layer + 1][0],
                                    following[layer][1] + following[layer + 1][1]]

        def cost(ipu: int, first: int, end: int) -> int:
            trained = fixed[ipu][0] + following[end][0] - following[first][0]
            frozen = fixed[ipu][1] + following[end][1] - following[first][1]
            return self.memory.bytes(trained, frozen)[0]

        return cost
