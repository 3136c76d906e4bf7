"""`poptorch.options` (Poplar SDK 3.4) as the recorder has it: option objects that keep the state poptorch keeps.

Each option class gets its methods from a table, `{poptorch signature: what the call writes}`:
`"replicationFactor(replication_factor)": option("replication_factor")`. A method binds its arguments to that
signature (a wrong call is a `TypeError`, as in Python), asserts the type of the parameters annotated there (the
ones poptorch asserts, with the same `AssertionError`), writes, and returns the options object. State lives where
poptorch 3.4 keeps it: public options in each object's `_values` (what `toDict()` merges), PopART session options
in `Options._popart.options`, the rest in the same private attributes (`_execution_strategy`,
`_relax_optimizer_checks`, `_module_namescope_enabled`, `_source_location_excludes`, ...).

Nothing here imports torch: `setPartialsType` tells a dtype by its name (`str(torch.half)` is `"torch.float16"`).
Compiling and profiling a model are out of scope; a method poptorch has that is not here raises `AttributeError`.
"""

import ast
import copy
import inspect
import json
import os
from typing import Any, Callable, Dict, Optional, Tuple

from ..sdk.option_lines import code, lines_run
from . import enums
from .enums import AutoStage, CommGroupType, ConnectionType, Liveness, OutputMode, ReductionType, SyncPattern

UNBOUNDED_REPEAT_LOGS = (1 << 64) - 1
DEFAULT_SOURCE_LOCATION_EXCLUDES = ["install/poptorch", "site-packages/torch", "site-packages/poptorch"]
FLOAT_DTYPES = ("torch.float32", "torch.float")  # what `str()` of each spelling of the dtype gives
HALF_DTYPES = ("torch.float16", "torch.half")

Write = Callable[..., None]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


class OptionsDict:
    """poptorch's option store: only the keys given to the constructor can be `set`, each to a value of its
    default's type (else `AssertionError`); `createOrSet` may add keys. Public attributes read and write options;
    private attributes must exist before `_values` does."""

    def __init__(self, **defaults: Any) -> None:
        self._values = defaults

    def set(self, **kwargs: Any) -> None:
        for option, value in kwargs.items():
            _require(option in self._values, f"Invalid option {option}, valid options are {list(self._values)}")
            expected = type(self._values[option])
            _require(
                isinstance(value, expected),
                f"Unexpected type {type(value)} for option {option}. Expected {expected}",
            )
            self._values[option] = value

    def createOrSet(self, **kwargs: Any) -> None:
        for option, value in kwargs.items():
            if option in self._values:
                self.set(**{option: value})
            else:
                self._values[option] = value

    def exists(self, option: str) -> bool:
        return option in self._values

    def deleteIfExists(self, option: str) -> None:
        self._values.pop(option, None)

    def update(self, other: Dict[str, Any]) -> Dict[str, Any]:
        _require(not set(self._values).intersection(other), "Can't merge dictionaries, they have some keys in common")
        other.update(self._values)
        return other

    def toDict(self) -> Dict[str, Any]:
        return self.update({})

    def __call__(self, option: str) -> Any:
        return getattr(self, option)

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_"):
            self.set(**{name: value})
        elif "_values" in self.__dict__ and name not in self.__dict__:
            raise AttributeError(f"Invalid private attribute {name}. Valid attributes: {list(self.__dict__)}")
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values", {})
        if name.startswith("_") or name not in values:
            raise AttributeError(f"Invalid attribute {name}.")
        return values[name]


# --- what a call writes ----------------------------------------------------------------------------------------

def option(key: str, convert: Callable[[Any], Any] = lambda value: value) -> Write:
    """`set` a poptorch option (typed by its default)."""
    return lambda target, value: target.set(**{key: convert(value)})


def created(key: str, convert: Callable[[Any], Any] = lambda value: value) -> Write:
    """`createOrSet` a poptorch option: the key appears in `toDict()` once called."""
    return lambda target, value: target.createOrSet(**{key: convert(value)})


def session(key: str, convert: Callable[[Any], Any] = lambda value: value) -> Write:
    """Set a PopART session option."""
    return lambda target, value: _popart_of(target).set(key, convert(value))


def private(name: str) -> Write:
    """Keep the argument in a private attribute, outside `toDict()`."""
    return lambda target, value: setattr(target, name, value)


def _popart_of(target: Any) -> "_PopartOptions":
    return target._popart if isinstance(target, Options) else target._popart_options


def _method(text: str, write: Write) -> Callable[..., Any]:
    """The method of the poptorch signature `text`, which writes with `write` (given the options object, then one
    argument per parameter, `*args` as one tuple) and returns the options object."""
    function = ast.parse(f"def {text}: pass").body[0]
    arguments = function.args
    defaults = [None] * (len(arguments.args) - len(arguments.defaults)) + list(arguments.defaults)
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    checks = {}
    for argument, default in zip(arguments.args, defaults):
        value = inspect.Parameter.empty if default is None else ast.literal_eval(default)
        parameters.append(inspect.Parameter(argument.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=value))
        if argument.annotation is not None:
            checks[argument.arg] = argument.annotation.id
    if arguments.vararg is not None:
        parameters.append(inspect.Parameter(arguments.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    signature = inspect.Signature(parameters)

    def method(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{function.name}(): {error}") from None  # named, as Python names the function
        bound.apply_defaults()
        target, *values = bound.arguments.values()
        for name, kind in checks.items():
            _require(isinstance(bound.arguments[name], _ANNOTATIONS[kind]),
                     f"{function.name}: {name} must be of type {kind}, got {bound.arguments[name]!r}")
        write(target, *values)
        return target

    method.__name__ = method.__qualname__ = function.name
    method.__signature__ = signature
    return method


def with_methods(table: Dict[str, Write]):
    """A class decorator: adds the methods of `table`."""

    def decorate(cls):
        for text, write in table.items():
            made = _method(text, write)
            setattr(cls, made.__name__, made)
        return cls

    return decorate


# --- the option objects --------------------------------------------------------------------------------------

class ConfigFileError(Exception):
    """`Options.loadFromFile` was given a file whose lines are not Python (poptorch's own error)."""


class _PopartOptions:
    """`Options._Popart`: PopART session options, stored as given (the backend checks them when it compiles)."""

    def __init__(self) -> None:
        self.options: Dict[str, Any] = {"instrumentWithHardwareCycleCounter": False, "rearrangeAnchorsOnHost": False}

    def set(self, key: str, value: Any) -> "_PopartOptions":
        self.options[key] = value
        return self

    def setEngineOptions(self, engine_options: Dict[str, str]) -> "_PopartOptions":
        return self.set("engineOptions", engine_options)

    def setPatterns(self, patterns: Dict[str, bool], level: int = 2) -> "_PopartOptions":
        _require(isinstance(level, int), f"setPatterns: level must be an int, got {level!r}")
        _require(isinstance(patterns, dict), f"setPatterns: patterns must be a dict, got {patterns!r}")
        self.set("patterns_level", level)
        return self.set("patterns", patterns)


def _trace_model(target: Any, trace_model: Any) -> None:
    if trace_model:
        raise ValueError("options.Jit.traceModel(True) is no longer supported")


@with_methods({"traceModel(trace_model)": _trace_model})
class _JitOptions(OptionsDict):
    """`Options.Jit`: nothing left to set in 3.4."""


def _running_statistics_always_float(target: Any, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError("runningStatisticsAlwaysFloat needs to be set to a bool")


def _partials_type(target: Any, dtype: Any) -> None:
    name = str(dtype)
    if name not in FLOAT_DTYPES + HALF_DTYPES:
        raise ValueError("parameter to setPartialsType should be either torch.float or torch.half")
    partials = "float" if name in FLOAT_DTYPES else "half"
    target._popart_options.set("partialsTypeMatMuls", partials)
    target._popart_options.set("convolutionOptions", {"partialsType": partials})


@with_methods({
    "halfFloatCasting(half_float_casting)": lambda target, value: None,  # deprecated: no effect
    "runningStatisticsAlwaysFloat(value)": _running_statistics_always_float,  # deprecated: no effect
    "enableFloatingPointExceptions(enabled: bool)": session("enableFloatingPointChecks"),
    "enableStochasticRounding(enabled)": session("enableStochasticRounding"),
    "setPartialsType(dtype)": _partials_type,
})
class _PrecisionOptions(OptionsDict):
    """`Options.Precision`: numeric options, kept as PopART session options."""

    def __init__(self, popart_options: _PopartOptions) -> None:
        self._popart_options = popart_options
        super().__init__()


def _reduction_type(target: Any, reduction_type: Any) -> None:
    if not isinstance(reduction_type, ReductionType) or reduction_type == ReductionType.NoReduction:
        raise ValueError(
            "accumulationAndReplicationReductionType must be set to poptorch.ReductionType.Mean or "
            "poptorch.ReductionType.Sum"
        )
    target.set(accumulation_and_replication_reduction_type=reduction_type)


@with_methods({
    "gradientAccumulation(gradient_accumulation)": option("gradient_accumulation"),
    "accumulationAndReplicationReductionType(reduction_type)": _reduction_type,
    "setMeanAccumulationAndReplicationReductionStrategy(mean_reduction_strategy)":
        option("meanAccumulationAndReplicationReductionStrategy"),
    "setAutomaticLossScaling(enabled)": session("automaticLossScalingSettings.enabled"),
    "setConvolutionDithering(enabled)": session("convolutionOptions", lambda on: {"enableConvDithering": on}),
})
class _TrainingOptions(OptionsDict):
    """`Options.Training`: gradient accumulation and reduction."""

    def __init__(self, popart_options: _PopartOptions) -> None:
        self._popart_options = popart_options
        super().__init__(
            gradient_accumulation=1,
            accumulation_and_replication_reduction_type=ReductionType.Mean,
            meanAccumulationAndReplicationReductionStrategy=enums.MeanReductionStrategy.Post,
        )


def _process(target: Any, process_id: Any, num_processes: Any) -> None:
    target.set(distributed_process_id=process_id)
    target.set(num_distributed_processes=num_processes)


def _process_from_environment(target: Any, var_num_processes: str, var_process_id: str) -> None:
    target.configureProcessId(int(os.environ.get(var_process_id, "0")), int(os.environ.get(var_num_processes, "1")))


@with_methods({
    "disable()": lambda target: target.set(num_distributed_processes=1, distributed_process_id=0),
    "setEnvVarNames(var_num_processes, var_process_id)": _process_from_environment,
    "configureProcessId(process_id, num_processes)": _process,
})
class _DistributedOptions(OptionsDict):
    """`Options.Distributed`: process id and count, read from OpenMPI's variables when made."""

    def __init__(self) -> None:
        self._gcd_mappings: Dict[Any, Any] = {}
        super().__init__(num_distributed_processes=1, distributed_process_id=0, ipuof_configs={})
        self.setEnvVarNames("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")

    @property
    def processId(self) -> int:
        return self.distributed_process_id

    @property
    def numProcesses(self) -> int:
        return self.num_distributed_processes


def _on_chip(target: Any, use: Any) -> None:
    if use is None:
        target.deleteIfExists("onChip")
    else:
        _require(isinstance(use, bool), f"useOnChipStorage: use must be a bool or None, got {use!r}")
        target.createOrSet(onChip=int(use))


@with_methods({
    "minElementsForOffChip(min_elements: int)": created("minElementsForOffChip"),
    "minElementsForReplicatedTensorSharding(min_elements: int)": created("minElementsForReplicatedTensorSharding"),
    "useOnChipStorage(use=True)": _on_chip,
    "useReplicatedTensorSharding(use: bool = True)": created("useReplicatedTensorSharding", int),
    "useIOTilesToLoad(use: bool = True)": created("useIOTilesToLoad", int),
    "useIOTilesToStore(use: bool = True)": created("useIOTilesToStore", int),
})
class TensorLocationSettings(OptionsDict):
    """Where one class of tensors is stored: only the fields called are in its state, flags as 0/1."""


def _io_tiles(target: Any, num_tiles: int) -> None:
    _require(32 <= num_tiles <= 192 and num_tiles % 2 == 0, "numIOTiles must be an even number between 32 and 192.")
    target.createOrSet(numIOTiles=num_tiles)


def _location(key: str) -> Write:
    return created(key, lambda location: location.toDict())


@with_methods({
    "numIOTiles(num_tiles: int)": _io_tiles,
    "setActivationLocation(location: TensorLocationSettings)": _location("location_activation"),
    "setWeightLocation(location: TensorLocationSettings)": _location("location_weight"),
    "setOptimizerLocation(location: TensorLocationSettings)": _location("location_optimizer"),
    "setAccumulatorLocation(location: TensorLocationSettings)": _location("location_accumulator"),
})
class _TensorLocationOptions(OptionsDict):
    """`Options.TensorLocations`: one `location_*` option per class of tensors, and the IO tiles."""


# --- execution strategies --------------------------------------------------------------------------------------

class Stage:
    """Blocks that run on one IPU; a strategy gives it its stage id (pipelined, sharded) or phase id (phased)."""

    def __init__(self, *block_ids: str) -> None:
        _require(all(isinstance(block, str) for block in block_ids),
                 f"Block IDs are supposed to be strings but got {block_ids}")
        self._blocks = block_ids
        self._stage_id = -1
        self._phase_id = -1
        self._ipu: Optional[int] = None

    @property
    def blocks(self):
        return self._blocks

    def ipu(self, ipu: int) -> "Stage":
        _require(isinstance(ipu, int), f"Stage.ipu: ipu must be an int, got {ipu!r}")
        self._ipu = ipu
        return self


class _DefaultStageManager:
    """Stages blocks while the model is traced, by its `AutoStage` policy."""

    def __init__(self, auto_stage: AutoStage) -> None:
        self._next_id = 1
        self._block_map: Dict[str, Stage] = {}
        self._auto_stage = auto_stage


class _ExplicitStageManager:
    """Stages blocks as the stages given to the strategy say."""

    def __init__(self, block_map: Dict[str, Stage]) -> None:
        self._block_map = block_map


class _IExecutionStrategy:
    def __init__(self, stages_manager: Any, block_map: Dict[str, Stage]) -> None:
        self._block_map = block_map
        self._stages_manager = stages_manager

    def stage(self, block_id: str) -> Stage:
        _require(block_id in self._block_map, f"Unknown block {block_id}")
        return self._block_map[block_id]

    def backendOptions(self) -> Dict[str, Any]:
        return {}


def _add_stage(block_map: Dict[str, Stage], stage: Stage) -> None:
    for block in stage.blocks:
        _require(block not in block_map, f"{block} associated with more than one stage")
        block_map[block] = stage


class PipelinedExecution(_IExecutionStrategy):
    """Pipelined stages: one `AutoStage` policy (default `SameAsIpu`), or stages (`Stage`s, block ids, lists)."""

    def __init__(self, *args: Any) -> None:
        block_map: Dict[str, Stage] = {}
        if len(args) == 1 and isinstance(args[0], AutoStage):
            auto_stage = args[0]
        else:
            auto_stage = AutoStage.SameAsIpu
            for stage_id, arg in enumerate(args):
                if isinstance(arg, Stage):
                    stage = arg
                elif isinstance(arg, str):
                    stage = Stage(arg)
                else:
                    _require(all(isinstance(block, str) for block in arg), f"Not block ids: {arg!r}")
                    stage = Stage(*arg)
                stage._stage_id = stage_id
                _add_stage(block_map, stage)
        manager = _ExplicitStageManager(block_map) if block_map else _DefaultStageManager(auto_stage)
        super().__init__(manager, block_map)

    def backendOptions(self) -> Dict[str, Any]:
        return {"execution_mode": 0}


class ShardedExecution(PipelinedExecution):
    """The stages run one after the other; same arguments as `PipelinedExecution`."""

    def backendOptions(self) -> Dict[str, Any]:
        return {"execution_mode": 1}


class Phase:
    """Stages that run in parallel: `Stage`s, or block ids that make one stage."""

    def __init__(self, *arg: Any) -> None:
        if all(isinstance(element, Stage) for element in arg):
            self.stages = arg
        else:
            _require(all(isinstance(element, str) for element in arg),
                     f"All arguments must either be block IDs (strings) or Stages: {[type(e) for e in arg]}")
            self.stages = [Stage(*arg)]

    def stage(self, idx: int) -> Stage:
        return self.stages[idx]

    def ipus(self, *ipus: int) -> None:
        _require(len(ipus) == len(self.stages),
                 f"Phase contains {len(self.stages)} stages but you provided {len(ipus)} ipus")
        for stage, ipu in zip(self.stages, ipus):
            stage.ipu(ipu)


class _IPhasedExecution(_IExecutionStrategy):
    """Execution in phases: `Phase`s, lists of `Stage`s or lists of block ids (one stage each)."""

    def __init__(self, *phases: Any) -> None:
        self._tensors_liveness = Liveness.AlwaysLive
        self._separate_backward_phase = False
        self._phases = []
        block_map: Dict[str, Stage] = {}
        for phase_id, arg in enumerate(phases):
            phase = arg if isinstance(arg, Phase) else Phase(*(arg if isinstance(arg, list) else [arg]))
            self._phases.append(phase)
            for stage in phase.stages:
                stage._phase_id = phase_id
                _add_stage(block_map, stage)
        _require(bool(phases), "There is currently no AutoStage for PhasedExecution, please explicitly specify the "
                 "phases")
        super().__init__(_ExplicitStageManager(block_map), block_map)

    def phase(self, phase: int) -> Phase:
        _require(isinstance(phase, int) and phase >= 0, "Phases are identified by positive integers")
        return self._phases[phase]

    def useSeparateBackwardPhase(self, use: bool = True) -> "_IPhasedExecution":
        _require(isinstance(use, bool), f"useSeparateBackwardPhase: use must be a bool, got {use!r}")
        self._separate_backward_phase = use
        return self

    def backendOptions(self) -> Dict[str, Any]:
        return {
            "execution_mode": 2,
            "separate_backward_phase": self._separate_backward_phase,
            "tensors_liveness": self._tensors_liveness.value,
        }


class ParallelPhasedExecution(_IPhasedExecution):
    """Phases alternate between two groups of IPUs."""

    def backendOptions(self) -> Dict[str, Any]:
        return {**super().backendOptions(), "serial_phases_execution": False}

    def sendTensorsOffChipAfterFwd(self, off_chip: bool = True) -> "ParallelPhasedExecution":
        _require(isinstance(off_chip, bool), f"sendTensorsOffChipAfterFwd: off_chip must be a bool, got {off_chip!r}")
        self._tensors_liveness = Liveness.OffChipAfterFwd if off_chip else Liveness.AlwaysLive
        return self


class SerialPhasedExecution(_IPhasedExecution):
    """All phases run one after the other on one group of IPUs."""

    def backendOptions(self) -> Dict[str, Any]:
        return {**super().backendOptions(), "serial_phases_execution": True}

    def setTensorsLiveness(self, liveness: Liveness) -> "SerialPhasedExecution":
        _require(isinstance(liveness, Liveness), f"setTensorsLiveness: not a poptorch.Liveness: {liveness!r}")
        self._tensors_liveness = liveness
        return self


# --- Options ----------------------------------------------------------------------------------------------------

class ProgressBar:
    """Stands in for the compilation progress callback `toDict()` hands to the compiler."""

    def __call__(self, progress: int, total: int) -> None:
        """Draws nothing: the recorder never compiles."""


def _executable_caching(target: "Options", path: Optional[str]) -> None:
    if path is None:
        target._Popart.set("enableEngineCaching", False)
    else:
        target._Popart.set("cachePath", path)
        target._Popart.set("enableEngineCaching", True)


def _memory_proportions(target: "Options", available_memory_proportion: Dict[str, float]) -> None:
    proportions = {}
    for key, proportion in available_memory_proportion.items():
        _require(key.startswith("IPU"), 'Available memory proportions are expected to be in a dictionary of '
                 f'{{"IPU0": 0.5}} where the 0 in IPU is the index of the IPU. Invalid key: {key}')
        proportions[int(key[3:])] = proportion
    target.createOrSet(available_memory_proportion=proportions)


def _input_replica_grouping(target: "Options", input_group_size: int, input_group_type: CommGroupType) -> None:
    if input_group_type == CommGroupType.NoGrouping:
        input_group_size, input_group_type = 1, CommGroupType.Consecutive
    if input_group_type == CommGroupType.All:
        raise ValueError("input_group_type cannot be All")
    if target.replication_factor < input_group_size:
        raise ValueError("input_group_size cannot be larger than replication_factor")
    if target.replication_factor % input_group_size:
        raise ValueError("input_group_size must be a factor of replication_factor")
    target.set(input_group_size=input_group_size)
    target.set(input_cgt=input_group_type)


def _output_mode(target: "Options", output_mode: OutputMode, output_return_period: Optional[int]) -> None:
    if output_mode == OutputMode.EveryN:
        _require(bool(output_return_period) and output_return_period > 0,
                 "EveryN anchor must have output_return_period set to valid positive integer")
    target.set(output_mode=output_mode.value, output_return_period=output_return_period or 1)


def _offline_target(target: "Options", ipu_version: int) -> None:
    target.connectionType(ConnectionType.Never)
    target.createOrSet(ipu_version=ipu_version)


def _profiling(target: "Options", profile_dir: Optional[str]) -> None:
    engine_options = target._popart.options.get("engineOptions", {})
    engine_options.update({"debug.allowOutOfMemory": "true", "autoReport.directory": profile_dir or ".",
                           "autoReport.all": "true"})
    target._popart.setEngineOptions(engine_options)


def _append_excludes(target: "Options", excludes: Tuple[str, ...]) -> None:
    target._source_location_excludes += excludes


@with_methods({
    "autoRoundNumIPUs(auto_round_num_ipus=True)": option("auto_round_num_ipus"),
    "deviceIterations(device_iterations)": option("device_iterations"),
    "replicationFactor(replication_factor)": option("replication_factor"),
    "inputReplicaGrouping(input_group_size, input_group_type)": _input_replica_grouping,
    "broadcastBuffers(broadcast_buffers=True)": option("broadcast_buffers"),
    "logDir(log_dir)": option("log_dir"),
    "maxRepeatLogs(max_lines)": option(
        "max_repeat_logs", lambda lines: UNBOUNDED_REPEAT_LOGS if lines is None else lines
    ),
    "modelName(name)": created("model_name"),
    "useIpuModel(use_model)": created("use_model"),
    "useIpuId(ipu_id: int)": created("ipu_id"),
    "useOfflineIpuTarget(ipu_version=2)": _offline_target,
    "connectionType(connection_type: ConnectionType)": option("connection_type", lambda member: member.value),
    "syncPattern(sync_pattern: SyncPattern)": option("sync_pattern", lambda member: member.value),
    "outputMode(output_mode: OutputMode, output_return_period=None)": _output_mode,
    "randomSeed(random_seed: int)": created("random_seed"),  # poptorch also seeds torch: no option state
    "setAvailableMemoryProportion(available_memory_proportion)": _memory_proportions,
    "setExecutionStrategy(strategy: _IExecutionStrategy)": private("_execution_strategy"),
    "enableExecutableCaching(path)": _executable_caching,
    "enableStableNorm(enabled)": session("enableStableNorm"),
    "enableSyntheticData(enabled)": session("syntheticDataMode", lambda enabled: 2 if enabled else 0),
    "logCycleCount(log_cycle_count)": session("instrumentWithHardwareCycleCounter"),
    "updatableNamedBuffers(buffers)": session("updatableNamedBuffers"),
    "enableProfiling(profile_dir=None)": _profiling,
    "relaxOptimizerAttributesChecks(relax=True)": private("_relax_optimizer_checks"),
    "showCompilationProgressBar(show=True)": private("_show_compilation_progress_bar"),
    "disableModuleNamescope()": lambda target: setattr(target, "_module_namescope_enabled", False),
    "sourceLocationExcludes(excludes)": private("_source_location_excludes"),
    "appendToLocationExcludes(*excludes)": _append_excludes,
})
class Options(OptionsDict):
    """`poptorch.Options`: everything that controls how a model is compiled and run."""

    def __init__(self) -> None:
        self._jit = _JitOptions()
        self._popart = _PopartOptions()
        self._graphProcessing = _PrecisionOptions(self._popart)
        self._training = _TrainingOptions(self._popart)
        self._distributed = _DistributedOptions()
        self._tensor_locations = _TensorLocationOptions()
        self._execution_strategy: _IExecutionStrategy = PipelinedExecution()
        self._source_location_excludes = copy.copy(DEFAULT_SOURCE_LOCATION_EXCLUDES)
        self._progress_bar = ProgressBar()
        self._relax_optimizer_checks = False
        self._show_compilation_progress_bar = True
        self._module_namescope_enabled = True
        super().__init__(
            replication_factor=1, input_group_size=1, input_cgt=CommGroupType.Consecutive, broadcast_buffers=True,
            device_iterations=1, log_dir=".", max_repeat_logs=4, auto_round_num_ipus=False, anchored_tensors={},
            output_mode=OutputMode.Default.value, output_return_period=1, connection_type=ConnectionType.Always.value,
            sync_pattern=SyncPattern.Full.value, available_memory_proportion={},
        )
        cache_dir = os.environ.get("POPTORCH_CACHE_DIR", "")
        if cache_dir:
            self.enableExecutableCaching(cache_dir)
        self.from_json(os.environ.get("POPTORCH_DEFAULT_OPTIONS", "{}"))

    @property
    def TensorLocations(self) -> _TensorLocationOptions:
        return self._tensor_locations

    @property
    def Distributed(self) -> _DistributedOptions:
        return self._distributed

    @property
    def Jit(self) -> _JitOptions:
        return self._jit

    @property
    def Precision(self) -> _PrecisionOptions:
        return self._graphProcessing

    @property
    def Training(self) -> _TrainingOptions:
        return self._training

    @property
    def _Popart(self) -> _PopartOptions:
        return self._popart

    def from_json(self, string: str) -> "Options":
        """Calls `{"Accessor.path": argument or [arguments]}`; `"Enum.Member"` strings become poptorch enum members."""
        for accessor, argument in json.loads(string).items():
            target: Any = self
            for name in accessor.split("."):
                target = getattr(target, name)
            if isinstance(argument, str) and argument.count(".") == 1:
                enum_name, member = argument.split(".")
                argument = getattr(enums.ENUMS.get(enum_name), member, argument)
            if isinstance(argument, list):
                target(*argument)
            else:
                target(argument)
        return self

    def loadFromFile(self, filepath: str) -> "Options":
        """Runs the option calls of the file `filepath` on these options, as poptorch 3.4 does: each line that is
        neither blank nor a comment, prefixed with `options.`, all run as one piece of Python with `poptorch` and
        the options in scope (see `option_files`); one that does not compile is a `ConfigFileError`."""
        import poptorch  # as poptorch's own reader does: the poptorch in use, the recorder under `sdk_modules()`

        with open(filepath) as file:  # in the locale's encoding, as poptorch opens it
            text = code(lines_run(file))
        try:
            compiled = compile(text, "<string>", "exec", dont_inherit=True)
        except SyntaxError as error:
            raise ConfigFileError(f"{type(error).__name__} at line {error.lineno} of {os.path.basename(filepath)}: "
                                  f"{error.args[0]}\n> {error.text}") from None
        exec(compiled, {}, {"poptorch": poptorch, "options": self})
        return self

    def anchorTensor(self, short_name: str, long_name: str, output_mode: Optional[OutputMode] = None,
                     output_return_period: Optional[int] = 1) -> None:
        if output_mode != OutputMode.EveryN:
            output_return_period = 1
        self.anchored_tensors[short_name] = [long_name, output_mode is None, output_mode, output_return_period]

    def defaultOutputMode(self) -> bool:
        return self.output_mode == OutputMode.Default

    def toDict(self) -> Dict[str, Any]:
        """Every option the backend gets: the strategy's, PopART's, then Options', Training's, Distributed's and
        TensorLocations' own."""
        _require(not self.defaultOutputMode(), "An output mode must be picked before serialisation")
        merged = self._execution_strategy.backendOptions()
        merged.update(self._popart.options)
        for part in (self, self._training, self._distributed, self._tensor_locations):
            merged = OptionsDict.update(part, merged)
        if self._show_compilation_progress_bar:
            merged["compilation_progress_bar_fn"] = self._progress_bar
        return merged

    def clone(self) -> "Options":
        return copy.deepcopy(self)


# the types a signature's annotations name (looked up when a method is called: some are defined after the tables)
_ANNOTATIONS = {
    "int": int, "bool": bool, "ConnectionType": ConnectionType, "SyncPattern": SyncPattern, "OutputMode": OutputMode,
    "TensorLocationSettings": TensorLocationSettings, "_IExecutionStrategy": _IExecutionStrategy,
}
