"""`Placer`: the engine that places one model under one build of a config, with the config's split or any other, and
balances the split; `model_placer()`, what `IPUConfig.placer()` and `IPUConfig.placement()` call: the model read
from where it is, its placer made."""

from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import InvalidSettingError, PlacementError, is_positive_whole
from ..settings.rules import check_rules
from .estimate import balance
from .estimate.calibration_file import CalibrationSource, calibration_of
from .estimate.configured import ConfiguredModel, Measure, Shapes, configure
from .estimate.costs import block_costs
from .estimate.generation import GENERATE_ARGUMENTS, KWARGS, GenerationModel, generation_kwargs
from .estimate.layer_runs import LayerRunCosts
from .estimate.layout import FirstUse, Layout, fixed_layer_groups, generation_split, layer_counts
from .estimate.parameters import Parameters, from_checkpoint, from_config
from .estimate.pipeline import Schedule, schedule, stages_of
from .estimate.timing import Calibration
from .hardware import GC200, IPU_MEMORY_BYTES, IPU_TYPES, RESERVE, IPUType
from .models import architecture_of, resolve_shape
from .models.rules import Architecture, ModelConfig, Word
from .placement import IPUPlacement, Placement
from .source.model import ModelSource, read_model


class Objective(Word):
    """What a balanced split makes smallest: the largest on-chip figure (`MEMORY`), or the slowest IPU's time among
    the splits that fit (`TIME`)."""

    MEMORY = "memory"
    TIME = "time"

    @staticmethod
    def named(value: Any) -> "Objective":
        if value not in [objective.value for objective in Objective]:
            raise InvalidSettingError("objective", value, "allowed values are " + ", ".join(
                f'"{objective.value}"' for objective in Objective))
        return Objective(value)


class Placer:
    """Places one model under one build of a config (`configured`): with the config's split or any other, and
    balanced."""

    def __init__(self, configured: ConfiguredModel):
        self.configured = configured

    def place(self, layers_per_ipu: Optional[Sequence[int]] = None) -> Placement:
        """The placement with `layers_per_ipu` (None: the config's)."""
        configured = self.configured
        layout = configured.layout(layers_per_ipu)
        stages = stages_of(layout, configured.execution)
        cost_model = configured.cost_model
        uses = configured.first_uses(layout)
        loads = configured.loads(layout, stages, uses)
        costs = [cost_model.ipu(load) for load in loads]
        ipus = []
        for ipu, (load, cost) in enumerate(zip(loads, costs)):
            layers = tuple(index for index, on in enumerate(layout.layer_ipus) if on == ipu)
            parameters = cost.parameters
            ipus.append(IPUPlacement(ipu, tuple(layout.blocks[ipu]), layers, load.trained + load.frozen,
                                     cost.on_chip_bytes, cost.streaming_bytes, parameters.weights.on_chip,
                                     parameters.accumulators.on_chip, parameters.optimizer.on_chip, cost.update_bytes,
                                     cost.work, None if cost.time is None else cost.time.cycle_load,
                                     cost.generation))
        steps = schedule(stages, configured.execution)
        parameter_ipus = {name: tuple([use.ipu for use in found]) for name, found in uses.items()}
        generation = configured.generation
        fitting = timing = None
        if generation is not None and max(cost.on_chip_bytes for cost in costs) > configured.fitting_bytes:
            fitting = {name: self._largest_fitting(layout, uses, name) for name in ("batch_size", "max_length")}
        if generation is not None and cost_model.time is not None:
            timing = generation.time(cost_model.time, [cost.generation for cost in costs],
                                     configured.settings[configured.mode.setting("replication_factor")])
        return Placement(configured.model, configured.architecture.name, configured.mode.name,
                         tuple(layout.layers_per_ipu), IPU_MEMORY_BYTES, configured.reserve_bytes, tuple(ipus),
                         cost_model.memory.describe(configured.shape is not None), configured.shape, stages, steps,
                         cost_model.step(costs, steps.cycles), parameter_ipus,
                         None if generation is None else generation.build, layout.executors, fitting, timing)

    def _largest_fitting(self, layout: Layout, uses: Mapping[str, List[FirstUse]], name: str) -> Optional[int]:
        """The largest value of the generation build's `name` (`batch_size`, `max_length`) below its own with which
        every IPU of `layout` fits, the build's others as they are (None: not even 1)."""
        configured = self.configured
        build = configured.generation.build

        def fits(value: int) -> bool:
            model = GenerationModel(configured.architecture, configured.config, build._replace(**{name: value}),
                                    configured.cost_model.memory.weight_bytes)
            return all(configured.cost_model.ipu(load).on_chip_bytes <= configured.fitting_bytes
                       for load in replace(configured, generation=model).loads(layout, (), uses))

        low, high = 0, getattr(build, name) - 1  # the largest known to fit (0: none), the largest left to try
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits(middle) else (low, middle - 1)
        return low or None

    def schedule(self, layers_per_ipu: Optional[Sequence[int]] = None) -> Schedule:
        """The schedule of the pipeline with `layers_per_ipu` (None: the config's): its stages' cycles and what
        poptorch refuses, as `place` counts them, no IPU costed."""
        configured = self.configured
        return schedule(stages_of(configured.layout(layers_per_ipu), configured.execution), configured.execution)

    def balanced(self, current: Placement, objective: Any = Objective.MEMORY) -> Placement:
        """The placement with the `layers_per_ipu` (same number of IPUs) that balances the pipeline, among the
        splits upstream accepts, ties to the split closest to `current`'s. `objective`: "memory", the smallest
        largest on-chip figure; "time" (activations counted), the slowest IPU fastest among the splits that fit,
        then the smallest largest on-chip figure.

        Raises:
            PlacementError: for an architecture whose `parallelize()` places its layers itself.
            InvalidSettingError: for another objective, or "time" without activations counted.
        """
        objective = Objective.named(objective)
        configured = self.configured
        if objective == Objective.TIME and configured.cost_model.time is None:
            raise PlacementError(
                configured.model,
                "balancing for time needs the operations of a micro-batch: give its size or its sequence length "
                "(micro_batch_size=, --micro-batch-size)",
            )
        if fixed_layer_groups(configured.architecture):
            raise PlacementError(configured.model, f"{configured.architecture.name}'s parallelize() places its "
                                 "layers on IPUs of its own choosing, whatever `layers_per_ipu` says: there is no "
                                 "split to balance")
        if len(current.ipus) == 1:
            return current
        # the time objective needs a split that fits; else the least memory
        for goal in (objective, Objective.MEMORY):
            found = [split for split in (self._best_for(current.layers_per_ipu, cut, goal)
                                         for cut in self.cuts(len(current.ipus))) if split[0] is not None]
            if found:
                return self.place(balance.chosen(found, current.layers_per_ipu)[0])
        raise PlacementError(configured.model, "no split gives every IPU a stage of the pipeline")

    def memory_splits(self, ipus: int) -> List[List[int]]:
        """For each number of IPUs the encoder may take in a generation build (once for another build), the split
        over `ipus` IPUs whose largest on-chip figure is smallest (of those, the nearest to spreading each part's
        layers evenly), where one exists."""
        configured = self.configured
        counts = list(layer_counts(configured.architecture, configured.config).values())
        found = []
        for cut in self.cuts(ipus):
            even = even_split(counts, ipus, cut)
            split, _ = self._best_for(even, cut, Objective.MEMORY) if ipus > 1 else (even, ())
            if split is not None:
                found.append(split)
        return found

    def cuts(self, ipus: int) -> List[Optional[int]]:
        """The numbers of IPUs the encoder may take in a generation build (powers of two); [None] for others."""
        configured = self.configured
        kwargs = configured.settings[configured.mode.setting("parallelize_kwargs")] or {}
        if not generation_split(configured.architecture, kwargs):
            return [None]
        return [cut for cut in (1 << power for power in range(ipus.bit_length())) if cut < ipus]

    def _best_for(self, current: Sequence[int], cut: Optional[int],
                  objective: Objective) -> Tuple[Optional[List[int]], Tuple[float, ...]]:
        """The best split with the encoder on `cut` IPUs (None: no encoder-decoder cut), the nearest to `current`
        of those, and its largest costs."""
        configured = self.configured
        counts = layer_counts(configured.architecture, configured.config)
        layers = sum(counts.values())
        split = list(current)
        runs = LayerRunCosts(configured, cut)
        objectives = ((runs.on_chip_bytes,) if objective == Objective.MEMORY
                      else (runs.cycle_load, runs.on_chip_bytes))
        least = runs.least_layers()

        def splits(count: int, ipus: slice, some_layer_within: int = 0) -> balance.Splits:
            found = balance.Splits(count, len(least[ipus]), some_layer_within, least[ipus], (runs.on_chip_bytes,))
            if objective != Objective.TIME:
                return found
            return found.within(runs.on_chip_bytes, configured.fitting_bytes)

        if cut is None:
            return balance.best_of([balance.Section(splits(layers, slice(None)), objectives, split)])
        encoder = counts[configured.architecture.generation[0]]
        # the decoder's first `cut` IPUs take a layer between them: else the cut would fall after them
        decoder = [runs.shifted(cost, cut, encoder) for cost in objectives]
        return balance.best_of([balance.Section(splits(encoder, slice(cut)), objectives, split[:cut]),
                                balance.Section(splits(layers - encoder, slice(cut, None), cut), tuple(decoder),
                                                split[cut:])])


def even_split(counts: Sequence[int], ipus: int, cut: Optional[int]) -> List[int]:
    """Layer groups of `counts` layers spread evenly over `ipus` IPUs, the later IPUs taking one more where they do
    not divide; with `cut`, the encoder's (the first group) over the first `cut` IPUs and the rest over the others."""
    parts = [(sum(counts), ipus)] if cut is None else [(counts[0], cut), (sum(counts[1:]), ipus - cut)]
    return [layers // part + (index >= part - layers % part) for layers, part in parts for index in range(part)]


def placer_of(model: str, architecture: Architecture, values: Mapping[str, Any], settings: Mapping[str, Any],
              shapes: Shapes, for_inference: bool, fp32: bool, measure: Optional[Measure] = None,
              ipu: IPUType = GC200, reserve: float = RESERVE, calibration: Optional[Calibration] = None,
              generate: Optional[Mapping[str, Any]] = None) -> Placer:
    """The placer of `architecture`, configured by `values` (its `config.json`), under the build of a config whose
    `settings` are its `vars()` (`estimate.configured.configure()`'s arguments: a step timed with the constants of
    `calibration`, default the shipped ones).

    Raises:
        PlacementError: where optimum-graphcore refuses the config for this model.
    """
    return Placer(configure(model, architecture, values, settings, shapes, for_inference, fp32, measure, ipu,
                            reserve, calibration, generate))


# --- a model read from its source, placed ----------------------------------------------------------------------------


def parameter_shapes(source: ModelSource) -> Shapes:
    """The function a placer calls for the parameters: from the checkpoint's headers, else from the config."""

    def shapes(architecture: Architecture, config: ModelConfig) -> Parameters:
        tensors = source.tensors()
        if tensors is None:
            return from_config(architecture, config)
        return from_checkpoint(architecture, config, {name: tensor.shape for name, tensor in tensors.items()})

    return shapes


def cached_shapes(source: ModelSource) -> Shapes:
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
    """The function a placer calls for the micro-batch and the costs of each step; None where no part of the
    micro-batch is given (the activations are not counted)."""
    if request == (None, None, None):
        return None
    micro_batch_size, sequence_length, decoder_sequence_length = request

    def measured(architecture: Architecture, config: ModelConfig):
        shape = resolve_shape(model, architecture.name, config, 1 if micro_batch_size is None else micro_batch_size,
                              sequence_length, decoder_sequence_length)
        return shape, block_costs(architecture, config, shape, fp32)

    return measured


def generated(request: ShapeRequest) -> Dict[str, Any]:
    """What a generation build's generate() is called with, read off a micro-batch's shape: the micro-batch its
    batch, the sequence length the encoder's input, the decoder's length its `max_length`."""
    names = ("batch_size", "sequence_length", "max_length")
    return {name: value for name, value in zip(names, request) if value is not None}


def model_placer(settings: Dict[str, Any], model: Any, architecture: Optional[str], for_inference: bool, fp32: bool,
                 revision: Optional[str], token: Optional[str], request: ShapeRequest = (None, None, None),
                 ipu: str = GC200.name, reserve: float = RESERVE, calibration: CalibrationSource = None,
                 generate: Any = None) -> Placer:
    """`IPUConfig.placer()`: the placer of `model` under a config whose settings are `settings`, its activations
    counted for the micro-batch `request` gives, a step timed on IPUs of type `ipu` with the constants of
    `calibration` (`calibration_file.calibration_of()`: a file, else the one `OPTIMUM_IPU_EXT_CALIBRATION` names, else
    the shipped one), `reserve` of each IPU's memory kept for what is not counted; with `generate` (True, or what
    generate() is called with), the inference build as upstream's pipelines generate with it
    (`estimate.generation.generation_kwargs`).

    Raises:
        InvalidSettingError: for an `ipu`, a `reserve` or a `generate` outside what they allow.
        CalibrationFileError: for a calibration file that cannot be read.
        PlacementError: for a micro-batch given with `generate` (its batch is generate()'s).
    """
    ipu_type = ipu_type_of(ipu)
    check_reserve(reserve)
    constants = calibration_of(calibration)
    check_rules(settings)
    asked = generate_arguments(generate)
    source = read_model(model, revision, token)
    row = architecture_of(source.name, source.config, architecture)
    if asked is not None:
        for name, value in (("micro_batch_size", request[0]), ("decoder_sequence_length", request[2])):
            if value is not None:
                raise PlacementError(source.name, f"{value} is for a micro-batch; a generation build runs "
                                     "generate()'s batch_size sequences, up to its max_length tokens", name)
        settings = {**settings, KWARGS: generation_kwargs(source.name, row, settings, asked)}
        for_inference = True
    placing = dict(generated(request), **(asked or {}))
    return placer_of(source.name, row, source.config, settings, parameter_shapes(source), for_inference, fp32,
                     measure(source.name, request, fp32), ipu_type, reserve, constants, placing)


def generate_arguments(generate: Any) -> Optional[Dict[str, Any]]:
    """What generate() is called with, of a `generate` argument: None (False: no generation build), {} (True), or
    the mapping of `batch_size`, `num_beams`, `max_length` given, each a positive whole number."""
    if generate is None or generate is False:
        return None
    if generate is True:
        return {}
    if not isinstance(generate, Mapping):
        raise InvalidSettingError("generate", generate, "allowed values are true, false, or a mapping of "
                                  + ", ".join(GENERATE_ARGUMENTS))
    for name, value in generate.items():
        if name not in GENERATE_ARGUMENTS:
            raise InvalidSettingError("generate", generate, f"{name!r} is not one of {', '.join(GENERATE_ARGUMENTS)}")
        if value is not None and not is_positive_whole(value):
            raise InvalidSettingError(name, value, "allowed values are positive whole numbers")
    return {name: value for name, value in generate.items() if value is not None}


def ipu_type_of(name: Any) -> IPUType:
    """The IPU generation named `name`."""
    if name not in IPU_TYPES:
        raise InvalidSettingError("ipu", name, "allowed values are " + ", ".join(f'"{name}"' for name in IPU_TYPES))
    return IPU_TYPES[name]


def check_reserve(reserve: Any) -> None:
    if isinstance(reserve, bool) or not isinstance(reserve, (int, float)) or not 0 <= reserve < 1:
        raise InvalidSettingError("reserve", reserve, "allowed values are shares of an IPU's memory, from 0 to less "
                                  "than 1")
