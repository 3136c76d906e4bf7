"""`place()`: the placement of a model on the IPUs of a config, worked out from the architecture's row, the model's
config and its parameters' shapes; `Planner`, which works out the placements of other splits (`--balance`); and
`place_model()`, what `IPUConfig.placement()` calls: the model read from where it is, then placed."""

import copy
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..errors import InvalidSettingError, PlacementError
from ..settings.mode import Mode
from ..settings.rules import check_rules
from .estimate import balance
from .estimate.costs import block_costs
from .estimate.layout import (
    Layout,
    first_uses,
    fixed_layer_groups,
    generation_split,
    lay_out,
    layer_counts,
    layer_paths,
    origins,
    reference_layout,
    split_shares,
)
from .estimate.memory import MemoryModel, memory_model
from .estimate.parameters import Parameters, from_checkpoint, from_config, parallelized
from .estimate.pipeline import Costs, Rules, ipu_work, pipeline_rules, schedule, stages_of, work
from .estimate.timing import IPUShare, Job, StepTime, step_time
from .hardware import GC200, IPU_MEMORY_BYTES, IPU_TYPES, RESERVE, IPUType
from .models import architecture_of, resolve_shape
from .models.rules import Architecture, ModelConfig, Split
from .report.placement import IPUPlacement, Placement
from .source.model import ModelSource, read_model

OBJECTIVES = ("memory", "time")


# `measure(architecture, config)`: the micro-batch the activations are counted for, and the costs of each step
Measure = Callable[[Architecture, ModelConfig], Tuple[Any, Costs]]


def place(model: str, architecture: Architecture, values: Mapping[str, Any], settings: Mapping[str, Any],
          shapes: Callable[[Architecture, ModelConfig], Parameters], for_inference: bool, fp32: bool,
          measure: Optional[Measure] = None, ipu: IPUType = GC200, reserve: float = RESERVE) -> Placement:
    """The placement of `architecture`, configured by `values` (its `config.json`), on the IPUs of a config whose
    `settings` are its `vars()`. `shapes(architecture, config)` gives its parameters; it is called only once the
    config's layers are found to fit the model, so a wrong `layers_per_ipu` is reported before any weight header
    is read. `measure`, where given, gives the micro-batch and the costs of each step: the activations are counted,
    and a step is timed on IPUs of type `ipu`. `reserve`: the share of each IPU's memory kept for what is not
    counted.

    Raises:
        PlacementError: where optimum-graphcore refuses the config for this model.
    """
    return planner_of(model, architecture, values, settings, shapes, for_inference, fp32, measure, ipu,
                      reserve).placement(None)


def planner_of(model: str, architecture: Architecture, values: Mapping[str, Any], settings: Mapping[str, Any],
               shapes: Callable[[Architecture, ModelConfig], Parameters], for_inference: bool, fp32: bool,
               measure: Optional[Measure] = None, ipu: IPUType = GC200, reserve: float = RESERVE) -> "Planner":
    """What `place()` works the placement out from, to work out those of other splits (`place()`'s arguments)."""
    config = architecture.config(values, model)
    lay_out(model, architecture, config, settings, for_inference)
    shape, costs = measure(architecture, config) if measure is not None else (None, None)
    parameters = parallelized(model, architecture, shapes(architecture, config), settings,
                              for_inference)
    _check_layers(model, architecture, config, parameters)
    frozen = frozenset(name for name in parameters.shapes if _frozen(architecture, config, name))
    return Planner(model, architecture, config, settings, for_inference, parameters,
                   memory_model(dict(settings), for_inference, fp32), frozen,
                   pipeline_rules(settings, for_inference), shape, costs, ipu, round(reserve * IPU_MEMORY_BYTES))


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
    rules: Rules
    shape: Any
    costs: Optional[Costs]
    ipu: IPUType
    reserve_bytes: int

    def layout(self, layers_per_ipu: Optional[Sequence[int]]) -> Layout:
        return lay_out(self.model, self.architecture, self.config, self.settings, self.for_inference, layers_per_ipu)

    def placement(self, layers_per_ipu: Optional[Sequence[int]]) -> Placement:
        """The placement with `layers_per_ipu` (None: the config's)."""
        layout = self.layout(layers_per_ipu)
        counts = [[0, 0] for _ in range(layout.ipus)]  # [trained, frozen] parameters of each IPU
        largest = [0] * layout.ipus  # elements of each IPU's largest trained tensor, as the update takes it
        for name, claims in self._first_uses(layout).items():
            for claim in claims:
                counts[claim.ipu][name in self.frozen] += self.parameters.elements(name)
                if name not in self.frozen:
                    largest[claim.ipu] = max(largest[claim.ipu], self.updated_elements(name))
        stages = stages_of(layout, self.rules)
        works = ipu_work(layout.ipus, stages, self.costs, self.rules) if self.costs is not None else None
        ipus = []
        shares = []
        for ipu, (trained, frozen) in enumerate(counts):
            parts = self.memory.parts(trained, frozen)
            on_chip = sum(size for size, _ in parts.values())
            streaming = sum(size for _, size in parts.values())
            done = None if works is None else works[ipu]
            update = self.memory.update_bytes(largest[ipu])
            on_chip += max(update, 0 if done is None else done.stash_bytes + done.recompute_bytes)
            if done is not None:
                shares.append(IPUShare(done.flops, trained * self.memory.weight_bytes, parts["optimizer"][1]))
            layers = tuple(index for index, on in enumerate(layout.layer_ipus) if on == ipu)
            ipus.append(IPUPlacement(ipu, tuple(layout.blocks[ipu]), layers, trained + frozen, on_chip, streaming,
                                     parts["weights"][0], parts["accumulators"][0], parts["optimizer"][0], update,
                                     done))
        steps = schedule(stages, self.rules)
        time = self._time(shares, steps.cycles, layout.ipus) if shares else None
        return Placement(self.model, self.architecture.name, self.memory.build, tuple(layout.layers_per_ipu),
                         IPU_MEMORY_BYTES, self.reserve_bytes, tuple(ipus),
                         self.memory.describe(self.costs is not None), self.shape, stages, steps, time, self)

    def _time(self, shares: Sequence[IPUShare], cycles: Optional[int], ipus: int) -> StepTime:
        """A step of the whole job, its replicas each running this pipeline."""
        replicas = self.settings[Mode.of(self.for_inference).setting("replication_factor")]
        job = Job(self.rules.training, self.rules.micro_batches, cycles, replicas, ipus,
                  self.shape.micro_batch_size)
        return step_time(shares, job, self.ipu)

    def updated_elements(self, name: str) -> int:
        """The elements of the largest part of parameter `name` the weight update takes at once: a weight
        `parallelize()` serializes, in its factor's parts (a split weight's parts are parameters of their own)."""
        return -(-self.parameters.elements(name) // self._serialized.get(name, 1))

    @property
    def _serialized(self) -> Dict[str, int]:
        """`{parameter: the parts parallelize() serializes it into}`."""
        factor = self.settings["embedding_serialization_factor"] or 1
        found = {self.architecture.serialized_embedding: factor, self.architecture.padded_embedding: factor}
        mode = Mode.of(self.for_inference)
        for step in self.architecture.steps:
            if isinstance(step, Split) and split_shares(step, self.settings, mode) is None:
                found[f"{step.path}.weight"] = self.settings[mode.setting(step.factor)] or 1
        return found

    def parameter_ipus(self, layers_per_ipu: Sequence[int]) -> Dict[str, Tuple[int, ...]]:
        return {name: tuple(claim.ipu for claim in claims)
                for name, claims in self._first_uses(self.layout(layers_per_ipu)).items()}

    def _first_uses(self, layout: Layout):
        return first_uses(layout, list(self.parameters.shapes), self.parameters.aliases)

    # --- balancing -----------------------------------------------------------------------------------------------

    def balanced(self, current: Placement, objective: str) -> Placement:
        if objective not in OBJECTIVES:
            raise InvalidSettingError("objective", objective, 'allowed values are "memory", "time"')
        if objective == "time" and self.costs is None:
            raise PlacementError(self.model, "balancing for time needs the FLOPs of a micro-batch: give its size or "
                                 "its sequence length (micro_batch_size=, --micro-batch-size)")
        if fixed_layer_groups(self.architecture):
            raise PlacementError(self.model, f"{self.architecture.name}'s parallelize() places its layers on IPUs of "
                                 "its own choosing, whatever `layers_per_ipu` says: there is no split to balance")
        if len(current.ipus) == 1:
            return current
        for goal in (objective, "memory"):  # the time objective needs a split that fits; else the least memory
            found = [split for split in (self._best_for(current, cut, goal) for cut in self.cuts(len(current.ipus)))
                     if split[0] is not None]
            if found:
                return self.placement(balance.chosen(found, current.layers_per_ipu)[0])
        raise PlacementError(self.model, "no split gives every IPU a stage of the pipeline")

    def cuts(self, ipus: int) -> List[Optional[int]]:
        """The numbers of IPUs the encoder may take in a generation build (powers of two); [None] for others."""
        kwargs = self.settings[Mode.of(self.for_inference).setting("parallelize_kwargs")] or {}
        if not generation_split(self.architecture, kwargs):
            return [None]
        return [cut for cut in (1 << power for power in range(ipus.bit_length())) if cut < ipus]

    def _best_for(self, current: Placement, cut: Optional[int], objective: str):
        """The best split with the encoder on `cut` IPUs (None: no encoder-decoder cut), and its largest costs."""
        counts = layer_counts(self.architecture, self.config)
        layers = sum(counts.values())
        split = list(current.layers_per_ipu)
        costs = SplitCosts(self, cut)
        objectives = (costs.memory,) if objective == "memory" else (costs.flops, costs.memory)
        least = costs.least_layers()

        def splits(count: int, ipus: slice, some_layer_within: int = 0) -> balance.Splits:
            found = balance.Splits(count, len(least[ipus]), some_layer_within, least[ipus])
            return found.within(costs.memory, IPU_MEMORY_BYTES - self.reserve_bytes) if objective == "time" else found

        if cut is None:
            return balance.best_of([balance.Part(splits(layers, slice(None)), objectives, split)])
        encoder = counts[self.architecture.generation[0]]
        # the decoder's first `cut` IPUs take a layer between them: else the cut would fall after them
        decoder = [costs.shifted(cost, cut, encoder) for cost in objectives]
        return balance.best_of([balance.Part(splits(encoder, slice(cut)), objectives, split[:cut]),
                                balance.Part(splits(layers - encoder, slice(cut, None), cut), tuple(decoder),
                                             split[cut:])])


class Run(NamedTuple):
    """What an IPU holds, keeps and computes for a run of layers: its trained and frozen parameters, the elements of
    its largest trained tensor, the pipeline's bytes (stash and recomputation) and its FLOPs."""

    trained: int
    frozen: int
    largest: int
    pipeline_bytes: int
    flops: int


class SplitCosts:
    """The costs of an IPU holding a run of layers, for any split (in a generation build, any whose encoder takes
    `cut` IPUs): its on-chip bytes and its FLOPs. Each parameter and each step goes to a fixed IPU or to the IPU of
    one layer; each step is stashed as in the stage it runs in with the even split (every IPU a stage)."""

    def __init__(self, planner: Planner, cut: Optional[int]):
        self.planner = planner
        ipus = planner.settings[Mode.of(planner.for_inference).setting("ipus_per_replica")]
        layers = sum(layer_counts(planner.architecture, planner.config).values())
        self.fixed = [[0, 0] for _ in range(ipus)]  # [trained, frozen] parameters
        self.following = [[0, 0] for _ in range(layers + 1)]  # of each layer, as prefix sums
        # the elements of the largest trained tensor the update takes, of each IPU's fixed part and of each layer
        self.fixed_largest = [0] * ipus
        self.layer_largest = [0] * layers
        names = list(planner.parameters.shapes)
        for name, sources in origins(planner.model, planner.architecture, planner.config, planner.settings,
                                     planner.for_inference, cut, names, planner.parameters.aliases).items():
            frozen = name in planner.frozen
            for kind, index in sources:
                target = self.fixed[index] if kind == "ipu" else self.following[index + 1]
                target[frozen] += planner.parameters.elements(name)
                if not frozen:
                    largest = self.fixed_largest if kind == "ipu" else self.layer_largest
                    largest[index] = max(largest[index], planner.updated_elements(name))
        for layer in range(layers):
            self.following[layer + 1] = [self.following[layer][0] + self.following[layer + 1][0],
                                         self.following[layer][1] + self.following[layer + 1][1]]
        self._steps(cut)
        self._runs: Dict[Tuple[int, int, int], Run] = {}
        self._memory: Dict[Tuple[int, int, int], int] = {}

    def _steps(self, cut: Optional[int]) -> None:
        """Each step's origin and the stage it runs in with the even split: `fixed_steps[ipu]` and
        `layer_steps[layer]`, as (position in the forward pass, stage) pairs, and `layer_stage[ipu]`."""
        planner = self.planner
        layout = reference_layout(planner.model, planner.architecture, planner.config, planner.settings,
                                  planner.for_inference, cut)
        self.forward = layout.forward
        self.stages = stages_of(layout, planner.rules)
        stage_of = {}
        for index, stage in enumerate(self.stages):
            for step in stage.steps:
                stage_of[id(step)] = index
        self.fixed_steps: List[List[Tuple[int, int]]] = [[] for _ in range(layout.ipus)]
        self.layer_steps: Dict[int, List[int]] = {}
        self.layer_stage: Dict[int, int] = {}
        for position, step in enumerate(layout.forward):
            kind, index = step.origin
            if kind == "ipu":
                self.fixed_steps[index].append((position, stage_of[id(step)]))
            else:
                self.layer_steps.setdefault(index, []).append(position)
                self.layer_stage.setdefault(step.ipu, stage_of[id(step)])

    def run(self, ipu: int, first: int, end: int) -> "Run":
        """What IPU `ipu` holds, keeps and computes taking layers `first` to `end - 1`."""
        key = (ipu, first, end)
        if key not in self._runs:
            planner = self.planner
            frozen = self.fixed[ipu][1] + self.following[end][1] - self.following[first][1]
            largest = max([self.fixed_largest[ipu], *self.layer_largest[first:end]])
            flops = 0
            pipeline = 0
            if planner.costs is not None:
                steps = list(self.fixed_steps[ipu])
                stage = self.layer_stage.get(ipu)
                for layer in range(first, end):
                    steps += [(position, stage) for position in self.layer_steps[layer]]
                grouped: Dict[Optional[int], List[int]] = {}
                for position, index in sorted(steps):
                    grouped.setdefault(index, []).append(position)
                done = work([(0 if index is None else self.stages[index].stash_depth,
                              [self.forward[position] for position in positions])
                             for index, positions in grouped.items()], planner.costs, planner.rules)
                pipeline = done.stash_bytes + done.recompute_bytes
                flops = done.flops
            self._runs[key] = Run(self.trained(ipu, first, end), frozen, largest, pipeline, flops)
        return self._runs[key]

    def sharing(self, planner: Planner) -> "SplitCosts":
        """The costs for `planner`, which builds the same pipeline of the same parameters with another memory model
        (the optimizer state elsewhere), the runs worked out so far shared."""
        costs = copy.copy(self)
        costs.planner = planner
        costs._memory = {}
        return costs

    def trained(self, ipu: int, first: int, end: int) -> int:
        """The trained parameters of IPU `ipu` holding layers `first` to `end - 1`."""
        return self.fixed[ipu][0] + self.following[end][0] - self.following[first][0]

    def least_layers(self) -> List[int]:
        """The layers each IPU takes at least: where the stash is counted, one on an IPU no fixed step runs on, so
        that every IPU runs a stage, as in the even split whose stash depths the costs take (else none)."""
        planner = self.planner
        counted = planner.costs is not None and planner.rules.training and planner.rules.pipelined
        return [int(counted and not steps) for steps in self.fixed_steps]

    def memory(self, ipu: int, first: int, end: int) -> int:
        key = (ipu, first, end)
        if key not in self._memory:
            run = self.run(ipu, first, end)
            memory = self.planner.memory
            self._memory[key] = (memory.bytes(run.trained, run.frozen)[0]
                                 + max(memory.update_bytes(run.largest), run.pipeline_bytes))
        return self._memory[key]

    def flops(self, ipu: int, first: int, end: int) -> int:
        return self.run(ipu, first, end).flops

    @staticmethod
    def shifted(cost: balance.Cost, cut: int, encoder: int) -> balance.Cost:
        """`cost` of the decoder's IPUs and layers, numbered from the cut."""
        return lambda ipu, first, end: cost(ipu + cut, first + encoder, end + encoder)


# --- a model read from its source, placed ----------------------------------------------------------------------------


def parameter_shapes(source: ModelSource):
    """The function `place()` calls for the parameters: from the checkpoint's headers, else from the config."""

    def shapes(architecture: Architecture, config: ModelConfig) -> Parameters:
        tensors = source.tensors()
        if tensors is None:
            return from_config(architecture, config)
        return from_checkpoint(architecture, config, {name: tensor.shape for name, tensor in tensors.items()})

    return shapes


def cached_shapes(source: ModelSource):
    """`parameter_shapes(source)`, its checkpoint's headers read once for every placement that asks."""
    shapes = parameter_shapes(source)
    found: Dict[str, Parameters] = {}

    def cached(architecture: Architecture, config: ModelConfig) -> Parameters:
        if architecture.name not in found:
            found[architecture.name] = shapes(architecture, config)
        return found[architecture.name]

    return cached


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
    row = architecture_of(source.name, source.config, architecture)
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

