"""A model under one build of an IPU config (`ConfiguredModel`): what every placement of it, with any split of its
layers, is worked out from, and each IPU's load (`IPULoad`) in a placement; `configure()` makes it from a model's
`config.json` and parameters and a config's settings, refusing what upstream refuses."""

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ...errors import PlacementError
from ...settings.mode import Mode
from ..hardware import IPU_MEMORY_BYTES, IPUType
from ..models.rules import Architecture, InputShape, ModelConfig, Split
from .calibration_file import shipped_calibration
from .cost import CostModel, IPULoad
from .generation import GenerationModel, generation_build
from .layout import FirstUse, Layout, first_uses, lay_out, layer_paths, paths_holding, split_shares
from .memory import memory_model
from .parameters import Parameters, parallelized
from .pipeline import Costs, Execution, Stage, execution_of, ipu_work
from .timing import Calibration, Job, TimeModel, product_rows

# `measure(architecture, config)`: the micro-batch the activations are counted for, and the costs of each step
Measure = Callable[[Architecture, ModelConfig], Tuple[InputShape, Costs]]
# `shapes(architecture, config)`: the model's parameters
Shapes = Callable[[Architecture, ModelConfig], Parameters]


class ParameterSize(NamedTuple):
    """A parameter as the build holds it: whether it is frozen, its elements, and the elements of its largest part
    the weight update takes at once (a weight `parallelize()` serializes, in its factor's parts; a split weight's
    parts are parameters of their own)."""

    frozen: bool
    elements: int
    updated: int


@dataclass(frozen=True)
class ConfiguredModel:
    """A model under one build of an IPU config: its name, architecture and `config.json`, the config's `settings`
    (its `vars()`) and build, the layout of the config's own split, the model's parameters as that build holds them
    (`frozen`: those that do not train; `sizes`: each one's), how the build runs its pipeline, the micro-batch the
    activations are counted for with each step's cost (None: not counted), how an IPU is costed, the memory each IPU
    keeps in reserve, and the costs of a generation build (None: not one; its micro-batch is then its batch, and its
    steps are costed by it)."""

    model: str
    architecture: Architecture
    config: ModelConfig
    settings: Mapping[str, Any]
    for_inference: bool
    own_layout: Layout
    parameters: Parameters
    frozen: frozenset
    sizes: Mapping[str, ParameterSize]
    execution: Execution
    shape: Optional[InputShape]
    step_costs: Optional[Costs]
    cost_model: CostModel
    reserve_bytes: int
    generation: Optional[GenerationModel] = None

    @property
    def mode(self) -> Mode:
        return Mode.of(self.for_inference)

    @property
    def fitting_bytes(self) -> int:
        """What the reserve leaves of an IPU's memory: a placement fits where every IPU's on-chip bytes are within."""
        return IPU_MEMORY_BYTES - self.reserve_bytes

    def with_steps_per_call(self, steps: int) -> "ConfiguredModel":
        """The same training build running `steps` optimizer steps a host call (`device_iterations`)."""
        time = self.cost_model.time
        cost_model = self.cost_model._replace(time=time._replace(job=time.job._replace(steps_per_call=steps)))
        return replace(self, settings={**self.settings, "device_iterations": steps}, cost_model=cost_model)

    def layout(self, layers_per_ipu: Optional[Sequence[int]] = None) -> Layout:
        """The layout with `layers_per_ipu` (None: the config's)."""
        if layers_per_ipu is None:
            return self.own_layout
        return lay_out(self.model, self.architecture, self.config, self.settings, self.for_inference, layers_per_ipu)

    def first_uses(self, layout: Layout) -> Dict[str, List[FirstUse]]:
        """`{parameter: where each executor using it first uses it}` in `layout`."""
        return first_uses(layout, list(self.parameters.shapes), self.parameters.aliases)

    def loads(self, layout: Layout, stages: Sequence[Stage], uses: Mapping[str, List[FirstUse]]) -> List[IPULoad]:
        """What each IPU of `layout` holds, keeps and computes, its pipeline running `stages`, its parameters first
        used where `uses` says (`first_uses(layout)`)."""
        counts = [[0, 0] for _ in range(layout.ipus)]  # [trained, frozen] parameters of each IPU
        largest = [0] * layout.ipus
        for name, found in uses.items():
            frozen, elements, updated = self.sizes[name]
            for use in found:
                counts[use.ipu][frozen] += elements
                if not frozen and updated > largest[use.ipu]:
                    largest[use.ipu] = updated
        if self.generation is not None:
            parts = [self.generation.load([step for step in layout.forward if step.ipu == ipu])
                     for ipu in range(layout.ipus)]
            return [IPULoad(trained, frozen, most, part.work, part)
                    for (trained, frozen), most, part in zip(counts, largest, parts)]
        works = (ipu_work(layout.ipus, stages, self.step_costs, self.execution) if self.step_costs is not None
                 else [None] * layout.ipus)
        return [IPULoad(trained, frozen, most, work)
                for (trained, frozen), most, work in zip(counts, largest, works)]


def configure(model: str, architecture: Architecture, values: Mapping[str, Any], settings: Mapping[str, Any],
              shapes: Shapes, for_inference: bool, fp32: bool, measure: Optional[Measure], ipu: IPUType,
              reserve: float, calibration: Optional[Calibration] = None,
              generate: Optional[Mapping[str, Any]] = None) -> ConfiguredModel:
    """`architecture`, configured by `values` (its `config.json`), under the build of a config whose `settings` are
    its `vars()`. `shapes` gives its parameters; it is called only once the config's layers are found to fit the
    model, so a wrong `layers_per_ipu` is reported before any weight header is read. `measure`, where given, gives
    the micro-batch and the costs of each step: the activations are counted, and a step is timed on IPUs of type
    `ipu` with the constants of `calibration` (default: the shipped ones). `reserve`: the share of each IPU's memory
    kept for what is not counted. An inference build whose kwargs give `for_generation` is a generation build
    (`estimate.generation`), costed and timed whatever `measure`, for what generate() is called with (`generate`:
    `batch_size`, `num_beams`, `max_length`, `sequence_length`, where given).

    Raises:
        PlacementError: where optimum-graphcore refuses the config for this model.
    """
    config = architecture.config(values, model)
    layout = lay_out(model, architecture, config, settings, for_inference)
    build = generation_build(model, architecture, config, settings, generate or {}) if for_inference else None
    if build is not None:
        shape, step_costs = InputShape(build.batch_size, build.sequence_length or build.max_length,
                                       build.max_length), None
    else:
        shape, step_costs = measure(architecture, config) if measure is not None else (None, None)
    parameters = parallelized(model, architecture, shapes(architecture, config), settings, for_inference)
    _check_layers(model, architecture, config, parameters)
    frozen = _frozen(architecture, config, parameters.shapes)
    serialized = _serialized(architecture, settings, Mode.of(for_inference))
    sizes = {}
    for name in parameters.shapes:
        elements = parameters.elements(name)
        sizes[name] = ParameterSize(name in frozen, elements, -(-elements // serialized.get(name, 1)))
    execution = execution_of(settings, for_inference)
    memory = memory_model(dict(settings), for_inference, fp32)
    time = None
    if shape is not None:
        mode = Mode.of(for_inference)
        first = None if step_costs is None else step_costs.get(layout.forward[0].path)
        job = Job(execution.training, execution.micro_batches, settings[mode.setting("replication_factor")],
                  settings[mode.setting("ipus_per_replica")], shape.micro_batch_size,
                  settings["device_iterations"] if execution.training else 1,
                  0 if first is None else first.input_bytes)
        calibration = calibration or shipped_calibration()
        # the config's model type: `architecture_of()` refuses one of another
        outside = calibration.outside(architecture.model_types[0], product_rows(architecture.inputs, shape))
        time = TimeModel(ipu, job, memory.weight_bytes, calibration, outside)
    generation = None if build is None else GenerationModel(architecture, config, build, memory.weight_bytes)
    return ConfiguredModel(model, architecture, config, settings, for_inference, layout, parameters, frozen, sizes,
                           execution, shape, step_costs, CostModel(memory, time), round(reserve * IPU_MEMORY_BYTES),
                           generation)


def _serialized(architecture: Architecture, settings: Mapping[str, Any], mode: Mode) -> Dict[str, int]:
    """`{parameter: the parts parallelize() serializes it into}`."""
    factor = settings["embedding_serialization_factor"] or 1
    found = {architecture.serialized_embedding: factor, architecture.padded_embedding: factor}
    for step in architecture.steps:
        if isinstance(step, Split) and split_shares(step, settings, mode) is None:
            found[f"{step.path}.weight"] = settings[mode.setting(step.factor)] or 1
    return found


def _check_layers(model: str, architecture: Architecture, config: ModelConfig, parameters: Parameters) -> None:
    """Every layer the config has holds parameters: a checkpoint without one is not this config's."""
    aliases = tuple(alias for name, names in parameters.aliases.items() if name in parameters.shapes
                    for alias in names)
    paths = tuple(layer_paths(architecture, config))
    missing = _layer_without_parameters(paths, (*parameters.shapes, *aliases))
    if missing is not None:
        raise PlacementError(model, f"its checkpoint holds no parameter of `{missing}`, one of the {len(paths)} "
                             "layers its config.json gives it: the checkpoint is not this config's")


@lru_cache(maxsize=64)
def _layer_without_parameters(paths: Tuple[str, ...], names: Tuple[str, ...]) -> Optional[str]:
    """The first of the layers `paths` that holds none of the parameters `names`, if any (the same for every build
    of a model: worked out once)."""
    held = {path for name in names for path in paths_holding(name)}
    return next((path for path in paths if path not in held), None)


def _frozen(architecture: Architecture, config: ModelConfig, names: Iterable[str]) -> frozenset:
    """The parameters of `names` that do not train: under a path the row freezes, the config meeting its condition."""
    if not architecture.frozen:
        return frozenset()
    return frozenset(name for name in names
                     if any((name == path or name.startswith(path + ".")) and config.holds(condition)
                            for path, condition in architecture.frozen.items()))
