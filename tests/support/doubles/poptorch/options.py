"""``poptorch.options`` (Poplar SDK 3.4): the option objects and execution strategies.

Every method keeps the real name, parameters and defaults, validates what the real
one validates (with the same exception type) and leaves the same state behind.
Compiling, tracing and profiling are out of scope: such methods do not exist here.
"""
import copy
import json
import os
from typing import Dict, List, Optional, Set, Union

import torch

from . import _options_config, enums
from ._options_impl import OptionsDict, ProgressBar, default_source_location_excludes

BlockId = str

_UNBOUNDED_REPEAT_LOGS = (1 << 64) - 1


def _require(condition, message):
    if not condition:
        raise AssertionError(message)


class Attribute:
    """``with poptorch.Attribute(**{attribute: {key: value}}):`` sets attributes on the ops traced inside the block.

    On CPU the attribute ops do nothing; the double keeps, like the real class, the attributes in force in
    ``Attribute._current_attrs`` and restores the previous ones on exit.
    """

    _current_attrs = {}

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._saved = {}

    def __enter__(self):
        self._saved = copy.deepcopy(Attribute._current_attrs)
        for attr, dictionary in self._kwargs.items():
            Attribute._current_attrs.setdefault(attr, {}).update(dictionary)

    def __exit__(self, type, value, traceback):
        Attribute._current_attrs = self._saved


class ConfigFileError(Exception):
    """Raised by the real ``Options.loadFromFile`` for a malformed file."""


class _JitOptions(OptionsDict):
    """``Options.Jit``: PyTorch JIT options (none left in 3.4)."""

    def traceModel(self, trace_model: bool) -> "_JitOptions":
        if trace_model:
            raise ValueError(f"Jit.traceModel({trace_model!r}): tracing is no longer supported, only False is allowed")
        return self


class _PopartOptions:
    """``Options._Popart``: raw ``popart.SessionOptions`` keys and values, unchecked until compilation; frozen with
    the ``Options`` that hold them."""

    def __init__(self) -> None:
        self._is_frozen = False
        self.options = {"instrumentWithHardwareCycleCounter": False, "rearrangeAnchorsOnHost": False}

    def __deepcopy__(self, memory):
        copied = _PopartOptions()
        memory[id(self)] = copied
        copied.options = copy.deepcopy(self.options, memory)
        return copied

    def checkIsFrozen(self, option=None):
        if option != "_is_frozen" and self._is_frozen:
            raise AttributeError("Can't modify frozen Options")

    def set(self, key: str, value: Union[int, float, str, List[str], Set[str]]) -> "_PopartOptions":
        """Stores any value, as the real one does; the backend refuses the types it cannot take at compile time
        (``poptorch_core._parse_session_options``)."""
        self.checkIsFrozen()
        self.options[key] = value
        return self

    def setEngineOptions(self, engine_options: Dict[str, str]) -> "_PopartOptions":
        return self.set("engineOptions", engine_options)

    def setPatterns(self, patterns: Dict[str, bool], level: int = 2) -> "_PopartOptions":
        _require(isinstance(level, int), f"setPatterns level must be an int (a popart.PatternsLevel), got {level!r}")
        _require(isinstance(patterns, dict), f"setPatterns patterns must be a dict of name to bool, got {patterns!r}")
        self.set("patterns_level", level)
        return self.set("patterns", patterns)


class _PrecisionOptions(OptionsDict):
    """``Options.Precision``: numeric options, all stored as PopART options."""

    def __init__(self, popart_options: _PopartOptions) -> None:
        self._popart_options = popart_options
        super().__init__()

    def enableFloatingPointExceptions(self, enabled: bool) -> "_PrecisionOptions":
        _require(isinstance(enabled, bool), f"enableFloatingPointExceptions needs a bool, got {enabled!r}")
        self._popart_options.set("enableFloatingPointChecks", enabled)
        return self

    def enableStochasticRounding(self, enabled: bool) -> "_PrecisionOptions":
        self._popart_options.set("enableStochasticRounding", enabled)
        return self

    def setPartialsType(self, dtype: torch.dtype) -> "_PrecisionOptions":
        if dtype in (torch.float, torch.float32):
            partials = "float"
        elif dtype in (torch.half, torch.float16):
            partials = "half"
        else:
            raise ValueError(f"setPartialsType got {dtype!r}; allowed: torch.float (float32) or torch.half (float16)")
        self._popart_options.set("partialsTypeMatMuls", partials)
        self._popart_options.set("convolutionOptions", {"partialsType": partials})
        return self


class _TrainingOptions(OptionsDict):
    """``Options.Training``: gradient accumulation and reduction."""

    def __init__(self, popart_options: _PopartOptions) -> None:
        self._popart_options = popart_options
        super().__init__(
            gradient_accumulation=1,
            accumulation_and_replication_reduction_type=enums.ReductionType.Mean,
            meanAccumulationAndReplicationReductionStrategy=enums.MeanReductionStrategy.Post,
        )

    def gradientAccumulation(self, gradient_accumulation: int) -> "_TrainingOptions":
        self.set(gradient_accumulation=gradient_accumulation)
        return self

    def accumulationAndReplicationReductionType(self, reduction_type: "enums.ReductionType") -> "_TrainingOptions":
        if not isinstance(reduction_type, enums.ReductionType) or reduction_type == enums.ReductionType.NoReduction:
            raise ValueError(
                f"accumulationAndReplicationReductionType got {reduction_type!r}; "
                "allowed: poptorch.ReductionType.Mean or poptorch.ReductionType.Sum"
            )
        self.set(accumulation_and_replication_reduction_type=reduction_type)
        return self

    def setMeanAccumulationAndReplicationReductionStrategy(
        self, mean_reduction_strategy: "enums.MeanReductionStrategy"
    ) -> "_TrainingOptions":
        self.set(meanAccumulationAndReplicationReductionStrategy=mean_reduction_strategy)
        return self

    def setAutomaticLossScaling(self, enabled: bool) -> "_TrainingOptions":
        self._popart_options.set("automaticLossScalingSettings.enabled", enabled)
        return self

    def setConvolutionDithering(self, enabled: bool) -> "_TrainingOptions":
        self._popart_options.set("convolutionOptions", {"enableConvDithering": enabled})
        return self


class _DistributedOptions(OptionsDict):
    """``Options.Distributed``: process id and count, read from OpenMPI variables at construction."""

    def __init__(self) -> None:
        super().__init__(num_distributed_processes=1, distributed_process_id=0, ipuof_configs={})
        self.setEnvVarNames("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")

    def disable(self) -> "_DistributedOptions":
        self.set(num_distributed_processes=1, distributed_process_id=0)
        return self

    def setEnvVarNames(self, var_num_processes: str, var_process_id: str) -> "_DistributedOptions":
        return self.configureProcessId(
            int(os.environ.get(var_process_id, "0")), int(os.environ.get(var_num_processes, "1"))
        )

    def configureProcessId(self, process_id: int, num_processes: int) -> "_DistributedOptions":
        self.set(distributed_process_id=process_id)
        self.set(num_distributed_processes=num_processes)
        return self

    @property
    def processId(self) -> int:
        return self.distributed_process_id

    @property
    def numProcesses(self) -> int:
        return self.num_distributed_processes


class TensorLocationSettings(OptionsDict):
    """Where one class of tensors is stored; every setter returns ``self``. Flags are stored as 0/1."""

    def minElementsForOffChip(self, min_elements: int) -> "TensorLocationSettings":
        _require(isinstance(min_elements, int), f"minElementsForOffChip needs an int, got {min_elements!r}")
        self.createOrSet(minElementsForOffChip=min_elements)
        return self

    def minElementsForReplicatedTensorSharding(self, min_elements: int) -> "TensorLocationSettings":
        _require(
            isinstance(min_elements, int), f"minElementsForReplicatedTensorSharding needs an int, got {min_elements!r}"
        )
        self.createOrSet(minElementsForReplicatedTensorSharding=min_elements)
        return self

    def useOnChipStorage(self, use: bool = True) -> "TensorLocationSettings":
        if use is None:
            self.deleteIfExists("onChip")
            return self
        _require(isinstance(use, bool), f"useOnChipStorage needs a bool or None, got {use!r}")
        self.createOrSet(onChip=int(use))
        return self

    def useReplicatedTensorSharding(self, use: bool = True) -> "TensorLocationSettings":
        _require(isinstance(use, bool), f"useReplicatedTensorSharding needs a bool, got {use!r}")
        self.createOrSet(useReplicatedTensorSharding=int(use))
        return self

    def useIOTilesToLoad(self, use: bool = True) -> "TensorLocationSettings":
        _require(isinstance(use, bool), f"useIOTilesToLoad needs a bool, got {use!r}")
        self.createOrSet(useIOTilesToLoad=int(use))
        return self

    def useIOTilesToStore(self, use: bool = True) -> "TensorLocationSettings":
        _require(isinstance(use, bool), f"useIOTilesToStore needs a bool, got {use!r}")
        self.createOrSet(useIOTilesToStore=int(use))
        return self


class _TensorLocationOptions(OptionsDict):
    """``Options.TensorLocations``: one ``location_*`` dict per tensor class, plus IO tiles."""

    def numIOTiles(self, num_tiles: int) -> "_TensorLocationOptions":
        _require(
            isinstance(num_tiles, int) and 32 <= num_tiles <= 192 and num_tiles % 2 == 0,
            f"numIOTiles got {num_tiles!r}; allowed: an even int between 32 and 192",
        )
        self.createOrSet(numIOTiles=num_tiles)
        return self

    def _setLocation(self, option, method, location):
        _require(
            isinstance(location, TensorLocationSettings),
            f"{method} needs a poptorch.TensorLocationSettings, got {location!r}",
        )
        self.createOrSet(**{option: location.toDict()})
        return self

    def setActivationLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        return self._setLocation("location_activation", "setActivationLocation", location)

    def setWeightLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        return self._setLocation("location_weight", "setWeightLocation", location)

    def setOptimizerLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        return self._setLocation("location_optimizer", "setOptimizerLocation", location)

    def setAccumulatorLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        return self._setLocation("location_accumulator", "setAccumulatorLocation", location)


class Stage:
    """One or more blocks that run on one IPU."""

    def __init__(self, *block_ids: BlockId) -> None:
        _require(all(isinstance(block, str) for block in block_ids), f"Block ids must be strings, got {block_ids!r}")
        self._blocks = block_ids
        self._stage_id = -1
        self._phase_id = -1
        self._ipu = None

    @property
    def blocks(self) -> List[BlockId]:
        return self._blocks

    def ipu(self, ipu: int) -> "Stage":
        _require(isinstance(ipu, int), f"Stage.ipu needs an int, got {ipu!r}")
        self._ipu = ipu
        return self


class _DefaultStageManager:
    """Holds the ``AutoStage`` policy that gives stage ids to blocks while tracing."""

    def __init__(self, auto_stage: "enums.AutoStage") -> None:
        self._auto_stage = auto_stage


class _ExplicitStageManager:
    """Stage ids fixed by the stages passed to the strategy."""

    def __init__(self, block_map: Dict[BlockId, Stage]) -> None:
        self._block_map = block_map


class _IExecutionStrategy:
    """Base of the execution strategies accepted by ``Options.setExecutionStrategy``."""

    def __init__(self, stages_manager, block_map):
        self._block_map = block_map
        self._stages_manager = stages_manager

    def stage(self, block_id):
        _require(block_id in self._block_map, f"Unknown block {block_id!r}; known blocks: {list(self._block_map)}")
        return self._block_map[block_id]

    def backendOptions(self):
        return {}


class PipelinedExecution(_IExecutionStrategy):
    """Pipeline the stages: either one ``AutoStage`` policy or explicit stages / block ids."""

    def __init__(self, *args):
        auto_stage = enums.AutoStage.SameAsIpu
        block_map = {}
        if len(args) == 1 and isinstance(args[0], enums.AutoStage):
            auto_stage = args[0]
        else:
            for stage_id, arg in enumerate(args):
                if isinstance(arg, Stage):
                    stage = arg
                elif isinstance(arg, str):
                    stage = Stage(arg)
                else:
                    _require(
                        all(isinstance(block, str) for block in arg),
                        f"Stage {stage_id} must hold block ids (strings), got {arg!r}",
                    )
                    stage = Stage(*arg)
                stage._stage_id = stage_id
                for block in stage.blocks:
                    _require(block not in block_map, f"Block {block!r} is associated with more than one stage")
                    block_map[block] = stage
        manager = _ExplicitStageManager(block_map) if block_map else _DefaultStageManager(auto_stage)
        super().__init__(manager, block_map)

    def backendOptions(self):
        return {"execution_mode": 0}


class ShardedExecution(PipelinedExecution):
    """Run the stages one after the other (sharding), same arguments as ``PipelinedExecution``."""

    def backendOptions(self):
        return {"execution_mode": 1}


class Phase:
    """Stages that run in parallel in one execution phase: ``Stage`` objects, or block ids making one stage."""

    def __init__(self, *arg: Union[BlockId, Stage]):
        if all(isinstance(stage, Stage) for stage in arg):
            self.stages = arg
        else:
            _require(
                all(isinstance(block, str) for block in arg),
                f"A phase takes block ids (strings) or Stages, got {[type(item) for item in arg]}",
            )
            self.stages = [Stage(*arg)]

    def stage(self, idx):
        return self.stages[idx]

    def ipus(self, *ipus):
        _require(
            len(ipus) == len(self.stages), f"The phase has {len(self.stages)} stages but {len(ipus)} IPUs were given"
        )
        for stage, ipu in zip(self.stages, ipus):
            stage.ipu(ipu)


class _IPhasedExecution(_IExecutionStrategy):
    """Run the blocks in phases: each argument a ``Phase``, a list of ``Stage`` or a list of block ids (one stage)."""

    def __init__(self, *phases: Union[Phase, List[Stage], List[BlockId]]):
        self._tensors_liveness = enums.Liveness.AlwaysLive
        self._separate_backward_phase = False
        self._phases = []
        block_map = {}
        for phase_id, arg in enumerate(phases):
            if isinstance(arg, Phase):
                phase = arg
            else:
                phase = Phase(*(arg if isinstance(arg, list) else [arg]))
            self._phases.append(phase)
            for stage in phase.stages:
                stage._phase_id = phase_id
                for block in stage.blocks:
                    _require(block not in block_map, f"Block {block!r} is associated with more than one stage")
                    block_map[block] = stage
        _require(phases, "Phased execution has no AutoStage: give the phases explicitly")
        super().__init__(_ExplicitStageManager(block_map), block_map)

    def phase(self, phase: int) -> Phase:
        _require(isinstance(phase, int) and phase >= 0, f"Phases are numbered from 0, got {phase!r}")
        return self._phases[phase]

    def useSeparateBackwardPhase(self, use: bool = True):
        _require(isinstance(use, bool), f"useSeparateBackwardPhase needs a bool, got {use!r}")
        self._separate_backward_phase = use
        return self

    def backendOptions(self) -> Dict[str, Union[int, bool]]:
        return {
            "execution_mode": 2,
            "separate_backward_phase": self._separate_backward_phase,
            "tensors_liveness": self._tensors_liveness.value,
        }


class ParallelPhasedExecution(_IPhasedExecution):
    """Phases alternate between two groups of IPUs."""

    def backendOptions(self) -> Dict[str, Union[int, bool]]:
        return {**super().backendOptions(), "serial_phases_execution": False}

    def sendTensorsOffChipAfterFwd(self, off_chip: bool = True) -> "ParallelPhasedExecution":
        _require(isinstance(off_chip, bool), f"sendTensorsOffChipAfterFwd needs a bool, got {off_chip!r}")
        self._tensors_liveness = enums.Liveness.OffChipAfterFwd if off_chip else enums.Liveness.AlwaysLive
        return self


class SerialPhasedExecution(_IPhasedExecution):
    """Every phase runs on the same group of IPUs, one after the other."""

    def setTensorsLiveness(self, liveness: "enums.Liveness") -> "SerialPhasedExecution":
        _require(
            isinstance(liveness, enums.Liveness), f"setTensorsLiveness needs a poptorch.Liveness, got {liveness!r}"
        )
        self._tensors_liveness = liveness
        return self

    def backendOptions(self) -> Dict[str, Union[int, bool]]:
        return {**super().backendOptions(), "serial_phases_execution": True}


class Options(OptionsDict):
    """``poptorch.Options``: everything that controls how a model is compiled and run."""

    def __init__(self) -> None:
        self._jit = _JitOptions()
        self._popart = _PopartOptions()
        self._graphProcessing = _PrecisionOptions(self._popart)
        self._training = _TrainingOptions(self._popart)
        self._distributed = _DistributedOptions()
        self._tensor_locations = _TensorLocationOptions()
        self._execution_strategy = PipelinedExecution()
        self._source_location_excludes = copy.copy(default_source_location_excludes)
        self._progress_bar = ProgressBar()
        self.relaxOptimizerAttributesChecks(False)
        self.showCompilationProgressBar(True)
        self._module_namescope_enabled = True
        super().__init__(
            replication_factor=1,
            input_group_size=1,
            input_cgt=enums.CommGroupType.Consecutive,
            broadcast_buffers=True,
            device_iterations=1,
            log_dir=".",
            max_repeat_logs=4,
            auto_round_num_ipus=False,
            anchored_tensors={},
            output_mode=enums.OutputMode.Default.value,
            output_return_period=1,
            connection_type=enums.ConnectionType.Always.value,
            sync_pattern=enums.SyncPattern.Full.value,
            available_memory_proportion={},
        )
        cache_dir = os.environ.get("POPTORCH_CACHE_DIR", "")
        if cache_dir:
            self.enableExecutableCaching(cache_dir)
        self.from_json(os.environ.get("POPTORCH_DEFAULT_OPTIONS", "{}"))

    def from_json(self, string: str):
        """Apply ``{"Accessor.path": argument or [arguments]}``; ``"Enum.Member"`` strings become poptorch enums."""
        for accessor, argument in json.loads(string).items():
            target = self
            for name in accessor.split("."):
                target = getattr(target, name)
            if isinstance(argument, str) and "." in argument:
                enum_name, _, member = argument.partition(".")
                enum_class = getattr(enums, enum_name, None)
                if enum_class is not None and member in enum_class.__members__:
                    argument = enum_class[member]
            if isinstance(argument, list):
                target(*argument)
            else:
                target(argument)
        return self

    def loadFromFile(self, filepath: str) -> "Options":
        """Runs the option calls of a config file, one a line, written without the ``options.`` prefix."""
        _options_config.parseAndSetOptions(self, filepath)
        return self

    def sourceLocationExcludes(self, excludes: List[str]) -> "Options":
        self._source_location_excludes = excludes
        return self

    def appendToLocationExcludes(self, *excludes: str) -> "Options":
        self._source_location_excludes += excludes
        return self

    def showCompilationProgressBar(self, show: bool = True) -> "Options":
        self._show_compilation_progress_bar = show
        return self

    def relaxOptimizerAttributesChecks(self, relax: bool = True) -> "Options":
        self._relax_optimizer_checks = relax
        return self

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

    def autoRoundNumIPUs(self, auto_round_num_ipus: bool = True) -> "Options":
        self.set(auto_round_num_ipus=auto_round_num_ipus)
        return self

    def deviceIterations(self, device_iterations: int) -> "Options":
        self.set(device_iterations=device_iterations)
        return self

    def setExecutionStrategy(self, strategy: _IExecutionStrategy) -> "Options":
        _require(
            isinstance(strategy, _IExecutionStrategy),
            "setExecutionStrategy needs an execution strategy (PipelinedExecution, ShardedExecution, ...), "
            f"got {strategy!r}",
        )
        self._execution_strategy = strategy
        return self

    def setAvailableMemoryProportion(self, available_memory_proportion: Dict[str, float]):
        proportions = {}
        for key, proportion in available_memory_proportion.items():
            _require(
                key.startswith("IPU"),
                f"setAvailableMemoryProportion key {key!r} (value {proportion!r}) is invalid; "
                'keys must be "IPU<n>", e.g. {"IPU0": 0.5}',
            )
            proportions[int(key[3:])] = proportion
        self.createOrSet(available_memory_proportion=proportions)
        return self

    def replicationFactor(self, replication_factor: int) -> "Options":
        self.set(replication_factor=replication_factor)
        return self

    def inputReplicaGrouping(self, input_group_size: int, input_group_type: "enums.CommGroupType") -> "Options":
        if input_group_type == enums.CommGroupType.NoGrouping:
            input_group_size = 1
            input_group_type = enums.CommGroupType.Consecutive
        if input_group_type == enums.CommGroupType.All:
            raise ValueError("inputReplicaGrouping input_group_type cannot be CommGroupType.All")
        if self.replication_factor < input_group_size or self.replication_factor % input_group_size:
            raise ValueError(
                f"inputReplicaGrouping input_group_size={input_group_size} must divide "
                f"replication_factor={self.replication_factor}"
            )
        self.set(input_group_size=input_group_size)
        self.set(input_cgt=input_group_type)
        return self

    def broadcastBuffers(self, broadcast_buffers: bool = True):
        self.set(broadcast_buffers=broadcast_buffers)
        return self

    def logDir(self, log_dir: str) -> "Options":
        self.set(log_dir=log_dir)
        return self

    def maxRepeatLogs(self, max_lines: Optional[int]) -> "Options":
        self.set(max_repeat_logs=_UNBOUNDED_REPEAT_LOGS if max_lines is None else max_lines)
        return self

    def modelName(self, name: str) -> "Options":
        self.createOrSet(model_name=name)
        return self

    def enableExecutableCaching(self, path: str) -> "Options":
        if path is None:
            self._Popart.set("enableEngineCaching", False)
        else:
            self._Popart.set("cachePath", path)
            self._Popart.set("enableEngineCaching", True)
        return self

    def useIpuModel(self, use_model: bool) -> "Options":
        self.createOrSet(use_model=use_model)
        return self

    def connectionType(self, connection_type: "enums.ConnectionType") -> "Options":
        _require(
            isinstance(connection_type, enums.ConnectionType),
            f"connectionType needs a poptorch.ConnectionType, got {connection_type!r}",
        )
        self.set(connection_type=connection_type.value)
        return self

    def syncPattern(self, sync_pattern: "enums.SyncPattern") -> "Options":
        _require(
            isinstance(sync_pattern, enums.SyncPattern),
            f"syncPattern needs a poptorch.SyncPattern, got {sync_pattern!r}",
        )
        self.set(sync_pattern=sync_pattern.value)
        return self

    def useIpuId(self, ipu_id: int) -> "Options":
        _require(isinstance(ipu_id, int), f"useIpuId needs an int device id, got {ipu_id!r}")
        self.createOrSet(ipu_id=ipu_id)
        return self

    def useOfflineIpuTarget(self, ipu_version: int = 2) -> "Options":
        self.connectionType(enums.ConnectionType.Never)
        self.createOrSet(ipu_version=ipu_version)
        return self

    def anchorTensor(
        self,
        short_name: str,
        long_name: str,
        output_mode: Optional["enums.OutputMode"] = None,
        output_return_period: Optional[int] = 1,
    ):
        if output_mode != enums.OutputMode.EveryN:
            output_return_period = 1
        self.anchored_tensors[short_name] = [long_name, output_mode is None, output_mode, output_return_period]

    def outputMode(self, output_mode: "enums.OutputMode", output_return_period: Optional[int] = None) -> "Options":
        _require(
            isinstance(output_mode, enums.OutputMode), f"outputMode needs a poptorch.OutputMode, got {output_mode!r}"
        )
        if output_mode == enums.OutputMode.EveryN:
            _require(
                bool(output_return_period) and output_return_period > 0,
                f"OutputMode.EveryN needs a positive output_return_period, got {output_return_period!r}",
            )
        self.set(output_mode=output_mode.value, output_return_period=output_return_period or 1)
        return self

    def defaultOutputMode(self) -> bool:
        return self.output_mode == enums.OutputMode.Default

    def randomSeed(self, random_seed: int) -> "Options":
        _require(isinstance(random_seed, int), f"randomSeed needs an int, got {random_seed!r}")
        torch.manual_seed(random_seed)
        self.createOrSet(random_seed=random_seed)
        return self

    def enableStableNorm(self, enabled: bool) -> "Options":
        self._Popart.set("enableStableNorm", enabled)
        return self

    def enableSyntheticData(self, enabled: bool) -> "Options":
        self._Popart.set("syntheticDataMode", 2 if enabled else 0)
        return self

    def logCycleCount(self, log_cycle_count: bool) -> "Options":
        self._Popart.set("instrumentWithHardwareCycleCounter", log_cycle_count)
        return self

    def disableModuleNamescope(self) -> "Options":
        self._module_namescope_enabled = False
        return self

    def updatableNamedBuffers(self, buffers: List[str]) -> "Options":
        self._Popart.set("updatableNamedBuffers", buffers)
        return self

    def toDict(self) -> dict:
        """All options for the backend: strategy, PopART, general, Training, Distributed, TensorLocations."""
        _require(not self.defaultOutputMode(), "An output mode must be picked before serialisation (call outputMode)")
        merged = self._execution_strategy.backendOptions()
        merged.update(self._popart.options)
        for part in (self, self._training, self._distributed, self._tensor_locations):
            merged = OptionsDict.update(part, merged)
        if self._show_compilation_progress_bar:
            merged["compilation_progress_bar_fn"] = self._progress_bar
        return merged

    def clone(self) -> "Options":
        return copy.deepcopy(self)
